// "A deploy drops every socket": calls at every stage of their life when all sockets close at once
// (evictDurableObject with webSockets "close"), three times over. Clients reconnect with their client ids;
// nothing is lost, the caller's code (de-dup by call_id) gets each result once, and the relay re-sends a
// kept result only on a reconnect, never twice on one connection.
import { describe, expect, it } from "vitest";
import { CALC, evictAndRecover, Party, session } from "./party.js";

const N = 30;
const ids = Array.from({ length: N }, (_, i) => `d${i}`);

describe("every socket dropped mid-call, as a deploy does", () => {
  it("loses nothing and delivers nothing twice across three deploys", async () => {
    const s = await session();
    const ag = new Party(s, "agent", "ag");
    const apps = [new Party(s, "app", "ph1"), new Party(s, "app", "ph2")];
    const all = [ag, ...apps];
    for (const a of apps) {
      await a.connect();
      a.send({ type: "tool.list", tools: [CALC] });
      await a.sync();
    }
    await ag.connect();
    for (const [i, id] of ids.entries()) ag.send({ type: "tool.call", call_id: id, name: "calc", arguments: { a: i, b: 1 }, timeout_s: 300 });
    await ag.sync();

    // Provider code: answers each call it has not answered yet, once (de-dup by call_id), split by index.
    const answered = new Set<string>();
    const answer = async (which: (i: number) => boolean) => {
      for (const [pi, a] of apps.entries()) {
        for (const [i, id] of ids.entries()) {
          if (answered.has(id) || !which(i) || i % 2 !== pi) continue;
          if (!a.copies("tool.call", id).length) await a.next((f) => f.type === "tool.call" && f.call_id === id);
          answered.add(id);
          a.send({ type: "tool.result", call_id: id, name: "calc", result: { message: String(i + 1) } });
        }
        await a.sync();
      }
    };
    const ackUpTo = async (n: number) => {
      for (const id of ids.slice(0, n)) {
        if (ag.handled("tool.result").has(id)) ag.send({ type: "tool.ack", call_id: id });
      }
      await ag.sync();
    };

    // Stage 1: a third answered and acked, a third answered but not acked, a third open — then a deploy.
    await answer((i) => i < 20);
    await ag.sync();
    await ackUpTo(10);
    await evictAndRecover(s, "close", all);
    // Stage 2: half of the open ones answered while the caller is away, then another deploy.
    await ag.leave();
    await answer((i) => i < 25);
    await evictAndRecover(s, "close", all);
    await ag.connect();
    // Stage 3: the rest answered, another deploy, then everything acked.
    await answer(() => true);
    await ag.sync();
    await evictAndRecover(s, "close", all);
    await ag.sync();
    await ackUpTo(N);
    await ag.leave();
    await ag.connect();
    await ag.sync();

    const got = ag.handled("tool.result");
    expect([...got.keys()].sort()).toEqual([...ids].sort());
    for (const [i, id] of ids.entries()) {
      expect(got.get(id)).toMatchObject({ call_id: id, result: { message: String(i + 1) }, answered_by: i % 2 === 0 ? "ph1" : "ph2" });
      for (const f of ag.copies("tool.result", id)) expect(f).toEqual(got.get(id));
      for (const n of ag.countPerConn("tool.result", id)) expect(n).toBeLessThanOrEqual(1);
      expect(ag.countPerConn("tool.result", id).at(-1)).toBe(0); // acked: never sent again
    }
    // Acked before the first deploy: never re-sent on any later connection.
    for (const id of ids.slice(0, 10))
      expect(ag.countPerConn("tool.result", id).slice(1)).toEqual(
        ag
          .countPerConn("tool.result", id)
          .slice(1)
          .map(() => 0),
      );
    // Answered but not acked at a deploy: re-sent on the reconnect right after hello (before any presence).
    const conn2 = ag.conns[1]!;
    const firstPresence = conn2.findIndex((f) => f.type === "presence");
    for (const id of ids.slice(10, 20)) {
      const at = conn2.findIndex((f) => f.type === "tool.result" && f.call_id === id);
      expect(at).toBeGreaterThan(0);
      if (firstPresence >= 0) expect(at).toBeLessThan(firstPresence);
    }
    // No error frames except the answers to our own barriers; nobody was told a call failed.
    for (const p of all) expect(p.conns.flat().filter((f) => f.type === "error" && !String(f.call_id).startsWith("barrier-"))).toEqual([]);
    expect(ag.conns.flat().filter((f) => f.type === "tool.result" && f.error)).toEqual([]);
    for (const p of all) await p.leave();
  });
});
