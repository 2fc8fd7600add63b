import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { version as RELAY_VERSION } from "../../package.json";
import { connect, createSession, fetchWorker, stubOf } from "./helpers.js";

const CHOICE = {
  name: "choice",
  type: "action",
  description: "pick one",
  inputSchema: {
    type: "object",
    properties: { question: { type: "string" }, options: { type: "array", items: { type: "string" } } },
    required: ["question", "options"],
  },
};

describe("basics", () => {
  it("answers /healthz", async () => {
    const res = await fetchWorker("/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, protocol: "lineup/1" });
  });

  it("reports the relay's version on /healthz in x-lineup-version, leaving the contract's body as it is", async () => {
    const res = await fetchWorker("/healthz");
    expect(res.headers.get("x-lineup-version")).toBe(RELAY_VERSION);
    expect(await res.text()).toBe('{"ok":true,"protocol":"lineup/1"}');
  });

  it("routes a call to the app and its result back to the agent, across eviction", async () => {
    const s = await createSession({ label: "t1" });
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag1" });
    expect(agent.hello).toMatchObject({ protocol: "lineup/1", role: "agent", client_id: "ag1", session_id: s.session_id });
    const app = await connect(s.session_id, s.app_token, { clientId: "ph1" });
    app.send({ type: "tool.list", tools: [CHOICE] });
    await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.length === 1);
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", action: "select", arguments: { question: "where?", options: ["a", "b"] } });
    const call = await app.next("tool.call");
    expect(call).toMatchObject({ call_id: "c1", name: "choice", action: "select", from: "agent" });
    expect(typeof call.deadline).toBe("number");
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    app.send({ type: "tool.result", call_id: "c1", name: "choice", action: "select", result: { message: "b" } });
    const res = await agent.next("tool.result");
    expect(res).toMatchObject({ call_id: "c1", result: { message: "b" }, answered_by: "ph1" });
    agent.close();
    app.close();
  });
});

describe("HTTP bodies nested too deep (regression: the fuzzer's 10,000-level JSON made /calls answer 500)", () => {
  it("answers 400 on POST /calls and POST /api/sessions, and the session still works", async () => {
    const s = await createSession();
    const deep = "[".repeat(5000) + "]".repeat(5000);
    const call = await fetchWorker(`/api/sessions/${s.session_id}/calls?wait=0`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.agent_token}`, "content-type": "application/json" },
      body: `{"name":"choice","arguments":{"x":${deep}}}`,
    });
    expect(call.status).toBe(400);
    expect(((await call.json()) as { error: { code: string } }).error.code).toBe("bad_request");
    const created = await fetchWorker("/api/sessions", {
      method: "POST",
      headers: { authorization: "Bearer test-relay-key-0123456789abcdef-0123", "content-type": "application/json" },
      body: `{"label":${deep}}`,
    });
    expect(created.status).toBe(400);
    const status = await fetchWorker(`/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } });
    expect(status.status).toBe(200);
    expect(((await status.json()) as { pending_calls: number }).pending_calls).toBe(0);
  });
});
