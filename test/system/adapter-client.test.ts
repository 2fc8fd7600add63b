// The adapter library against the REAL relay (the Worker in workerd under `wrangler dev`), with a
// scripted app client speaking raw frames. No mocks: drops are real TCP drops through a proxy.
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, LineUpError, type Client } from "../../adapter/client/index.js";
import { loadState } from "../../adapter/client/state.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { connect, wsUrl, type RawClient } from "../helpers/raw-client.js";
import { appClient, CONFIRM, newSession, Proxy, tempDir, waitFor } from "../helpers/adapter-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const track = <T extends { close(): Promise<unknown> }>(x: T): T => (cleanups.push(() => x.close()), x);

async function agentAndApp(relayUrl: string, extra: Parameters<typeof connectAgent>[0] = {}): Promise<{ agent: Client; app: RawClient; stateDir: string }> {
  const stateDir = tempDir();
  const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
  const app = track(await appClient(relayUrl, saved.sessionId, saved.appToken!));
  const agent = track(await connectAgent({ relayUrl, stateDir, cwd: stateDir, ...extra }));
  return { agent, app, stateDir };
}

describe("adapter library against the relay", () => {
  it("creates and saves a session, and a call is answered by the app", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app, stateDir } = await agentAndApp(relayUrl);
    expect(loadState(stateDir).sessions).toHaveLength(1);
    expect(agent.appUrl).toContain("#s=");
    const p = agent.call("confirm", undefined, { question: "Ship it?" }, { timeoutS: 30 });
    const call = await app.next("tool.call");
    expect(call).toMatchObject({ name: "confirm", arguments: { question: "Ship it?" }, from: "agent", timeout_s: 30 });
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes", confirmed: true } });
    await expect(p).resolves.toEqual({ message: "yes", confirmed: true });
  });

  it("acks a result once handed over, so a reconnect of the same client gets nothing again", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app, stateDir } = await agentAndApp(relayUrl);
    const p = agent.call("confirm", undefined, { question: "ack?" });
    const call = await app.next("tool.call");
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "no" } });
    await p;
    const { sessionId, clientId } = agent;
    await agent.close();
    // Same client id, raw: had the ack not been sent, the result would be re-sent right after hello.
    const token = loadState(stateDir).sessions[0]!.agentToken;
    const raw = track(await connect(wsUrl(relayUrl, sessionId, { client_id: clientId }), { token }));
    await raw.next("hello");
    await raw.sync();
    expect(raw.frames.filter((f) => f.type === "tool.result")).toEqual([]);
  });

  it("rejects with the relay's error code: unknown_tool, and the provider's own codes", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app } = await agentAndApp(relayUrl);
    await expect(agent.call("no_such_tool", undefined, {})).rejects.toMatchObject({ name: "LineUpError", code: "unknown_tool" });
    const p = agent.call("confirm", undefined, { question: "?" });
    const call = await app.next("tool.call");
    app.send({ type: "tool.result", call_id: call.call_id, error: { code: "declined", message: "dismissed" } });
    const e = await p.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LineUpError);
    expect(e).toMatchObject({ code: "declined", message: "dismissed" });
  });

  it("rejects invalid arguments with invalid_arguments from the relay's schema check", async () => {
    const relayUrl = inject("relayUrl");
    const { agent } = await agentAndApp(relayUrl);
    await expect(agent.call("confirm", undefined, { question: 42 })).rejects.toMatchObject({ code: "invalid_arguments" });
  });

  it("an error frame naming a pending call rejects it (duplicate_call: the id is open for another client)", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app, stateDir } = await agentAndApp(relayUrl);
    const token = loadState(stateDir).sessions[0]!.agentToken;
    const other = track(await connect(wsUrl(relayUrl, agent.sessionId, { client_id: "another-agent" }), { token }));
    await other.next("hello");
    other.send({ type: "tool.call", call_id: "dup-1", name: "confirm", arguments: { question: "first" } });
    await app.next("tool.call");
    await expect(agent.call("confirm", undefined, { question: "second" }, { callId: "dup-1" })).rejects.toMatchObject({ code: "duplicate_call" });
  });

  it("abort sends tool.cancel: the app gets cancel{cancelled} and the call rejects with cancelled", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app } = await agentAndApp(relayUrl);
    const ac = new AbortController();
    const p = agent.call("confirm", undefined, { question: "wait" }, { signal: ac.signal });
    const call = await app.next("tool.call");
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: "cancelled" });
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).toMatchObject({ reason: "cancelled" });
  });

  it("a call whose socket is killed mid-call still gets the answer given while the agent was away", async () => {
    const relayUrl = inject("relayUrl");
    const proxy = track(await Proxy.start(relayUrl));
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const app = track(await appClient(relayUrl, saved.sessionId, saved.appToken!));
    const states: string[] = [];
    const agent = track(
      await connectAgent({ relayUrl: proxy.url, sessionId: saved.sessionId, token: saved.agentToken, stateDir, backoff: { baseMs: 100, capMs: 400 } }),
    );
    agent.on("connection", (s) => states.push(s));
    const p = agent.call("confirm", undefined, { question: "survive?" });
    const call = await app.next("tool.call");
    proxy.hold();
    proxy.cut();
    await app.next((f) => f.type === "presence" && (f as { agent: { online: boolean } }).agent.online === false, 10_000);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes, while you were away" } });
    proxy.release();
    await expect(p).resolves.toEqual({ message: "yes, while you were away" });
    expect(states).toContain("reconnecting");
    expect(proxy.connections).toBeGreaterThanOrEqual(2);
  });

  it("an open call is re-sent by id after a reconnect when the first send was lost", async () => {
    const relayUrl = inject("relayUrl");
    const proxy = track(await Proxy.start(relayUrl));
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const app = track(await appClient(relayUrl, saved.sessionId, saved.appToken!));
    const agent = track(
      await connectAgent({ relayUrl: proxy.url, sessionId: saved.sessionId, token: saved.agentToken, stateDir, backoff: { baseMs: 100, capMs: 400 } }),
    );
    proxy.hold();
    proxy.cut();
    await waitFor(() => !agent.connected || undefined, "the agent to notice the drop");
    const p = agent.call("confirm", undefined, { question: "sent while offline" }, { callId: "offline-1" });
    proxy.release();
    const call = await app.next("tool.call", 15_000);
    expect(call.call_id).toBe("offline-1");
    app.send({ type: "tool.result", call_id: "offline-1", result: { message: "got it" } });
    await expect(p).resolves.toEqual({ message: "got it" });
    // The re-send is by id: the app saw the call exactly once.
    expect(await app.none((f) => f.type === "tool.call", 500)).toBe(true);
  });

  it("the heartbeat force-closes a silent socket and the client reconnects", async () => {
    const relayUrl = inject("relayUrl");
    const proxy = track(await Proxy.start(relayUrl));
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const app = track(await appClient(relayUrl, saved.sessionId, saved.appToken!));
    const agent = track(
      await connectAgent({
        relayUrl: proxy.url,
        sessionId: saved.sessionId,
        token: saved.agentToken,
        stateDir,
        heartbeatMs: 200,
        backoff: { baseMs: 50, capMs: 200 },
      }),
    );
    const p = agent.call("confirm", undefined, { question: "heartbeat" });
    const call = await app.next("tool.call");
    proxy.blackhole(); // the link stays up but nothing comes back: only the heartbeat can notice
    const states: string[] = [];
    agent.on("connection", (s) => states.push(s));
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "through the heartbeat" } });
    await waitFor(() => states.includes("reconnecting") || undefined, "the heartbeat to drop the silent socket");
    proxy.release();
    await expect(p).resolves.toEqual({ message: "through the heartbeat" });
  });

  it("close code 4004 (session deleted) is terminal: pending calls reject, no reconnect", async () => {
    const relayUrl = inject("relayUrl");
    const proxy = track(await Proxy.start(relayUrl));
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const agent = track(
      await connectAgent({ relayUrl: proxy.url, sessionId: saved.sessionId, token: saved.agentToken, stateDir, backoff: { baseMs: 10, capMs: 20 } }),
    );
    const p = agent.call("confirm", undefined, { question: "never answered" }).catch((e: unknown) => e);
    const closed = new Promise<void>((r) => agent.on("connection", (s) => s === "closed" && r()));
    const del = await fetch(`${relayUrl}/api/sessions/${saved.sessionId}`, { method: "DELETE", headers: { authorization: `Bearer ${saved.agentToken}` } });
    expect(del.status).toBe(204);
    await closed;
    expect(await p).toMatchObject({ code: "session_ended" });
    expect(agent.lastError?.code).toBe("session_ended");
    expect(agent.connected).toBe(false);
    const before = proxy.connections;
    await new Promise((r) => setTimeout(r, 300)); // many backoff periods (10-20 ms) pass: still no new attempt
    expect(proxy.connections).toBe(before);
    await expect(agent.call("confirm", undefined, { question: "after" })).rejects.toMatchObject({ code: "session_ended" });
  });

  it("a second connection of the same client id replaces the first (4409), which stops for good", async () => {
    const relayUrl = inject("relayUrl");
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const first = track(await connectAgent({ relayUrl, stateDir, cwd: stateDir }));
    const closed = new Promise<void>((r) => first.on("connection", (s) => s === "closed" && r()));
    const second = track(await connectAgent({ relayUrl, stateDir, cwd: stateDir }));
    expect(second.clientId).toBe(first.clientId);
    expect(second.sessionId).toBe(saved.sessionId);
    await closed;
    expect(first.lastError?.code).toBe("replaced");
  });

  it("refuses a forged token and an app token with LineUpError auth, and a missing relay with connect", async () => {
    const relayUrl = inject("relayUrl");
    const s = await newSession(relayUrl);
    const stateDir = tempDir();
    await expect(connectAgent({ relayUrl, sessionId: s.session_id, token: s.agent_token.slice(0, -2) + "AA", stateDir })).rejects.toMatchObject({
      code: "auth",
    });
    await expect(connectAgent({ relayUrl, sessionId: s.session_id, token: s.app_token, stateDir })).rejects.toMatchObject({ code: "auth" });
    const closedPort = await Proxy.start(relayUrl);
    const url = closedPort.url;
    await closedPort.close();
    await expect(connectAgent({ relayUrl: url, stateDir, cwd: stateDir })).rejects.toMatchObject({ code: "connect" });
  });

  it("provide(): the app calls a tool the agent hosts; handler errors become error results", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app } = await agentAndApp(relayUrl);
    agent.provide(
      {
        name: "add",
        type: "action",
        description: "a+b",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
      },
      (args) => ({
        message: String((args.a as number) + (args.b as number)),
      }),
    );
    agent.provide({ name: "fail", type: "action", description: "throws", inputSchema: { type: "object" } }, () => {
      throw new LineUpError("nope", "it failed");
    });
    await app.next((f) => f.type === "tool.list" && (f.tools as { name: string }[]).some((t) => t.name === "fail"));
    app.send({ type: "tool.call", call_id: "a1", name: "add", arguments: { a: 2, b: 3 } });
    expect(await app.next((f) => f.type === "tool.result" && f.call_id === "a1")).toMatchObject({ result: { message: "5" }, answered_by: agent.clientId });
    app.send({ type: "tool.call", call_id: "f1", name: "fail", arguments: {} });
    expect(await app.next((f) => f.type === "tool.result" && f.call_id === "f1")).toMatchObject({ error: { code: "nope", message: "it failed" } });
  });

  it("a handler sees the app's cancel through its AbortSignal and sends no result", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app } = await agentAndApp(relayUrl);
    let aborted: (v: unknown) => void = () => {};
    const sawAbort = new Promise((r) => (aborted = r));
    let started = false;
    agent.provide({ name: "slow", type: "action", description: "", inputSchema: { type: "object" } }, (_a, call) => {
      started = true;
      return new Promise((resolve) => {
        call.signal.addEventListener("abort", () => {
          aborted(true);
          resolve({ message: "too late" });
        });
      });
    });
    await app.next((f) => f.type === "tool.list" && (f.tools as { name: string }[]).some((t) => t.name === "slow"));
    app.send({ type: "tool.call", call_id: "s1", name: "slow", arguments: {} });
    await waitFor(() => (started ? true : undefined), "the handler to start");
    app.send({ type: "tool.cancel", call_id: "s1" });
    await expect(sawAbort).resolves.toBe(true);
    expect(await app.none((f) => f.type === "tool.result" && f.call_id === "s1", 500)).toBe(true);
  });

  it("messages, status and presence flow both ways", async () => {
    const relayUrl = inject("relayUrl");
    const { agent, app } = await agentAndApp(relayUrl);
    const got = new Promise((r) => agent.on("message", r));
    app.send({ type: "message", content: [{ type: "text", text: "hello agent" }] });
    expect(await got).toMatchObject({ from: { role: "app" }, content: [{ type: "text", text: "hello agent" }] });
    agent.send("hello human");
    expect(await app.next("message")).toMatchObject({ from: { role: "agent", client_id: agent.clientId }, content: [{ type: "text", text: "hello human" }] });
    agent.setStatus("working", "tests");
    expect(await app.next((f) => f.type === "presence" && (f as { agent: { status?: { state: string } } }).agent.status?.state === "working")).toMatchObject({
      agent: { online: true, status: { state: "working", detail: "tests" } },
    });
    expect(agent.presence.apps).toBe(1);
    expect(agent.appTools.map((t) => t.name)).toEqual([CONFIRM.name]);
  });
});
