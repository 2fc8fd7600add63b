// §2 of the contract: HTTP endpoints, tokens, the order of 401/403/426/404, Origin, DELETE.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authed, closeAll, errorBody, evict, getStatus, pair, register, CHOICE } from "./contract-fixtures.js";
import { Client, connect, connectRaw, createSession, epochOf, fetchWorker, RELAY_KEY, signAs, stubOf } from "./helpers.js";

const TOKEN_RE = /^[A-Za-z0-9._~-]+$/;

describe("GET /healthz", () => {
  it("answers 200 with the protocol", async () => {
    const res = await fetchWorker("/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, protocol: "lineup/1" });
  });
});

describe("POST /api/sessions", () => {
  it("creates a session with both tokens, urls and expires_at", async () => {
    const before = Date.now();
    const res = await fetchWorker("/api/sessions", authed(RELAY_KEY, { method: "POST", body: JSON.stringify({ ttl_s: 120, label: "x" }) }));
    const after = Date.now();
    expect(res.status).toBe(201);
    const s = (await res.json()) as Record<string, string & number>;
    expect(Object.keys(s).sort()).toEqual(["agent_token", "app_token", "app_url", "expires_at", "session_id", "ws_url"]);
    expect(s.agent_token).toMatch(TOKEN_RE);
    expect(s.app_token).toMatch(TOKEN_RE);
    expect(s.agent_token).not.toBe(s.app_token);
    expect(s.ws_url).toBe(`ws://relay.test/api/sessions/${s.session_id}/ws`);
    // The app token travels in the fragment only.
    const app = new URL(s.app_url);
    expect(app.search).toBe("");
    expect(app.hash).toContain(encodeURIComponent(s.app_token));
    expect(app.hash).toContain(s.session_id);
    expect(s.expires_at).toBeGreaterThanOrEqual(before + 120_000);
    expect(s.expires_at).toBeLessThanOrEqual(after + 120_000);
  });

  it("accepts an empty body", async () => {
    const res = await fetchWorker("/api/sessions", authed(RELAY_KEY, { method: "POST" }));
    expect(res.status).toBe(201);
  });

  it("refuses a missing or wrong RELAY_KEY with 401 and a JSON error", async () => {
    const none = await fetchWorker("/api/sessions", { method: "POST" });
    expect(none.status).toBe(401);
    expect((await errorBody(none)).code).toBeTruthy();
    const wrong = await fetchWorker("/api/sessions", authed("nope", { method: "POST" }));
    expect(wrong.status).toBe(401);
    await errorBody(wrong);
  });

  it("refuses a bad body with 400 and a JSON error", async () => {
    for (const body of ["{", JSON.stringify({ ttl_s: 5 }), JSON.stringify({ ttl_s: "1" }), "[1]"]) {
      const res = await fetchWorker("/api/sessions", authed(RELAY_KEY, { method: "POST", body }));
      expect(res.status, body).toBe(400);
      await errorBody(res);
    }
  });
});

describe("GET /api/sessions/:sid", () => {
  it("answers agent and app tokens with the status", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "status", state: "working", detail: "d" });
    await app.next((f) => f.type === "presence" && f.agent.status?.state === "working");
    for (const t of [s.agent_token, s.app_token]) {
      const st = await getStatus(s, t);
      expect(st).toMatchObject({ session_id: s.session_id, agent: { online: true, status: { state: "working", detail: "d" } }, apps: 1, pending_calls: 0 });
      expect((st.tools as { app: { name: string }[] }).app.map((x) => x.name)).toEqual(["choice"]);
    }
    closeAll(agent, app);
  });

  it("401 without a token, with a forged one, or with another session's token", async () => {
    const a = await createSession();
    const b = await createSession();
    const forged = a.agent_token.replace(/.$/, (ch) => (ch === "A" ? "B" : "A"));
    for (const init of [{}, authed(forged), authed(b.agent_token), authed(b.app_token), authed("garbage")]) {
      const res = await fetchWorker(`/api/sessions/${a.session_id}`, init);
      expect(res.status).toBe(401);
      await errorBody(res);
    }
  });

  it("404 for a correctly signed token whose session expired", async () => {
    const s = await createSession();
    const old = await signAs(s.session_id, "agent", Date.now() - 1000, epochOf(s));
    const res = await fetchWorker(`/api/sessions/${s.session_id}`, authed(old));
    expect(res.status).toBe(404);
    await errorBody(res);
  });
});

describe("DELETE /api/sessions/:sid", () => {
  it("403 for an app token, and nothing is deleted", async () => {
    const s = await createSession();
    const res = await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.app_token, { method: "DELETE" }));
    expect(res.status).toBe(403);
    await errorBody(res);
    expect((await getStatus(s)).session_id).toBe(s.session_id);
  });

  it("204; every socket closes with 4004; the data is erased; later requests get 404", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "message", content: [{ type: "text", text: "hi" }] });
    await app.next("message");
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", arguments: { question: "q", options: [] } });
    await app.next("tool.call");
    const res = await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }));
    expect(res.status).toBe(204);
    expect((await agent.closedWith()).code).toBe(4004);
    expect((await app.closedWith()).code).toBe(4004);
    const rows = await runInDurableObject(stubOf(s.session_id), (_i, state) => {
      const tables = state.storage.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'")
        .toArray();
      let n = 0;
      for (const t of tables) n += Number(state.storage.sql.exec(`SELECT COUNT(*) AS n FROM "${String(t.name)}"`).one().n);
      return n;
    });
    expect(rows).toBe(0);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.app_token))).status).toBe(404);
    expect((await connectRaw(s.session_id, s.agent_token)).status).toBe(404);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }))).status).toBe(404);
    expect(
      (await fetchWorker(`/api/sessions/${s.session_id}/calls`, authed(s.agent_token, { method: "POST", body: JSON.stringify({ name: "choice" }) }))).status,
    ).toBe(404);
  });
});

describe("DELETE while hibernating", () => {
  it("closes hibernated sockets with 4004 too", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    await evict(s.session_id, "hibernate");
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }))).status).toBe(204);
    expect((await agent.closedWith()).code).toBe(4004);
    expect((await app.closedWith()).code).toBe(4004);
  });
});

describe("session expiry", () => {
  it("the alarm ends an expired session: sockets close 4004, requests get 404", async () => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token);
    await runInDurableObject(stubOf(s.session_id), (_i, state) => {
      const m = JSON.parse(String(state.storage.sql.exec("SELECT v FROM meta WHERE k = 'session'").one().v)) as { expires_at: number };
      m.expires_at = Date.now() - 1;
      state.storage.sql.exec("UPDATE meta SET v = ? WHERE k = 'session'", JSON.stringify(m));
    });
    expect(await runDurableObjectAlarm(stubOf(s.session_id))).toBe(true);
    expect((await agent.closedWith()).code).toBe(4004);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token))).status).toBe(404);
    expect((await connectRaw(s.session_id, s.app_token)).status).toBe(404);
  });
});

describe("WebSocket upgrade", () => {
  it.each(["header", "subprotocol", "query"] as const)("accepts the token via %s", async (via) => {
    const s = await createSession();
    const res = await connectRaw(s.session_id, s.app_token, { via });
    expect(res.status).toBe(101);
    if (via === "subprotocol") expect(res.headers.get("sec-websocket-protocol")).toBe("lineup.v1");
    res.webSocket!.accept();
    const c = new Client(res.webSocket!);
    expect((await c.next("hello")).role).toBe("app");
    c.close();
  });

  it("the role comes from the token", async () => {
    const s = await createSession();
    const a = await connect(s.session_id, s.agent_token, { via: "query" });
    const p = await connect(s.session_id, s.app_token, { via: "subprotocol" });
    expect(a.hello?.role).toBe("agent");
    expect(p.hello?.role).toBe("app");
    closeAll(a, p);
  });

  it("401 for a missing, forged or other-session token", async () => {
    const a = await createSession();
    const b = await createSession();
    expect((await fetchWorker(`/api/sessions/${a.session_id}/ws`, { headers: { upgrade: "websocket" } })).status).toBe(401);
    for (const via of ["header", "subprotocol", "query"] as const) {
      expect((await connectRaw(a.session_id, b.app_token, { via })).status).toBe(401);
      expect((await connectRaw(a.session_id, a.app_token + "x", { via })).status).toBe(401);
    }
  });

  it("426 for a valid token without an upgrade; 401 comes first when the token is bad too", async () => {
    const s = await createSession();
    const res = await fetchWorker(`/api/sessions/${s.session_id}/ws`, authed(s.agent_token));
    expect(res.status).toBe(426);
    await errorBody(res);
    expect((await fetchWorker(`/api/sessions/${s.session_id}/ws`)).status).toBe(401);
    // Documented order: 401 → 403 → 426 → 404, the same for an expired token and a deleted session.
    const old = await signAs(s.session_id, "agent", Date.now() - 1000, epochOf(s));
    expect((await fetchWorker(`/api/sessions/${s.session_id}/ws`, authed(old))).status).toBe(426);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }))).status).toBe(204);
    expect((await fetchWorker(`/api/sessions/${s.session_id}/ws`, authed(s.agent_token))).status).toBe(426);
  });

  it("404 for a correctly signed token of an expired session (header, subprotocol, query)", async () => {
    const s = await createSession();
    const old = await signAs(s.session_id, "app", Date.now() - 1000, epochOf(s));
    for (const via of ["header", "subprotocol", "query"] as const) {
      const res = await connectRaw(s.session_id, old, { via });
      expect(res.status).toBe(404);
      await errorBody(res);
    }
  });

  it("404 for a session that never existed, signed correctly", async () => {
    const sid = "neverexisted123";
    const t = await signAs(sid, "agent", Date.now() + 60_000);
    expect((await connectRaw(sid, t)).status).toBe(404);
    expect((await fetchWorker(`/api/sessions/${sid}`, authed(t))).status).toBe(404);
  });

  it("400 for a malformed client_id; 64 characters of [A-Za-z0-9_-] are fine", async () => {
    const s = await createSession();
    for (const id of ["bad id!", "x".repeat(65), "a.b", "é"]) {
      const res = await connectRaw(s.session_id, s.app_token, { clientId: id });
      expect(res.status, id).toBe(400);
      await errorBody(res);
    }
    const long = "A-z_9".repeat(12) + "abcd";
    const c = await connect(s.session_id, s.app_token, { clientId: long });
    expect(c.hello?.client_id).toBe(long);
    c.close();
  });

  it("hello is the first frame and names the peers", async () => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    expect(agent.hello).toEqual({
      type: "hello",
      protocol: "lineup/1",
      session_id: s.session_id,
      role: "agent",
      client_id: "ag",
      peers: { agent: { online: true }, apps: 0 },
    });
    const res = await connectRaw(s.session_id, s.app_token);
    const ws = res.webSocket!;
    const first = new Promise<string>((r) => ws.addEventListener("message", (e) => r(String(e.data)), { once: true }));
    ws.accept();
    const hello = JSON.parse(await first) as Record<string, unknown>;
    expect(hello).toMatchObject({ type: "hello", role: "app", peers: { agent: { online: true }, apps: 1 } });
    expect(hello.client_id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    ws.close();
    agent.close();
  });

  it("the relay assigns distinct client ids when none is given", async () => {
    const s = await createSession();
    const a = await connect(s.session_id, s.app_token);
    const b = await connect(s.session_id, s.app_token);
    expect(a.hello?.client_id).not.toBe(b.hello?.client_id);
    closeAll(a, b);
  });
});

describe("Origin", () => {
  it("accepts the relay's own origin, configured origins and no origin", async () => {
    const s = await createSession();
    for (const origin of ["http://relay.test", "https://allowed.example", undefined]) {
      const res = await connectRaw(s.session_id, s.app_token, origin ? { origin } : {});
      expect(res.status, String(origin)).toBe(101);
      res.webSocket!.accept();
      res.webSocket!.close();
      const st = await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.app_token, origin ? { headers: { origin } } : {}));
      expect(st.status).toBe(200);
    }
  });

  it("403 for any other browser origin, on the socket and on HTTP", async () => {
    const s = await createSession();
    for (const origin of ["https://evil.example", "http://relay.test.evil.example", "null", "https://allowed.example.evil"]) {
      const res = await connectRaw(s.session_id, s.app_token, { origin });
      expect(res.status, origin).toBe(403);
      await errorBody(res);
      expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.app_token, { headers: { origin } }))).status).toBe(403);
    }
  });
});

describe("identity", () => {
  it("a newer connection with the same client id replaces the old one (4409)", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    const again = await connect(s.session_id, s.app_token, { clientId: "ph" });
    expect((await app.closedWith()).code).toBe(4409);
    // The registration belongs to the client id, so the new socket serves the tool.
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", arguments: { question: "q", options: [] } });
    expect((await again.next("tool.call")).call_id).toBe("c1");
    expect((await getStatus(s)).apps).toBe(1);
    closeAll(agent, again);
  });

  it("client ids are scoped by role: an app and an agent may share one", async () => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "same" });
    const app = await connect(s.session_id, s.app_token, { clientId: "same" });
    await register(app, agent, [CHOICE]);
    expect(agent.closed).toBeUndefined();
    closeAll(agent, app);
  });
});
