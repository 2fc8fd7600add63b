// §4.9–4.11: the object is evicted (memory wiped; sockets hibernated, or closed as a deploy does) between
// every pair of steps of a call's life, alone and all at once. Nothing is lost, and the caller's code —
// which de-duplicates by call_id, as the adapter does — sees exactly one result.
import { describe, expect, it } from "vitest";
import { fetchWorker } from "../helpers.js";
import { CALC, evictAndRecover, isCall, isResult, Party, session, type Mode } from "./party.js";

const MODES: Mode[] = ["hibernate", "close"];
const QUEUED_GAPS = [
  "call sent (queued) → delivered",
  "delivered → result sent",
  "result kept → result delivered",
  "result delivered → ack",
  "ack → caller back",
] as const;
const ONLINE_GAPS = ["call delivered → result sent", "result delivered → ack", "ack → caller back"] as const;

async function pendingCalls(sid: string, token: string): Promise<number> {
  const r = await fetchWorker(`/api/sessions/${sid}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await r.json()) as { pending_calls: number }).pending_calls;
}

/** The relay-side errors a party got, except the answers to its own sync barriers. */
const strayErrors = (p: Party) => p.conns.flat().filter((f) => f.type === "error" && !String(f.call_id).startsWith("barrier-"));

function expectDeliveredOnce(ag: Party, ph: Party, callId: string, answer: string) {
  // Nothing lost: the caller's code got the result; nothing twice: every copy is the same frame, and the
  // relay sent at most one copy per connection (a repeat only ever comes on a new connection).
  const got = ag.handled("tool.result");
  expect([...got.keys()]).toEqual([callId]);
  expect(got.get(callId)).toEqual({ type: "tool.result", call_id: callId, name: "calc", result: { message: answer }, answered_by: "ph" });
  for (const f of ag.copies("tool.result", callId)) expect(f).toEqual(got.get(callId));
  for (const n of ag.countPerConn("tool.result", callId)) expect(n).toBeLessThanOrEqual(1);
  // After the ack the relay forgets the result: the caller's last connection gets no copy.
  expect(ag.countPerConn("tool.result", callId).at(-1)).toBe(0);
  // The provider's code saw the call once (copies on later connections are the same call, same deadline).
  const calls = ph.copies("tool.call", callId);
  expect(calls.length).toBeGreaterThanOrEqual(1);
  for (const f of calls) expect(f).toEqual(calls[0]);
  for (const n of ph.countPerConn("tool.call", callId)) expect(n).toBeLessThanOrEqual(1);
  expect(strayErrors(ag)).toEqual([]);
  expect(strayErrors(ph)).toEqual([]);
}

describe("eviction between every pair of steps of a call's life", () => {
  const cases: [Mode, string, number[]][] = [];
  for (const mode of MODES) {
    QUEUED_GAPS.forEach((g, i) => cases.push([mode, g, [i]]));
    cases.push([mode, "every gap", QUEUED_GAPS.map((_, i) => i)]);
  }

  it.each(cases)("queued call, evict (%s) at: %s", async (mode, _label, gaps) => {
    const s = await session();
    const ag = new Party(s, "agent", "ag");
    const ph = new Party(s, "app", "ph");
    const gap = async (i: number) => {
      if (gaps.includes(i)) await evictAndRecover(s, mode, [ag, ph]);
    };
    await ph.connect();
    ph.send({ type: "tool.list", tools: [CALC] });
    await ph.sync();
    await ph.leave();
    await ag.connect();
    ag.send({ type: "tool.call", call_id: "c1", name: "calc", arguments: { a: 2, b: 3 }, timeout_s: 60 });
    await ag.sync();
    expect(ag.copies("tool.result", "c1")).toEqual([]); // queued for the absent provider, not failed

    await gap(0);
    await ph.connect();
    await ph.next(isCall("c1"));
    await gap(1);
    await ag.leave();
    ph.send({ type: "tool.result", call_id: "c1", name: "calc", result: { message: "5" } });
    await ph.sync();
    await gap(2);
    await ag.connect();
    await ag.next(isResult("c1"));
    await gap(3);
    ag.send({ type: "tool.ack", call_id: "c1" });
    await ag.sync();
    await gap(4);
    await ag.leave();
    await ag.connect();
    await ag.sync();

    expectDeliveredOnce(ag, ph, "c1", "5");
    expect(await pendingCalls(s.session_id, s.agent_token)).toBe(0);
    await ag.leave();
    await ph.leave();
  });

  const online: [Mode, string, number[]][] = [];
  for (const mode of MODES) {
    ONLINE_GAPS.forEach((g, i) => online.push([mode, g, [i]]));
    online.push([mode, "every gap", ONLINE_GAPS.map((_, i) => i)]);
  }

  it.each(online)("both online, evict (%s) at: %s", async (mode, _label, gaps) => {
    const s = await session();
    const ag = new Party(s, "agent", "ag");
    const ph = new Party(s, "app", "ph");
    const gap = async (i: number) => {
      if (gaps.includes(i)) await evictAndRecover(s, mode, [ag, ph]);
    };
    await ph.connect();
    ph.send({ type: "tool.list", tools: [CALC] });
    await ph.sync();
    await ag.connect();
    ag.send({ type: "tool.call", call_id: "c2", name: "calc", arguments: { a: 1, b: 1 }, timeout_s: 60 });
    await ph.next(isCall("c2"));
    await gap(0);
    ph.send({ type: "tool.result", call_id: "c2", name: "calc", result: { message: "2" } });
    await ph.sync();
    // After a "close" eviction the caller reconnected before the result: it must still get it.
    await ag.next(isResult("c2"));
    await gap(1);
    ag.send({ type: "tool.ack", call_id: "c2" });
    await ag.sync();
    await gap(2);
    await ag.leave();
    await ag.connect();
    await ag.sync();

    expectDeliveredOnce(ag, ph, "c2", "2");
    expect(await pendingCalls(s.session_id, s.agent_token)).toBe(0);
    await ag.leave();
    await ph.leave();
  });
});
