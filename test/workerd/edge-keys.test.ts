// Issue 10 in workerd: `RELAY_KEY` creates sessions but never enters one, tokens are signed with the
// relay's own secret and bound to one incarnation of a session, and the defects found while moving the
// engine and the edge into shared/ — each test named after its cause.
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { signToken } from "../../shared/edge/tokens.js";
import worker from "../../worker/index.js";
import type { Relay } from "../../worker/relay.js";
import { authed, ASK, CHOICE, closeAll, errorBody, isCall, register } from "./contract-fixtures.js";
import { BASE, connect, connectRaw, createSession, epochOf, fetchWorker, RELAY_KEY, stubOf } from "./helpers.js";

const IM = { channel_id: "u_keys", channel_type: 1 };

describe("RELAY_KEY creates; it never enters", () => {
  it("regression: a second POST for an IM conversation answers 409 im_bound and hands out no token", async () => {
    const first = await createSession({ im: IM });
    const res = await fetchWorker("/api/sessions", authed(RELAY_KEY, { method: "POST", body: JSON.stringify({ im: IM }) }));
    expect(res.status).toBe(409);
    const text = await res.text();
    expect(JSON.parse(text).error.code).toBe("im_bound");
    expect(text).not.toContain("agent_token");
    expect(text).not.toContain("v2.");
    // The creator's tokens still work, and nothing about the session changed.
    expect((await fetchWorker(`/api/sessions/${first.session_id}`, authed(first.agent_token))).status).toBe(200);
  });

  it("regression: a token signed with RELAY_KEY (as round 1 signed them) is refused with 401 on every endpoint", async () => {
    const s = await createSession();
    const minted = await signToken(RELAY_KEY, s.session_id, "agent", s.expires_at, epochOf(s));
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(minted))).status).toBe(401);
    expect((await connectRaw(s.session_id, minted)).status).toBe(401);
    expect(
      (await fetchWorker(`/api/sessions/${s.session_id}/calls?wait=0`, authed(minted, { method: "POST", body: JSON.stringify({ name: "choice" }) }))).status,
    ).toBe(401);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(minted, { method: "DELETE" }))).status).toBe(401);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token))).status).toBe(200);
  });

  it("signs tokens with a secret the relay generated once and keeps (not RELAY_KEY)", async () => {
    const relay = env.RELAY.get(env.RELAY.idFromName("relay"));
    const a = await runInDurableObject(relay, (o: Relay) => o.secrets());
    const b = await runInDurableObject(relay, (o: Relay) => o.secrets());
    expect(a).toEqual(b);
    expect(a.token_secret).not.toBe(RELAY_KEY);
    expect(a.token_secret.length).toBeGreaterThanOrEqual(40);
    const s = await createSession();
    const same = await signToken(a.token_secret, s.session_id, "agent", s.expires_at, epochOf(s));
    expect(same).toBe(s.agent_token);
  });

  it("regression: a deleted and re-created IM session refuses the old session's tokens (404), the new ones work", async () => {
    const ch = { channel_id: "u_recreate", channel_type: 1 };
    const old = await createSession({ im: ch });
    expect((await fetchWorker(`/api/sessions/${old.session_id}`, authed(old.agent_token, { method: "DELETE" }))).status).toBe(204);
    const fresh = await createSession({ im: ch });
    expect(fresh.session_id).toBe(old.session_id); // derived from the channel
    expect(fresh.agent_token).not.toBe(old.agent_token);
    for (const t of [old.agent_token, old.app_token]) {
      const res = await fetchWorker(`/api/sessions/${old.session_id}`, authed(t));
      expect(res.status).toBe(404);
      await errorBody(res);
      expect((await connectRaw(old.session_id, t)).status).toBe(404);
    }
    expect((await fetchWorker(`/api/sessions/${old.session_id}`, authed(old.agent_token, { method: "DELETE" }))).status).toBe(404);
    expect(
      (await fetchWorker(`/api/sessions/${old.session_id}/calls?wait=0`, authed(old.agent_token, { method: "POST", body: JSON.stringify({ name: "choice" }) })))
        .status,
    ).toBe(404);
    const c = await connect(fresh.session_id, fresh.app_token);
    expect(c.hello?.session_id).toBe(fresh.session_id);
    c.close();
  });

  it("refuses a client's own x-lineup-* headers: the role always comes from the token", async () => {
    const s = await createSession();
    const res = await fetchWorker(`/api/sessions/${s.session_id}/ws?client_id=sneaky`, {
      headers: { upgrade: "websocket", authorization: `Bearer ${s.app_token}`, "x-lineup-role": "agent", "x-lineup-epoch": "1" },
    });
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    const hello = await new Promise<Record<string, unknown>>((resolve) =>
      res.webSocket!.addEventListener("message", (e) => resolve(JSON.parse(String(e.data))), { once: true }),
    );
    expect(hello.role).toBe("app");
    res.webSocket!.close();
  });
});

describe("defects found on the way (issue 10 §3)", () => {
  it("regression: a connect that fails half-way leaves no delivery behind (connect runs in one transaction)", async () => {
    const s = await createSession();
    const app = await connect(s.session_id, s.app_token, { clientId: "ph" });
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    await register(app, agent, [CHOICE]);
    app.close();
    await app.closedWith();
    agent.send({ type: "tool.call", call_id: "one", name: "choice", arguments: ASK });
    agent.send({ type: "tool.call", call_id: "two", name: "choice", arguments: ASK });
    // Both wait for the app; the second one's stored arguments are made unreadable, so the catch-up on
    // the app's reconnect fails after delivering the first.
    await expect.poll(() => runInDurableObject(stubOf(s.session_id), (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM calls").one().n)).toBe(2);
    await runInDurableObject(stubOf(s.session_id), (_i, st) => {
      st.storage.sql.exec("UPDATE calls SET args = '{bad' WHERE call_id = 'two'");
    });
    const res = await connectRaw(s.session_id, s.app_token, { clientId: "ph" });
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    const frames: Record<string, unknown>[] = [];
    const closed = new Promise<number>((resolve) => {
      res.webSocket!.addEventListener("message", (e) => frames.push(JSON.parse(String(e.data))));
      res.webSocket!.addEventListener("close", (e) => resolve(e.code));
    });
    expect(await closed).toBe(1011);
    expect(frames.map((f) => f.type)).toEqual(["error"]);
    const deliveries = await runInDurableObject(
      stubOf(s.session_id),
      (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM calls WHERE deliv <> '[]'").one().n,
    );
    expect(deliveries).toBe(0);
    // Repaired, the same client catches up on both calls.
    await runInDurableObject(stubOf(s.session_id), (_i, st) => {
      st.storage.sql.exec(`UPDATE calls SET args = ? WHERE call_id = 'two'`, JSON.stringify(ASK));
    });
    const again = await connect(s.session_id, s.app_token, { clientId: "ph" });
    await again.next(isCall("one"));
    await again.next(isCall("two"));
    closeAll(agent, again);
  });

  it("regression: a stray msg_seq meta value does not move the history's sequence (it was read, never written)", async () => {
    const s = await createSession();
    const a = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    await runInDurableObject(stubOf(s.session_id), (_i, st) => {
      st.storage.sql.exec("INSERT INTO meta (k, v) VALUES ('msg_seq', '1000000')");
    });
    a.send({ type: "message", content: [{ type: "text", text: "hi" }] });
    await expect.poll(() => runInDurableObject(stubOf(s.session_id), (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM messages").one().n)).toBe(1);
    const seq = await runInDurableObject(stubOf(s.session_id), (_i, st) => st.storage.sql.exec("SELECT seq FROM messages").one().seq);
    expect(seq).toBe(1);
    a.close();
  });

  it("regression: a typo in a limit override answers 503 bad_config naming it, instead of falling back silently", async () => {
    for (const [name, value] of [
      ["RATE_LIMIT_PER_S", "2OO"],
      ["RATE_LIMIT_BURST", "-5"],
      ["ALLOWED_ORIGINS", "app.example.com"],
      ["PUBLIC_URL", "relay.example.com"],
    ] as const) {
      const ctx = createExecutionContext();
      const res = await worker.fetch(new Request(`${BASE}/api/sessions`, authed(RELAY_KEY, { method: "POST" })), { ...env, [name]: value }, ctx);
      await waitOnExecutionContext(ctx);
      expect(res.status, name).toBe(503);
      const e = await errorBody(res);
      expect(e.code).toBe("bad_config");
      expect(e.message).toContain(name);
    }
    // A blank value means "unset" (the default), not a typo.
    const ctx = createExecutionContext();
    const ok = await worker.fetch(new Request(`${BASE}/api/sessions`, authed(RELAY_KEY, { method: "POST" })), { ...env, RATE_LIMIT_PER_S: "" }, ctx);
    await waitOnExecutionContext(ctx);
    expect(ok.status).toBe(201);
  });

  it("refuses a RELAY_KEY shorter than 32 characters (503 bad_config naming it), but not the dev key", async () => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}/api/sessions`, authed("short-key-20-chars!!", { method: "POST" })),
      { ...env, RELAY_KEY: "short-key-20-chars!!" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    const e = await errorBody(res);
    expect(e.code).toBe("bad_config");
    expect(e.message).toContain("RELAY_KEY");
  });

  it("refuses a TOKEN_SECRET equal to RELAY_KEY or shorter than 32 characters (503 bad_config)", async () => {
    for (const TOKEN_SECRET of [RELAY_KEY, "short-secret"]) {
      const ctx = createExecutionContext();
      const res = await worker.fetch(new Request(`${BASE}/healthz`), { ...env, TOKEN_SECRET }, ctx);
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(503);
      expect((await errorBody(res)).message).toContain("TOKEN_SECRET");
    }
  });
});
