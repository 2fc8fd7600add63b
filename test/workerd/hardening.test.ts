// Issue 11 in workerd, over real sockets and the Durable Object's SQLite: the budgets' bookkeeping holds
// across hibernation and rolled-back frames, the caps answer at the edge of the session, and the history
// reads page by page. (The rules themselves are unit-tested in test/unit/budgets.test.ts.)
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/contract/protocol.js";
import { TokenBucket } from "../../shared/session/rate-limit.js";
import type { Session } from "../../worker/session.js";
import { authed, closeAll, evict, EVICTIONS, isCall, isError, isResult, NOTE, pair } from "./contract-fixtures.js";
import { connect, connectRaw, createSession, fetchWorker, stubOf, type Client } from "./helpers.js";

/** What the object believes it keeps, and what SQLite says it keeps. */
async function usage(sid: string): Promise<{ cached: number; truth: number }> {
  return runInDurableObject(stubOf(sid), (o: Session, st) => {
    const cached = (o as unknown as { store: { usage(): number } }).store.usage();
    const truth = Number(
      st.storage.sql
        .exec(
          "SELECT (SELECT COALESCE(SUM(bytes),0) FROM calls) + (SELECT COALESCE(SUM(bytes),0) FROM messages) + (SELECT COALESCE(SUM(bytes),0) FROM registrations) AS n",
        )
        .one().n,
    );
    return { cached, truth };
  });
}

async function settle(c: Client): Promise<void> {
  c.send({ type: "tool.result", call_id: `sync-${Math.random()}`, result: { message: "x" } });
  await c.next(isError("unknown_call"));
}

describe("the session's byte budget in SQLite", () => {
  it.each(EVICTIONS)("keeps its usage equal to what SQLite holds through calls, results, acks and messages (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([NOTE]);
    agent.send({ type: "tool.call", call_id: "u1", name: "note", arguments: { blob: "x".repeat(200_000) } });
    await app.next(isCall("u1"));
    agent.send({ type: "tool.call", call_id: "bad", name: "missing", arguments: { blob: "y".repeat(100_000) } });
    await agent.next(isResult("bad"));
    agent.send({ type: "message", content: [{ type: "text", text: "z".repeat(70_000) }] });
    await app.next("message");
    let u = await usage(s.session_id);
    expect(u.cached).toBe(u.truth);
    expect(u.truth).toBeGreaterThan(200_000 + 65_536);
    expect(u.truth).toBeLessThan(200_000 + 70_000); // the refused call's arguments and the message's extra text are not kept
    await evict(s.session_id, mode);
    app.send({ type: "tool.result", call_id: "u1", result: { message: "done" } });
    await agent.next(isResult("u1"));
    agent.send({ type: "tool.ack", call_id: "u1" });
    await settle(agent);
    u = await usage(s.session_id);
    expect(u.cached).toBe(u.truth);
    expect(u.truth).toBeLessThan(70_000);
    closeAll(agent, app);
  });

  it("regression: a frame rolled back half-way does not leave its bytes counted (the cached usage is forgotten)", async () => {
    const { s, agent, app } = await pair([NOTE]);
    const before = await usage(s.session_id);
    await runInDurableObject(stubOf(s.session_id), (o: Session, st) => {
      // The call is inserted, then delivering it reads the app's registration, which now fails (once the
      // parsed copy kept per wake is dropped, as a new wake would).
      st.storage.sql.exec("UPDATE registrations SET tools = '{bad' WHERE key = 'app:ph'");
      (o as unknown as { store: { forget(): void } }).store.forget();
    });
    agent.send({ type: "tool.call", call_id: "rb", name: "note", arguments: { blob: "q".repeat(300_000) } });
    await agent.next(isError("internal"));
    const after = await usage(s.session_id);
    expect(after.cached).toBe(after.truth);
    expect(after.truth).toBe(before.truth);
    closeAll(app);
  });

  it("answers a call past the budget with over_budget, over real sockets", async () => {
    const { s, agent, app } = await pair([NOTE]);
    await runInDurableObject(stubOf(s.session_id), (_o, st) => {
      // Fill the budget cheaply: one stored row that claims almost all of it.
      st.storage.sql.exec("UPDATE registrations SET bytes = ? WHERE key = 'app:ph'", LIMITS.sessionBudgetBytes - 10_000);
    });
    await runInDurableObject(stubOf(s.session_id), (o: Session) => (o as unknown as { store: { forget(): void } }).store.forget());
    agent.send({ type: "tool.call", call_id: "full", name: "note", arguments: { blob: "x".repeat(20_000) } });
    expect((await agent.next(isResult("full"))).error).toMatchObject({ code: "over_budget" });
    agent.send({ type: "tool.call", call_id: "tiny", name: "note", arguments: {} });
    await app.next(isCall("tiny"));
    closeAll(agent, app);
  });
});

describe("caps at the session's door", () => {
  it("regression: the 65th connection of a session is refused with 429 before it is accepted", async () => {
    const s = await createSession();
    const socks: Client[] = [];
    for (let i = 0; i < LIMITS.maxConnections; i++) socks.push(await connect(s.session_id, s.app_token, { clientId: `c${i}` }));
    const res = await connectRaw(s.session_id, s.app_token, { clientId: "one-more" });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("too_many_connections");
    socks[0]!.close();
    await socks[0]!.closedWith();
    await expect.poll(async () => (await connectRaw(s.session_id, s.app_token, { clientId: "now-fits" })).status).toBe(101);
    closeAll(...socks);
  });

  it("regression: HTTP calls past the agent token's rate get 429 rate_limited", async () => {
    const s = await createSession();
    await connect(s.session_id, s.agent_token).then((c) => c.close()); // wake the object
    await runInDurableObject(stubOf(s.session_id), (o: Session) => {
      o.engine.tokenBuckets.set("agent", new TokenBucket(0.001, 2));
    });
    const post = () =>
      fetchWorker(`/api/sessions/${s.session_id}/calls?wait=0`, authed(s.agent_token, { method: "POST", body: JSON.stringify({ name: "note" }) }));
    expect((await post()).status).toBe(202);
    expect((await post()).status).toBe(202);
    const third = await post();
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
  });

  it("regression: registrations of clients away for 7 days are dropped by the alarm", async () => {
    const { s, agent, app } = await pair([NOTE]);
    app.close();
    await app.closedWith();
    await runInDurableObject(stubOf(s.session_id), (_o, st) => {
      st.storage.sql.exec("UPDATE registrations SET seen_at = ?", Date.now() - LIMITS.registrationIdleMs - 1);
    });
    await runDurableObjectAlarm(stubOf(s.session_id));
    const list = await agent.next("tool.list");
    expect(list.tools).toEqual([]);
    const rows = await runInDurableObject(stubOf(s.session_id), (_o, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM registrations").one().n);
    expect(rows).toBe(0);
    agent.close();
  });
});

describe("history pages", () => {
  it("reads the whole kept history page by page, newest page first, each entry with its seq", async () => {
    const { s, agent, app } = await pair([NOTE]);
    for (let i = 0; i < 230; i++) agent.send({ type: "message", id: `m${i}`, content: [{ type: "text", text: `n${i}` }] });
    for (let i = 0; i < 230; i++) await app.next("message");
    const seen: string[] = [];
    let before: number | null | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const q = before === undefined ? "?limit=60" : `?limit=60&before=${before}`;
      const res = await fetchWorker(`/api/sessions/${s.session_id}/messages${q}`, authed(s.app_token));
      expect(res.status).toBe(200);
      const page = (await res.json()) as { messages: { id: string; seq: number }[]; before: number | null };
      seen.unshift(...page.messages.map((m) => m.id));
      expect(page.messages.every((m) => typeof m.seq === "number")).toBe(true);
      before = page.before;
      if (before === null) break;
    }
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => `m${i + 30}`));
    expect((await fetchWorker(`/api/sessions/${s.session_id}/messages?before=abc`, authed(s.app_token))).status).toBe(400);
    expect((await fetchWorker(`/api/sessions/${s.session_id}/messages`)).status).toBe(401);
    closeAll(agent, app);
  }, 60_000);

  it("regression: after many ~1 MiB messages the status still answers, within the history budget", async () => {
    const { s, agent, app } = await pair([NOTE]);
    const img = "iVBORw0KGgo".repeat(72_000); // ~790 KB of base64 text
    for (let i = 0; i < 24; i++) {
      agent.send({ type: "message", id: `i${i}`, content: [{ type: "image", data: img, mimeType: "image/png" }] });
      await app.next("message", 15_000);
    }
    const res = await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.app_token));
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text.length).toBeLessThan(LIMITS.historyBudgetBytes + 1024 * 1024);
    const st = JSON.parse(text) as { messages: { id: string; elided?: boolean }[] };
    expect(st.messages.map((m) => m.id)).toEqual(Array.from({ length: 24 }, (_, i) => `i${i}`));
    expect(st.messages[0]!.elided).toBe(true);
    expect(st.messages[23]!.elided).toBeUndefined();
    closeAll(agent, app);
  }, 90_000);
});
