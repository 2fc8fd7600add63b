// §4.8–4.9: the caller cancels; results are kept until tool.ack (or 24 h) and sent again after hello
// to every new connection of the caller's client id.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  ASK,
  CHOICE,
  closeAll,
  EVICTIONS,
  evict,
  getStatus,
  isCall,
  isCancel,
  isError,
  isResult,
  pair,
  reconnect,
  sync,
  type Evict,
} from "./contract-fixtures.js";
import { connect, stubOf } from "./helpers.js";

const ALL: Evict[] = ["none", "hibernate", "close"];

describe("tool.cancel", () => {
  it.each(ALL)("the caller's cancel closes the call; providers get tool.cancel cancelled; a later result gets unknown_call (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", arguments: ASK });
    await app.next(isCall("c1"));
    await evict(s.session_id, mode);
    let [caller, provider] = [agent, app];
    if (mode === "close") {
      await agent.closedWith();
      await app.closedWith();
      caller = await reconnect(s, "agent", "ag");
      provider = await reconnect(s, "app", "ph");
      await provider.next(isCall("c1"));
    }
    caller.send({ type: "tool.cancel", call_id: "c1", reason: "changed my mind" });
    expect(await provider.next(isCancel("c1"))).toEqual({ type: "tool.cancel", call_id: "c1", reason: "cancelled" });
    expect((await getStatus(s)).pending_calls).toBe(0);
    provider.send({ type: "tool.result", call_id: "c1", result: { message: "too late" } });
    expect(await provider.next(isError("unknown_call"))).toMatchObject({ call_id: "c1" });
    expect(await caller.none(isResult("c1"))).toBe(true);
    // A cancelled call is gone: a reconnecting provider does not get it, and its id is free again.
    const again = await reconnect(s, "app", "ph");
    expect(await again.none(isCall("c1"))).toBe(true);
    caller.send({ type: "tool.call", call_id: "c1", name: "choice", arguments: ASK });
    await again.next(isCall("c1"));
    closeAll(caller, again);
  });

  it("only the caller may cancel; an unknown call gets unknown_call", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "c2", name: "choice", arguments: ASK });
    await app.next(isCall("c2"));
    app.send({ type: "tool.cancel", call_id: "c2" });
    expect(await app.next(isError("unknown_call"))).toMatchObject({ call_id: "c2" });
    const other = await connect(s.session_id, s.agent_token, { clientId: "ag2" });
    other.send({ type: "tool.cancel", call_id: "c2" });
    await other.next(isError("unknown_call"));
    agent.send({ type: "tool.cancel", call_id: "nope" });
    await agent.next(isError("unknown_call"));
    expect(await app.none(isCancel("c2"))).toBe(true);
    app.send({ type: "tool.result", call_id: "c2", result: { message: "ok" } });
    await agent.next(isResult("c2"));
    // Cancelling a finished call is refused too.
    agent.send({ type: "tool.cancel", call_id: "c2" });
    await agent.next(isError("unknown_call"));
    closeAll(agent, app, other);
  });

  it.each(EVICTIONS)("cancelling a queued call means no provider ever gets it (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    app.close();
    await agent.next((f) => f.type === "presence" && f.apps === 0);
    agent.send({ type: "tool.call", call_id: "c3", name: "choice", arguments: ASK });
    agent.send({ type: "tool.cancel", call_id: "c3" });
    await sync(agent);
    await evict(s.session_id, mode);
    const back = await reconnect(s, "app", "ph");
    expect(await back.none(isCall("c3"))).toBe(true);
    closeAll(agent, back);
  });
});

describe("kept results", () => {
  it.each(EVICTIONS)("a result for an absent caller is sent after hello on every reconnect until tool.ack (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "k1", name: "choice", arguments: ASK });
    agent.send({ type: "tool.call", call_id: "k2", name: "choice", arguments: ASK });
    await app.next(isCall("k1"));
    await app.next(isCall("k2"));
    agent.close();
    await app.next((f) => f.type === "presence" && f.agent.online === false);
    app.send({ type: "tool.result", call_id: "k1", result: { message: "one" } });
    app.send({ type: "tool.result", call_id: "k2", error: { code: "no", message: "two" } });
    await sync(app);
    await evict(s.session_id, mode);
    // Another client id never sees them.
    const stranger = await connect(s.session_id, s.agent_token, { clientId: "someone" });
    expect(await stranger.none("tool.result")).toBe(true);
    const a1 = await reconnect(s, "agent", "ag");
    expect((await a1.next(isResult("k1"))).result).toEqual({ message: "one" });
    expect((await a1.next(isResult("k2"))).error).toEqual({ code: "no", message: "two" });
    a1.close();
    await evict(s.session_id, mode);
    const a2 = await reconnect(s, "agent", "ag");
    await a2.next(isResult("k1"));
    await a2.next(isResult("k2"));
    a2.send({ type: "tool.ack", call_id: "k1" });
    // Acks are idempotent, and only the caller's count.
    a2.send({ type: "tool.ack", call_id: "k1" });
    stranger.send({ type: "tool.ack", call_id: "k2" });
    await sync(a2);
    await sync(stranger);
    expect(await a2.none("error")).toBe(true);
    await evict(s.session_id, mode);
    const a3 = await reconnect(s, "agent", "ag");
    await a3.next(isResult("k2"));
    expect(await a3.none(isResult("k1"))).toBe(true);
    closeAll(a3, stranger, app);
  });

  it("the kept result comes right after hello, unasked", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "k3", name: "choice", arguments: ASK });
    await app.next(isCall("k3"));
    agent.close();
    await app.next((f) => f.type === "presence" && f.agent.online === false);
    app.send({ type: "tool.result", call_id: "k3", result: { message: "x" } });
    await sync(app);
    const back = await reconnect(s, "agent", "ag");
    // The kept result comes in the burst that follows hello, before the answer to the client's first frame.
    await sync(back);
    expect(back.frames.filter((f) => f.type === "tool.result").map((f) => f.call_id)).toEqual(["k3"]);
    closeAll(back, app);
  });

  it("kept results are forgotten after their retention (24 h) by the alarm", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "k4", name: "choice", arguments: ASK });
    await app.next(isCall("k4"));
    app.send({ type: "tool.result", call_id: "k4", result: { message: "x" } });
    await agent.next(isResult("k4"));
    const keep = await runInDurableObject(stubOf(s.session_id), (_i, state) => {
      const row = state.storage.sql.exec("SELECT keep_until FROM calls WHERE call_id = 'k4'").one();
      return Number(row.keep_until);
    });
    expect(keep - Date.now()).toBeGreaterThan(24 * 3600 * 1000 - 60_000);
    expect(keep - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);
    // Pretend a day passed.
    await runInDurableObject(stubOf(s.session_id), (_i, state) => {
      state.storage.sql.exec("UPDATE calls SET keep_until = ? WHERE call_id = 'k4'", Date.now() - 1);
    });
    agent.close();
    await runDurableObjectAlarm(stubOf(s.session_id));
    const back = await reconnect(s, "agent", "ag");
    expect(await back.none(isResult("k4"))).toBe(true);
    // The id is free again.
    back.send({ type: "tool.call", call_id: "k4", name: "choice", arguments: ASK });
    await app.next(isCall("k4"));
    closeAll(back, app);
  });
});
