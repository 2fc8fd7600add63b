// §4.7: timeout_s defaults to 600 and is clamped to 1…86400; at the deadline the caller gets a timeout
// result and providers a timeout cancel. Deadlines live in SQLite and the object's one alarm.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ASK, CHOICE, closeAll, evict, getStatus, isCall, isCancel, isError, isResult, pair, reconnect, sync, type Evict } from "./contract-fixtures.js";
import { stubOf } from "./helpers.js";

const alarmOf = (sid: string) => runInDurableObject(stubOf(sid), (_i, state) => state.storage.getAlarm());

describe("deadline of a call", () => {
  it.each([
    [undefined, 600],
    [30, 30],
    [0, 1],
    [0.2, 1],
    [-5, 1],
    [86_400, 86_400],
    [1e9, 86_400],
    [2.5, 2.5],
  ] as const)("timeout_s %s gives a deadline %s s after the call", async (given, seconds) => {
    const { agent, app } = await pair([CHOICE]);
    const before = Date.now();
    agent.send({ type: "tool.call", call_id: "t", name: "choice", arguments: ASK, ...(given === undefined ? {} : { timeout_s: given }) });
    const call = await app.next(isCall("t"));
    const after = Date.now();
    expect(call.deadline).toBeGreaterThanOrEqual(before + seconds * 1000);
    expect(call.deadline).toBeLessThanOrEqual(after + seconds * 1000);
    // timeout_s is echoed as the caller sent it.
    expect(call.timeout_s).toBe(given);
    closeAll(agent, app);
  });

  it("the alarm is never later than the earliest due time; answered early, it fires early, changes nothing and re-arms", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "late", name: "choice", arguments: ASK, timeout_s: 300 });
    const late = await app.next(isCall("late"));
    expect(await alarmOf(s.session_id)).toBe(late.deadline);
    agent.send({ type: "tool.call", call_id: "soon", name: "choice", arguments: ASK, timeout_s: 100 });
    const soon = await app.next(isCall("soon"));
    expect(await alarmOf(s.session_id)).toBe(soon.deadline);
    app.send({ type: "tool.result", call_id: "soon", result: { message: "x" } });
    await agent.next(isResult("soon"));
    // Not moved later (no write per answer): an early alarm is harmless.
    expect(await alarmOf(s.session_id)).toBe(soon.deadline);
    await runDurableObjectAlarm(stubOf(s.session_id));
    expect(await app.none(isCancel("late"), 200)).toBe(true);
    expect(await alarmOf(s.session_id)).toBe(late.deadline);
    closeAll(agent, app);
  });
});

describe("at the deadline", () => {
  it.each(["none", "hibernate", "close"] as Evict[])(
    "the caller gets a timeout error result, providers a timeout cancel; an early or repeated alarm changes nothing (evict: %s)",
    async (mode) => {
      const { s, agent, app } = await pair([CHOICE]);
      agent.send({ type: "tool.call", call_id: "d1", name: "choice", arguments: ASK, timeout_s: 1 });
      const call = await app.next(isCall("d1"));
      // Run before the deadline (the alarm is scheduled): nothing is due yet, and the alarm is kept.
      await runDurableObjectAlarm(stubOf(s.session_id));
      expect(await alarmOf(s.session_id)).toBe(call.deadline);
      await evict(s.session_id, mode);
      let caller = agent;
      let provider = app;
      if (mode === "close") {
        await agent.closedWith();
        provider = await reconnect(s, "app", "ph");
        await provider.next(isCall("d1"));
      }
      // Past the deadline the alarm fires by itself; running it again (as a retried alarm would) is a no-op.
      await new Promise((r) => setTimeout(r, Math.max(0, Number(call.deadline) - Date.now() + 50)));
      await runDurableObjectAlarm(stubOf(s.session_id));
      if (mode !== "close") {
        const r = await caller.next(isResult("d1"), 10_000);
        expect(r).toMatchObject({ type: "tool.result", call_id: "d1", name: "choice", error: { code: "timeout" } });
        expect(r.answered_by).toBeUndefined();
      }
      expect(await provider.next(isCancel("d1"), 10_000)).toEqual({ type: "tool.cancel", call_id: "d1", reason: "timeout" });
      await runDurableObjectAlarm(stubOf(s.session_id));
      if (mode === "close") {
        // The caller was away at the deadline: the timeout result waits for it.
        caller = await reconnect(s, "agent", "ag");
        expect((await caller.next(isResult("d1"))).error).toMatchObject({ code: "timeout" });
      }
      expect(await caller.none(isResult("d1"))).toBe(true);
      expect(await provider.none(isCancel("d1"))).toBe(true);
      // A late answer is refused and changes nothing.
      provider.send({ type: "tool.result", call_id: "d1", result: { message: "late" } });
      await provider.next(isError("unknown_call"));
      expect(await caller.none(isResult("d1"))).toBe(true);
      expect((await getStatus(s)).pending_calls).toBe(0);
      closeAll(caller, provider);
    },
  );

  it("a queued call with no provider still expires", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    app.close();
    await agent.next((f) => f.type === "presence" && f.apps === 0);
    agent.send({ type: "tool.call", call_id: "q1", name: "choice", arguments: ASK, timeout_s: 1 });
    await sync(agent);
    await evict(s.session_id, "hibernate");
    expect((await agent.next(isResult("q1"), 10_000)).error).toMatchObject({ code: "timeout" });
    // The provider that comes back later does not get the dead call.
    const back = await reconnect(s, "app", "ph");
    expect(await back.none(isCall("q1"))).toBe(true);
    closeAll(agent, back);
  });
});
