// The call book (shared/client/call-book.ts): frames in, effects out — the caller side (agent, MCP link) and
// the provider side (PWA, an agent's own tools), with no socket, no timer and no crypto.
import { describe, expect, it } from "vitest";
import { CallBook, type CallFrame, type Effect } from "../../shared/client/call-book.js";
import type { ToolCallOut } from "../../shared/contract/protocol.js";

const call = (id: string, extra: Partial<CallFrame> = {}): CallFrame => ({
  type: "tool.call",
  call_id: id,
  name: "confirm",
  arguments: { text: "ok?" },
  ...extra,
});
const incoming = (id: string): ToolCallOut => ({ type: "tool.call", call_id: id, name: "confirm", arguments: { text: "ok?" }, deadline: 1, from: "agent" });
const sent = (fx: Effect[]) => fx.flatMap((e) => (e.kind === "send" ? [e.frame] : []));
const kinds = (fx: Effect[]) => fx.map((e) => e.kind);

describe("call book, caller side", () => {
  it("sends a call at once when online, and keeps it for after the next hello when offline", () => {
    const b = new CallBook();
    expect(b.call(call("c1"))).toEqual([]);
    expect(sent(b.hello())).toEqual([call("c1")]);
    expect(sent(b.call(call("c2")))).toEqual([call("c2")]);
  });

  it("re-sends only the OPEN calls after a reconnect, never a settled one", () => {
    const b = new CallBook();
    b.hello();
    b.call(call("c1"));
    b.call(call("c2"));
    b.receive({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes" } });
    b.down();
    expect(sent(b.hello())).toEqual([call("c2")]);
  });

  it("settles a call once with its result and acks it; a repeated result is acked again and delivered to nobody", () => {
    const b = new CallBook();
    b.hello();
    b.call(call("c1"));
    const first = b.receive({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes" } });
    expect(first).toEqual([
      { kind: "settled", callId: "c1", outcome: { result: { message: "yes" } } },
      { kind: "send", frame: { type: "tool.ack", call_id: "c1" } },
    ]);
    expect(b.receive({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes" } })).toEqual([
      { kind: "send", frame: { type: "tool.ack", call_id: "c1" } },
    ]);
  });

  it("keeps a result of an earlier run unacked until a call claims it by id, then settles and acks it", () => {
    const b = new CallBook();
    b.hello();
    expect(kinds(b.receive({ type: "tool.result", call_id: "old", name: "confirm", error: { code: "timeout", message: "late" } }))).toEqual(["unclaimed"]);
    expect(b.claim("nope")).toBeUndefined();
    expect(b.claim("old")).toEqual([
      { kind: "settled", callId: "old", outcome: { error: { code: "timeout", message: "late" } } },
      { kind: "send", frame: { type: "tool.ack", call_id: "old" } },
    ]);
    expect(b.claim("old")).toBeUndefined();
  });

  it("a relay error naming an open call settles it with that error; unknown_call does not", () => {
    const b = new CallBook();
    b.hello();
    b.call(call("c1"));
    expect(kinds(b.receive({ type: "error", code: "unknown_call", message: "?", call_id: "c1" }))).toEqual(["log"]);
    expect(b.isPending("c1")).toBe(true);
    expect(b.receive({ type: "error", code: "tool_conflict", message: "bad", call_id: "c1" })[0]).toEqual({
      kind: "settled",
      callId: "c1",
      outcome: { error: { code: "tool_conflict", message: "bad" } },
    });
  });

  it("an abort settles the call and cancels it on the relay, now or — offline — right after the next hello", () => {
    const b = new CallBook();
    b.call(call("c1"));
    expect(kinds(b.abort("c1", "aborted", { code: "cancelled", message: "aborted" }))).toEqual(["settled"]);
    expect(sent(b.hello())).toEqual([{ type: "tool.cancel", call_id: "c1", reason: "aborted" }]);
    b.call(call("c2"));
    expect(sent(b.abort("c2", "timeout", { code: "timeout", message: "late" }))).toEqual([{ type: "tool.cancel", call_id: "c2", reason: "timeout" }]);
    expect(b.abort("c2", "timeout", { code: "timeout", message: "late" })).toEqual([]);
  });

  it("rate limited: asks once for a later re-send of the open calls", () => {
    const b = new CallBook();
    b.hello();
    b.call(call("c1"));
    expect(b.receive({ type: "error", code: "rate_limited", message: "slow" })[0]).toEqual({ kind: "retry", afterMs: 1000 });
    expect(kinds(b.receive({ type: "error", code: "rate_limited", message: "slow" }))).toEqual(["log"]);
    expect(sent(b.resendCalls())).toEqual([call("c1")]);
  });

  it("stopping ends every open call with the stop's error", () => {
    const b = new CallBook();
    b.call(call("c1"));
    expect(b.stop({ code: "replaced", message: "4409" })).toEqual([
      { kind: "settled", callId: "c1", outcome: { error: { code: "replaced", message: "4409" } } },
    ]);
    expect(b.pendingCount).toBe(0);
  });

  it("queues messages offline (bounded, oldest dropped) and re-sends the latest status after every hello", () => {
    const b = new CallBook({ outboxLimit: 2 });
    for (const id of ["m1", "m2", "m3"]) b.message({ type: "message", id, content: [{ type: "text", text: id }] });
    b.status({ type: "status", state: "working" });
    const fx = b.hello();
    expect(sent(fx).map((f) => ("id" in f ? f.id : f.type))).toEqual(["m2", "m3", "status"]);
    expect(kinds(fx).filter((k) => k === "delivered")).toHaveLength(2);
    b.down();
    expect(sent(b.hello())).toEqual([{ type: "status", state: "working" }]);
  });
});

describe("call book, sealed sessions", () => {
  it("stale_epoch on an open call: fetch the key, re-seal the call and send it again — at most three times, then it fails", () => {
    const b = new CallBook();
    b.sealed = true;
    b.hello();
    b.call(call("c1"));
    for (let i = 0; i < 3; i++)
      expect(b.receive({ type: "error", code: "stale_epoch", message: "old", call_id: "c1" })).toEqual([
        { kind: "refresh" },
        { kind: "reseal", call: call("c1"), alsoCall: true },
      ]);
    const last = b.receive({ type: "error", code: "stale_epoch", message: "old", call_id: "c1" });
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({ kind: "settled", callId: "c1", outcome: { error: { code: "stale_epoch" } } });
  });

  it("stale_epoch naming no call: the registration, the status and the recent messages go out again", () => {
    const b = new CallBook();
    b.sealed = true;
    b.provide([{ type: "action", name: "t", description: "d", inputSchema: { type: "object" } }]);
    b.hello();
    b.status({ type: "status", state: "s" });
    b.message({ type: "message", id: "m1", content: [{ type: "text", text: "hi" }] });
    expect(sent(b.receive({ type: "error", code: "stale_epoch", message: "old" })).map((f) => f.type)).toEqual(["tool.list", "status", "message"]);
  });

  it("a new key epoch re-seals only the calls already sent, then registers and sends the status again", () => {
    const b = new CallBook();
    b.sealed = true;
    b.call(call("c0"));
    b.hello();
    b.status({ type: "status", state: "s" });
    expect(kinds(b.newEpoch())).toEqual(["reseal", "send"]);
  });

  it("a sealed duplicate_call for a re-run's own call id is ours: the call stays open", () => {
    const b = new CallBook();
    b.sealed = true;
    b.hello();
    b.call(call("c1"), true);
    expect(kinds(b.receive({ type: "error", code: "duplicate_call", message: "dup", call_id: "c1" }))).toEqual(["log"]);
    expect(b.isPending("c1")).toBe(true);
  });
});

describe("call book, provider side", () => {
  it("hands a call over once; a repeat delivery of an open call is ignored", () => {
    const b = new CallBook();
    b.hello();
    expect(b.receive(incoming("k1"))).toEqual([{ kind: "call", call: incoming("k1") }]);
    expect(b.receive(incoming("k1"))).toEqual([]);
  });

  it("re-sends a kept answer when the relay delivers the call again on a new connection, not twice on one", () => {
    const b = new CallBook();
    b.hello();
    b.receive(incoming("k1"));
    expect(sent(b.answer(incoming("k1"), { result: { message: "yes" } }))).toHaveLength(1);
    expect(b.receive(incoming("k1"))).toEqual([]); // same connection: the answer is on its way
    b.down();
    b.hello();
    expect(sent(b.receive(incoming("k1")))).toEqual([{ type: "tool.result", call_id: "k1", name: "confirm", result: { message: "yes" } }]);
  });

  it("queues an answer made offline and sends it after hello, then the call's repeat delivery sends nothing more", () => {
    const b = new CallBook();
    b.receive(incoming("k1"));
    expect(b.answer(incoming("k1"), { result: { message: "yes" } })).toEqual([]);
    expect(b.isQueued("k1")).toBe(true);
    const fx = b.hello();
    expect(sent(fx)).toEqual([{ type: "tool.result", call_id: "k1", name: "confirm", result: { message: "yes" } }]);
    expect(kinds(fx)).toContain("delivered");
    expect(b.receive(incoming("k1"))).toEqual([]);
  });

  it("a cancel closes an open call; answered elsewhere while our answer was queued, ours is lost and never sent", () => {
    const b = new CallBook();
    b.receive(incoming("k1"));
    b.receive(incoming("k2"));
    expect(b.receive({ type: "tool.cancel", call_id: "k1", reason: "timeout" })).toEqual([
      { kind: "cancel", frame: { type: "tool.cancel", call_id: "k1", reason: "timeout" } },
    ]);
    b.answer(incoming("k2"), { result: { message: "mine" } });
    const cancel = { type: "tool.cancel", call_id: "k2", reason: "answered", answered_by: "tablet" } as const;
    expect(b.receive(cancel)).toEqual([{ kind: "lost", callId: "k2", cancel }]);
    expect(sent(b.hello()).filter((f) => f.type === "tool.result")).toEqual([]);
  });

  it("who won: a cancel{answered} that overtakes our sent answer is its loss, naming the winner; the refusal after it adds nothing", () => {
    const b = new CallBook();
    b.hello();
    b.receive(incoming("k1"));
    b.answer(incoming("k1"), { result: { message: "no" } });
    const cancel = { type: "tool.cancel", call_id: "k1", reason: "answered", answered_by: "iPhone · Safari", answer: "yes" } as const;
    expect(b.receive(cancel)).toEqual([{ kind: "lost", callId: "k1", cancel }]);
    expect(kinds(b.receive({ type: "error", code: "unknown_call", message: "closed", call_id: "k1" }))).toEqual(["log"]);
  });

  it("unknown_call after our answer: the answer lost the race", () => {
    const b = new CallBook();
    b.hello();
    b.receive(incoming("k1"));
    b.answer(incoming("k1"), { result: { message: "late" } });
    expect(kinds(b.receive({ type: "error", code: "unknown_call", message: "closed", call_id: "k1" }))).toEqual(["lost", "log"]);
  });

  it("with catch-up: says it caught up only once the catalog query is answered, and again not after the connection drops", () => {
    const b = new CallBook({ catchUp: true, unclaimed: "ack" });
    b.provide([]);
    expect(b.caughtUp).toBe(false);
    b.hello();
    b.receive({ type: "tool.list", tools: [] }); // the catalog the relay sends with hello
    expect(b.caughtUp).toBe(false);
    b.receive({ type: "tool.list", tools: [] }); // the answer to the query: the catch-up is over
    expect(b.caughtUp).toBe(true);
    b.down();
    expect(b.caughtUp).toBe(false);
  });

  it("with catch-up: registers, queries the catalog, and after its answer names the open calls the relay did not deliver again", () => {
    const b = new CallBook({ catchUp: true, unclaimed: "ack" });
    b.provide([]);
    b.receive(incoming("k1"));
    b.receive(incoming("k2"));
    expect(sent(b.hello())).toEqual([{ type: "tool.list", tools: [] }, { type: "tool.list" }]);
    b.receive(incoming("k2"));
    expect(b.receive({ type: "tool.list", tools: [] })).toEqual([]);
    expect(b.receive({ type: "tool.list", tools: [] })).toEqual([{ kind: "gone", callIds: ["k1"] }]);
    // A call that closed here and is delivered again is handed over again.
    expect(b.receive(incoming("k1"))).toEqual([{ kind: "call", call: incoming("k1"), again: true }]);
    // This side makes no calls: a stray result is acked at once.
    expect(sent(b.receive({ type: "tool.result", call_id: "x", name: "n", result: { message: "" } }))).toEqual([{ type: "tool.ack", call_id: "x" }]);
  });

  it("adopts calls a host kept across a reload, and re-queues its saved outbox", () => {
    const b = new CallBook();
    b.adopt(incoming("k1"), "answered", { type: "tool.result", call_id: "k1", name: "confirm", result: { message: "y" } });
    b.requeue([{ type: "message", id: "m1", content: [{ type: "text", text: "hi" }] }]);
    expect(b.queued).toHaveLength(1);
    b.hello();
    expect(sent(b.receive(incoming("k1")))).toHaveLength(1);
  });
});
