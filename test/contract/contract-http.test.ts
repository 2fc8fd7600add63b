// Contract §2 from outside: every endpoint and status code over real HTTP and WebSocket, for each
// server that speaks lineup/1 (the relay in workerd, and the direct LAN mode when present).
import { describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { ECHO, http, refused, RawClient, tryConnect, wsUrl } from "../helpers/raw-client.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";

const TOKEN_RE = /^[A-Za-z0-9._~-]+$/;
const errorBody = (r: { json: unknown }) => (r.json as { error: { code: string; message: string } }).error;

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("HTTP endpoints (§2)", () => {
    const run = useTarget(tc);
    const pool = run.pool;

    it("GET /healthz answers 200 {ok:true, protocol:'lineup/1'}", async () => {
      const r = await http(`${run.T.url}/healthz`);
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ ok: true, protocol: "lineup/1" });
    });

    it("POST /api/sessions answers 201 with every field of the session object", async () => {
      const before = Date.now();
      const r = await http(`${run.T.url}/api/sessions`, { method: "POST", token: run.T.key });
      expect(r.status).toBe(201);
      const s = r.json as SessionCreated;
      expect(Object.keys(s).sort()).toEqual(expect.arrayContaining(["agent_token", "app_token", "app_url", "expires_at", "session_id", "ws_url"]));
      expect(typeof s.session_id).toBe("string");
      expect(s.agent_token).toMatch(TOKEN_RE);
      expect(s.app_token).toMatch(TOKEN_RE);
      expect(s.agent_token).not.toBe(s.app_token);
      expect(typeof s.expires_at).toBe("number");
      expect(s.expires_at).toBeGreaterThan(before);
      // ws_url: the session's socket endpoint, with no token in it.
      const ws = new URL(s.ws_url);
      expect(ws.protocol).toBe("ws:");
      expect(ws.pathname).toBe(`/api/sessions/${s.session_id}/ws`);
      expect(s.ws_url).not.toContain(s.agent_token);
      expect(s.ws_url).not.toContain(s.app_token);
      // app_url: the app token only in the fragment, which browsers never send to a server.
      const app = new URL(s.app_url);
      const frag = new URLSearchParams(app.hash.slice(1));
      expect(frag.get("t")).toBe(s.app_token);
      expect(frag.get("s")).toBe(s.session_id);
      expect(s.app_url.split("#")[0]).not.toContain(s.app_token);
      expect(s.app_url).not.toContain(s.agent_token);
    });

    it("POST /api/sessions honours ttl_s and accepts a label", async () => {
      const before = Date.now();
      const r = await http(`${run.T.url}/api/sessions`, { method: "POST", token: run.T.key, body: JSON.stringify({ ttl_s: 3600, label: "contract" }) });
      expect(r.status).toBe(201);
      const s = r.json as SessionCreated;
      expect(s.expires_at).toBeGreaterThanOrEqual(before + 3600_000);
      expect(s.expires_at).toBeLessThanOrEqual(Date.now() + 3600_000);
    });

    it("POST /api/sessions answers 401 with a JSON error for a missing or wrong key", async () => {
      for (const token of [undefined, "not-the-key", `${run.T.key}x`]) {
        const r = await http(`${run.T.url}/api/sessions`, { method: "POST", ...(token === undefined ? {} : { token }) });
        expect(r.status).toBe(401);
        expect(errorBody(r)).toEqual({ code: expect.any(String), message: expect.any(String) });
      }
    });

    it("POST /api/sessions answers 400 with a JSON error for a body that is not valid", async () => {
      const bad = await http(`${run.T.url}/api/sessions`, { method: "POST", token: run.T.key, body: "{not json" });
      expect(bad.status).toBe(400);
      expect(errorBody(bad).code).toEqual(expect.any(String));
      const wrong = await http(`${run.T.url}/api/sessions`, { method: "POST", token: run.T.key, body: JSON.stringify({ ttl_s: "soon" }) });
      expect(wrong.status).toBe(400);
    });

    it("GET /api/sessions/:sid answers 200 status to agent and app tokens", async () => {
      const s = await pool.session(run.T.key, { label: "st" });
      const agent = await pool.agent(s);
      const app = await pool.app(s);
      await pool.register(app, agent, [ECHO]);
      agent.send({ type: "tool.call", call_id: "pending-1", name: "echo", arguments: { text: "x" } });
      await app.next("tool.call");
      for (const token of [s.agent_token, s.app_token]) {
        const r = await http(`${run.T.url}/api/sessions/${s.session_id}`, { token });
        expect(r.status).toBe(200);
        const st = r.json as { agent: { online: boolean }; apps: number; tools: { app: { name: string }[] }; pending_calls: number };
        expect(st.agent.online).toBe(true);
        expect(st.apps).toBe(1);
        expect(st.tools.app.map((t) => t.name)).toEqual(["echo"]);
        expect(st.pending_calls).toBe(1);
      }
    });

    it("answers 401 for a missing, forged or other-session token on every token endpoint", async () => {
      const s = await pool.session(run.T.key);
      const other = await pool.session(run.T.key);
      const forged = s.agent_token.slice(0, -4) + (s.agent_token.endsWith("AAAA") ? "BBBB" : "AAAA");
      const sid = s.session_id;
      const routes: [string, string, string?][] = [
        ["GET", `/api/sessions/${sid}`],
        ["DELETE", `/api/sessions/${sid}`],
        ["POST", `/api/sessions/${sid}/calls?wait=0`, JSON.stringify({ name: "echo", arguments: { text: "x" } })],
        ["GET", `/api/sessions/${sid}/calls/nope?wait=0`],
      ];
      for (const [method, path, body] of routes) {
        for (const token of [undefined, forged, other.agent_token, "garbage"]) {
          const r = await http(`${run.T.url}${path}`, { method, ...(token === undefined ? {} : { token }), ...(body ? { body } : {}) });
          expect([method, path, token === undefined ? "none" : token, r.status]).toEqual([method, path, token === undefined ? "none" : token, 401]);
          expect(errorBody(r).code).toEqual(expect.any(String));
        }
      }
      for (const token of [undefined, forged, other.agent_token, other.app_token]) {
        const r = await refused(wsUrl(run.T.url, sid), token === undefined ? {} : { token });
        expect(r.status).toBe(401);
        expect(JSON.parse(r.body)).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
      }
      // The session is untouched by all of that.
      expect((await http(`${run.T.url}/api/sessions/${sid}`, { token: s.app_token })).status).toBe(200);
    });

    it("answers 403 for a valid token of the wrong role on agent-only endpoints", async () => {
      const s = await pool.session(run.T.key);
      const sid = s.session_id;
      const del = await http(`${run.T.url}/api/sessions/${sid}`, { method: "DELETE", token: s.app_token });
      expect(del.status).toBe(403);
      expect(errorBody(del).code).toEqual(expect.any(String));
      const post = await http(`${run.T.url}/api/sessions/${sid}/calls?wait=0`, { method: "POST", token: s.app_token, body: JSON.stringify({ name: "echo" }) });
      expect(post.status).toBe(403);
      const get = await http(`${run.T.url}/api/sessions/${sid}/calls/x?wait=0`, { token: s.app_token });
      expect(get.status).toBe(403);
      // The app token did not delete anything.
      expect((await http(`${run.T.url}/api/sessions/${sid}`, { token: s.agent_token })).status).toBe(200);
    });

    it("GET /ws without an upgrade answers 426", async () => {
      const s = await pool.session(run.T.key);
      const r = await http(wsUrl(run.T.url, s.session_id).replace(/^ws/, "http"), { token: s.agent_token });
      expect(r.status).toBe(426);
      expect(errorBody(r).code).toEqual(expect.any(String));
    });

    it("DELETE answers 204, closes every socket with 4004, then the session answers 404", async () => {
      const s = await pool.session(run.T.key);
      const agent = await pool.agent(s);
      const app = await pool.app(s);
      const del = await http(`${run.T.url}/api/sessions/${s.session_id}`, { method: "DELETE", token: s.agent_token });
      expect(del.status).toBe(204);
      // Regression: workerd held sockets closed from the DELETE's RPC half-open until the object hibernated
      // (~10 s); the close event must come well before that (Session.reset).
      expect((await agent.waitClose(6000)).code).toBe(4004);
      expect((await app.waitClose(6000)).code).toBe(4004);
      const st = await http(`${run.T.url}/api/sessions/${s.session_id}`, { token: s.agent_token });
      expect(st.status).toBe(404);
      expect(errorBody(st).code).toEqual(expect.any(String));
      const ws = await refused(wsUrl(run.T.url, s.session_id), { token: s.app_token });
      expect(ws.status).toBe(404);
      const post = await http(`${run.T.url}/api/sessions/${s.session_id}/calls?wait=0`, {
        method: "POST",
        token: s.agent_token,
        body: JSON.stringify({ name: "echo" }),
      });
      expect(post.status).toBe(404);
    });

    // Regression (issue 10): the LAN server's hand-copied edge answered 404 here while the Worker answered
    // 426 — the edges had drifted. One edge now serves both.
    it("regression: a plain GET on /ws of a deleted session answers 426 on every edge (the upgrade check comes first)", async () => {
      const s = await pool.session(run.T.key);
      expect((await http(`${run.T.url}/api/sessions/${s.session_id}`, { method: "DELETE", token: s.agent_token })).status).toBe(204);
      const r = await http(`${run.T.url}/api/sessions/${s.session_id}/ws`, { token: s.agent_token });
      expect(r.status).toBe(426);
      expect(errorBody(r).code).toBe("upgrade_required");
    });

    it("accepts the token as Authorization: Bearer, as a subprotocol (answering lineup.v1), and as ?token=", async () => {
      const s = await pool.session(run.T.key);
      const viaHeader = pool.track(await connectOk(wsUrl(run.T.url, s.session_id), { token: s.agent_token, via: "header" }));
      expect((await viaHeader.next(() => true)).type).toBe("hello");
      const viaProto = pool.track(await connectOk(wsUrl(run.T.url, s.session_id), { token: s.app_token, via: "subprotocol" }));
      expect(viaProto.protocol).toBe("lineup.v1");
      expect(await viaProto.next(() => true)).toMatchObject({ type: "hello", role: "app" });
      const viaQuery = pool.track(await connectOk(wsUrl(run.T.url, s.session_id), { token: s.app_token, via: "query" }));
      expect(await viaQuery.next(() => true)).toMatchObject({ type: "hello", role: "app" });
    });

    it("keeps a new call for an app connected with ?register=first until it registers, and refuses an unknown tool only then", async () => {
      const s = await pool.session(run.T.key);
      const agent = await pool.agent(s, { clientId: "ag" });
      // An app whose code is still loading (the PWA's early socket): connected, nothing registered yet.
      const early = pool.track(await connectOk(wsUrl(run.T.url, s.session_id, { register: "first" }), { token: s.app_token, clientId: "phone" }));
      expect(await early.next(() => true)).toMatchObject({ type: "hello", role: "app" });
      agent.send({ type: "tool.call", call_id: "rf1", name: "echo", arguments: { text: "hi" } });
      await agent.sync();
      // Without the parameter this is unknown_tool (a provider is connected); with it the call waits.
      expect(await agent.none((f) => f.type === "tool.result", 200)).toBe(true);
      await pool.register(early, agent, [ECHO]);
      expect(await early.next((f) => f.type === "tool.call" && f.call_id === "rf1")).toMatchObject({ name: "echo", arguments: { text: "hi" } });
      // Registered, it is a provider like any other: a tool nobody provides is refused at once.
      agent.send({ type: "tool.call", call_id: "rf2", name: "nope", arguments: {} });
      expect((await agent.next((f) => f.type === "tool.result" && f.call_id === "rf2")).error).toMatchObject({ code: "unknown_tool" });
      // Any other value of the parameter is refused before the upgrade.
      const r = await refused(wsUrl(run.T.url, s.session_id, { register: "later" }), { token: s.app_token });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toEqual({ error: { code: "bad_request", message: expect.stringContaining("register") } });
    });

    it("answers lineup.v1 when it is offered with a header token, and no subprotocol when none is offered", async () => {
      const s = await pool.session(run.T.key);
      const offered = pool.track(await connectOk(wsUrl(run.T.url, s.session_id), { token: s.agent_token, via: "header", protocols: ["lineup.v1"] }));
      expect(offered.protocol).toBe("lineup.v1");
      const plain = pool.track(await connectOk(wsUrl(run.T.url, s.session_id), { token: s.app_token, via: "query" }));
      expect(plain.protocol).toBe("");
      expect((await plain.next(() => true)).type).toBe("hello");
    });

    it("takes the role from the token, never from the client's word", async () => {
      const s = await pool.session(run.T.key);
      const { hello } = await pool.join(s, "app", { headers: { "x-lineup-role": "agent" } });
      expect(hello.role).toBe("app");
      const c = pool.track(await connectOk(wsUrl(run.T.url, s.session_id, { role: "agent" }), { token: s.app_token }));
      expect(await c.next(() => true)).toMatchObject({ type: "hello", role: "app" });
    });

    it("uses the client_id given, and assigns one when none is given", async () => {
      const s = await pool.session(run.T.key);
      const { hello } = await pool.join(s, "app", { clientId: "phone_1-A" });
      expect(hello.client_id).toBe("phone_1-A");
      const { hello: h2 } = await pool.join(s, "app");
      expect(h2.client_id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(h2.client_id).not.toBe("phone_1-A");
    });
  });
});

async function connectOk(url: string, o: Parameters<typeof tryConnect>[1]): Promise<RawClient> {
  const r = await tryConnect(url, o);
  if (!(r instanceof RawClient)) throw new Error(`refused: ${r.status} ${r.body}`);
  return r;
}
