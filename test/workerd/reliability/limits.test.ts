// §4.2, §4.5, §4.7, §6 under pressure: a session full of open calls, the alarm handler run twice for one
// deadline, and a storm of duplicate and late results. Every call ends exactly once.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Session } from "../../../worker/session.js";
import { fetchWorker, stubOf } from "../helpers.js";
import { CALC, isCall, isCancel, isResult, Party, session } from "./party.js";

const MAX = 1000;
// The rate limit is per connection: the load is spread over five connections of each side.
const LANES = 5;

async function pendingCalls(sid: string, token: string): Promise<number> {
  const r = await fetchWorker(`/api/sessions/${sid}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await r.json()) as { pending_calls: number }).pending_calls;
}

describe("limits", () => {
  it(`holds ${MAX} open calls, refuses call ${MAX + 1} with too_many_calls, then answers all ${MAX}`, { timeout: 120_000 }, async () => {
    const s = await session();
    const apps = Array.from({ length: LANES }, (_, i) => new Party(s, "app", `ph${i}`));
    const agents = Array.from({ length: LANES }, (_, i) => new Party(s, "agent", `ag${i}`));
    for (const a of apps) {
      await a.connect();
      a.send({ type: "tool.list", tools: [CALC] });
      await a.sync();
    }
    for (const g of agents) await g.connect();
    const id = (i: number) => `m${i}`;
    const t0 = Date.now();
    for (let k = 0; k < LANES; k++) {
      const t1 = Date.now();
      for (let i = k * (MAX / LANES); i < (k + 1) * (MAX / LANES); i++)
        agents[k]!.send({ type: "tool.call", call_id: id(i), name: "calc", arguments: { a: i, b: 0 }, timeout_s: 600 });
      await agents[k]!.sync(40_000);
      console.log(`calls ${k * (MAX / LANES)}..: ${Date.now() - t1} ms`);
    }
    console.log(`${MAX} calls stored and delivered to ${LANES} apps in ${Date.now() - t0} ms`);
    expect(await pendingCalls(s.session_id, s.agent_token)).toBe(MAX);

    agents[0]!.send({ type: "tool.call", call_id: "over", name: "calc", arguments: { a: 0, b: 0 } });
    expect(await agents[0]!.next(isResult("over"))).toMatchObject({ call_id: "over", error: { code: "too_many_calls" } });
    expect(await pendingCalls(s.session_id, s.agent_token)).toBe(MAX);

    // Every app received every call; lane i answers the calls with index ≡ i (mod LANES).
    await apps[LANES - 1]!.next(isCall(id(MAX - 1)), 60_000);
    for (const [li, a] of apps.entries()) {
      for (let i = li; i < MAX; i += LANES) a.send({ type: "tool.result", call_id: id(i), name: "calc", result: { message: String(i) } });
      await a.sync();
    }
    const lane = (i: number) => Math.floor(i / (MAX / LANES));
    for (const [li, g] of agents.entries()) {
      for (let i = li * (MAX / LANES); i < (li + 1) * (MAX / LANES); i++) await g.next(isResult(id(i)), 60_000);
      await g.sync();
    }
    for (let i = 0; i < MAX; i++) {
      const copies = agents[lane(i)]!.copies("tool.result", id(i));
      expect(copies).toHaveLength(1);
      expect(copies[0]).toMatchObject({ result: { message: String(i) }, answered_by: `ph${i % LANES}` });
    }
    // Results reach only their own caller.
    for (const [li, g] of agents.entries())
      expect(g.conns.flat().filter((f) => f.type === "tool.result" && f.call_id !== "over" && lane(Number(String(f.call_id).slice(1))) !== li)).toEqual([]);
    expect(await pendingCalls(s.session_id, s.agent_token)).toBe(0);
    // Room again: a new call goes through.
    agents[0]!.send({ type: "tool.call", call_id: "after", name: "calc", arguments: { a: 1, b: 2 } });
    await apps[0]!.next(isCall("after"));
    apps[0]!.send({ type: "tool.result", call_id: "after", name: "calc", result: { message: "3" } });
    expect(await agents[0]!.next(isResult("after"))).toMatchObject({ result: { message: "3" } });
    for (const p of [...apps, ...agents]) await p.leave();
  });

  it("the alarm handler run twice for the same deadline closes the call once", { timeout: 20_000 }, async () => {
    const s = await session();
    const ph = new Party(s, "app", "ph");
    const ag = new Party(s, "agent", "ag");
    await ph.connect();
    ph.send({ type: "tool.list", tools: [CALC] });
    await ph.sync();
    await ag.connect();
    ag.send({ type: "tool.call", call_id: "t1", name: "calc", arguments: { a: 1, b: 1 }, timeout_s: 1 });
    await ph.next(isCall("t1"));
    await new Promise((r) => setTimeout(r, 1100)); // past the deadline (the real alarm may fire too)
    const stub = stubOf(s.session_id);
    // At-least-once alarms: the scheduled alarm, and the handler invoked again directly, back to back and at once.
    await runDurableObjectAlarm(stub);
    await runInDurableObject(stub, (o: Session) => o.alarm());
    await Promise.all([runInDurableObject(stub, (o: Session) => o.alarm()), runInDurableObject(stub, (o: Session) => o.alarm()), runDurableObjectAlarm(stub)]);
    await ag.next(isResult("t1"));
    await ph.next(isCancel("t1"));
    await ag.sync();
    await ph.sync();
    expect(ag.copies("tool.result", "t1")).toHaveLength(1);
    expect(ag.copies("tool.result", "t1")[0]).toMatchObject({ error: { code: "timeout" } });
    expect(ph.copies("tool.cancel", "t1")).toEqual([{ type: "tool.cancel", call_id: "t1", reason: "timeout" }]);
    // A late answer after the timeout changes nothing.
    ph.send({ type: "tool.result", call_id: "t1", name: "calc", result: { message: "2" } });
    expect(await ph.next((f) => f.type === "error" && f.call_id === "t1")).toMatchObject({ code: "unknown_call" });
    await ag.sync();
    expect(ag.copies("tool.result", "t1")).toHaveLength(1);
    await ag.leave();
    await ph.leave();
  });

  it("a storm of duplicate, racing and late results: first answer wins, every other one is refused", { timeout: 30_000 }, async () => {
    const s = await session();
    const apps = [0, 1, 2].map((i) => new Party(s, "app", `ph${i}`));
    const ag = new Party(s, "agent", "ag");
    for (const a of apps) {
      await a.connect();
      a.send({ type: "tool.list", tools: [CALC] });
      await a.sync();
    }
    await ag.connect();
    const CALLS = 20;
    const REPEATS = 4;
    for (let i = 0; i < CALLS; i++) ag.send({ type: "tool.call", call_id: `s${i}`, name: "calc", arguments: { a: i, b: 0 } });
    for (const a of apps) await a.next(isCall(`s${CALLS - 1}`));
    // Every app answers every call REPEATS times, interleaved, plus results for calls that never existed.
    for (let r = 0; r < REPEATS; r++) {
      for (let i = 0; i < CALLS; i++)
        for (const [ai, a] of apps.entries()) a.send({ type: "tool.result", call_id: `s${i}`, name: "calc", result: { message: `${ai}:${r}` } });
      for (const a of apps) a.send({ type: "tool.result", call_id: `ghost${r}`, name: "calc", result: { message: "?" } });
    }
    // The caller also repeats its calls: identical repeats are no-ops (or re-send the kept result),
    // a changed repeat is a duplicate_call.
    for (let i = 0; i < CALLS; i++) ag.send({ type: "tool.call", call_id: `s${i}`, name: "calc", arguments: { a: i, b: 0 } });
    ag.send({ type: "tool.call", call_id: "s0", name: "calc", arguments: { a: 99, b: 0 } });
    for (const a of apps) await a.sync();
    await ag.sync();

    const results = ag.handled("tool.result");
    let refused = 0;
    for (const a of apps)
      refused += a.conns.flat().filter((f) => f.type === "error" && f.code === "unknown_call" && !String(f.call_id).startsWith("barrier-")).length;
    // Exactly one accepted result per call; everything else refused with unknown_call.
    expect(refused).toBe(apps.length * (CALLS + 1) * REPEATS - CALLS);
    for (let i = 0; i < CALLS; i++) {
      const first = results.get(`s${i}`)!;
      expect(first.result).toBeDefined();
      const winner = String(first.answered_by);
      // The winner's first answer is the one delivered; the others got tool.cancel "answered".
      expect((first.result as { message: string }).message).toBe(`${winner.slice(2)}:0`);
      for (const a of apps) {
        const cancels = a.copies("tool.cancel", `s${i}`);
        expect(cancels).toEqual(a.clientId === winner ? [] : [{ type: "tool.cancel", call_id: `s${i}`, reason: "answered" }]);
      }
      // Identical repeats after the result re-send the same kept result (never a different one).
      for (const f of ag.copies("tool.result", `s${i}`)) expect(f).toEqual(first);
    }
    expect(ag.conns.flat().filter((f) => f.type === "error")).toEqual([
      expect.objectContaining({ code: "duplicate_call", call_id: "s0" }),
      ...ag.conns.flat().filter((f) => f.type === "error" && String(f.call_id).startsWith("barrier-")),
    ]);
    for (const p of [...apps, ag]) await p.leave();
  });
});
