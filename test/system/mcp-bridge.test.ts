// `lineup mcp` driven by the real MCP SDK client over stdio, against the relay in workerd (wrangler dev)
// and a scripted app on a raw socket.
import { spawnSync } from "node:child_process";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, inject, it } from "vitest";
import { loadState } from "../../adapter/client/state.js";
import { freePort } from "../helpers/relay.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { App, createSession, firstText, MCP_ENTRY, PNG_1x1, startMcp, tempDir, type Mcp } from "../helpers/mcp-helpers.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A session made by the test, an MCP server joined to it, and (optionally) the app. */
async function setup(opts: { app?: boolean; progressS?: string; args?: string[] } = {}): Promise<{ mcp: Mcp; app?: App; s: SessionCreated; url: string }> {
  const url = inject("relayUrl");
  const s = await createSession(url);
  const mcp = await startMcp(
    {
      LINEUP_RELAY_URL: url,
      LINEUP_STATE_DIR: tempDir("lineup-mcp-state-"),
      LINEUP_SESSION: s.session_id,
      LINEUP_TOKEN: s.agent_token,
      LINEUP_MCP_PROGRESS_S: opts.progressS ?? "0.5",
    },
    opts.args ? { args: opts.args } : {},
  );
  cleanups.push(() => mcp.close());
  // Calls made before the relay connection is up still work, but their timeout already runs: wait for it.
  await mcp.waitStderr(/connected to session/);
  if (opts.app === false) return { mcp, s, url };
  const app = await App.connect(url, s.session_id, s.app_token);
  cleanups.push(() => app.close());
  return { mcp, app, s, url };
}

describe("lineup mcp: the tool list", () => {
  it("lists every built-in tool plus lineup_call and lineup_tools, with [a-z0-9_] names and flat object schemas", async () => {
    const { mcp } = await setup({ app: false });
    const { tools } = await mcp.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["ask_question", "work_report", "choice", "confirm", "input", "calculator", "canvas", "lineup_call", "lineup_tools"]),
    );
    for (const t of tools) {
      expect(t.name).toMatch(/^[a-z0-9_]{1,64}$/);
      expect(t.inputSchema.type).toBe("object");
      for (const k of ["oneOf", "anyOf", "allOf"]) expect(t.inputSchema).not.toHaveProperty(k);
    }
    const ask = tools.find((t) => t.name === "ask_question")!;
    expect(ask.inputSchema.required).toEqual(["project_directory", "question"]);
    expect(Object.keys(ask.inputSchema.properties ?? {})).toEqual(["project_directory", "question", "timeout"]);
    const calc = tools.find((t) => t.name === "calculator")!;
    expect((calc.inputSchema.properties as Record<string, { enum?: string[] }>).action?.enum).toEqual(["add", "subtract", "multiply", "divide"]);
    const canvas = tools.find((t) => t.name === "canvas")!;
    expect(Object.keys(canvas.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["action", "instance_id", "width", "height", "path", "color"]));
    expect(mcp.errors).toEqual([]); // nothing but JSON-RPC reached stdout
    expect(mcp.stderr()).toContain("[lineup mcp] ready");
  });

  it("lists a tool the app registers and sends tools/list_changed when the app's catalog changes", async () => {
    const { mcp, app } = await setup();
    await mcp.client.listTools();
    let changed = 0;
    mcp.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed += 1;
    });
    const weather = {
      name: "weather.now",
      type: "action" as const,
      description: "Ask the human what the weather is",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    };
    const { BUILTIN_TOOLS } = await import("../../shared/contract/builtin-tools.js");
    app!.send({ type: "tool.list", tools: [...BUILTIN_TOOLS, weather] });
    await expect.poll(() => changed, { timeout: 15_000 }).toBeGreaterThan(0);
    const { tools } = await mcp.client.listTools();
    const w = tools.find((t) => t.name === "weather_now");
    expect(w?.inputSchema.required).toEqual(["city"]);
    // Calling it by its MCP name reaches the app under its LineUp name.
    const p = mcp.client.callTool({ name: "weather_now", arguments: { city: "Oslo", timeout: 30 } });
    const call = await app!.call("weather.now");
    expect(call.arguments).toEqual({ city: "Oslo" });
    app!.answer(call, { result: { message: "snowing" } });
    expect(firstText(await p)).toBe("snowing");
  });
});

describe("lineup mcp: calls", () => {
  it("ask_question answered with text and an image arrives as a text block then an MCP image block", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/work/demo", question: "Which **colour**?", timeout: 120 } });
    const call = await app!.call("ask_question");
    // The bridge's own `timeout` travels as the frame's timeout_s, never inside arguments.
    expect(call.arguments).toEqual({ project_directory: "/work/demo", question: "Which **colour**?" });
    expect(call.timeout_s).toBe(120);
    app!.answer(call, { result: { message: "Blue, like this:", content: [{ type: "image", mimeType: "image/png", data: PNG_1x1 }] } });
    const r = await p;
    expect(r.isError).toBeFalsy();
    expect(firstText(r)).toMatch(/^Blue, like this:\n\[image 1: image\/png, \d+ B\]$/);
    expect(r.content).toEqual([expect.objectContaining({ type: "text" }), { type: "image", mimeType: "image/png", data: PNG_1x1 }]);
  });

  it("work_report defaults to a 600 s wait and carries the human's feedback and extra fields", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({ name: "work_report", arguments: { project_directory: "/p", summary: "Done: added tests" } });
    const call = await app!.call("work_report");
    expect(call.timeout_s).toBe(600);
    app!.answer(call, { result: { message: "approved", approved: true } });
    const r = await p;
    expect(firstText(r)).toBe('approved\ndetails: {"approved":true}');
  });

  it("calculator and canvas: `action` becomes the frame's action and leaves the arguments", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({ name: "calculator", arguments: { action: "divide", a: 6, b: 3 } });
    const call = await app!.call("calculator");
    expect(call.action).toBe("divide");
    expect(call.arguments).toEqual({ a: 6, b: 3 });
    app!.answer(call, { result: { message: "2", value: 2 } });
    expect(firstText(await p)).toBe('2\ndetails: {"value":2}');

    const q = mcp.client.callTool({ name: "canvas", arguments: { action: "open", width: 100, height: 80 } });
    const open = await app!.call("canvas");
    expect([open.action, open.arguments]).toEqual(["open", { width: 100, height: 80 }]);
    app!.answer(open, { result: { message: "instance_id: cv1", instance_id: "cv1" } });
    expect(firstText(await q)).toContain("instance_id: cv1");
  });

  it("an error result becomes isError with text telling the model what to do", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({ name: "calculator", arguments: { action: "divide", a: 1, b: 0 } });
    app!.answer(await app!.call("calculator"), { error: { code: "divide_by_zero", message: "b is 0" } });
    const r = await p;
    expect(r.isError).toBe(true);
    expect(firstText(r)).toMatch(/divide_by_zero.*b is 0[\s\S]*Do not retry/);

    const q = mcp.client.callTool({ name: "confirm", arguments: { question: "Deploy?" } });
    app!.answer(await app!.call("confirm"), { error: { code: "declined", message: "dismissed" } });
    const d = await q;
    expect(d.isError).toBe(true);
    expect(firstText(d)).toMatch(/dismissed this request[\s\S]*Do not send the same request again/);
  });

  it("bad arguments are refused at once with isError, before anything reaches the app", async () => {
    const { mcp, app } = await setup();
    const r = await mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p" } });
    expect(r.isError).toBe(true);
    expect(firstText(r)).toMatch(/invalid_arguments.*question/);
    const u = await mcp.client.callTool({ name: "canvas", arguments: { action: "paint", instance_id: "x" } });
    expect(firstText(u)).toMatch(/unknown_action[\s\S]*open, draw/);
    const t = await mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "q", timeout: "soon" } });
    expect(firstText(t)).toMatch(/timeout.*number/);
    // Then a good call is the first the app sees.
    const p = mcp.client.callTool({ name: "input", arguments: { question: "Name?" } });
    const call = await app!.call("input");
    expect(call.arguments).toEqual({ question: "Name?" });
    expect(app!.frames.filter((f) => f.type === "tool.call")).toEqual([]);
    app!.answer(call, { result: { message: "Ada" } });
    expect(firstText(await p)).toBe("Ada");
  });

  it("lineup_call reaches any app tool by its LineUp name, and lineup_tools shows the catalog", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({
      name: "lineup_call",
      arguments: { tool: "choice", action: "select", arguments: { question: "Pick", options: ["a", "b"] }, timeout: 30 },
    });
    const call = await app!.call("choice");
    expect([call.action, call.arguments, call.timeout_s]).toEqual(["select", { question: "Pick", options: ["a", "b"] }, 30]);
    app!.answer(call, { result: { message: "b", selected: ["b"] } });
    expect(firstText(await p)).toBe('b\ndetails: {"selected":["b"]}');
    const list = firstText(await mcp.client.callTool({ name: "lineup_tools", arguments: {} }));
    expect(list).toMatch(/^apps open: 1/);
    expect(list).toContain('"name": "calculator"');
  });
});

describe("lineup mcp: waiting, timeout and cancellation", () => {
  it("sends progress notifications while the human thinks", async () => {
    const { mcp, app } = await setup({ progressS: "0.5" });
    const progress: { progress: number; message?: string }[] = [];
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Still there?" } }, undefined, {
      onprogress: (n) => progress.push(n),
    });
    const call = await app!.call("ask_question");
    await expect.poll(() => progress.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    app!.answer(call, { result: { message: "yes" } });
    expect(firstText(await p)).toBe("yes");
    expect(progress.at(-1)?.message).toMatch(/Waiting for the human to answer ask_question \(\d+ s of 600 s\)/);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
  });

  it("MCP cancellation reaches the app as tool.cancel", async () => {
    const { mcp, app } = await setup();
    const ac = new AbortController();
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Long one?" } }, undefined, { signal: ac.signal });
    p.catch(() => {});
    const call = await app!.call("ask_question");
    ac.abort("user pressed Esc");
    const cancel = await app!.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id);
    expect(cancel.reason).toBe("cancelled");
    await expect(p).rejects.toThrow();
  });

  it("a timeout is a terminal, non-error result that says not to re-ask in a loop", async () => {
    const { mcp, app } = await setup();
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Quick?", timeout: 2 } });
    const call = await app!.call("ask_question");
    expect(call.timeout_s).toBe(2);
    const r = await p;
    expect(r.isError).toBeFalsy();
    expect(firstText(r)).toMatch(/No answer came from the human within 2 s[\s\S]*Do not ask the same thing again in a loop[\s\S]*continue/);
    expect((await app!.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id)).reason).toBe("timeout");
  });
});

describe("lineup mcp: pending handles for capped hosts (await_answer)", () => {
  it("a call without progress past --wait-budget returns a pending result; await_answer returns the answer, and the human saw the question once", async () => {
    const { mcp, app } = await setup({ args: ["--wait-budget", "2"] });
    const r = await mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Slow one?" } });
    expect(r.isError).toBeFalsy();
    const call = await app!.call("ask_question");
    expect(firstText(r)).toMatch(
      new RegExp(
        `has not answered ask_question yet[\\s\\S]*call_id: ${call.call_id as string}[\\s\\S]*Call await_answer[\\s\\S]*Do not ask the question again`,
      ),
    );
    expect(r.structuredContent).toMatchObject({ status: "pending", call_id: call.call_id });
    const w = mcp.client.callTool({ name: "await_answer", arguments: { call_id: call.call_id } });
    app!.answer(call, { result: { message: "slowly, yes" } });
    expect(firstText(await w)).toBe("slowly, yes");
    expect(app!.frames.filter((f) => f.type === "tool.call")).toEqual([]);
    // Collected: the id is spent, and the same question again is a new card.
    expect(firstText(await mcp.client.callTool({ name: "await_answer", arguments: { call_id: call.call_id } }))).toMatch(/unknown_call/);
  });

  it("await_answer's own timeout returns pending again before the answer, leaves the card open, and a later await_answer still gets the answer", async () => {
    const { mcp, app } = await setup({ args: ["--wait-budget", "2"] });
    const r = await mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Later?" } });
    const call = await app!.call("ask_question");
    expect(r.structuredContent).toMatchObject({ status: "pending", call_id: call.call_id });
    const again = await mcp.client.callTool({ name: "await_answer", arguments: { call_id: call.call_id, timeout: 1 } });
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toMatchObject({ status: "pending", call_id: call.call_id });
    expect(firstText(again)).toMatch(/Call await_answer/);
    // The card was neither cancelled nor sent again.
    expect(app!.frames.filter((f) => f.type === "tool.cancel" || f.type === "tool.call")).toEqual([]);
    const w = mcp.client.callTool({ name: "await_answer", arguments: { call_id: call.call_id } });
    app!.answer(call, { result: { message: "later, yes" } });
    expect(firstText(await w)).toBe("later, yes");
  });

  it("the same question while it is open joins it: one card, one answer for both requests", async () => {
    const { mcp, app } = await setup({ args: ["--wait-budget", "30"] });
    const args = { name: "confirm", arguments: { question: "Ship it?" } };
    const a = mcp.client.callTool(args);
    const call = await app!.call("confirm");
    const b = mcp.client.callTool(args);
    await new Promise((r) => setTimeout(r, 300));
    expect(app!.frames.filter((f) => f.type === "tool.call")).toEqual([]);
    app!.answer(call, { result: { message: "yes", confirmed: true } });
    expect([firstText(await a), firstText(await b)]).toEqual(['yes\ndetails: {"confirmed":true}', 'yes\ndetails: {"confirmed":true}']);
  });

  it("a host whose own request timer runs out does not cancel the human's card: the retry joins it", async () => {
    const { mcp, app } = await setup();
    const first = mcp.client.callTool({ name: "input", arguments: { question: "Timer?" } }, undefined, { timeout: 1500, onprogress: () => {} });
    const call = await app!.call("input");
    await expect(first).rejects.toThrow(/timed out/i);
    await new Promise((r) => setTimeout(r, 500));
    expect(app!.frames.filter((f) => f.type === "tool.cancel")).toEqual([]);
    const retry = mcp.client.callTool({ name: "input", arguments: { question: "Timer?" } });
    app!.answer(call, { result: { message: "here" } });
    expect(firstText(await retry)).toBe("here");
  });
});

describe("lineup mcp: options", () => {
  it("--max-timeout caps every wait below the host's limit, and the capped wait still ends cleanly", async () => {
    const { mcp, app } = await setup({ args: ["--max-timeout", "3"] });
    const ask = (await mcp.client.listTools()).tools.find((t) => t.name === "ask_question")!;
    expect((ask.inputSchema.properties as Record<string, { maximum?: number }>).timeout?.maximum).toBe(3);
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Long?", timeout: 600 } });
    const call = await app!.call("ask_question");
    expect(call.timeout_s).toBe(3);
    const r = await p;
    expect(r.isError).toBeFalsy();
    expect(firstText(r)).toMatch(/No answer came from the human within 3 s/);
  });

  it("with the relay unreachable it still starts and lists tools, and a call says so as an error without waiting", async () => {
    const mcp = await startMcp({ LINEUP_RELAY_URL: `http://127.0.0.1:${await freePort()}`, LINEUP_STATE_DIR: tempDir("lineup-mcp-state-") });
    cleanups.push(() => mcp.close());
    expect((await mcp.client.listTools()).tools.map((t) => t.name)).toContain("ask_question");
    const r = await mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "hello?" } });
    expect(r.isError).toBe(true);
    expect(firstText(r)).toMatch(/not_connected[\s\S]*cannot reach the LineUp relay[\s\S]*LINEUP_RELAY_URL/);
  });

  it("a bad option prints the usage on stderr, nothing on stdout, and exits 2", () => {
    const r = spawnSync(process.execPath, [...MCP_ENTRY, "--timeout", "soon"], { encoding: "utf8", timeout: 30_000, input: "" });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/--timeout must be a number from 1 to 86400[\s\S]*usage: lineup mcp/);
  });
});

describe("lineup mcp: the project's saved session", () => {
  /** Starts a server that creates or reuses the session saved for `project` in `stateDir`. */
  async function savedMcp(project: string, stateDir: string, extra: Record<string, string> = {}) {
    const mcp = await startMcp(
      { LINEUP_RELAY_URL: inject("relayUrl"), LINEUP_STATE_DIR: stateDir, LINEUP_MCP_PROGRESS_S: "0.5", LINEUP_GUEST_LINK: "1", ...extra },
      { cwd: project },
    );
    cleanups.push(() => mcp.close());
    const link = (await mcp.waitStderr(/(http:\/\/\S+\/#s=([^&\s]+)&t=(\S+))/))!;
    return { mcp, link: link[1]!, sid: decodeURIComponent(link[2]!), appToken: decodeURIComponent(link[3]!) };
  }

  it("servers started in one project directory share one session and print its pairing link (with a QR code) on stderr", async () => {
    const project = tempDir("lineup-mcp-proj-");
    const state = tempDir("lineup-mcp-state-");
    const [a, b] = await Promise.all([savedMcp(project, state, { LINEUP_MCP_QR: "1" }), savedMcp(project, state)]);
    expect(b.link).toBe(a.link);
    await a.mcp.waitStderr(/[▀▄█]{10}/); // the QR code
    expect(b.mcp.stderr()).not.toMatch(/[▀▄█]{10}/); // LINEUP_MCP_QR=0
    const other = await savedMcp(tempDir("lineup-mcp-proj2-"), state);
    expect(other.sid).not.toBe(a.sid);
    // The human pairs once and answers calls from either server.
    const app = await App.connect(inject("relayUrl"), a.sid, a.appToken);
    cleanups.push(() => app.close());
    const p = b.mcp.client.callTool({ name: "input", arguments: { question: "From b?" } });
    app.answer(await app.call("input"), { result: { message: "yes, b" } });
    expect(firstText(await p)).toBe("yes, b");
    expect(a.mcp.errors).toEqual([]);
  });

  it("with no app open the call waits, progress says nobody has the app open with the pairing link, and a late app answers it", async () => {
    const { mcp, link, sid, appToken } = await savedMcp(tempDir("lineup-mcp-proj-"), tempDir("lineup-mcp-state-"));
    const messages: string[] = [];
    const p = mcp.client.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Anyone?", timeout: 60 } }, undefined, {
      onprogress: (n) => messages.push(n.message ?? ""),
    });
    await expect.poll(() => messages.some((m) => m.includes("Nobody has the LineUp app open yet") && m.includes(link)), { timeout: 15_000 }).toBe(true);
    const app = await App.connect(inject("relayUrl"), sid, appToken);
    cleanups.push(() => app.close());
    app.answer(await app.call("ask_question"), { result: { message: "here now" } });
    expect(firstText(await p)).toBe("here now");
  });

  it("with no app open until the timeout, the result names the pairing link and is not an error", async () => {
    const { mcp, link } = await savedMcp(tempDir("lineup-mcp-proj-"), tempDir("lineup-mcp-state-"));
    const r = await mcp.client.callTool({ name: "work_report", arguments: { project_directory: "/p", summary: "done", timeout: 2 } });
    expect(r.isError).toBeFalsy();
    expect(firstText(r)).toMatch(/No answer came from the human within 2 s/);
    expect(firstText(r)).toContain(`Nobody has the LineUp app open at the moment; the human can pair at ${link}`);
  });

  it("after the session is deleted, the next call starts a new session, prints its new link and reaches the human there", async () => {
    const state = tempDir("lineup-mcp-state-");
    const { mcp, sid } = await savedMcp(tempDir("lineup-mcp-proj-"), state);
    const saved = loadState(state).sessions.find((x) => x.sessionId === sid)!;
    const del = await fetch(`${inject("relayUrl")}/api/sessions/${sid}`, { method: "DELETE", headers: { authorization: `Bearer ${saved.agentToken}` } });
    expect(del.status).toBe(204);
    await mcp.waitStderr(/not reconnecting/);
    const messages: string[] = [];
    const p = mcp.client.callTool({ name: "input", arguments: { question: "New session?", timeout: 60 } }, undefined, {
      onprogress: (n) => messages.push(n.message ?? ""),
    });
    const m = await mcp.waitStderr(new RegExp(`(http://\\S+#s=((?!${sid})[^&\\s]+)&t=(\\S+))`));
    // Connect the app only once the call is queued: an app that is connected but has not registered yet
    // would get the call answered with unknown_tool (contract §4.2).
    await expect.poll(() => messages.some((x) => x.includes("Nobody has the LineUp app open") && x.includes(m[1]!)), { timeout: 15_000 }).toBe(true);
    const app = await App.connect(inject("relayUrl"), decodeURIComponent(m[2]!), decodeURIComponent(m[3]!));
    cleanups.push(() => app.close());
    app.answer(await app.call("input"), { result: { message: "yes, new" } });
    expect(firstText(await p)).toBe("yes, new");
  });
});
