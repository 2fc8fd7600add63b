// `lineup hook <event>`: the commands coding agents run as hooks (docs/permissions.md §9). stdout carries
// only the hook's JSON answer, or nothing; everything human-readable goes to stderr. The exit code is 0
// unless the input is unusable (1, which Claude Code treats as a non-blocking error) — never 2, which
// would make Claude Code block the tool call and feed our stderr to the model.
import { spawn } from "node:child_process";
import type { z } from "zod";
import { resolve, sep } from "node:path";
import { randomId } from "../../shared/edge/tokens.js";
import { DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import {
  CodexNotifyPayload,
  CursorBeforeShellInput,
  NotificationInput,
  PermissionRequestInput,
  PreToolUseInput,
  StopInput,
  addRulesUpdate,
  cursorPermissionOutput,
  cursorShellRequest,
  permissionRequestAllow,
  permissionRequestDeny,
  preToolUseOutput,
  rulesFromSuggestions,
  ruleToValue,
  type PermissionUpdate,
} from "../../shared/policy/hooks.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { unreportedPolicyDecisions, summarize } from "./log.js";
import { askHuman, decideByPolicy, logIt, permissionArgs, recordAlways, suggestionsFor, type HumanAnswer, type PermissionAsk } from "./flow.js";
import { cacheIsStale, findInboxAccess, readInboxPolicyCache, refreshInBackground, refreshInboxPolicy, type PolicyContext } from "./policy-store.js";
import { defaultStateDir, loadState, normalizeUrl } from "../client/state.js";

/** Defaults, in seconds: below Claude Code's old 60 s hook limit when no `--wait` is given. */
export const HOOK_DEFAULTS = { waitS: 55, reportWaitS: 20, marginMs: 1200 } as const;
const STDIN_LIMIT = 8 * 1024 * 1024;

export const HOOK_HELP = `Usage: lineup hook <event> [--wait S] [--relay URL] [--state-dir DIR] [--project DIR]

Hook commands for coding agents (docs/permissions.md). Each reads its agent's documented JSON on stdin
and writes only its JSON answer (or nothing) to stdout.

Events:
  permission-request   Claude Code PermissionRequest: policy, else a permission card on the phone;
                       no answer within --wait → no output (Claude Code's own dialog stays up)
  pre-tool-use         Claude Code PreToolUse: the policy only (allow / deny at once, else no output);
                       never touches the network
  notify               Claude Code Notification: idle_prompt → "waiting for you" in the thread, and a
                       push to the inbox's phones
  stop                 Claude Code Stop: last_assistant_message (and a policy summary) into the thread
  cursor-shell         Cursor beforeShellExecution: like permission-request; no answer → "ask"
  codex-notify [--then PROG ARGS…] JSON
                       Codex notify (payload as the last argument): the turn's last message into the
                       thread; --then runs your previous notify program with the same payload
  refresh-policy       fetch the inbox policy into the local cache (run in the background by pre-tool-use)

Options:
  --wait S       give up just before S seconds (default ${HOOK_DEFAULTS.waitS}; notify/stop ${HOOK_DEFAULTS.reportWaitS}); lineup setup
                 writes it below the hook's timeout
  --project DIR  project directory (default LINEUP_PROJECT_DIR, CLAUDE_PROJECT_DIR, else the hook's cwd)
  --relay URL    relay (LINEUP_RELAY_URL)      --state-dir DIR  (LINEUP_STATE_DIR, default ~/.lineup)
  --agent NAME   how the card names the agent
The session: LINEUP_SESSION + LINEUP_TOKEN when set, else the one saved for the project directory
(created like \`lineup mcp\` does). Exit 0 always, except 1 for unusable input.`;

type Env = Record<string, string | undefined>;

interface HookOptions {
  waitS?: number;
  relayUrl: string;
  stateDir: string;
  project?: string;
  agent?: string;
  /** codex-notify: the previous notify program, run with the same payload */
  then: string[];
  positionals: string[];
}

export interface HookIo {
  stdin?: () => Promise<string>;
  stdout?: (s: string) => void;
  stderr?: (s: string) => void;
  env?: Env;
  /** when the agent started this hook (epoch ms; default: this process's start) */
  startedAt?: number;
}

class HookUsage extends Error {}

function parseHookArgs(argv: string[], env: Env): HookOptions {
  const o: HookOptions = { relayUrl: normalizeUrl(env.LINEUP_RELAY_URL || DEV_RELAY_URL), stateDir: env.LINEUP_STATE_DIR || defaultStateDir(), then: [], positionals: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--then") {
      // Everything up to the payload (the last argument) is the other program's argv.
      o.then = argv.slice(i + 1, argv.length - 1);
      o.positionals.push(argv[argv.length - 1]!);
      break;
    }
    const m = /^--(wait|relay|state-dir|project|agent)(?:=(.*))?$/.exec(a);
    if (!m) {
      if (a.startsWith("--") && o.positionals.length === 0) throw new HookUsage(`unknown option ${a}`);
      o.positionals.push(a);
      continue;
    }
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new HookUsage(`--${m[1]} needs a value`);
    if (m[1] === "wait") {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 2 || n > 86_400) throw new HookUsage("--wait must be a number of seconds from 2 to 86400");
      o.waitS = n;
    } else if (m[1] === "relay") o.relayUrl = normalizeUrl(v);
    else if (m[1] === "state-dir") o.stateDir = resolve(v);
    else if (m[1] === "project") o.project = resolve(v);
    else o.agent = v;
  }
  return o;
}

function readStdin(): Promise<string> {
  return new Promise((resolveText, reject) => {
    if (process.stdin.isTTY) return reject(new HookUsage("expects the hook's JSON on stdin"));
    let size = 0;
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new HookUsage("no JSON on stdin within 10 s")), 10_000);
    process.stdin.on("data", (d: Buffer) => {
      size += d.length;
      if (size > STDIN_LIMIT) {
        clearTimeout(timer);
        reject(new HookUsage(`the hook input is over ${STDIN_LIMIT} bytes`));
        process.stdin.destroy();
        return;
      }
      chunks.push(d);
    });
    process.stdin.on("end", () => {
      clearTimeout(timer);
      resolveText(Buffer.concat(chunks).toString("utf8"));
    });
    process.stdin.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

function parseJson<T>(text: string, schema: z.ZodType<T>, what: string): T {
  let v: unknown;
  try {
    v = JSON.parse(text) as unknown;
  } catch {
    throw new HookUsage(`the ${what} input is not JSON`);
  }
  const r = schema.safeParse(v);
  if (!r.success) throw new HookUsage(`not a ${what} input: ${r.error.issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ")}`);
  return r.data;
}

/** The project directory of a hook call: the flag, LINEUP_PROJECT_DIR, CLAUDE_PROJECT_DIR, else its cwd. */
export function projectDirFor(cwd: string, o: { project?: string }, env: Env): string {
  return resolve(o.project ?? (env.LINEUP_PROJECT_DIR || env.CLAUDE_PROJECT_DIR || cwd));
}

/** The directory whose saved session serves `dir`: itself, or the nearest ancestor with a saved session. */
function sessionDirFor(stateDir: string, relayUrl: string, dir: string): string {
  const saved = loadState(stateDir).sessions.filter((s) => s.relayUrl === relayUrl && (dir === s.cwd || dir.startsWith(s.cwd.endsWith(sep) ? s.cwd : s.cwd + sep)));
  saved.sort((a, b) => b.cwd.length - a.cwd.length);
  return saved[0]?.cwd ?? dir;
}

interface Ctx {
  o: HookOptions;
  env: Env;
  out: (s: string) => void;
  say: (s: string) => void;
  /** epoch ms at which the hook must be done (its --wait, counted from process start) */
  deadline: number;
}

const leftMs = (cx: Ctx) => cx.deadline - Date.now();

/** Connects as a fresh agent client of the project's session (its own client id: hooks run side by side). */
async function connectSession(cx: Ctx, projectDir: string) {
  const { connectAgent, ensureSession } = await import("../client/index.js");
  const log = cx.env.LINEUP_HOOK_DEBUG ? cx.say : () => {};
  let sessionId = cx.env.LINEUP_SESSION || undefined;
  let token = cx.env.LINEUP_TOKEN || undefined;
  if (!sessionId || !token) {
    const saved = await ensureSession({ relayUrl: cx.o.relayUrl, stateDir: cx.o.stateDir, cwd: sessionDirFor(cx.o.stateDir, cx.o.relayUrl, projectDir), ...(cx.env.LINEUP_RELAY_KEY ? { relayKey: cx.env.LINEUP_RELAY_KEY } : {}) });
    sessionId = saved.sessionId;
    token = saved.agentToken;
  }
  return connectAgent({
    relayUrl: cx.o.relayUrl,
    sessionId,
    token,
    stateDir: cx.o.stateDir,
    cwd: projectDir,
    clientId: `hook_${randomId(6)}`,
    connectTimeoutMs: Math.max(1000, Math.min(10_000, leftMs(cx))),
    log,
  });
}

/** Rejects when the deadline passes first (the caller then gives up without output). */
function beforeDeadline<T>(cx: Ctx, p: Promise<T>): Promise<T> {
  return new Promise<T>((res, rej) => {
    const t = setTimeout(() => rej(Object.assign(new Error("the hook's wait limit is near"), { code: "timeout" })), Math.max(0, leftMs(cx)));
    p.then(
      (v) => {
        clearTimeout(t);
        res(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        rej(e);
      },
    );
  });
}

// ---------------------------------------------------------------- asking the human

interface Asked {
  answer: HumanAnswer;
  /** set when the fresh inbox policy decided after all */
  policy?: { decision: "allow" | "deny"; reason: string };
}

/**
 * The shared part of permission-request and cursor-shell: refresh the inbox policy while connecting (the
 * relay is needed anyway), decide again with it, else ask and wait until just before the deadline.
 */
async function askThroughSession(cx: Ctx, req: PermissionAsk, pcx: PolicyContext, agentRules: string[], firstReason: string): Promise<Asked> {
  const access = findInboxAccess(pcx.stateDir, pcx.relayUrl, cx.env);
  const refreshed = access && cacheIsStale(readInboxPolicyCache(pcx.stateDir), access) ? refreshInboxPolicy(pcx.stateDir, access, Math.min(3000, Math.max(200, leftMs(cx) - 500))) : Promise.resolve(undefined);
  const connecting = beforeDeadline(cx, connectSession(cx, pcx.projectDir));
  connecting.catch(() => {});
  if (await refreshed) {
    const again = decideByPolicy(req, pcx);
    if (again.decision.decision !== "ask") {
      void connecting.then((c) => c.close()).catch(() => {});
      logIt(pcx, req, again.decision.decision, "policy", { ...(again.decision.rule ? { rule: again.decision.rule } : {}), ...(again.decision.source ? { source: again.decision.source } : {}) });
      return { answer: { kind: "timeout" }, policy: { decision: again.decision.decision, reason: again.decision.reason } };
    }
  }
  let client: Awaited<ReturnType<typeof connectSession>>;
  try {
    client = await connecting;
  } catch (e) {
    const code = (e as { code?: string }).code ?? "connect";
    return { answer: code === "timeout" ? { kind: "timeout" } : { kind: "error", code, message: e instanceof Error ? e.message : String(e) } };
  }
  const { gathered } = decideByPolicy(req, pcx);
  const args = permissionArgs(req, pcx.projectDir, suggestionsFor(req, agentRules, pcx, gathered), firstReason);
  const stop = new AbortController();
  // Give up a little before the limit, so the card is cancelled and we exit before the agent kills us.
  const timer = setTimeout(() => stop.abort(), Math.max(0, leftMs(cx)));
  cx.say(`asking the human on their phone: ${req.toolName}${client.presence.apps === 0 ? " (no app connected yet)" : ""}`);
  try {
    client.setStatus("waiting", `permission: ${req.toolName}`);
    // The relay's own deadline is a little later: our abort (tool.cancel) is what closes the card.
    const answer = await askHuman(client, args, { timeoutS: Math.ceil(leftMs(cx) / 1000) + 5, signal: stop.signal });
    if (answer.kind === "allow" && answer.rule !== undefined) {
      for (const n of await recordAlways(answer.rule, gathered, pcx.stateDir, Math.min(2500, leftMs(cx) - 300))) cx.say(n);
    }
    return { answer };
  } finally {
    clearTimeout(timer);
    await client.close();
  }
}

/** The suggestion entry to echo in `updatedPermissions` for a rule the human chose. */
function updateFor(rule: string, suggestions: unknown): PermissionUpdate[] {
  const v = ruleToValue(rule);
  if (Array.isArray(suggestions) && !("error" in v)) {
    for (const s of suggestions as unknown[]) {
      if (rulesFromSuggestions([s]).includes(rule)) return [s as PermissionUpdate];
    }
  }
  return [addRulesUpdate([rule], "allow", "localSettings")];
}

const DENIED = "The human denied this in the LineUp app.";

// ---------------------------------------------------------------- events

async function permissionRequest(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, PermissionRequestInput, "PermissionRequest");
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Claude Code", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  const meta = { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) };
  if (decision.decision === "allow") {
    logIt(pcx, req, "allow", "policy", meta);
    cx.out(JSON.stringify(permissionRequestAllow({ updatedInput: input.tool_input })));
    return 0;
  }
  if (decision.decision === "deny") {
    logIt(pcx, req, "deny", "policy", meta);
    cx.out(JSON.stringify(permissionRequestDeny({ message: `LineUp policy: ${decision.reason}` })));
    return 0;
  }
  const asked = await askThroughSession(cx, req, pcx, rulesFromSuggestions(input.permission_suggestions), decision.reason);
  if (asked.policy) {
    cx.out(JSON.stringify(asked.policy.decision === "allow" ? permissionRequestAllow({ updatedInput: input.tool_input }) : permissionRequestDeny({ message: `LineUp policy: ${asked.policy.reason}` })));
    return 0;
  }
  const a = asked.answer;
  switch (a.kind) {
    case "allow":
      logIt(pcx, req, "allow", "human", a.rule !== undefined ? { rule: a.rule } : {});
      // Always send updatedInput: recent Claude Code versions reject an allow without it.
      cx.out(JSON.stringify(permissionRequestAllow({ updatedInput: input.tool_input, ...(a.rule !== undefined ? { updatedPermissions: updateFor(a.rule, input.permission_suggestions) } : {}) })));
      return 0;
    case "deny":
      logIt(pcx, req, "deny", "human");
      cx.out(JSON.stringify(permissionRequestDeny({ message: a.feedback ?? (a.declined ? "The human declined this in the LineUp app." : DENIED) })));
      return 0;
    case "timeout":
      logIt(pcx, req, "ask", "timeout");
      cx.say("no answer in time: leaving the decision to Claude Code's own dialog");
      return 0;
    case "error":
      logIt(pcx, req, "ask", "error");
      cx.say(`could not ask the human (${a.code}: ${a.message}); leaving the decision to Claude Code's own dialog`);
      return 0;
  }
}

function preToolUse(cx: Ctx, text: string): number {
  const input = parseJson(text, PreToolUseInput, "PreToolUse");
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Claude Code", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  // Disk only: a stale inbox copy is refreshed by a detached process for the calls after this one.
  if (gathered.access && cacheIsStale(gathered.inbox, gathered.access)) refreshInBackground(pcx.stateDir, pcx.relayUrl, cx.env);
  if (decision.decision === "ask") return 0;
  logIt(pcx, req, decision.decision, "policy", { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) });
  cx.out(JSON.stringify(preToolUseOutput(decision.decision, { reason: `LineUp policy: ${decision.reason}` })));
  return 0;
}

async function cursorShell(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CursorBeforeShellInput, "Cursor beforeShellExecution");
  const r = cursorShellRequest(input);
  const cwd = r.cwd ?? process.cwd();
  const projectDir = projectDirFor(input.workspace_roots?.[0] ?? cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Cursor", toolName: "Bash", input: r.tool_input, cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision } = decideByPolicy(req, pcx);
  const reason = `LineUp policy: ${decision.reason}`;
  if (decision.decision !== "ask") {
    logIt(pcx, req, decision.decision, "policy", { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) });
    cx.out(JSON.stringify(decision.decision === "allow" ? cursorPermissionOutput("allow") : cursorPermissionOutput("deny", { userMessage: reason, agentMessage: reason })));
    return 0;
  }
  const asked = await askThroughSession(cx, req, pcx, [], decision.reason);
  if (asked.policy) {
    const why = `LineUp policy: ${asked.policy.reason}`;
    cx.out(JSON.stringify(asked.policy.decision === "allow" ? cursorPermissionOutput("allow") : cursorPermissionOutput("deny", { userMessage: why, agentMessage: why })));
    return 0;
  }
  const a = asked.answer;
  if (a.kind === "allow") {
    logIt(pcx, req, "allow", "human", a.rule !== undefined ? { rule: a.rule } : {});
    cx.out(JSON.stringify(cursorPermissionOutput("allow")));
  } else if (a.kind === "deny") {
    logIt(pcx, req, "deny", "human");
    cx.out(JSON.stringify(cursorPermissionOutput("deny", { userMessage: DENIED, agentMessage: a.feedback ?? DENIED })));
  } else {
    // Nobody answered: Cursor's own prompt decides (never a silent allow).
    logIt(pcx, req, "ask", a.kind === "timeout" ? "timeout" : "error");
    if (a.kind === "error") cx.say(`could not ask the human (${a.code}: ${a.message})`);
    cx.out(JSON.stringify(cursorPermissionOutput("ask")));
  }
  return 0;
}

/** Sends messages into the project's thread; failures only go to stderr (a report must not stop the agent). */
/** Messages into the session's thread; with `attention`, also a push to the inbox's devices (docs/push.md). */
async function report(cx: Ctx, projectDir: string, texts: string[], attention?: string): Promise<boolean> {
  try {
    const client = await beforeDeadline(cx, connectSession(cx, projectDir));
    try {
      for (const t of texts) client.send(t);
    } finally {
      await client.close();
    }
    // A sealed session's push carries no words of the agent: the relay must not read them (docs/e2e.md).
    if (attention !== undefined) await pushAttention(cx, client.sessionId, client.sealed ? undefined : attention);
    return true;
  } catch (e) {
    cx.say(`could not report to the thread: ${e instanceof Error ? e.message : String(e)}`);
    return false;
  }
}

/** At most `n` UTF-16 units (the relay's limit), never half a character. */
function upTo(s: string, n: number): string {
  let out = "";
  for (const ch of s) {
    if (out.length + ch.length > n) break;
    out += ch;
  }
  return out;
}

/** The push of a "waiting for you" report, when this machine is in an inbox: best effort, never fails the hook. */
async function pushAttention(cx: Ctx, sessionId: string, text: string | undefined): Promise<void> {
  const access = findInboxAccess(cx.o.stateDir, cx.o.relayUrl, cx.env);
  if (!access) return; // a v1 session: no paired devices to push to
  const [{ InboxApi }, { PUSH_LIMITS }] = await Promise.all([import("../client/inbox.js"), import("../../shared/contract/push.js")]);
  try {
    const r = await beforeDeadline(cx, new InboxApi(access.relayUrl).pushAttention(access.credential, sessionId, text === undefined ? undefined : upTo(text, PUSH_LIMITS.maxAttentionText)));
    cx.say(`pushed "waiting for you" to ${r.queued} device${r.queued === 1 ? "" : "s"}`);
  } catch (e) {
    cx.say(`no push: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Notification types that mean "the agent waits for the human" (docs/permissions.md §7.3). */
const WAITING = new Set(["idle_prompt", "elicitation_dialog", "agent_needs_input"]);

async function notify(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, NotificationInput, "Notification");
  if (input.notification_type !== undefined && !WAITING.has(input.notification_type)) return 0;
  const agent = cx.o.agent ?? "Claude Code";
  const detail = input.message && input.message.trim() !== "" ? `\n\n> ${input.message.trim().replace(/\n/g, "\n> ")}` : "";
  const msg = input.message?.trim();
  await report(cx, projectDirFor(input.cwd, cx.o, cx.env), [`⏳ **${agent} is waiting for you** in \`${input.cwd}\`.${detail}`], `${agent}: ${msg || "waiting for you"}`);
  return 0;
}

async function stop(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, StopInput, "Stop");
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const last = input.last_assistant_message?.trim();
  const pending = unreportedPolicyDecisions(cx.o.stateDir, projectDir);
  const summary = summarize(pending.decisions);
  const texts = [...(last ? [last] : []), ...(summary ? [summary] : [])];
  if (texts.length === 0) return 0;
  if (await report(cx, projectDir, texts)) pending.markReported();
  return 0;
}

async function codexNotify(cx: Ctx): Promise<number> {
  const raw = cx.o.positionals[cx.o.positionals.length - 1];
  // Run the notify program this one replaced first, whatever happens to ours (fire and forget, as Codex does).
  if (cx.o.then.length > 0 && raw !== undefined) {
    try {
      spawn(cx.o.then[0]!, [...cx.o.then.slice(1), raw], { detached: true, stdio: "ignore" }).unref();
    } catch (e) {
      cx.say(`--then ${cx.o.then[0]}: ${(e as Error).message}`);
    }
  }
  if (raw === undefined) throw new HookUsage("codex-notify expects Codex's JSON payload as its last argument");
  const payload = parseJson(raw, CodexNotifyPayload, "Codex notify");
  if (payload.type !== "agent-turn-complete") return 0;
  const msg = payload["last-assistant-message"]?.trim();
  const cwd = payload.cwd ?? process.cwd();
  const agent = cx.o.agent ?? "Codex";
  await report(cx, projectDirFor(cwd, cx.o, cx.env), [msg ? `**${agent}** finished a turn:\n\n${msg}` : `**${agent}** finished a turn in \`${cwd}\`.`]);
  return 0;
}

async function refreshPolicy(cx: Ctx): Promise<number> {
  const access = findInboxAccess(cx.o.stateDir, cx.o.relayUrl, cx.env);
  if (!access) return 0;
  const c = await refreshInboxPolicy(cx.o.stateDir, access, Math.max(500, leftMs(cx)));
  cx.say(c ? `inbox policy v${c.version} cached` : "the inbox policy could not be fetched");
  return 0;
}

// ---------------------------------------------------------------- entry

const EVENTS = new Set(["permission-request", "pre-tool-use", "notify", "stop", "cursor-shell", "codex-notify", "refresh-policy"]);
const REPORTS = new Set(["notify", "stop", "codex-notify", "refresh-policy"]);

/** `lineup hook …`; resolves with the exit code. Never throws. */
export async function runHook(argv: string[], io: HookIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const out = io.stdout ?? ((s: string) => void process.stdout.write(`${s}\n`));
  const say = io.stderr ?? ((s: string) => void process.stderr.write(`[lineup hook] ${forTerminal(s)}\n`));
  // Nothing but the answer may reach stdout, whatever a module logs.
  const restore = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = (...a: unknown[]) => say(a.map(String).join(" "));
  try {
    const [event, ...rest] = argv;
    if (!event || event === "--help" || event === "-h" || event === "help") {
      out(HOOK_HELP); // asked for by a person, not by an agent
      return event ? 0 : 1;
    }
    if (!EVENTS.has(event)) throw new HookUsage(`unknown hook event ${JSON.stringify(event)}`);
    const o = parseHookArgs(rest, env);
    const waitS = o.waitS ?? (REPORTS.has(event) ? HOOK_DEFAULTS.reportWaitS : HOOK_DEFAULTS.waitS);
    // The limit counts from the process start: the agent's timer started when it spawned us.
    const deadline = Math.round((io.startedAt ?? Date.now() - process.uptime() * 1000) + waitS * 1000 - HOOK_DEFAULTS.marginMs);
    const cx: Ctx = { o, env, out, say, deadline };
    if (event === "codex-notify") return await codexNotify(cx);
    if (event === "refresh-policy") return await refreshPolicy(cx);
    const text = await (io.stdin ?? readStdin)();
    switch (event) {
      case "permission-request":
        return await permissionRequest(cx, text);
      case "pre-tool-use":
        return preToolUse(cx, text);
      case "notify":
        return await notify(cx, text);
      case "stop":
        return await stop(cx, text);
      default:
        return await cursorShell(cx, text);
    }
  } catch (e) {
    say(e instanceof HookUsage ? `${e.message} (see \`lineup hook --help\`)` : `unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 1;
  } finally {
    Object.assign(console, restore);
  }
}
