// §4.6 of the contract: an app-type tool's instance is bound to the client that opened it; later calls
// naming it go to that client only (queued while it is away); a successful close unbinds it.
import { describe, expect, it } from "vitest";
import { CANVAS, CHOICE, closeAll, evict, getStatus, isCall, isError, isResult, reconnect, register, sync, type Evict } from "./contract-fixtures.js";
import { connect, createSession, type Client } from "./helpers.js";

const ALL: Evict[] = ["none", "hibernate", "close"];

/** Agent `ag`; apps `pa` and `pb` both provide the canvas. */
async function board() {
  const s = await createSession();
  const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
  const pa = await connect(s.session_id, s.app_token, { clientId: "pa" });
  const pb = await connect(s.session_id, s.app_token, { clientId: "pb" });
  await register(pa, agent, [CANVAS]);
  pb.send({ type: "tool.list", tools: [CANVAS] });
  await sync(pb);
  return { s, agent, pa, pb };
}

/** `pa` opens an instance; the result names it the way `style` says. */
async function open(agent: Client, pa: Client, pb: Client, id: string, style: "field" | "message" | "sentence") {
  const callId = `open-${id}`;
  agent.send({ type: "tool.call", call_id: callId, name: "canvas", action: "open", arguments: { width: 10 } });
  await pa.next(isCall(callId));
  await pb.next(isCall(callId));
  const result =
    style === "field"
      ? { message: "opened", instance_id: id }
      : style === "message"
        ? { message: `instance_id: ${id}` }
        : { message: `Opened a board, instance_id: ${id}.` };
  pa.send({ type: "tool.result", call_id: callId, name: "canvas", action: "open", result });
  expect((await agent.next(isResult(callId))).answered_by).toBe("pa");
}

describe("instances", () => {
  it.each([
    ["field", "none"],
    ["message", "none"],
    ["sentence", "none"],
    ["field", "hibernate"],
    ["message", "hibernate"],
  ] as const)("an instance named by result %s binds to the opener; later calls go to it only (evict: %s)", async (style, mode) => {
    const { s, agent, pa, pb } = await board();
    await open(agent, pa, pb, "inst_001", style);
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "d1", name: "canvas", action: "draw", arguments: { instance_id: "inst_001" } });
    expect(await pa.next(isCall("d1"))).toMatchObject({ action: "draw", arguments: { instance_id: "inst_001" } });
    expect(await pb.none(isCall("d1"))).toBe(true);
    await evict(s.session_id, mode);
    // Only the bound client may answer it.
    pb.send({ type: "tool.result", call_id: "d1", result: { message: "mine?" } });
    await pb.next(isError("unknown_call"));
    pa.send({ type: "tool.result", call_id: "d1", result: { message: "drawn" } });
    expect(await agent.next(isResult("d1"))).toMatchObject({ result: { message: "drawn" }, answered_by: "pa" });
    closeAll(agent, pa, pb);
  });

  it.each(ALL)("a call for a bound instance waits while its client is away, and goes to it when it is back (evict: %s)", async (mode) => {
    const { s, agent, pa, pb } = await board();
    await open(agent, pa, pb, "i2", "field");
    pa.close();
    await agent.next((f) => f.type === "presence" && f.apps === 1);
    agent.send({ type: "tool.call", call_id: "d2", name: "canvas", action: "draw", arguments: { instance_id: "i2" } });
    await sync(agent);
    expect(await agent.none(isResult("d2"))).toBe(true);
    expect(await pb.none(isCall("d2"))).toBe(true);
    await evict(s.session_id, mode);
    let caller = agent;
    if (mode === "close") {
      await agent.closedWith();
      caller = await reconnect(s, "agent", "ag");
    }
    const back = await reconnect(s, "app", "pa");
    await back.next(isCall("d2"));
    back.send({ type: "tool.result", call_id: "d2", result: { message: "drawn" } });
    expect((await caller.next(isResult("d2"))).answered_by).toBe("pa");
    closeAll(caller, back, pb);
  });

  it.each(["none", "hibernate"] as const)("a successful close unbinds: later calls get instance_gone; a failed close does not (evict: %s)", async (mode) => {
    const { s, agent, pa, pb } = await board();
    await open(agent, pa, pb, "i3", "message");
    agent.send({ type: "tool.call", call_id: "c1", name: "canvas", action: "close", arguments: { instance_id: "i3" } });
    await pa.next(isCall("c1"));
    pa.send({ type: "tool.result", call_id: "c1", error: { code: "busy", message: "not now" } });
    await agent.next(isResult("c1"));
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "c2", name: "canvas", action: "close", arguments: { instance_id: "i3" } });
    await pa.next(isCall("c2"));
    expect(await pb.none(isCall("c2"))).toBe(true);
    pa.send({ type: "tool.result", call_id: "c2", result: { message: "closed" } });
    await agent.next(isResult("c2"));
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "d3", name: "canvas", action: "draw", arguments: { instance_id: "i3" } });
    const r = await agent.next(isResult("d3"));
    expect(r.error).toMatchObject({ code: "instance_gone" });
    expect((r.error as { message: string }).message).toContain("i3");
    expect(await pa.none(isCall("d3"))).toBe(true);
    closeAll(agent, pa, pb);
  });

  it("a call naming an instance that was never opened gets instance_gone", async () => {
    const { agent, pa, pb } = await board();
    agent.send({ type: "tool.call", call_id: "g1", name: "canvas", action: "draw", arguments: { instance_id: "never" } });
    expect((await agent.next(isResult("g1"))).error).toMatchObject({ code: "instance_gone" });
    expect(await pa.none(isCall("g1"))).toBe(true);
    closeAll(agent, pa, pb);
  });

  it("instance ids are per tool, and action tools do not bind", async () => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    const pa = await connect(s.session_id, s.app_token, { clientId: "pa" });
    const pb = await connect(s.session_id, s.app_token, { clientId: "pb" });
    await register(pa, agent, [CANVAS, CHOICE]);
    pb.send({ type: "tool.list", tools: [CANVAS, CHOICE] });
    await sync(pb);
    agent.send({ type: "tool.call", call_id: "o1", name: "choice", arguments: { question: "q", options: [] } });
    await pb.next(isCall("o1"));
    pa.send({ type: "tool.result", call_id: "o1", result: { message: "instance_id: x1", instance_id: "x1" } });
    await agent.next(isResult("o1"));
    // choice is an action tool: no binding, both apps still get its calls.
    agent.send({ type: "tool.call", call_id: "o2", name: "choice", arguments: { question: "q", options: [], instance_id: "x1" } });
    await pa.next(isCall("o2"));
    await pb.next(isCall("o2"));
    // And x1 is not a canvas instance.
    agent.send({ type: "tool.call", call_id: "o3", name: "canvas", action: "draw", arguments: { instance_id: "x1" } });
    expect((await agent.next(isResult("o3"))).error).toMatchObject({ code: "instance_gone" });
    expect((await getStatus(s)).pending_calls).toBe(1);
    closeAll(agent, pa, pb);
  });

  it("a binding survives the opener's reconnects and belongs to its client id", async () => {
    const { s, agent, pa, pb } = await board();
    await open(agent, pa, pb, "i5", "field");
    const pa2 = await connect(s.session_id, s.app_token, { clientId: "pa" });
    await pa.closedWith();
    agent.send({ type: "tool.call", call_id: "d5", name: "canvas", action: "draw", arguments: { instance_id: "i5" } });
    await pa2.next(isCall("d5"));
    expect(await pb.none(isCall("d5"))).toBe(true);
    closeAll(agent, pa2, pb);
  });
});
