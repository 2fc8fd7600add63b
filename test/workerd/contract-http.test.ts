// §7: HTTP calls for agents that cannot hold a socket — POST with an optional wait, GET to poll; a result
// fetched over HTTP counts as acked; HTTP calls belong to a reserved caller no socket can claim.
import { describe, expect, it } from "vitest";
import { ASK, authed, CHOICE, closeAll, errorBody, evict, getStatus, isCall, isError, isResult, pair, reconnect } from "./contract-fixtures.js";
import { connectRaw, createSession, fetchWorker } from "./helpers.js";

function post(sid: string, token: string, body: unknown, wait?: number | string): Promise<Response> {
  return fetchWorker(
    `/api/sessions/${sid}/calls${wait === undefined ? "" : `?wait=${wait}`}`,
    authed(token, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json" } }),
  );
}
function poll(sid: string, token: string, callId: string, wait = 0): Promise<Response> {
  return fetchWorker(`/api/sessions/${sid}/calls/${encodeURIComponent(callId)}?wait=${wait}`, authed(token));
}

describe("POST /api/sessions/:sid/calls", () => {
  // An object is never evicted while it serves a request, so the eviction variants of the HTTP path are
  // the 202 → GET tests below (eviction between the call and the poll).
  it.each(["none"] as const)("answers 200 with the tool.result when it arrives within wait (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    const pending = post(s.session_id, s.agent_token, { name: "choice", action: "ask", arguments: ASK }, 10);
    const call = await app.next("tool.call");
    expect(call).toMatchObject({ name: "choice", action: "ask", arguments: ASK, from: "agent" });
    expect(typeof call.call_id).toBe("string");
    await evict(s.session_id, mode);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "b" } });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      type: "tool.result",
      call_id: call.call_id,
      name: "choice",
      action: "ask",
      result: { message: "b" },
      answered_by: "ph",
    });
    // Fetched over HTTP counts as acked: it is gone now.
    expect((await poll(s.session_id, s.agent_token, call.call_id as string)).status).toBe(404);
    // The socket agent never sees the HTTP caller's result.
    expect(await agent.none("tool.result")).toBe(true);
    closeAll(agent, app);
  });

  it.each(["none", "hibernate", "close"] as const)("202 pending, then GET: 202 while open, 200 with the result once, then 404 (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    const res = await post(s.session_id, s.agent_token, { type: "tool.call", call_id: "h1", name: "choice", arguments: ASK }, 0);
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ call_id: "h1", status: "pending" });
    await app.next(isCall("h1"));
    const p = await poll(s.session_id, s.agent_token, "h1", 0);
    expect(p.status).toBe(202);
    expect(await p.json()).toEqual({ call_id: "h1", status: "pending" });
    await evict(s.session_id, mode);
    let provider = app;
    if (mode === "close") {
      await app.closedWith();
      provider = await reconnect(s, "app", "ph");
      await provider.next(isCall("h1"));
    }
    const waiting = poll(s.session_id, s.agent_token, "h1", 10);
    provider.send({ type: "tool.result", call_id: "h1", result: { message: "a" } });
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ type: "tool.result", call_id: "h1", result: { message: "a" }, answered_by: "ph" });
    expect((await poll(s.session_id, s.agent_token, "h1")).status).toBe(404);
    closeAll(agent, provider);
  });

  it("a call_id already open gets 409 and the open call is untouched", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    expect((await post(s.session_id, s.agent_token, { call_id: "h2", name: "choice", arguments: ASK }, 0)).status).toBe(202);
    await app.next(isCall("h2"));
    const again = await post(s.session_id, s.agent_token, { call_id: "h2", name: "choice", arguments: ASK }, 0);
    expect(again.status).toBe(409);
    await errorBody(again);
    // A socket call with that id is a duplicate too.
    agent.send({ type: "tool.call", call_id: "h2", name: "choice", arguments: ASK });
    await agent.next(isError("duplicate_call"));
    expect(await app.none(isCall("h2"))).toBe(true);
    app.send({ type: "tool.result", call_id: "h2", result: { message: "a" } });
    expect((await poll(s.session_id, s.agent_token, "h2", 5)).status).toBe(200);
    closeAll(agent, app);
  });

  it("relay-side failures come back as a 200 tool.result with error", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    const res = await post(s.session_id, s.agent_token, { name: "nosuch" }, 0);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ type: "tool.result", name: "nosuch", error: { code: "unknown_tool" } });
    const bad = await post(s.session_id, s.agent_token, { name: "choice", arguments: { question: 1 } }, 0);
    expect(bad.status).toBe(200);
    const body = (await bad.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_arguments");
    expect(body.error.message).toMatch(/question|options/);
    closeAll(agent, app);
  });

  it("an HTTP call times out at its deadline", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    const res = await post(s.session_id, s.agent_token, { call_id: "h3", name: "choice", arguments: ASK, timeout_s: 1 }, 0);
    expect(res.status).toBe(202);
    await app.next(isCall("h3"));
    const done = await poll(s.session_id, s.agent_token, "h3", 10);
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ call_id: "h3", error: { code: "timeout" } });
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === "h3")).toMatchObject({ reason: "timeout" });
    closeAll(agent, app);
  });

  it("without a provider the call waits in the queue (202) and is delivered when one connects", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    app.close();
    await agent.next((f) => f.type === "presence" && f.apps === 0);
    expect((await post(s.session_id, s.agent_token, { call_id: "h4", name: "choice", arguments: ASK }, 0)).status).toBe(202);
    expect((await getStatus(s)).pending_calls).toBe(1);
    const back = await reconnect(s, "app", "ph");
    await back.next(isCall("h4"));
    back.send({ type: "tool.result", call_id: "h4", result: { message: "x" } });
    expect((await poll(s.session_id, s.agent_token, "h4", 5)).status).toBe(200);
    closeAll(agent, back);
  });

  it("auth and bad bodies: 401, 403 for an app token, 400 for a bad body, 404 for an unknown call", async () => {
    const s = await createSession();
    const other = await createSession();
    expect((await fetchWorker(`/api/sessions/${s.session_id}/calls`, { method: "POST", body: "{}" })).status).toBe(401);
    expect((await post(s.session_id, other.agent_token, { name: "x" })).status).toBe(401);
    const forbidden = await post(s.session_id, s.app_token, { name: "choice" });
    expect(forbidden.status).toBe(403);
    await errorBody(forbidden);
    expect((await poll(s.session_id, s.app_token, "x")).status).toBe(403);
    for (const body of [
      "{",
      "[]",
      JSON.stringify({}),
      JSON.stringify({ name: "bad name!" }),
      JSON.stringify({ name: "x", arguments: 3 }),
      JSON.stringify({ type: "message", name: "x" }),
    ]) {
      const res = await post(s.session_id, s.agent_token, body, 0);
      expect(res.status, body).toBe(400);
      await errorBody(res);
    }
    const unknown = await poll(s.session_id, s.agent_token, "never");
    expect(unknown.status).toBe(404);
    await errorBody(unknown);
    expect((await getStatus(s)).pending_calls).toBe(0);
  });

  it("the HTTP caller identity is reserved: no socket can claim it, cancel or ack its calls", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    for (const id of ["~http", "http~", "~"]) expect((await connectRaw(s.session_id, s.agent_token, { clientId: id })).status).toBe(400);
    expect((await post(s.session_id, s.agent_token, { call_id: "h5", name: "choice", arguments: ASK }, 0)).status).toBe(202);
    await app.next(isCall("h5"));
    agent.send({ type: "tool.cancel", call_id: "h5" });
    await agent.next(isError("unknown_call"));
    app.send({ type: "tool.result", call_id: "h5", result: { message: "x" } });
    agent.send({ type: "tool.ack", call_id: "h5" });
    const r = await poll(s.session_id, s.agent_token, "h5", 5);
    expect(r.status).toBe(200);
    expect(await agent.none(isResult("h5"))).toBe(true);
    closeAll(agent, app);
  });
});
