// The transport seam (shared/client/paths.ts, issue 32): an agent's and a device's call books joined by two
// fake paths — a relay that keeps the call open until a result reaches it (as the session object does), and a
// direct path that hands over client frames. First answer wins, exactly once, and the relay is told.
import { describe, expect, it } from "vitest";
import { CallBook, type Effect, type Outcome } from "../../shared/client/call-book.js";
import { fromPeer, Paths } from "../../shared/client/paths.js";
import type { ClientFrame, RelayFrame, ToolCallOut } from "../../shared/contract/protocol.js";

/** A fake relay path: what each side put on it, delivered when the test says so (a stalled relay holds frames). */
class FakeRelay {
  readonly toApp: RelayFrame[] = [];
  readonly toAgent: RelayFrame[] = [];
  readonly results = new Map<string, number>();
  fromAgent(f: ClientFrame): void {
    if (f.type === "tool.call") this.toApp.push({ ...f, deadline: 1, from: "agent" } as ToolCallOut);
  }
  fromApp(f: ClientFrame): void {
    if (f.type !== "tool.result") return;
    this.results.set(f.call_id, (this.results.get(f.call_id) ?? 0) + 1);
    if (this.results.get(f.call_id) === 1) this.toAgent.push(fromPeer(f, { role: "app", clientId: "phone" }, 0) as RelayFrame);
  }
}

/** A fake direct path: open until dropped; what it carries goes straight to the other side's inbox. */
class FakeDirect {
  open = true;
  readonly carried: ClientFrame[] = [];
  constructor(private readonly deliver: (f: ClientFrame) => void) {}
  isOpen = () => this.open;
  send = (f: ClientFrame) => {
    if (!this.open) return false;
    this.carried.push(f);
    this.deliver(f);
    return true;
  };
}

function world() {
  const relay = new FakeRelay();
  const settled: { callId: string; outcome: Outcome }[] = [];
  const calls: ToolCallOut[] = [];
  const agent = { book: new CallBook(), paths: new Paths() };
  const app = { book: new CallBook({ unclaimed: "ack" }), paths: new Paths() };
  const runAgent = (fx: Effect[]) => {
    for (const e of fx) {
      if (e.kind === "send") {
        relay.fromAgent(e.frame);
        agent.paths.alsoDirect(e.frame);
      }
      if (e.kind === "settled") settled.push({ callId: e.callId, outcome: e.outcome });
    }
  };
  const runApp = (fx: Effect[]) => {
    for (const e of fx) {
      if (e.kind === "send") {
        relay.fromApp(e.frame);
        app.paths.alsoDirect(e.frame);
      }
      if (e.kind === "call") calls.push(e.call);
    }
  };
  const agentIn = (path: "relay" | "direct", f: RelayFrame) => {
    if (agent.paths.accept(path, f)) runAgent(agent.book.receive(f));
  };
  const appIn = (path: "relay" | "direct", f: RelayFrame) => {
    if (app.paths.accept(path, f)) runApp(app.book.receive(f));
  };
  const toApp = new FakeDirect((f) => appIn("direct", fromPeer(f, { role: "agent", clientId: "agent-1" }, 0) as RelayFrame));
  const toAgent = new FakeDirect((f) => agentIn("direct", fromPeer(f, { role: "app", clientId: "phone" }, 0) as RelayFrame));
  agent.paths.setDirect(toApp);
  app.paths.setDirect(toAgent);
  runAgent(agent.book.hello());
  runApp(app.book.hello());
  const relayDeliver = () => {
    for (const f of relay.toApp.splice(0)) appIn("relay", f);
    for (const f of relay.toAgent.splice(0)) agentIn("relay", f);
  };
  return { relay, settled, calls, agent, app, toApp, toAgent, runAgent, runApp, relayDeliver };
}

const CALL = { type: "tool.call", call_id: "c1", name: "confirm", arguments: { text: "ship it?" } } as const;

describe("two paths under the call books", () => {
  it("a call answered over the direct path while the relay is stalled settles once; the relay's late copies change nothing but are acked", () => {
    const w = world();
    w.runAgent(w.agent.book.call({ ...CALL }));
    expect(w.calls.map((c) => c.call_id)).toEqual(["c1"]); // came direct; the relay still holds its copy
    w.runApp(w.app.book.answer(w.calls[0]!, { result: { message: "yes" } }));
    expect(w.settled).toEqual([{ callId: "c1", outcome: { result: { message: "yes" } } }]);
    // The relay wakes up: its copy of the call and of the answer arrive too.
    w.relayDeliver();
    w.relayDeliver();
    expect(w.calls).toHaveLength(1);
    expect(w.settled).toHaveLength(1);
    // The relay was told the outcome: the device's answer went on the relay path as well.
    expect(w.relay.results.get("c1")).toBe(1);
  });

  it("when the direct path dropped mid-call, the answer still arrives over the relay, exactly once", () => {
    const w = world();
    w.runAgent(w.agent.book.call({ ...CALL }));
    w.toAgent.open = false;
    w.toApp.open = false;
    w.runApp(w.app.book.answer(w.calls[0]!, { result: { message: "no" } }));
    expect(w.settled).toEqual([]);
    w.relayDeliver();
    w.relayDeliver();
    expect(w.settled).toEqual([{ callId: "c1", outcome: { result: { message: "no" } } }]);
    expect(w.calls).toHaveLength(1);
  });

  it("both paths delivering the same answer count once, whichever comes first", () => {
    const w = world();
    w.agent.paths.setDirect(undefined); // the call goes by the relay only
    w.runAgent(w.agent.book.call({ ...CALL }));
    w.relayDeliver();
    w.runApp(w.app.book.answer(w.calls[0]!, { result: { message: "yes" } }));
    expect(w.settled).toHaveLength(1); // the direct copy came first
    w.relayDeliver();
    expect(w.settled).toHaveLength(1);
    expect(w.toAgent.carried.map((f) => f.type)).toEqual(["tool.result"]);
  });

  it("a frame repeated on the direct path is dropped; the relay's repeats always reach the call book (it relies on them after a reconnect)", () => {
    const p = new Paths();
    const call: ToolCallOut = { ...CALL, deadline: 1, from: "agent" };
    expect(p.accept("direct", call)).toBe(true);
    expect(p.accept("direct", call)).toBe(false);
    expect(p.accept("relay", call)).toBe(true);
    expect(p.accept("relay", call)).toBe(true);
    const other: ToolCallOut = { ...call, call_id: "c2" };
    expect(p.accept("relay", other)).toBe(true);
    expect(p.accept("direct", other)).toBe(false);
    // Frames without a call id are the relay's alone.
    expect(p.accept("direct", { type: "presence", agent: { online: true }, apps: 1 })).toBe(false);
  });

  it("only calls, results and cancels take the direct path; acks, lists, messages and status stay on the relay", () => {
    const sent: ClientFrame[] = [];
    const p = new Paths();
    p.setDirect({ isOpen: () => true, send: (f) => (sent.push(f), true) });
    const frames: ClientFrame[] = [
      { ...CALL },
      { type: "tool.result", call_id: "c1", result: { message: "x" } },
      { type: "tool.cancel", call_id: "c1" },
      { type: "tool.ack", call_id: "c1" },
      { type: "tool.list" },
      { type: "message", content: [{ type: "text", text: "hi" }] },
      { type: "status", state: "idle" },
    ];
    for (const f of frames) p.alsoDirect(f);
    expect(sent.map((f) => f.type)).toEqual(["tool.call", "tool.result", "tool.cancel"]);
  });

  it("gives a direct frame the relay's shape: a call's deadline from its timeout, a result's answered_by the peer", () => {
    expect(fromPeer({ ...CALL, timeout_s: 30 }, { role: "agent", clientId: "agent-1" }, 1000)).toEqual({
      ...CALL,
      timeout_s: 30,
      deadline: 31_000,
      from: "agent",
    });
    expect(fromPeer({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "y" } }, { role: "app", clientId: "phone" }, 0)).toEqual({
      type: "tool.result",
      call_id: "c1",
      name: "confirm",
      result: { message: "y" },
      answered_by: "phone",
    });
    expect(fromPeer({ type: "tool.ack", call_id: "c1" }, { role: "app", clientId: "phone" }, 0)).toBeUndefined();
  });
});
