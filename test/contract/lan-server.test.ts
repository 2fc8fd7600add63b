// Direct LAN mode (adapter/lan/server.ts) in process: the same HTTP surface and routing core as the
// relay, driven by the adapter library and raw clients. (The contract suites also run against it via
// test/helpers/contract-targets.ts.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectAgent } from "../../adapter/client/index.js";
import { CONTENT_SECURITY_POLICY } from "../../shared/edge/csp.js";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { request } from "node:http";
import { MemoryStore } from "../../shared/session/store.js";
import { connect, tryConnect, wsUrl, RawClient } from "../helpers/raw-client.js";
import { freePort } from "../helpers/relay.js";
import { appClient, CONFIRM, newSession, tempDir } from "../helpers/adapter-helpers.js";

const TOKEN = "lan-adapter-test-token-0123";
let lan: LanServer;

beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
});
afterAll(async () => {
  await lan?.close();
});

describe("lineup LAN server", () => {
  it("refuses a short pre-shared token", async () => {
    await expect(startLanServer({ port: 0, host: "127.0.0.1", token: "short" })).rejects.toThrow(/at least 16/);
  });

  it("refuses to start on a rate limit that is not a positive number, naming it", async () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(startLanServer({ port: 0, host: "127.0.0.1", token: TOKEN, rateLimitPerS: bad })).rejects.toThrow(/rateLimitPerS must be a positive number/);
      await expect(startLanServer({ port: 0, host: "127.0.0.1", token: TOKEN, rateLimitBurst: bad })).rejects.toThrow(
        /rateLimitBurst must be a positive number/,
      );
    }
  });

  it("answers /healthz and serves the app with SPA fallback", async () => {
    expect(await (await fetch(`${lan.url}/healthz`)).json()).toEqual({ ok: true, protocol: "lineup/1" });
    const deep = await fetch(`${lan.url}/some/deep/link`);
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<div id="app">');
    // The same security headers as the Worker's _headers file: no inline script, no framing, no sniffing.
    expect(deep.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
    expect(deep.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(deep.headers.get("x-content-type-options")).toBe("nosniff");
    const api = await fetch(`${lan.url}/api/nothing`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({ error: { code: "not_found" } });
  });

  it("creates sessions only with the pre-shared token, with the relay's session object", async () => {
    const no = await fetch(`${lan.url}/api/sessions`, { method: "POST", headers: { authorization: "Bearer wrong" } });
    expect(no.status).toBe(401);
    expect(await no.json()).toMatchObject({ error: { code: "unauthorized" } });
    const bad = await fetch(`${lan.url}/api/sessions`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: '{"ttl_s":1}' });
    expect(bad.status).toBe(400);
    const s = await newSession(lan.url, TOKEN);
    expect(s.ws_url).toBe(`${lan.url.replace("http", "ws")}/api/sessions/${s.session_id}/ws`);
    expect(new URL(s.app_url).hash).toBe(`#s=${s.session_id}&t=${s.app_token}`);
    expect(s.agent_token).toMatch(/^[A-Za-z0-9._~-]+$/);
  });

  it("brakes guessing like the Worker: 429 after 60 wrong tokens in a minute, even for the right one", async () => {
    const own = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
    try {
      const post = (key: string) => fetch(`${own.url}/api/sessions`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
      for (let i = 0; i < 60; i++) expect((await post(`guess-${i}`)).status).toBe(401);
      const blocked = await post(TOKEN);
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get("retry-after")).toBe("60");
      expect(await blocked.json()).toMatchObject({ error: { code: "rate_limited" } });
    } finally {
      await own.close();
    }
  });

  it("checks tokens like the relay: 401 forged, 403 wrong role, 426 no upgrade, 403 foreign origin", async () => {
    const s = await newSession(lan.url, TOKEN);
    const forged = await tryConnect(wsUrl(lan.url, s.session_id), { token: s.agent_token.slice(0, -2) + "AA" });
    expect(forged).toMatchObject({ status: 401 });
    const appDelete = await fetch(`${lan.url}/api/sessions/${s.session_id}`, { method: "DELETE", headers: { authorization: `Bearer ${s.app_token}` } });
    expect(appDelete.status).toBe(403);
    const plain = await fetch(`${lan.url}/api/sessions/${s.session_id}/ws`, { headers: { authorization: `Bearer ${s.app_token}` } });
    expect(plain.status).toBe(426);
    const other = await newSession(lan.url, TOKEN);
    const cross = await fetch(`${lan.url}/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${other.agent_token}` } });
    expect(cross.status).toBe(401);
    const evil = await tryConnect(wsUrl(lan.url, s.session_id), { token: s.app_token, origin: "https://evil.example" });
    expect(evil).toMatchObject({ status: 403 });
    const sub = await connect(wsUrl(lan.url, s.session_id), { token: s.app_token, via: "subprotocol" });
    expect(sub.protocol).toBe("lineup.v1");
    await sub.close();
  });

  it("routes a call from the adapter library to the app and back; ping gets pong", async () => {
    const s = await newSession(lan.url, TOKEN);
    const app = await appClient(lan.url, s.session_id, s.app_token);
    const agent = await connectAgent({ relayUrl: lan.url, sessionId: s.session_id, token: s.agent_token, stateDir: tempDir() });
    try {
      const p = agent.call("confirm", undefined, { question: "LAN?" });
      const call = await app.next("tool.call");
      expect(call).toMatchObject({ name: "confirm", from: "agent" });
      app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes" } });
      await expect(p).resolves.toEqual({ message: "yes" });
      await expect(agent.call("confirm", undefined, { question: 1 })).rejects.toMatchObject({ code: "invalid_arguments" });
      await app.sync(); // ping → pong
      app.send("{nope");
      expect(await app.next("error")).toMatchObject({ code: "bad_json" });
      app.send({ type: "status", state: "idle" });
      expect(await app.next("error")).toMatchObject({ code: "forbidden" });
    } finally {
      await agent.close();
      await app.close();
    }
  });

  it("drives deadlines with its timer: the caller gets timeout, the provider a cancel", async () => {
    const s = await newSession(lan.url, TOKEN);
    const app = await appClient(lan.url, s.session_id, s.app_token);
    const agent = await connectAgent({ relayUrl: lan.url, sessionId: s.session_id, token: s.agent_token, stateDir: tempDir() });
    try {
      const p = agent.call("confirm", undefined, { question: "slow human" }, { timeoutS: 1 });
      const call = await app.next("tool.call");
      await expect(p).rejects.toMatchObject({ code: "timeout" });
      expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).toMatchObject({ reason: "timeout" });
    } finally {
      await agent.close();
      await app.close();
    }
  });

  it("answers HTTP calls (§7): 200 with the result, 202 pending, 409 duplicate, 404 after it was fetched", async () => {
    const s = await newSession(lan.url, TOKEN);
    const app = await appClient(lan.url, s.session_id, s.app_token);
    const auth = { authorization: `Bearer ${s.agent_token}`, "content-type": "application/json" };
    try {
      const pending = await fetch(`${lan.url}/api/sessions/${s.session_id}/calls?wait=0`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ call_id: "h1", name: "confirm", arguments: { question: "http?" } }),
      });
      expect(pending.status).toBe(202);
      expect(await pending.json()).toEqual({ call_id: "h1", status: "pending" });
      const dup = await fetch(`${lan.url}/api/sessions/${s.session_id}/calls?wait=0`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ call_id: "h1", name: "confirm", arguments: { question: "http?" } }),
      });
      expect(dup.status).toBe(409);
      const call = await app.next("tool.call");
      const waiting = fetch(`${lan.url}/api/sessions/${s.session_id}/calls/h1?wait=10`, { headers: auth });
      app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes" } });
      const got = await waiting;
      expect(got.status).toBe(200);
      expect(await got.json()).toMatchObject({ type: "tool.result", call_id: "h1", result: { message: "yes" } });
      expect((await fetch(`${lan.url}/api/sessions/${s.session_id}/calls/h1?wait=0`, { headers: auth })).status).toBe(404);
    } finally {
      await app.close();
    }
  });

  it("DELETE closes every socket with 4004, the agent stops for good, and the session is gone (404)", async () => {
    const s = await newSession(lan.url, TOKEN);
    const app = await appClient(lan.url, s.session_id, s.app_token, [CONFIRM]);
    const agent = await connectAgent({ relayUrl: lan.url, sessionId: s.session_id, token: s.agent_token, stateDir: tempDir() });
    const p = agent.call("confirm", undefined, { question: "bye" }).catch((e: unknown) => e);
    const del = await fetch(`${lan.url}/api/sessions/${s.session_id}`, { method: "DELETE", headers: { authorization: `Bearer ${s.agent_token}` } });
    expect(del.status).toBe(204);
    expect((await app.waitClose()).code).toBe(4004);
    expect(await p).toMatchObject({ code: "session_ended" });
    expect(agent.lastError?.code).toBe("session_ended");
    const gone = await fetch(`${lan.url}/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } });
    expect(gone.status).toBe(404);
    const late = await tryConnect(wsUrl(lan.url, s.session_id), { token: s.app_token });
    expect(late).not.toBeInstanceOf(RawClient);
    expect(late).toMatchObject({ status: 404 });
  });

  // Regression (issue 10): the Worker ran each frame in one SQLite transaction, the LAN server did not, and
  // the rollback test ran only in workerd. The memory store's transactions now make LAN frames atomic too.
  it("regression: a frame that fails half-way leaves the call open and unanswered (frames are atomic in memory)", async () => {
    let broken = false;
    class Faulty extends MemoryStore {
      override registrations(role: Parameters<MemoryStore["registrations"]>[0]) {
        if (broken) throw new SyntaxError("injected: a registration that cannot be read");
        return super.registrations(role);
      }
    }
    const own = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, wrapStore: () => new Faulty() });
    try {
      const s = await newSession(own.url, TOKEN);
      const app = await appClient(own.url, s.session_id, s.app_token, [CONFIRM], "ph");
      const agent = await connect(wsUrl(own.url, s.session_id), { token: s.agent_token, clientId: "ag" });
      await agent.next("hello");
      agent.send({ type: "tool.call", call_id: "half", name: "confirm", arguments: { question: "half?" } });
      await app.next("tool.call");
      // The result closes the call first and reads the catalog after: that read throws.
      broken = true;
      app.send({ type: "tool.result", call_id: "half", result: { message: "yes" } });
      expect(await app.next("error")).toMatchObject({ code: "internal" });
      expect((await app.waitClose()).code).toBe(1011);
      broken = false;
      const st = await (await fetch(`${own.url}/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } })).json();
      expect(st).toMatchObject({ pending_calls: 1 });
      expect(await agent.none((f) => f.type === "tool.result", 300)).toBe(true);
      // The same answer from the reconnected app now closes it, once.
      const again = await appClient(own.url, s.session_id, s.app_token, [CONFIRM], "ph");
      const call = await again.next("tool.call");
      again.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes" } });
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "half", result: { message: "yes" } });
      await again.close();
      await agent.close();
    } finally {
      await own.close();
    }
  });

  // Regression (issue 10): a disconnect runs in a transaction too, and one that fails is rolled back and
  // logged instead of escaping from the socket's close event (which would end the whole LAN server).
  it("regression: a disconnect that fails half-way changes nothing and the server keeps serving", async () => {
    let broken = false;
    class Faulty extends MemoryStore {
      override touch(key: Parameters<MemoryStore["touch"]>[0], now: number) {
        super.touch(key, now);
        if (broken) throw new SyntaxError("injected: a write that fails after the touch");
      }
    }
    let store: Faulty | undefined;
    const own = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, wrapStore: () => (store = new Faulty()) });
    try {
      const s = await newSession(own.url, TOKEN);
      const agent = await connect(wsUrl(own.url, s.session_id), { token: s.agent_token, clientId: "ag" });
      await agent.next("hello");
      const app = await appClient(own.url, s.session_id, s.app_token, [CONFIRM], "ph");
      await agent.next("tool.list");
      await new Promise((r) => setTimeout(r, 20));
      const t = Date.now();
      expect(store!.idleRegistrations(t, 10)).toHaveLength(1);
      broken = true;
      await app.close();
      await new Promise((r) => setTimeout(r, 200));
      broken = false;
      // The half-done touch was rolled back: the registration's clock did not start.
      expect(store!.idleRegistrations(t, 10)).toHaveLength(1);
      // Still serving: a new app connects, and the agent's call reaches it and is answered.
      const again = await appClient(own.url, s.session_id, s.app_token, [CONFIRM], "ph");
      agent.send({ type: "tool.call", call_id: "after", name: "confirm", arguments: { question: "still there?" } });
      const call = await again.next("tool.call");
      again.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes" } });
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "after" });
      await again.close();
      await agent.close();
    } finally {
      await own.close();
    }
  });

  // Regression (issue 11 §5): the Origin check alone let a DNS-rebinding page (Host: evil.example, rebound
  // to this machine) call the API as same-origin.
  it("regression: answers only its own Host values (DNS rebinding gets 403 host_not_allowed), plus --allow-host names", async () => {
    const own = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, allowHosts: ["relay.home.arpa"] });
    const get = (host: string, path = "/healthz", headers: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const r = request(`${own.url}${path}`, { headers: { host, ...headers } }, (res) => {
          let body = "";
          res.on("data", (d: Buffer) => (body += d.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        r.on("error", reject);
        r.end();
      });
    try {
      const evil = await get(`evil.example:${own.port}`);
      expect(evil.status).toBe(403);
      expect(JSON.parse(evil.body)).toMatchObject({ error: { code: "host_not_allowed" } });
      expect((await get(`evil.example:${own.port}`, "/")).status).toBe(403); // the app itself too
      const ws = await get(`evil.example:${own.port}`, "/api/sessions/x/ws", {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      });
      expect(ws.status).toBe(403);
      expect((await get(`127.0.0.1:${own.port}`)).status).toBe(200);
      expect((await get(`localhost:${own.port}`)).status).toBe(200);
      expect((await get("relay.home.arpa")).status).toBe(200);
    } finally {
      await own.close();
    }
  });
});
