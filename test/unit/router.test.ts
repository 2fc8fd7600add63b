// Unit tests of the pure routing core (shared/session/router.ts) over the in-memory store: the contract's rules
// as frames in, frames out — no sockets, no clock but the one passed in.
import { describe, expect, it } from "vitest";
import { LIMITS, type MessageOut } from "../../shared/contract/protocol.js";
import { HTTP_PEER, keyOf } from "../../shared/session/router.js";
import { call, cancel, error, Harness, result, type, type F } from "../helpers/router-harness.js";

const CHOICE = {
  name: "choice",
  type: "action",
  description: "pick",
  inputSchema: {
    type: "object",
    properties: { question: { type: "string" }, options: { type: "array", items: { type: "string" } } },
    required: ["question", "options"],
  },
};
const NOTE = { name: "note", type: "action", description: "", inputSchema: { type: "object" } };
const CALC = {
  name: "calc",
  type: "toolset",
  description: "",
  actions: [{ name: "add", description: "", inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] } }],
};
const INST = { type: "object", properties: { instance_id: { type: "string" } }, required: ["instance_id"] };
const CANVAS = {
  name: "canvas",
  type: "app",
  description: "",
  actions: [
    { name: "open", description: "", inputSchema: { type: "object" } },
    { name: "draw", description: "", inputSchema: INST },
    { name: "close", description: "", inputSchema: INST },
  ],
};
const ASK = { question: "q", options: ["a"] };

function setup(tools: object[] = [CHOICE]) {
  const h = new Harness();
  const ag = h.connect("agent", "ag");
  const ph = h.connect("app", "ph");
  h.send(ph, { type: "tool.list", tools });
  h.take(ag);
  h.take(ph);
  return { h, ag, ph };
}

describe("connect", () => {
  it("sends hello first, then the other side's catalog; others get presence", () => {
    const h = new Harness();
    const ag = h.connect("agent", "ag");
    expect(h.take(ag)).toEqual([
      { type: "hello", protocol: "lineup/1", session_id: "sess0001", role: "agent", client_id: "ag", peers: { agent: { online: true }, apps: 0 } },
      { type: "tool.list", tools: [] },
    ]);
    const ph = h.connect("app", "ph");
    expect(h.take(ph)[0]).toMatchObject({ type: "hello", role: "app", peers: { agent: { online: true }, apps: 1 } });
    expect(h.take(ag)).toEqual([{ type: "presence", agent: { online: true }, apps: 1 }]);
    h.disconnect(ag);
    expect(h.take(ph)).toEqual([{ type: "presence", agent: { online: false }, apps: 1 }]);
  });

  it("counts app client ids, not connections of one client", () => {
    const h = new Harness();
    h.connect("app", "a");
    h.connect("app", "a");
    const b = h.connect("app", "b");
    expect(h.take(b)[0]).toMatchObject({ peers: { apps: 2 } });
  });
});

describe("calls", () => {
  it("routes a call to the providers that registered the tool, and the first result back", () => {
    const { h, ag, ph } = setup();
    const other = h.connect("app", "other");
    h.take(other);
    h.send(ag, { type: "tool.call", call_id: "c1", name: "choice", action: "x", arguments: ASK, timeout_s: 5 });
    expect(h.one(ph, call("c1"))).toEqual({
      type: "tool.call",
      call_id: "c1",
      name: "choice",
      action: "x",
      arguments: ASK,
      timeout_s: 5,
      deadline: h.now + 5000,
      from: "agent",
    });
    expect(h.take(other, call("c1"))).toEqual([]);
    h.send(ph, { type: "tool.result", call_id: "c1", result: { message: "a" } });
    expect(h.one(ag, result("c1"))).toEqual({ type: "tool.result", call_id: "c1", name: "choice", action: "x", result: { message: "a" }, answered_by: "ph" });
  });

  it("first answer wins: others get tool.cancel answered, later results unknown_call", () => {
    const { h, ag, ph } = setup();
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [CHOICE] });
    h.send(ag, { type: "tool.call", call_id: "c1", name: "choice", arguments: ASK });
    h.one(ph, call("c1"));
    h.one(p2, call("c1"));
    h.send(p2, { type: "tool.result", call_id: "c1", result: { message: "b" } });
    expect(h.one(ag, result("c1")).answered_by).toBe("p2");
    expect(h.one(ph, cancel("c1"))).toEqual({ type: "tool.cancel", call_id: "c1", reason: "answered" });
    expect(h.take(p2, cancel("c1"))).toEqual([]);
    h.send(ph, { type: "tool.result", call_id: "c1", result: { message: "a" } });
    expect(h.one(ph, error("unknown_call")).call_id).toBe("c1");
    expect(h.take(ag, result("c1"))).toEqual([]);
  });

  it("unknown_tool only when a provider is connected; otherwise the call is queued", () => {
    const h = new Harness();
    const ag = h.connect("agent", "ag");
    h.send(ag, { type: "tool.call", call_id: "q", name: "choice", arguments: ASK });
    expect(h.take(ag, result("q"))).toEqual([]);
    const ph = h.connect("app", "ph");
    h.send(ag, { type: "tool.call", call_id: "u", name: "choice", arguments: ASK });
    expect(h.one(ag, result("u")).error).toMatchObject({ code: "unknown_tool" });
    // The queued call is checked and delivered once the provider registers.
    h.send(ph, { type: "tool.list", tools: [CHOICE] });
    h.one(ph, call("q"));
  });

  it("unknown_action, invalid_arguments (naming the field) and instance_gone are results, never deliveries", () => {
    const { h, ag, ph } = setup([CALC, CHOICE, CANVAS]);
    h.send(ag, { type: "tool.call", call_id: "a", name: "calc", action: "mul", arguments: { a: 1 } });
    h.send(ag, { type: "tool.call", call_id: "b", name: "calc", action: "add", arguments: { a: "x" } });
    h.send(ag, { type: "tool.call", call_id: "c", name: "choice", arguments: { question: "q" } });
    h.send(ag, { type: "tool.call", call_id: "d", name: "canvas", action: "draw", arguments: { instance_id: "nope" } });
    expect(h.one(ag, result("a")).error).toMatchObject({ code: "unknown_action" });
    expect(h.one(ag, result("b")).error).toMatchObject({ code: "invalid_arguments", message: expect.stringContaining("a") });
    expect(h.one(ag, result("c")).error).toEqual({ code: "invalid_arguments", message: "choice: options: is required" });
    expect(h.one(ag, result("d")).error).toMatchObject({ code: "instance_gone" });
    expect(h.take(ph, type("tool.call"))).toEqual([]);
  });

  it("too_many_calls at 1000 open calls", () => {
    const { h, ag } = setup([NOTE]);
    for (let i = 0; i < LIMITS.maxOpenCalls; i++) h.send(ag, { type: "tool.call", call_id: `n${i}`, name: "note" });
    expect(h.take(ag, type("tool.result"))).toEqual([]);
    h.send(ag, { type: "tool.call", call_id: "over", name: "note" });
    expect(h.one(ag, result("over")).error).toMatchObject({ code: "too_many_calls" });
    expect(h.store.countOpen()).toBe(1000);
  });

  it("duplicate_call; an identical repeat is a no-op; a kept result is re-sent; acked ids are free", () => {
    const { h, ag, ph } = setup([CHOICE, NOTE]);
    const frame = { type: "tool.call", call_id: "c1", name: "choice", arguments: ASK };
    h.send(ag, frame);
    h.one(ph, call("c1"));
    expect(h.send(ag, { ...frame })).toEqual([]);
    h.send(ag, { ...frame, name: "note" });
    h.one(ag, error("duplicate_call"));
    const ag2 = h.connect("agent", "ag2");
    h.send(ag2, frame);
    h.one(ag2, error("duplicate_call"));
    h.send(ph, { type: "tool.result", call_id: "c1", result: { message: "a" } });
    const first = h.one(ag, result("c1"));
    h.send(ag, frame);
    expect(h.one(ag, result("c1"))).toEqual(first);
    h.send(ag, { ...frame, name: "note" });
    h.one(ag, error("duplicate_call"));
    h.send(ag, { type: "tool.ack", call_id: "c1" });
    h.send(ag, { ...frame, name: "note" });
    expect(h.one(ph, call("c1")).name).toBe("note");
  });

  it("action tools take any action; no action at all is fine", () => {
    const { h, ag, ph } = setup();
    h.send(ag, { type: "tool.call", call_id: "x", name: "choice", action: "anything", arguments: ASK });
    expect(h.one(ph, call("x")).action).toBe("anything");
  });
});

describe("catch-up and the catalog", () => {
  it("a provider gets open calls after hello on every new connection, and after tool.list", () => {
    const { h, ag, ph } = setup();
    h.disconnect(ph);
    h.send(ag, { type: "tool.call", call_id: "c1", name: "choice", arguments: ASK });
    const ph2 = h.connect("app", "ph");
    h.one(ph2, call("c1"));
    const ph3 = h.connect("app", "ph");
    h.one(ph3, call("c1"));
    const fresh = h.connect("app", "fresh");
    expect(h.take(fresh, call("c1"))).toEqual([]);
    h.send(fresh, { type: "tool.list", tools: [CHOICE] });
    h.one(fresh, call("c1"));
    h.send(fresh, { type: "tool.list", tools: [CHOICE] });
    expect(h.take(fresh, call("c1"))).toEqual([]);
  });

  it("the catalog is the union of registrations, offline ones included; changes reach the other side", () => {
    const { h, ag, ph } = setup([CHOICE]);
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [NOTE] });
    expect(h.one(ag, type("tool.list")).tools).toHaveLength(2);
    h.disconnect(ph);
    h.send(ag, { type: "tool.list" });
    expect((h.one(ag, type("tool.list")).tools as { name: string }[]).map((t) => t.name).sort()).toEqual(["choice", "note"]);
    // No change, no broadcast — also when a re-registration moves a client's tools in the union's order.
    h.send(p2, { type: "tool.list", tools: [NOTE] });
    expect(h.take(ag, type("tool.list"))).toEqual([]);
    h.send(h.connect("app", "ph"), { type: "tool.list", tools: [CHOICE] });
    expect(h.take(ag, type("tool.list"))).toEqual([]);
  });
});

describe("instances", () => {
  it("bind to the opener by result.instance_id or message; route there only; close unbinds", () => {
    const { h, ag, ph } = setup([CANVAS]);
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [CANVAS] });
    for (const [id, res] of [
      ["i1", { message: "ok", instance_id: "i1" }],
      ["i2", { message: "instance_id: i2" }],
    ] as const) {
      h.send(ag, { type: "tool.call", call_id: `o-${id}`, name: "canvas", action: "open" });
      h.send(ph, { type: "tool.result", call_id: `o-${id}`, result: res });
      h.send(ag, { type: "tool.call", call_id: `d-${id}`, name: "canvas", action: "draw", arguments: { instance_id: id } });
      h.one(ph, call(`d-${id}`));
      expect(h.take(p2, call(`d-${id}`))).toEqual([]);
    }
    // Queued while the opener is away.
    h.disconnect(ph);
    h.send(ag, { type: "tool.call", call_id: "d2", name: "canvas", action: "draw", arguments: { instance_id: "i1" } });
    expect(h.take(p2, call("d2"))).toEqual([]);
    const back = h.connect("app", "ph");
    h.one(back, call("d2"));
    h.send(ag, { type: "tool.call", call_id: "cl", name: "canvas", action: "close", arguments: { instance_id: "i1" } });
    h.send(back, { type: "tool.result", call_id: "cl", result: { message: "closed" } });
    h.send(ag, { type: "tool.call", call_id: "d3", name: "canvas", action: "draw", arguments: { instance_id: "i1" } });
    expect(h.one(ag, result("d3")).error).toMatchObject({ code: "instance_gone" });
  });

  it("regression: another client that answers an open naming an instance id already bound does not take it over (first binding wins)", () => {
    const { h, ag, ph } = setup([CANVAS]);
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [CANVAS] });
    h.send(ag, { type: "tool.call", call_id: "o1", name: "canvas", action: "open" });
    h.send(ph, { type: "tool.result", call_id: "o1", result: { message: "ok", instance_id: "shared" } });
    // p2 answers a second open with the same id: the call is answered, the binding stays with ph.
    h.send(ag, { type: "tool.call", call_id: "o2", name: "canvas", action: "open" });
    h.send(p2, { type: "tool.result", call_id: "o2", result: { message: "mine now", instance_id: "shared" } });
    expect(h.one(ag, result("o2")).result).toMatchObject({ instance_id: "shared" });
    h.send(ag, { type: "tool.call", call_id: "d1", name: "canvas", action: "draw", arguments: { instance_id: "shared" } });
    h.one(ph, call("d1"));
    expect(h.take(p2, call("d1"))).toEqual([]);
  });
});

describe("deadlines", () => {
  it("default 600 s, clamped to 1…86400", () => {
    const { h, ag, ph } = setup();
    for (const [id, t, s] of [
      ["a", undefined, 600],
      ["b", 0, 1],
      ["c", 1e9, 86_400],
      ["d", 7, 7],
    ] as const) {
      h.send(ag, { type: "tool.call", call_id: id, name: "choice", arguments: ASK, ...(t === undefined ? {} : { timeout_s: t }) });
      expect(h.one(ph, call(id)).deadline).toBe(h.now + s * 1000);
    }
    expect(h.router.nextDue()).toBe(h.now + 1000);
  });

  it("at the deadline: a timeout result to the caller, a timeout cancel to providers; ticking again is a no-op", () => {
    const { h, ag, ph } = setup();
    h.send(ag, { type: "tool.call", call_id: "t", name: "choice", arguments: ASK, timeout_s: 2 });
    h.one(ph, call("t"));
    expect(h.tick(1999)).toEqual([]);
    h.tick(1);
    expect(h.one(ag, result("t")).error).toMatchObject({ code: "timeout" });
    expect(h.one(ph, cancel("t"))).toEqual({ type: "tool.cancel", call_id: "t", reason: "timeout" });
    expect(h.tick()).toEqual([]);
    h.send(ph, { type: "tool.result", call_id: "t", result: { message: "late" } });
    h.one(ph, error("unknown_call"));
    expect(h.take(ag, result("t"))).toEqual([]);
  });
});

describe("cancel, ack and kept results", () => {
  it("the caller's cancel reaches the providers; non-callers get unknown_call", () => {
    const { h, ag, ph } = setup();
    h.send(ag, { type: "tool.call", call_id: "c", name: "choice", arguments: ASK });
    h.send(ph, { type: "tool.cancel", call_id: "c" });
    h.one(ph, error("unknown_call"));
    h.send(ag, { type: "tool.cancel", call_id: "c" });
    expect(h.one(ph, cancel("c"))).toEqual({ type: "tool.cancel", call_id: "c", reason: "cancelled" });
    expect(h.store.countOpen()).toBe(0);
  });

  it("kept results are re-sent after hello until acked, and purged after 24 h", () => {
    const { h, ag, ph } = setup();
    h.send(ag, { type: "tool.call", call_id: "k", name: "choice", arguments: ASK });
    h.disconnect(ag);
    h.send(ph, { type: "tool.result", call_id: "k", result: { message: "a" } });
    const a1 = h.connect("agent", "ag");
    expect(
      h
        .take(a1)
        .map((f) => f.type)
        .slice(0, 3),
    ).toEqual(["hello", "tool.list", "tool.result"]);
    const a2 = h.connect("agent", "ag");
    h.one(a2, result("k"));
    h.send(a2, { type: "tool.ack", call_id: "k" });
    const a3 = h.connect("agent", "ag");
    expect(h.take(a3, result("k"))).toEqual([]);
    // Retention.
    h.send(a3, { type: "tool.call", call_id: "k2", name: "choice", arguments: ASK });
    h.send(ph, { type: "tool.result", call_id: "k2", result: { message: "b" } });
    h.tick(LIMITS.resultRetentionMs);
    const a4 = h.connect("agent", "ag");
    expect(h.take(a4, result("k2"))).toEqual([]);
  });
});

describe("messages, status and roles", () => {
  it("a message reaches every other client; missed ones replay after hello for known clients; retries once", () => {
    const { h, ag, ph } = setup();
    const ph2 = h.connect("app", "ph2");
    h.take(ph2);
    h.send(ph, { type: "message", id: "m1", content: [{ type: "text", text: "hi" }] });
    expect(h.one(ag, type("message"))).toEqual({
      type: "message",
      id: "m1",
      from: { role: "app", client_id: "ph" },
      content: [{ type: "text", text: "hi" }],
      ts: h.now,
    });
    h.one(ph2, type("message"));
    expect(h.take(ph, type("message"))).toEqual([]);
    h.send(ph, { type: "message", id: "m1", content: [{ type: "text", text: "hi" }] });
    expect(h.take(ag, type("message"))).toEqual([]);
    h.disconnect(ag);
    h.send(ph, { type: "message", content: [{ type: "text", text: "away" }] });
    const back = h.connect("agent", "ag");
    expect(h.take(back, type("message")).map((m) => (m.content as { text: string }[])[0]!.text)).toEqual(["away"]);
    const fresh = h.connect("agent", "fresh");
    expect(h.take(fresh, type("message"))).toEqual([]);
  });

  it("history is bounded at 200", () => {
    const { h, ag } = setup();
    for (let i = 0; i < 250; i++) h.send(ag, { type: "message", content: [{ type: "text", text: `${i}` }] });
    const st = h.router.status({ now: h.now, peers: h.peers }, { expires_at: 0 });
    expect(st.messages).toHaveLength(LIMITS.historySize);
    expect((st.messages[0] as MessageOut).content).toEqual([{ type: "text", text: "50" }]);
  });

  it("status from the agent reaches everyone as presence; from an app it is forbidden", () => {
    const { h, ag, ph } = setup();
    h.send(ag, { type: "status", state: "working", detail: "x" });
    expect(h.one(ph, type("presence"))).toEqual({ type: "presence", agent: { online: true, status: { state: "working", detail: "x" } }, apps: 1 });
    h.send(ph, { type: "status", state: "idle" });
    h.one(ph, error("forbidden"));
    expect(h.router.agentStatus()).toEqual({ state: "working", detail: "x" });
  });
});

describe("HTTP calls", () => {
  it("run as the reserved caller; the fetched result counts as the ack", () => {
    const { h, ph } = setup();
    const ctx = { now: h.now, peers: h.peers };
    const a = h.router.httpCall({ name: "choice", arguments: ASK }, ctx);
    expect(a.conflict).toBe(false);
    expect(a.out.map((o) => o.to)).toEqual(["app:ph"]);
    expect(h.router.httpCall({ call_id: a.call_id, name: "choice", arguments: ASK }, ctx).conflict).toBe(true);
    expect(h.router.takeHttpResult(a.call_id)).toBe("pending");
    const outs = h.router.handle(ph, { type: "tool.result", call_id: a.call_id, answer: { plain: { result: { message: "x" } } } }, ctx);
    expect(outs.map((o) => o.to)).toEqual([keyOf(HTTP_PEER)]);
    expect(h.router.takeHttpResult(a.call_id)).toMatchObject({ result: { message: "x" }, answered_by: "ph" });
    expect(h.router.takeHttpResult(a.call_id)).toBeUndefined();
  });
});
