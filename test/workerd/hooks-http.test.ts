// Claude Code's `type: "http"` hooks answered by the relay itself (issue 29 item 6, docs/permissions.md §7.12),
// in workerd: the machine credential, the inbox policy deciding at once, a card held on a hibernatable link
// while the human answers on a paired app, the exact JSON the command hook prints, no decision (an empty 200)
// when nobody answers, and clean refusals that change nothing. The hook inputs are the documented stdin JSON
// (https://code.claude.com/docs/en/hooks, "PermissionRequest input" and "PreToolUse input").
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { generateContentKey, generateHolderKeyPair, holderSelf, sealRoster, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import type { DevicePaired, InboxPolicy, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { authed } from "./contract-fixtures.js";
import { type Client, connect, fetchWorker, RELAY_KEY, stubOf, type Frame } from "./helpers.js";

const send = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });

async function inbox(): Promise<MachineCreated> {
  const r = await send("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" });
  expect(r.status).toBe(201);
  return r.json();
}
async function state(m: MachineCreated): Promise<InboxState> {
  const r = await fetchWorker("/api/inbox", authed(m.machine_credential));
  expect(r.status).toBe(200);
  return r.json();
}
async function setPolicy(m: MachineCreated, permissions: Partial<InboxPolicy["permissions"]>): Promise<void> {
  expect((await send("PUT", "/api/inbox/policy", m.machine_credential, { permissions })).status).toBe(200);
}
/** The session `lineup` would have made for `dir` on this machine. */
async function projectSession(m: MachineCreated, dir: string): Promise<SessionCreated> {
  const r = await send("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: dir, host: "laptop" });
  expect(r.status).toBe(201);
  return r.json();
}
/** The human's app in that session, with the built-in cards (permission, ask_questions, …). */
async function app(s: Pick<SessionCreated, "session_id" | "app_token">, clientId = "ph"): Promise<Client> {
  const a = await connect(s.session_id, s.app_token, { clientId });
  await a.next("tool.list");
  a.send({ type: "tool.list", tools: BUILTIN_TOOLS });
  a.send({ type: "tool.list" });
  await a.next("tool.list");
  return a;
}

const DIR = "/home/dev/shop";
const TRANSCRIPT = "/home/dev/.claude/projects/-home-dev-shop/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl";
const common = { session_id: "abc123", transcript_path: TRANSCRIPT, cwd: DIR, permission_mode: "default" };
const permissionRequest = (tool_name: string, tool_input: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...common,
  hook_event_name: "PermissionRequest",
  tool_name,
  tool_input,
  ...extra,
});
const preToolUse = (tool_name: string, tool_input: Record<string, unknown>) => ({
  ...common,
  hook_event_name: "PreToolUse",
  tool_name,
  tool_input,
  tool_use_id: "toolu_01ABC123",
});
const hook = (m: MachineCreated, event: string, body: unknown, wait?: number) =>
  send("POST", `/api/hooks/claude/${event}${wait !== undefined ? `?wait=${wait}` : ""}`, m.machine_credential, body);

/** Settles to a flag, so a test can see the request is still held without racing a timer. */
function track<T>(p: Promise<T>): { p: Promise<T>; settled: () => boolean } {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  return { p, settled: () => done };
}
const isPermissionCard = (f: Frame) => f.type === "tool.call" && f.name === "permission";
const RULES = { allow: ["Bash(npm test)"], ask: [], deny: ["Bash(rm -rf:*)"] };

describe("the inbox policy decides at once", () => {
  it("PermissionRequest: allowed and denied by the inbox policy, in the command hook's exact JSON, without a session", async () => {
    const m = await inbox();
    await setPolicy(m, RULES);
    const allow = await hook(m, "permission-request", permissionRequest("Bash", { command: "npm test", description: "Run the tests" }));
    expect(allow.status).toBe(200);
    expect(await allow.json()).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "allow", updatedInput: { command: "npm test", description: "Run the tests" } },
      },
    });
    const deny = await hook(m, "permission-request", permissionRequest("Bash", { command: "rm -rf node_modules" }));
    expect(await deny.json()).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "LineUp policy: denied by Bash(rm -rf:*) (inbox policy v1) for `rm -rf node_modules`" },
      },
    });
    expect((await state(m)).sessions).toEqual([]);
  });

  it("PreToolUse: allow and deny by policy, and no output at all (an empty 200, no session, no card) when the policy would ask", async () => {
    const m = await inbox();
    await setPolicy(m, RULES);
    const allow = await hook(m, "pre-tool-use", preToolUse("Bash", { command: "npm test" }));
    expect(await allow.json()).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "LineUp policy: allowed by Bash(npm test) (inbox policy v1)",
      },
    });
    const deny = await hook(m, "pre-tool-use", preToolUse("Bash", { command: "rm -rf /tmp/x" }));
    expect(((await deny.json()) as { hookSpecificOutput: { permissionDecision: string } }).hookSpecificOutput.permissionDecision).toBe("deny");
    const ask = await hook(m, "pre-tool-use", preToolUse("Bash", { command: "git push" }));
    expect([ask.status, await ask.text(), ask.headers.get("lineup-hook-outcome")]).toEqual([200, "", "policy_asks"]);
    // Never AskUserQuestion: the question hook answers it, and Claude Code ranks deny > ask > allow.
    const q = await hook(m, "pre-tool-use", preToolUse("AskUserQuestion", { questions: [{ question: "Which?", options: [{ label: "A" }] }] }));
    expect([q.status, await q.text()]).toEqual([200, ""]);
    expect((await state(m)).sessions).toEqual([]);
  });

  it("resolves ~/ rules against the home directory read from transcript_path", async () => {
    const m = await inbox();
    await setPolicy(m, { deny: ["Read(~/.ssh/**)"] });
    const r = await hook(m, "pre-tool-use", preToolUse("Read", { file_path: "/home/dev/.ssh/id_ed25519" }));
    expect(((await r.json()) as { hookSpecificOutput: { permissionDecision: string } }).hookSpecificOutput.permissionDecision).toBe("deny");
  });
});

describe("ask: a card on the phone, held while the human answers", () => {
  it("puts a permission card in the project's session and returns the human's allow, deny and decline in the exact JSON", async () => {
    const m = await inbox();
    await setPolicy(m, RULES);
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const suggestion = {
      type: "addRules",
      rules: [{ toolName: "Bash", ruleContent: "git push origin main" }],
      behavior: "allow",
      destination: "localSettings",
    };
    const input = { command: "git push origin main", description: "Push" };
    const held = track(hook(m, "permission-request", permissionRequest("Bash", input, { permission_suggestions: [suggestion] }), 30));
    const card = await a.next(isPermissionCard);
    expect(card.arguments).toEqual({
      tool_name: "Bash",
      input,
      project_directory: DIR,
      agent: "Claude Code",
      reason: "no allow rule covers `git push origin main`",
      suggestions: ["Bash(git push origin main)", "Bash(git push:*)"],
    });
    expect(held.settled()).toBe(false);
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "allow", behavior: "allow" } });
    const r = await held.p;
    expect([r.status, await r.json()]).toEqual([
      200,
      { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input } } },
    ]);

    const held2 = hook(m, "permission-request", permissionRequest("Write", { file_path: `${DIR}/x.txt`, content: "hi" }), 30);
    const card2 = await a.next(isPermissionCard);
    a.send({ type: "tool.result", call_id: card2.call_id, result: { message: "deny", behavior: "deny", feedback: "write it under docs/ instead" } });
    expect(await (await held2).json()).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "write it under docs/ instead" } },
    });

    const held3 = hook(m, "permission-request", permissionRequest("WebFetch", { url: "https://example.com/a", prompt: "read" }), 30);
    const card3 = await a.next(isPermissionCard);
    a.send({ type: "tool.result", call_id: card3.call_id, error: { code: "declined", message: "the human declined" } });
    expect(await (await held3).json()).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "The human declined this in the LineUp app." } },
    });
    a.close();
  });

  it("always allow: echoes the chosen suggestion and adds the rule to the inbox policy, so the next such call needs nobody", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const suggestion = { type: "addRules", rules: [{ toolName: "Bash", ruleContent: "cargo build:*" }], behavior: "allow", destination: "localSettings" };
    const input = { command: "cargo build --release" };
    const held = hook(m, "permission-request", permissionRequest("Bash", input, { permission_suggestions: [suggestion] }), 30);
    const card = await a.next(isPermissionCard);
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "always", behavior: "allow", rule: "Bash(cargo build:*)" } });
    expect(await (await held).json()).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input, updatedPermissions: [suggestion] } },
    });
    const next = await hook(m, "pre-tool-use", preToolUse("Bash", { command: "cargo build" }));
    expect(((await next.json()) as { hookSpecificOutput: { permissionDecision: string } }).hookSpecificOutput.permissionDecision).toBe("allow");
    a.close();
  });

  it("AskUserQuestion: the question set as one ask_questions card; the answers return as allow with updatedInput.answers", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const questions = [
      { question: "Which database?", header: "DB", multiSelect: false, options: [{ label: "Postgres", description: "relational" }, { label: "SQLite" }] },
      { question: "Which extras?", header: "Extras", multiSelect: true, options: [{ label: "Auth" }, { label: "Cache" }] },
    ];
    const held = hook(m, "ask-user-question", preToolUse("AskUserQuestion", { questions }), 30);
    const card = await a.next((f) => f.type === "tool.call" && f.name === "ask_questions");
    expect((card.arguments as { questions: unknown[] }).questions).toHaveLength(2);
    const answers = { "Which database?": "SQLite", "Which extras?": "Auth, Cache" };
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "answered", answers } });
    expect(await (await held).json()).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "Answered in the LineUp app",
        updatedInput: { questions, answers },
      },
    });
    a.close();
  });

  it("a hook from a subdirectory goes to the session of the nearest project directory above it, not a new one", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    await projectSession(m, "/home/dev/shop-other");
    const a = await app(s);
    const held = hook(m, "permission-request", { ...permissionRequest("Bash", { command: "make" }), cwd: `${DIR}/src/app` }, 30);
    const card = await a.next(isPermissionCard);
    expect(card.arguments).toMatchObject({ project_directory: DIR });
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "allow", behavior: "allow" } });
    expect((await held).status).toBe(200);
    expect((await state(m)).sessions).toHaveLength(2);
    a.close();
  });

  it("with no session for the project yet, makes one (named after the directory) in the machine's inbox, as lineup would", async () => {
    const m = await inbox();
    const held = hook(m, "permission-request", permissionRequest("Bash", { command: "make deploy" }), 30);
    let sessions: InboxState["sessions"] = [];
    for (let i = 0; i < 100 && sessions.length === 0; i++) {
      sessions = (await state(m)).sessions;
      if (sessions.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(sessions.map((x) => [x.label, x.project_dir, x.machine_id])).toEqual([["shop", DIR, m.machine_id]]);
    // A paired phone reaches it with its device credential, like every session of its inbox.
    const pair = (await (await send("POST", "/api/inbox/pairings", m.machine_credential)).json()) as { code: string };
    const dev = (await (await send("POST", "/api/pair", undefined, { code: pair.code, name: "phone" })).json()) as DevicePaired;
    const a = await app({ session_id: sessions[0]!.session_id, app_token: dev.device_credential }, dev.device_id);
    const card = await a.next(isPermissionCard);
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "allow", behavior: "allow" } });
    expect(((await (await held).json()) as { hookSpecificOutput: { decision: { behavior: string } } }).hookSpecificOutput.decision.behavior).toBe("allow");
    a.close();
  });

  it("nobody answers within the wait: an empty 200 (no decision: Claude Code's own dialog) and the card is cancelled", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const held = hook(m, "permission-request", permissionRequest("Bash", { command: "git push" }), 1);
    const card = await a.next(isPermissionCard);
    const r = await held;
    expect([r.status, await r.text(), r.headers.get("lineup-hook-outcome")]).toEqual([200, "", "no_answer"]);
    expect(await a.next((f) => f.type === "tool.cancel" && f.call_id === card.call_id)).toMatchObject({ type: "tool.cancel" });
    a.close();
  });

  it("regression: Claude Code giving up (its hook timeout closes the request) cancels the card at once, not at the wait's end (needs enable_request_signal)", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const gone = new AbortController();
    const held = fetchWorker("/api/hooks/claude/permission-request?wait=300", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${m.machine_credential}` },
      body: JSON.stringify(permissionRequest("Bash", { command: "git push" })),
      signal: gone.signal,
    }).catch((e: unknown) => e);
    const card = await a.next(isPermissionCard);
    gone.abort();
    await held;
    // Without the flag the request's signal never fires and the card would stay for the whole 300 s wait.
    expect(await a.next((f) => f.type === "tool.cancel" && f.call_id === card.call_id, 10_000)).toMatchObject({ type: "tool.cancel" });
    a.close();
  });

  it("the session object is evicted while the request is held, and the human's answer still arrives", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const input = { command: "git push" };
    const held = track(hook(m, "permission-request", permissionRequest("Bash", input), 30));
    const card = await a.next(isPermissionCard);
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    // Nothing woke it up again: the held request keeps no request into the object open.
    await expect(evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" })).rejects.toThrow(/not currently running/);
    expect(held.settled()).toBe(false);
    a.send({ type: "tool.result", call_id: card.call_id, result: { message: "allow", behavior: "allow" } });
    expect(await (await held.p).json()).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input } },
    });
    a.close();
  });
});

describe("a deploy while a request is held", () => {
  it("when the object closes every socket, the link reconnects and the one card's answer arrives", async () => {
    const m = await inbox();
    const s = await projectSession(m, DIR);
    const a = await app(s);
    const input = { command: "git push" };
    const held = track(hook(m, "permission-request", permissionRequest("Bash", input), 30));
    const card = await a.next(isPermissionCard);
    await evictDurableObject(stubOf(s.session_id), { webSockets: "close" });
    await a.closedWith();
    const a2 = await app(s);
    // The open call comes to the app again on its new connection (never a second card); the human answers there.
    const again = await a2.next((f) => isPermissionCard(f) && f.call_id === card.call_id);
    expect(held.settled()).toBe(false);
    a2.send({ type: "tool.result", call_id: again.call_id, result: { message: "deny", behavior: "deny" } });
    expect(await (await held.p).json()).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "The human denied this in the LineUp app." } },
    });
    expect(await a2.none(isPermissionCard)).toBe(true);
    a2.close();
  });
});

describe("refusals change nothing", () => {
  it("a revoked machine credential is refused 401, and so is a made-up one", async () => {
    const m = await inbox();
    const body = permissionRequest("Bash", { command: "git push" });
    expect((await send("DELETE", `/api/inbox/machines/${m.machine_id}`, m.machine_credential)).status).toBe(204);
    const r = await hook(m, "permission-request", body);
    expect([r.status, ((await r.json()) as { error: { code: string } }).error.code]).toEqual([401, "unauthorized"]);
    const none = await send("POST", "/api/hooks/claude/permission-request", undefined, body);
    expect(none.status).toBe(401);
  });

  it("bad JSON is 400 bad_json, a body of the wrong shape 400 bad_request, a bad wait 400, an unknown event 404, over 1 MiB 413; no session is made", async () => {
    const m = await inbox();
    const bad = await hook(m, "permission-request", "{not json");
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([400, "bad_json"]);
    const shape = await hook(m, "permission-request", { ...common, hook_event_name: "PermissionRequest", tool_input: {} });
    expect([shape.status, ((await shape.json()) as { error: { message: string } }).error.message]).toEqual([400, expect.stringContaining("tool_name")]);
    expect((await hook(m, "permission-request", permissionRequest("Bash", { command: "x" }), 0)).status).toBe(400);
    expect((await hook(m, "post-tool-use", preToolUse("Bash", { command: "x" }))).status).toBe(404);
    const big = await hook(m, "permission-request", permissionRequest("Write", { file_path: `${DIR}/big.txt`, content: "x".repeat(1024 * 1024) }));
    expect([big.status, ((await big.json()) as { error: { code: string } }).error.code]).toEqual([413, "too_large"]);
    expect((await state(m)).sessions).toEqual([]);
  });

  it("sealed (E2E on): refused 409 e2e_sealed — no decision, no session and no card; the terminal's dialog decides", async () => {
    const m = await inbox();
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
    const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
    expect((await send("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster })).status).toBe(200);
    for (const [event, body] of [
      ["permission-request", permissionRequest("Bash", { command: "git push" })],
      ["pre-tool-use", preToolUse("Bash", { command: "git push" })],
      ["ask-user-question", preToolUse("AskUserQuestion", { questions: [{ question: "Which?", options: [{ label: "A" }] }] })],
    ] as const) {
      const r = await hook(m, event, body, 5);
      const err = ((await r.json()) as { error: { code: string; message: string } }).error;
      expect([r.status, err.code, err.message]).toEqual([409, "e2e_sealed", expect.stringContaining("lineup setup claude` without --http")]);
    }
    expect((await state(m)).sessions).toEqual([]);
  });
});
