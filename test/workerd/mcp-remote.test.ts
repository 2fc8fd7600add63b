// POST /mcp: the relay as a remote MCP server, driven by the MCP SDK v2 client over Streamable HTTP inside
// workerd (the real Worker and session object), with the human played by a raw app socket that registers
// the built-in tools. Periods are shortened through createMcpRoutes() where a test needs it; the rules are
// the production ones.
import { Client as McpClient, StreamableHTTPClientTransport, type CallToolResult } from "@modelcontextprotocol/client";
import { createExecutionContext, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import type { SessionCreated, ToolDef } from "../../shared/contract/protocol.js";
import type { Env } from "../../worker/env.js";
import { createMcpRoutes, type McpRouteOptions } from "../../worker/mcp/routes.js";
import { sync } from "./contract-fixtures.js";
import { connect, createSession, epochOf, signAs, stubOf, type Client, type Frame } from "./helpers.js";

const URL_MCP = "http://relay.test/mcp";
type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** The real Worker. */
const worker: FetchLike = (url, init) => exports.default.fetch(new Request(url, init));

/** The same routes with test periods (progress every 250 ms, …), mounted where the Worker mounts them. */
function tuned(o: Partial<McpRouteOptions>): FetchLike {
  const app = new Hono<{ Bindings: Env }>().route("/mcp", createMcpRoutes(o));
  return async (url, init) => app.fetch(new Request(url, init), env, createExecutionContext());
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface McpOpts {
  fetch?: FetchLike;
  headers?: Record<string, string>;
  era?: "legacy" | "modern";
  token?: string;
}

async function mcp(s: SessionCreated, o: McpOpts = {}): Promise<McpClient> {
  const transport = new StreamableHTTPClientTransport(new URL(URL_MCP), {
    fetch: o.fetch ?? worker,
    requestInit: { headers: { authorization: `Bearer ${o.token ?? s.agent_token}`, ...o.headers } },
  });
  const client = new McpClient({ name: "mcp-remote-test", version: "0.0.0" }, o.era === "modern" ? { versionNegotiation: { mode: "auto" } } : {});
  await client.connect(transport);
  cleanups.push(() => client.close().catch(() => {}));
  return client;
}

/** The human's app: registers the built-ins (plus `extra`) and answers what the test tells it to. */
async function human(s: SessionCreated, extra: ToolDef[] = [], clientId = "ph"): Promise<Client> {
  const a = await connect(s.session_id, s.app_token, { clientId });
  await a.next("tool.list");
  a.send({ type: "tool.list", tools: [...BUILTIN_TOOLS, ...extra] });
  a.send({ type: "tool.list" }); // answered after the registration is in: a call made now finds the tools
  await a.next("tool.list");
  cleanups.push(() => a.close());
  return a;
}

const isCallOf = (name: string) => (f: Frame) => f.type === "tool.call" && f.name === name;
const answer = (a: Client, call: Frame, result: Record<string, unknown>) => a.send({ type: "tool.result", call_id: call.call_id, result });
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text?: string } | undefined)?.text ?? "";
const ASK = { project_directory: "/work/demo", question: "Which colour?" };
const PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** Whether the session still holds `callId` (open, or answered and kept until its caller acks it). */
async function held(sid: string, callId: string): Promise<boolean> {
  return runInDurableObject(stubOf(sid), (_i, state) => state.storage.sql.exec("SELECT 1 FROM calls WHERE call_id = ?", callId).toArray().length > 0);
}

/** Settles to a flag, so a test can see a promise is still pending without racing a timer. */
function track<T>(p: Promise<T>): { p: Promise<T>; settled: () => boolean } {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  return { p, settled: () => done };
}

describe("POST /mcp lists and calls the human's tools", () => {
  it.each(["legacy", "modern"] as const)(
    "the SDK client (%s era) lists the built-ins, the bridge's own tools and the app's tools, all with flat object schemas",
    async (era) => {
      const s = await createSession();
      await human(s, [
        {
          name: "weather.now",
          type: "action",
          description: "Ask the human about the weather",
          inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ]);
      const c = await mcp(s, { era });
      expect(c.getNegotiatedProtocolVersion()).toBe(era === "modern" ? "2026-07-28" : "2025-11-25");
      const { tools } = await c.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining([
          "ask_question",
          "work_report",
          "choice",
          "confirm",
          "input",
          "calculator",
          "canvas",
          "weather_now",
          "lineup_call",
          "lineup_tools",
          "await_answer",
        ]),
      );
      for (const t of tools) {
        expect(t.name).toMatch(/^[a-z0-9_]{1,64}$/);
        expect(t.inputSchema.type).toBe("object");
        for (const k of ["oneOf", "anyOf", "allOf"]) expect(t.inputSchema).not.toHaveProperty(k);
      }
      expect(tools.find((t) => t.name === "await_answer")?.inputSchema.required).toEqual(["call_id"]);
    },
  );

  it.each(["legacy", "modern"] as const)(
    "ask_question answered with text and an image comes back as a text block then an MCP image block (%s era)",
    async (era) => {
      const s = await createSession();
      const app = await human(s);
      const c = await mcp(s, { era });
      const p = c.callTool({ name: "ask_question", arguments: { ...ASK, timeout: 120 } });
      const call = await app.next(isCallOf("ask_question"));
      // The bridge's own `timeout` travels as the frame's timeout_s, never inside arguments.
      expect([call.arguments, call.timeout_s]).toEqual([ASK, 120]);
      expect(call.call_id).toMatch(/^mcp_[A-Za-z0-9_-]{22}$/);
      answer(app, call, { message: "Blue, like this:", content: [{ type: "image", mimeType: "image/png", data: PNG_1x1 }] });
      const r = await p;
      expect(r.isError).toBeFalsy();
      expect(text(r)).toMatch(/^Blue, like this:\n\[image 1: image\/png, \d+ B\]$/);
      expect(r.content).toEqual([expect.objectContaining({ type: "text" }), { type: "image", mimeType: "image/png", data: PNG_1x1 }]);
    },
  );

  it("serves the older protocol versions it names (2025-03-26, 2025-06-18): initialize agrees to each, tools/list answers under it", async () => {
    const s = await createSession();
    /** One JSON-RPC message from a JSON or a one-event SSE response. */
    const rpc = async (body: object, version?: string): Promise<{ result?: Record<string, unknown>; error?: unknown }> => {
      const res = await worker(URL_MCP, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${s.agent_token}`,
          ...(version ? { "mcp-protocol-version": version } : {}),
        },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("mcp-session-id")).toBeNull(); // stateless
      const raw = await res.text();
      const data = res.headers.get("content-type")?.includes("text/event-stream")
        ? raw
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5))
            .join("")
        : raw;
      return JSON.parse(data) as { result?: Record<string, unknown> };
    };
    for (const version of ["2025-03-26", "2025-06-18"]) {
      const init = await rpc({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "old-client", version: "1" } },
      });
      expect(init.result?.protocolVersion).toBe(version);
      const list = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, version);
      const names = ((list.result?.tools ?? []) as { name: string }[]).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["ask_question", "await_answer", "work_report"]));
    }
  });

  it("an app tool is called by its MCP name and reaches the app under its LineUp name; calculator's action becomes the frame's action", async () => {
    const s = await createSession();
    const app = await human(s, [
      {
        name: "weather.now",
        type: "action",
        description: "weather",
        inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ]);
    const c = await mcp(s);
    const p = c.callTool({ name: "weather_now", arguments: { city: "Oslo" } });
    const call = await app.next(isCallOf("weather.now"));
    expect(call.arguments).toEqual({ city: "Oslo" });
    answer(app, call, { message: "snowing" });
    expect(text(await p)).toBe("snowing");

    const q = c.callTool({ name: "calculator", arguments: { action: "divide", a: 6, b: 3 } });
    const calc = await app.next(isCallOf("calculator"));
    expect([calc.action, calc.arguments]).toEqual(["divide", { a: 6, b: 3 }]);
    answer(app, calc, { message: "2", value: 2 });
    expect(text(await q)).toBe('2\ndetails: {"value":2}');
  });

  it("bad arguments are refused at once with isError, before anything reaches the app", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s);
    const r = await c.callTool({ name: "ask_question", arguments: { project_directory: "/p" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/invalid_arguments.*question/);
    const u = await c.callTool({ name: "canvas", arguments: { action: "paint" } });
    expect(text(u)).toMatch(/unknown_action[\s\S]*open, draw/);
    expect(await app.none("tool.call")).toBe(true);
  });

  it("lineup_tools shows how many apps are open and the app's catalog", async () => {
    const s = await createSession();
    await human(s);
    const c = await mcp(s);
    const list = text(await c.callTool({ name: "lineup_tools", arguments: {} }));
    expect(list).toMatch(/^apps open: 1/);
    expect(list).toContain('"name": "calculator"');
  });
});

describe("POST /mcp authenticates with the agent token in Authorization only", () => {
  const post = (headers: Record<string, string>, path = "/mcp") =>
    worker(`http://relay.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });

  it("without a token: 401 with a Bearer challenge", async () => {
    const res = await post({});
    expect(res.status).toBe(401);
    // resource_metadata points OAuth clients at the relay's authorization server (docs/mcp.md "OAuth connectors").
    expect(res.headers.get("www-authenticate")).toBe(
      'Bearer realm="lineup-relay", resource_metadata="http://relay.test/.well-known/oauth-protected-resource/mcp"',
    );
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });

  it("a forged or expired token: 401 with error=invalid_token", async () => {
    const s = await createSession();
    const forged = `${s.agent_token.slice(0, -2)}AA`;
    const a = await post({ authorization: `Bearer ${forged}` });
    expect(a.status).toBe(401);
    expect(a.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const expired = await signAs(s.session_id, "agent", Date.now() - 1000, epochOf(s));
    const b = await post({ authorization: `Bearer ${expired}` });
    expect(b.status).toBe(401);
    expect(b.headers.get("www-authenticate")).toContain("expired");
  });

  it("an app token is refused with 403: the human's token cannot act as the agent", async () => {
    const s = await createSession();
    const res = await post({ authorization: `Bearer ${s.app_token}` });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("forbidden");
  });

  it("a token in the URL is refused (400), even a valid one", async () => {
    const s = await createSession();
    const res = await post({}, `/mcp?token=${encodeURIComponent(s.agent_token)}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_request"');
  });

  it("GET and DELETE answer 405: the server is stateless", async () => {
    const s = await createSession();
    for (const method of ["GET", "DELETE"]) {
      const res = await worker(URL_MCP, { method, headers: { authorization: `Bearer ${s.agent_token}`, accept: "text/event-stream" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    }
  });

  it("after the session is deleted its token still lists the built-ins, and a call says the session is gone instead of waiting", async () => {
    const s = await createSession();
    const c = await mcp(s);
    const del = await worker(`http://relay.test/api/sessions/${s.session_id}`, { method: "DELETE", headers: { authorization: `Bearer ${s.agent_token}` } });
    expect(del.status).toBe(204);
    expect((await c.listTools()).tools.map((t) => t.name)).toContain("ask_question");
    const r = await c.callTool({ name: "input", arguments: { question: "Anyone?" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/session_gone[\s\S]*create a new session/);
  });

  it("a browser on a foreign origin is refused (403), like on /api", async () => {
    const s = await createSession();
    const res = await post({ authorization: `Bearer ${s.agent_token}`, origin: "https://evil.example" });
    expect(res.status).toBe(403);
  });

  it("an allowed other origin's preflight is answered with its CORS headers (hono/cors), our own origin needs none", async () => {
    const preflight = (origin: string) =>
      worker("http://relay.test/mcp", {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, mcp-protocol-version" },
      });
    const other = await preflight("https://allowed.example");
    expect(other.status).toBe(204);
    expect(other.headers.get("access-control-allow-origin")).toBe("https://allowed.example");
    expect(other.headers.get("access-control-allow-methods")).toBe("POST,OPTIONS");
    expect(other.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
    expect(other.headers.get("access-control-max-age")).toBe("600");
    const own = await preflight("http://relay.test");
    expect(own.status).toBe(204);
    expect(own.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight("https://evil.example")).status).toBe(403);
  });
});

describe("POST /mcp waits for the human without giving the answer away to a client's timer", () => {
  it("answered well after the client's own request timeout, the call completes because progress resets that timer", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { fetch: tuned({ progressMs: 250 }) });
    const progress: { progress: number; message?: string }[] = [];
    // The SDK client's timer is 1.5 s here (60 s by default) and progress resets it; the human answers
    // after 4 s — without the resets the client would have given up (the next test shows it does).
    const p = c.callTool(
      { name: "input", arguments: { question: "Name?" } },
      { timeout: 1500, resetTimeoutOnProgress: true, onprogress: (n) => progress.push(n) },
    );
    const call = await app.next(isCallOf("input"));
    await new Promise((r) => setTimeout(r, 4000));
    answer(app, call, { message: "Ada" });
    const r = await p;
    expect(text(r)).toBe("Ada");
    expect(progress.at(-1)?.message).toMatch(/Waiting for the human to answer input \(\d+ s of 600 s\)/);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
  });

  it("answered after 70 s at production periods, past the SDK's default 60 s timer, the call completes on progress", { timeout: 120_000 }, async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s); // the real Worker: progress every 15 s
    const progress: number[] = [];
    const p = c.callTool(
      { name: "input", arguments: { question: "After lunch?" } },
      { resetTimeoutOnProgress: true, onprogress: (n) => progress.push(n.progress) },
    );
    const call = await app.next(isCallOf("input"));
    await new Promise((r) => setTimeout(r, 70_000));
    answer(app, call, { message: "back" });
    expect(text(await p)).toBe("back");
    expect(progress.length).toBeGreaterThanOrEqual(4); // at once, then every 15 s
  });

  it("a client whose timer is not reset gives up, and the human's card stays open: the identical retry joins it and gets the answer", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { fetch: tuned({ progressMs: 250 }) });
    const first = c.callTool({ name: "confirm", arguments: { question: "Deploy?" } }, { timeout: 1500, onprogress: () => {} });
    const call = await app.next(isCallOf("confirm"));
    await expect(first).rejects.toThrow(/timed out/i);
    // The client's timeout sent notifications/cancelled ("Request timed out"): not the user, so no cancel.
    expect(await app.none((f) => f.type === "tool.cancel", 1000)).toBe(true);
    const retry = c.callTool({ name: "confirm", arguments: { question: "Deploy?" } });
    expect(await app.none(isCallOf("confirm"), 500)).toBe(true); // no second card
    answer(app, call, { message: "yes", confirmed: true });
    expect(text(await retry)).toBe('yes\ndetails: {"confirmed":true}');
  });

  it("a 3 s budget returns a pending result with the call_id; await_answer then returns the answer, and the human saw the question once", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { headers: { "lineup-wait-budget": "3" } });
    const r = await c.callTool({ name: "ask_question", arguments: ASK });
    expect(r.isError).toBeFalsy();
    const call = await app.next(isCallOf("ask_question"));
    const callId = String(call.call_id);
    expect(text(r)).toContain("has not answered ask_question yet");
    expect(text(r)).toContain(`call_id: ${callId}`);
    expect(text(r)).toMatch(/Call await_answer[\s\S]*Do not ask the question again/);
    expect(r.structuredContent).toMatchObject({ status: "pending", call_id: callId });

    // Another client of the same token (without the 3 s budget) waits for it.
    const c2 = await mcp(s);
    const w = track(c2.callTool({ name: "await_answer", arguments: { call_id: callId } }));
    expect(await app.none((f) => f.type === "tool.call" || f.type === "tool.cancel", 500)).toBe(true);
    expect(w.settled()).toBe(false);
    answer(app, call, { message: "Green" });
    expect(text(await w.p)).toBe("Green");
    // Returned once, then acked (once its response was read out): the relay forgets it, asking again finds nothing.
    await expect.poll(() => held(s.session_id, callId)).toBe(false);
    const again = await c.callTool({ name: "await_answer", arguments: { call_id: callId } });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/unknown_call[\s\S]*Do not call await_answer with it again/);
    expect(await app.none(isCallOf("ask_question"), 300)).toBe(true);
  });

  it("an answer given while no request waits is kept: await_answer returns it", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { headers: { "lineup-wait-budget": "1" } });
    const r = await c.callTool({ name: "input", arguments: { question: "Later?" } });
    const callId = String((r.structuredContent as { call_id: string }).call_id);
    answer(app, await app.next(isCallOf("input")), { message: "now" });
    await sync(app); // the answer is in the session, kept for the caller, before await_answer asks
    expect(text(await c.callTool({ name: "await_answer", arguments: { call_id: callId } }))).toBe("now");
  });

  it("the same question asked again while it is open joins it (one card); asked again after its answer was returned, it is a new card", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { headers: { "lineup-wait-budget": "2" } });
    const q = { name: "choice", arguments: { question: "Pick", options: ["a", "b"] } };
    const first = await c.callTool(q);
    expect(first.structuredContent).toMatchObject({ status: "pending" });
    const call = await app.next(isCallOf("choice"));
    const second = c.callTool(q);
    expect(await app.none(isCallOf("choice"), 500)).toBe(true);
    answer(app, call, { message: "b", selected: ["b"] });
    expect(text(await second)).toBe('b\ndetails: {"selected":["b"]}');
    await expect.poll(() => held(s.session_id, String(call.call_id))).toBe(false); // returned, then acked
    const third = c.callTool(q);
    const call3 = await app.next(isCallOf("choice"));
    expect(call3.call_id).toBe(call.call_id); // same question, same id: the first was acked and forgotten
    answer(app, call3, { message: "a" });
    expect(text(await third)).toBe("a");
  });

  // regression: both SDK clients number their requests alike, so the second waiter's cancel rendezvous (then an
  // ordinary client id) replaced the first's, which read that as notifications/cancelled and closed the card.
  it("two identical questions in flight at once (two clients of one token) make one card, and both get the answer", async () => {
    const s = await createSession();
    const app = await human(s);
    const [c1, c2] = [await mcp(s), await mcp(s)];
    const q = { name: "confirm", arguments: { question: "Both at once?" } };
    const a = track(c1.callTool(q));
    const call = await app.next(isCallOf("confirm"));
    const b = track(c2.callTool(q));
    expect(await app.none((f) => f.type === "tool.call" || f.type === "tool.cancel", 1000)).toBe(true); // no cancel, no second card
    expect(a.settled() || b.settled()).toBe(false); // neither was pushed out, to *pending* or as cancelled
    answer(app, call, { message: "yes", confirmed: true });
    expect(text(await a.p)).toBe('yes\ndetails: {"confirmed":true}');
    expect(text(await b.p)).toBe('yes\ndetails: {"confirmed":true}');
  });

  it("the call's own timeout ends it with a non-error result telling the model to stop asking", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s);
    const p = c.callTool({ name: "ask_question", arguments: { ...ASK, timeout: 2 } }, { onprogress: () => {} });
    const call = await app.next(isCallOf("ask_question"));
    const r = await p;
    expect(r.isError).toBeFalsy();
    expect(text(r)).toMatch(/No answer came from the human within 2 s[\s\S]*Do not ask the same thing again in a loop/);
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).toMatchObject({ reason: "timeout" });
  });

  it("await_answer whose own budget runs out is pending again on the same card; a later await_answer gets the answer", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { headers: { "lineup-wait-budget": "1" } });
    const first = await c.callTool({ name: "ask_question", arguments: ASK });
    const call = await app.next(isCallOf("ask_question"));
    const callId = String(call.call_id);
    expect(first.structuredContent).toMatchObject({ status: "pending", call_id: callId });
    const again = await c.callTool({ name: "await_answer", arguments: { call_id: callId } });
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toMatchObject({ status: "pending", call_id: callId });
    expect(text(again)).toContain(`call_id: ${callId}`);
    expect(await app.none((f) => f.type === "tool.call" || f.type === "tool.cancel", 300)).toBe(true); // still one card, still open
    expect(await held(s.session_id, callId)).toBe(true);
    const last = track(c.callTool({ name: "await_answer", arguments: { call_id: callId } }));
    answer(app, call, { message: "Blue" });
    expect(text(await last.p)).toBe("Blue");
  });

  it("await_answer on a call whose own timeout passes returns the final timeout result, not another pending", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s, { headers: { "lineup-wait-budget": "1" } });
    const first = await c.callTool({ name: "ask_question", arguments: { ...ASK, timeout: 3 } });
    const call = await app.next(isCallOf("ask_question"));
    expect(first.structuredContent).toMatchObject({ status: "pending" });
    // A client without the short budget waits past the call's own 3 s timeout.
    const c2 = await mcp(s, { headers: { "lineup-wait-budget": "30" } });
    const r = await c2.callTool({ name: "await_answer", arguments: { call_id: String(call.call_id) } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).not.toMatchObject({ status: "pending" });
    expect(text(r)).toMatch(/No answer came from the human within[\s\S]*Do not ask the same thing again in a loop/);
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).toMatchObject({ reason: "timeout" });
  });

  it("await_answer with a call_id nothing waits under is an error that says not to retry", async () => {
    const s = await createSession();
    await human(s);
    const c = await mcp(s);
    const r = await c.callTool({ name: "await_answer", arguments: { call_id: "mcp_AAAAAAAAAAAAAAAAAAAAAA" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/unknown_call/);
    const bad = await c.callTool({ name: "await_answer", arguments: { call_id: "c1" } });
    expect(text(bad)).toMatch(/invalid_arguments/);
  });
});

describe("the session object hibernates while a remote MCP call waits", () => {
  it("evicted mid-wait, the object is not running while the call still waits, and the answer still arrives", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s);
    const w = track(c.callTool({ name: "input", arguments: { question: "Still there?" } }, { onprogress: () => {} }));
    const call = await app.next(isCallOf("input"));
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    // Nothing woke it up again: no request into the object is held open by the waiting Worker.
    await expect(evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" })).rejects.toThrow(/not currently running/);
    expect(w.settled()).toBe(false);
    answer(app, call, { message: "yes" });
    expect(text(await w.p)).toBe("yes");
  });

  it("when the object closes every socket (as a deploy does), the link reconnects, and the answer arrives once", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s);
    const progress: string[] = [];
    const w = track(c.callTool({ name: "input", arguments: { question: "Across a deploy?" } }, { onprogress: (n) => progress.push(n.message ?? "") }));
    const call = await app.next(isCallOf("input"));
    await evictDurableObject(stubOf(s.session_id), { webSockets: "close" });
    await app.closedWith();
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph" });
    cleanups.push(() => app2.close());
    // The open call comes to the app again on its new connection; the human answers there.
    const again = await app2.next((f) => f.type === "tool.call" && f.call_id === call.call_id);
    expect(w.settled()).toBe(false);
    answer(app2, again, { message: "still here" });
    const r = await w.p;
    expect(r.content).toEqual([{ type: "text", text: "still here" }]);
  });
});

describe("cancellation", () => {
  it("an explicit MCP cancellation (notifications/cancelled) closes the human's card", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s);
    const ac = new AbortController();
    const p = c.callTool({ name: "ask_question", arguments: ASK }, { signal: ac.signal });
    p.catch(() => {});
    const call = await app.next(isCallOf("ask_question"));
    ac.abort("user pressed Esc");
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).toMatchObject({ reason: "cancelled" });
    await expect(p).rejects.toThrow();
  });

  it("a closed stream without a cancel leaves the card open, and await_answer collects the answer", async () => {
    const s = await createSession();
    const app = await human(s);
    const res = await worker(URL_MCP, {
      method: "POST",
      headers: { authorization: `Bearer ${s.agent_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "input", arguments: { question: "Dropped?" }, _meta: { progressToken: 7 } },
      }),
    });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const call = await app.next(isCallOf("input"));
    await res.body!.cancel(); // the client goes away: no notifications/cancelled
    expect(await app.none((f) => f.type === "tool.cancel", 1000)).toBe(true);
    const c = await mcp(s);
    const w = c.callTool({ name: "await_answer", arguments: { call_id: String(call.call_id) } });
    answer(app, call, { message: "kept" });
    expect(text(await w)).toBe("kept");
  });

  it("an answer whose stream is gone before it was read out is not acked: the identical retry gets it without asking again", async () => {
    const s = await createSession();
    const app = await human(s);
    const res = await worker(URL_MCP, {
      method: "POST",
      headers: { authorization: `Bearer ${s.agent_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "input", arguments: { question: "Unread?" } } }),
    });
    const call = await app.next(isCallOf("input"));
    answer(app, call, { message: "answered, never read" });
    // The answer reaches the Worker and sits in the response nobody reads (the body is pulled only when
    // read); then the client goes away. Acking at that point would free the id and ask the human again.
    await new Promise((r) => setTimeout(r, 1000));
    await res.body!.cancel();
    const c = await mcp(s);
    expect(text(await c.callTool({ name: "input", arguments: { question: "Unread?" } }))).toBe("answered, never read");
    expect(await app.none(isCallOf("input"), 1000)).toBe(true);
  });
});
