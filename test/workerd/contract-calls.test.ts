// §4.2–4.5 and 4.10–4.11: calls are stored, routed to providers, checked, de-duplicated, queued, caught
// up, and the first answer wins — each path also with the object evicted between the call and the result.
import { describe, expect, it } from "vitest";
import {
  ASK,
  CALC,
  CHOICE,
  closeAll,
  EVICTIONS,
  evict,
  getStatus,
  isCall,
  isCancel,
  isError,
  isResult,
  NOTE,
  pair,
  reconnect,
  register,
  sync,
  type Evict,
} from "./contract-fixtures.js";
import { connect, createSession, type Client } from "./helpers.js";

const ALL: Evict[] = ["none", "hibernate", "close"];

/** After a "close" eviction every socket is gone: the same client ids come back. */
async function survive(
  mode: Evict,
  s: { session_id: string; agent_token: string; app_token: string },
  ...cs: [Client, "agent" | "app", string][]
): Promise<Client[]> {
  await evict(s.session_id, mode);
  if (mode !== "close") return cs.map(([c]) => c);
  const out: Client[] = [];
  for (const [c, role, id] of cs) {
    await c.closedWith();
    out.push(await reconnect(s as never, role, id));
  }
  return out;
}

describe("a call reaches the provider and its result the caller", () => {
  it.each(ALL)("agent → app → agent (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", action: "ask", arguments: ASK, timeout_s: 30 });
    const call = await app.next(isCall("c1"));
    expect(call).toMatchObject({ type: "tool.call", call_id: "c1", name: "choice", action: "ask", arguments: ASK, timeout_s: 30, from: "agent" });
    expect(typeof call.deadline).toBe("number");
    if (mode === "close") {
      await evict(s.session_id, mode);
      await app.closedWith();
      await agent.closedWith();
      // The provider gets the open call again on its new connection.
      const app2 = await reconnect(s, "app", "ph");
      expect(await app2.next(isCall("c1"))).toMatchObject({ call_id: "c1", deadline: call.deadline });
      app2.send({ type: "tool.result", call_id: "c1", name: "choice", action: "ask", result: { message: "b" } });
      await sync(app2);
      // The caller was away: its result is waiting for it after hello.
      const agent2 = await reconnect(s, "agent", "ag");
      expect(await agent2.next(isResult("c1"))).toEqual({
        type: "tool.result",
        call_id: "c1",
        name: "choice",
        action: "ask",
        result: { message: "b" },
        answered_by: "ph",
      });
      closeAll(agent2, app2);
      return;
    }
    await evict(s.session_id, mode);
    app.send({ type: "tool.result", call_id: "c1", name: "choice", action: "ask", result: { message: "b", content: [{ type: "text", text: "b" }] } });
    expect(await agent.next(isResult("c1"))).toEqual({
      type: "tool.result",
      call_id: "c1",
      name: "choice",
      action: "ask",
      result: { message: "b", content: [{ type: "text", text: "b" }] },
      answered_by: "ph",
    });
    expect((await getStatus(s)).pending_calls).toBe(0);
    closeAll(agent, app);
  });

  it.each(ALL)("app → agent → app, with an error result (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    await register(agent, app, [NOTE]);
    app.send({ type: "tool.call", call_id: "n1", name: "note", arguments: { text: "x" } });
    expect(await agent.next(isCall("n1"))).toMatchObject({ name: "note", from: "app", arguments: { text: "x" } });
    const [agent2, app2] = await survive(mode, s, [agent, "agent", "ag"], [app, "app", "ph"]);
    if (mode === "close") await agent2!.next(isCall("n1"));
    agent2!.send({ type: "tool.result", call_id: "n1", error: { code: "nope", message: "cannot" } });
    expect(await app2!.next(isResult("n1"))).toEqual({
      type: "tool.result",
      call_id: "n1",
      name: "note",
      error: { code: "nope", message: "cannot" },
      answered_by: "ag",
    });
    closeAll(agent2!, app2!);
  });

  it("arguments default to {}", async () => {
    const { agent, app } = await pair([NOTE]);
    agent.send({ type: "tool.call", call_id: "d1", name: "note" });
    expect((await app.next(isCall("d1"))).arguments).toEqual({});
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("an action tool accepts and echoes any action, or none (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "a1", name: "choice", action: "whatever", arguments: ASK });
    agent.send({ type: "tool.call", call_id: "a2", name: "choice", arguments: ASK });
    expect((await app.next(isCall("a1"))).action).toBe("whatever");
    expect((await app.next(isCall("a2"))).action).toBeUndefined();
    await evict(s.session_id, mode);
    app.send({ type: "tool.result", call_id: "a1", result: { message: "ok" } });
    app.send({ type: "tool.result", call_id: "a2", result: { message: "ok" } });
    expect((await agent.next(isResult("a1"))).action).toBe("whatever");
    expect((await agent.next(isResult("a2"))).action).toBeUndefined();
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("a toolset action is routed (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CALC]);
    agent.send({ type: "tool.call", call_id: "t1", name: "calc", action: "add", arguments: { a: 1, b: 2 } });
    await app.next(isCall("t1"));
    await evict(s.session_id, mode);
    app.send({ type: "tool.result", call_id: "t1", name: "calc", action: "add", result: { message: "3" } });
    expect(await agent.next(isResult("t1"))).toMatchObject({ action: "add", result: { message: "3" } });
    closeAll(agent, app);
  });
});

describe("failures the relay can see are answered as a tool.result error", () => {
  it.each(EVICTIONS)("unknown_tool when a provider is connected and none provides the tool (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "u1", name: "nosuch", action: "x", arguments: {} });
    const r = await agent.next(isResult("u1"));
    expect(r).toMatchObject({ call_id: "u1", name: "nosuch", action: "x", error: { code: "unknown_tool" } });
    expect(r.answered_by).toBeUndefined();
    expect(await app.none(isCall("u1"))).toBe(true);
    closeAll(agent, app);
  });

  it("unknown_tool when the provider is connected but registered nothing", async () => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token);
    const app = await connect(s.session_id, s.app_token);
    agent.send({ type: "tool.call", call_id: "u2", name: "choice", arguments: ASK });
    expect((await agent.next(isResult("u2"))).error).toMatchObject({ code: "unknown_tool" });
    closeAll(agent, app);
  });

  it.each(ALL)("a call waits for an app connected with ?register=first and reaches it once it registers (evict: %s)", async (mode) => {
    const s = await createSession();
    let agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    let app = await connect(s.session_id, s.app_token, { clientId: "ph", registerFirst: true });
    agent.send({ type: "tool.call", call_id: "rf", name: "choice", arguments: ASK });
    await sync(agent);
    expect(await agent.none(isResult("rf"))).toBe(true);
    await evict(s.session_id, mode);
    // The flag lives in the socket's attachment: a hibernated socket keeps it; a closed one comes back with it.
    if (mode === "close") {
      agent = await reconnect(s, "agent", "ag");
      app = await connect(s.session_id, s.app_token, { clientId: "ph", registerFirst: true });
    }
    agent.send({ type: "tool.call", call_id: "rf2", name: "choice", arguments: ASK });
    await sync(agent);
    expect(await agent.none(isResult("rf2"))).toBe(true);
    app.send({ type: "tool.list", tools: [CHOICE] });
    expect(await app.next(isCall("rf"))).toMatchObject({ name: "choice" });
    expect(await app.next(isCall("rf2"))).toMatchObject({ name: "choice" });
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("unknown_action for a toolset without that action (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CALC]);
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "x1", name: "calc", action: "mul", arguments: { a: 1 } });
    agent.send({ type: "tool.call", call_id: "x2", name: "calc", arguments: { a: 1 } });
    expect((await agent.next(isResult("x1"))).error).toMatchObject({ code: "unknown_action" });
    expect((await agent.next(isResult("x2"))).error).toMatchObject({ code: "unknown_action" });
    expect(await app.none("tool.call")).toBe(true);
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("invalid_arguments names the failing field (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE, CALC]);
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "v1", name: "choice", arguments: { question: "q" } });
    agent.send({ type: "tool.call", call_id: "v2", name: "choice", arguments: { question: "q", options: "a" } });
    agent.send({ type: "tool.call", call_id: "v3", name: "calc", action: "add", arguments: { a: 1, b: "2" } });
    const e1 = (await agent.next(isResult("v1"))).error as { code: string; message: string };
    expect(e1.code).toBe("invalid_arguments");
    expect(e1.message).toContain("options");
    const e2 = (await agent.next(isResult("v2"))).error as { code: string; message: string };
    expect(e2.code).toBe("invalid_arguments");
    expect(e2.message).toContain("options");
    const e3 = (await agent.next(isResult("v3"))).error as { code: string; message: string };
    expect(e3.code).toBe("invalid_arguments");
    expect(e3.message).toMatch(/\bb\b/);
    expect(await app.none("tool.call")).toBe(true);
    closeAll(agent, app);
  });

  it("too_many_calls once the session has 1000 open calls; the open ones are untouched", async () => {
    const { s, agent, app } = await pair([NOTE]);
    app.close();
    await agent.next((f) => f.type === "presence" && f.apps === 0);
    // One socket fills the session: the per-connection burst (1500) leaves room for it.
    for (let j = 0; j < 1000; j++) agent.send({ type: "tool.call", call_id: `m${j}`, name: "note" });
    await sync(agent, 60_000);
    expect(await agent.none((f) => f.type === "error" || f.type === "tool.result", 100)).toBe(true);
    expect((await getStatus(s)).pending_calls).toBe(1000);
    agent.send({ type: "tool.call", call_id: "over", name: "note" });
    expect((await agent.next(isResult("over"))).error).toMatchObject({ code: "too_many_calls" });
    expect((await getStatus(s)).pending_calls).toBe(1000);
    // A provider still gets every open call.
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph" });
    for (let j = 0; j < 1000; j++) await app2.next(isCall(`m${j}`), 30_000);
    closeAll(app2, agent);
  }, 120_000);
});

describe("call ids", () => {
  it.each(EVICTIONS)("duplicate_call for a different call with an open call_id; the open call is untouched (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE, NOTE]);
    agent.send({ type: "tool.call", call_id: "d1", name: "choice", arguments: ASK });
    await app.next(isCall("d1"));
    await evict(s.session_id, mode);
    agent.send({ type: "tool.call", call_id: "d1", name: "note", arguments: {} });
    expect(await agent.next(isError("duplicate_call"))).toMatchObject({ call_id: "d1" });
    agent.send({ type: "tool.call", call_id: "d1", name: "choice", arguments: { ...ASK, question: "other" } });
    await agent.next(isError("duplicate_call"));
    // The same frame from another client is not a retry either.
    const other = await connect(s.session_id, s.agent_token, { clientId: "ag2" });
    other.send({ type: "tool.call", call_id: "d1", name: "choice", arguments: ASK });
    await other.next(isError("duplicate_call"));
    expect(await app.none(isCall("d1"))).toBe(true);
    app.send({ type: "tool.result", call_id: "d1", result: { message: "a" } });
    expect((await agent.next(isResult("d1"))).result).toEqual({ message: "a" });
    expect(await other.none(isResult("d1"))).toBe(true);
    closeAll(agent, app, other);
  });

  it.each(ALL)("an identical repeat of an open call is a no-op (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    const frame = { type: "tool.call", call_id: "r1", name: "choice", arguments: ASK, timeout_s: 50 };
    agent.send(frame);
    await app.next(isCall("r1"));
    const [agent2, app2] = await survive(mode, s, [agent, "agent", "ag"], [app, "app", "ph"]);
    if (mode === "close") await app2!.next(isCall("r1"));
    // Keys in another order are the same call.
    agent2!.send({ arguments: { options: ASK.options, question: ASK.question }, timeout_s: 50, name: "choice", call_id: "r1", type: "tool.call" });
    await sync(agent2!);
    expect(await agent2!.none((f) => f.type === "error" || f.type === "tool.result")).toBe(true);
    expect(await app2!.none(isCall("r1"))).toBe(true);
    expect((await getStatus(s)).pending_calls).toBe(1);
    app2!.send({ type: "tool.result", call_id: "r1", result: { message: "a" } });
    await agent2!.next(isResult("r1"));
    closeAll(agent2!, app2!);
  });

  it.each(EVICTIONS)("an identical repeat of a kept, unacked call sends the kept result again; after tool.ack the id is free (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE, NOTE]);
    const frame = { type: "tool.call", call_id: "k1", name: "choice", arguments: ASK };
    agent.send(frame);
    await app.next(isCall("k1"));
    app.send({ type: "tool.result", call_id: "k1", result: { message: "a" } });
    const first = await agent.next(isResult("k1"));
    await evict(s.session_id, mode);
    agent.send(frame);
    expect(await agent.next(isResult("k1"))).toEqual(first);
    expect(await app.none(isCall("k1"))).toBe(true);
    // A different call with the id of a kept result is still a duplicate.
    agent.send({ type: "tool.call", call_id: "k1", name: "note" });
    await agent.next(isError("duplicate_call"));
    agent.send({ type: "tool.ack", call_id: "k1" });
    agent.send({ type: "tool.call", call_id: "k1", name: "note" });
    expect((await app.next(isCall("k1"))).name).toBe("note");
    closeAll(agent, app);
  });

  it("an identical repeat of a rejected call sends the kept error again", async () => {
    const { agent, app } = await pair([CHOICE]);
    const frame = { type: "tool.call", call_id: "rj", name: "nosuch" };
    agent.send(frame);
    const first = await agent.next(isResult("rj"));
    agent.send(frame);
    expect(await agent.next(isResult("rj"))).toEqual(first);
    closeAll(agent, app);
  });
});

describe("no provider yet: queued, then delivered", () => {
  it.each(ALL)("a registered provider that is away gets the call when it reconnects (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    app.close();
    await agent.next((f) => f.type === "presence" && f.apps === 0);
    agent.send({ type: "tool.call", call_id: "q1", name: "choice", arguments: ASK });
    await sync(agent);
    expect(await agent.none(isResult("q1"))).toBe(true);
    expect((await getStatus(s)).pending_calls).toBe(1);
    const [agent2] = await survive(mode, s, [agent, "agent", "ag"]);
    const app2 = await reconnect(s, "app", "ph");
    expect(await app2.next(isCall("q1"))).toMatchObject({ name: "choice", arguments: ASK, from: "agent" });
    app2.send({ type: "tool.result", call_id: "q1", result: { message: "later" } });
    expect((await agent2!.next(isResult("q1"))).result).toEqual({ message: "later" });
    closeAll(agent2!, app2);
  });

  it.each(EVICTIONS)("a tool nobody registered yet waits for a provider that registers it (evict: %s)", async (mode) => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    agent.send({ type: "tool.call", call_id: "q2", name: "choice", arguments: ASK });
    agent.send({ type: "tool.call", call_id: "q3", name: "gone", arguments: {} });
    agent.send({ type: "tool.call", call_id: "q4", name: "choice", arguments: { question: 1 } });
    await sync(agent);
    await evict(s.session_id, mode);
    const app = await connect(s.session_id, s.app_token, { clientId: "ph" });
    expect(await app.none("tool.call")).toBe(true);
    app.send({ type: "tool.list", tools: [CHOICE] });
    // Catch-up after the registration; the checks the relay could not make before are made now.
    expect(await app.next(isCall("q2"))).toMatchObject({ name: "choice" });
    expect((await agent.next(isResult("q3"))).error).toMatchObject({ code: "unknown_tool" });
    const r4 = await agent.next(isResult("q4"));
    expect(r4.error, JSON.stringify(r4)).toMatchObject({ code: "invalid_arguments" });
    expect(await app.none((f) => f.type === "tool.call" && f.call_id !== "q2")).toBe(true);
    app.send({ type: "tool.result", call_id: "q2", result: { message: "a" } });
    await agent.next(isResult("q2"));
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("a new provider gets open calls after its tool.list; every new connection gets them again (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "p1", name: "choice", arguments: ASK });
    await app.next(isCall("p1"));
    await evict(s.session_id, mode);
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph2" });
    expect(await app2.none(isCall("p1"))).toBe(true);
    app2.send({ type: "tool.list", tools: [CHOICE] });
    await app2.next(isCall("p1"));
    // Re-registering does not send it again on the same connection.
    app2.send({ type: "tool.list", tools: [CHOICE] });
    await sync(app2);
    expect(await app2.none(isCall("p1"))).toBe(true);
    // A new connection of the same client gets it again, right after hello.
    const app3 = await connect(s.session_id, s.app_token, { clientId: "ph2" });
    await app3.next(isCall("p1"));
    app3.send({ type: "tool.result", call_id: "p1", result: { message: "3" } });
    expect((await agent.next(isResult("p1"))).answered_by).toBe("ph2");
    expect(await app.next(isCancel("p1"))).toEqual({ type: "tool.cancel", call_id: "p1", reason: "answered" });
    closeAll(agent, app, app3);
  });
});

describe("first answer wins", () => {
  it.each(ALL)("the caller gets the first result; other holders get tool.cancel answered; later results get unknown_call (evict: %s)", async (mode) => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    const a = await connect(s.session_id, s.app_token, { clientId: "pa" });
    const b = await connect(s.session_id, s.app_token, { clientId: "pb" });
    await register(a, agent, [CHOICE]);
    b.send({ type: "tool.list", tools: [CHOICE] });
    await sync(b);
    agent.send({ type: "tool.call", call_id: "w1", name: "choice", arguments: ASK });
    await a.next(isCall("w1"));
    await b.next(isCall("w1"));
    const [agent2, a2, b2] = await survive(mode, s, [agent, "agent", "ag"], [a, "app", "pa"], [b, "app", "pb"]);
    if (mode === "close") {
      await a2!.next(isCall("w1"));
      await b2!.next(isCall("w1"));
    }
    a2!.send({ type: "tool.result", call_id: "w1", result: { message: "from a" } });
    expect(await agent2!.next(isResult("w1"))).toMatchObject({ result: { message: "from a" }, answered_by: "pa" });
    expect(await b2!.next(isCancel("w1"))).toEqual({ type: "tool.cancel", call_id: "w1", reason: "answered" });
    expect(await a2!.none(isCancel("w1"))).toBe(true);
    b2!.send({ type: "tool.result", call_id: "w1", result: { message: "from b" } });
    expect(await b2!.next(isError("unknown_call"))).toMatchObject({ call_id: "w1" });
    expect(await agent2!.none(isResult("w1"))).toBe(true);
    closeAll(agent2!, a2!, b2!);
  });

  it("a result for an unknown call, or from the caller's own side, gets unknown_call", async () => {
    const { agent, app } = await pair([CHOICE]);
    app.send({ type: "tool.result", call_id: "nope", result: { message: "x" } });
    expect(await app.next(isError("unknown_call"))).toMatchObject({ call_id: "nope" });
    agent.send({ type: "tool.call", call_id: "own", name: "choice", arguments: ASK });
    await app.next(isCall("own"));
    agent.send({ type: "tool.result", call_id: "own", result: { message: "self" } });
    await agent.next(isError("unknown_call"));
    app.send({ type: "tool.result", call_id: "own", result: { message: "a" } });
    expect((await agent.next(isResult("own"))).result).toEqual({ message: "a" });
    closeAll(agent, app);
  });
});

describe("catalog", () => {
  it.each(EVICTIONS)("the catalog is the union of a side's registrations, connected or not, and changes are broadcast (evict: %s)", async (mode) => {
    const s = await createSession();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    expect(await agent.next("tool.list")).toEqual({ type: "tool.list", tools: [] });
    const a = await connect(s.session_id, s.app_token, { clientId: "pa" });
    await register(a, agent, [CHOICE]);
    const b = await connect(s.session_id, s.app_token, { clientId: "pb" });
    b.send({ type: "tool.list", tools: [CALC] });
    const both = await agent.next((f) => f.type === "tool.list" && (f.tools as unknown[]).length === 2);
    expect((both.tools as { name: string }[]).map((t) => t.name).sort()).toEqual(["calc", "choice"]);
    await evict(s.session_id, mode);
    a.close();
    await agent.next((f) => f.type === "presence" && f.apps === 1);
    // pa is gone but its registration counts.
    agent.send({ type: "tool.list" });
    const asked = await agent.next("tool.list");
    expect((asked.tools as { name: string }[]).map((t) => t.name).sort()).toEqual(["calc", "choice"]);
    // A new agent gets the catalog right after hello.
    const agent2 = await connect(s.session_id, s.agent_token, { clientId: "ag2" });
    expect(((await agent2.next("tool.list")).tools as unknown[]).length).toBe(2);
    // Replacing a registration replaces that client's part only.
    b.send({ type: "tool.list", tools: [NOTE] });
    const now = await agent.next("tool.list");
    expect((now.tools as { name: string }[]).map((t) => t.name).sort()).toEqual(["choice", "note"]);
    // The app side asks for the agent side's catalog.
    b.send({ type: "tool.list" });
    expect(await b.next("tool.list")).toEqual({ type: "tool.list", tools: [] });
    closeAll(agent, agent2, b);
  });

  it("the registering side does not get its own catalog pushed; an unchanged registration broadcasts nothing", async () => {
    const { agent, app } = await pair([CHOICE]);
    expect(await app.none("tool.list")).toBe(true);
    app.send({ type: "tool.list", tools: [CHOICE] });
    await sync(app);
    expect(await agent.none("tool.list")).toBe(true);
    closeAll(agent, app);
  });
});
