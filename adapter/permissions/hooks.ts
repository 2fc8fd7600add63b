// `lineup hook <event>`: the commands coding agents run as hooks (docs/permissions.md §9). stdout carries
// only the hook's JSON answer, or nothing; everything human-readable goes to stderr. The exit code is 0
// unless the input is unusable (1, which Claude Code treats as a non-blocking error) — never 2, which
// would make Claude Code block the tool call and feed our stderr to the model.
// The events are in hook-permission.ts (permission-request, pre-tool-use, cursor-shell), hook-asks.ts
// (ask-user-question, elicitation) and hook-report.ts
// (notify, stop, codex-notify, refresh-policy); Codex's lifecycle hooks and Cursor's MCP and stop hooks in
// hook-agents.ts (i29-agents); what they share in hook-context.ts.
import { forTerminal } from "../../shared/text/terminal.js";
import { HookUsage, parseHookArgs, readStdin, type Ctx, type HookIo } from "./hook-context.js";
import { cursorShell, permissionRequest, preToolUse } from "./hook-permission.js";
import { codexNotify, notify, refreshPolicy, stop } from "./hook-report.js";

export { projectDirFor, type HookIo } from "./hook-context.js";

/** Defaults, in seconds: below Claude Code's old 60 s hook limit when no `--wait` is given. */
export const HOOK_DEFAULTS = { waitS: 55, reportWaitS: 20, marginMs: 1200 } as const;

export const HOOK_HELP = `Usage: lineup hook <event> [--wait S] [--defer [--defer-for S]] [--relay URL] [--state-dir DIR] [--project DIR]

Hook commands for coding agents (docs/permissions.md). Each reads its agent's documented JSON on stdin
and writes only its JSON answer (or nothing) to stdout.

Events:
  permission-request   Claude Code PermissionRequest: policy, else a permission card on the phone;
                       no answer within --wait → no output (Claude Code's own dialog stays up)
  pre-tool-use         Claude Code PreToolUse: the policy only (allow / deny at once, else no output);
                       never touches the network; never answers AskUserQuestion
  ask-user-question    Claude Code PreToolUse for AskUserQuestion: the questions as one card on the phone;
                       the answers → allow with updatedInput.answers; no answer within --wait → the card
                       is cancelled and no output (Claude Code's own dialog appears)
  elicitation          Claude Code Elicitation (an MCP server's form or URL): a card on the phone →
                       accept with content / decline / cancel; no answer within --wait → no output
  --defer (pre-tool-use, ask-user-question; i29-defer): in a headless run (claude -p, the Agent SDK:
                       CLAUDE_CODE_ENTRYPOINT sdk-…, or LINEUP_HEADLESS=1) pre-tool-use asks the phone for
                       what the policy leaves to the human, and an unanswered card stays open while the
                       hook answers "defer"; \`lineup connect\` / \`lineup daemon\` resume the run later
  notify               Claude Code Notification: idle_prompt → "waiting for you", agent_needs_input →
                       "needs you", agent_completed → "finished" in the thread, and a push to the inbox's
                       phones (one per session a minute)
  stop                 Claude Code Stop: last_assistant_message (and a policy summary) into the thread
  cursor-shell         Cursor beforeShellExecution: like permission-request; no answer → "ask"
  cursor-mcp           Cursor beforeMCPExecution: mcp__server__tool rules, else the phone; no answer → "ask"
  cursor-stop          Cursor stop: "finished" and a policy summary into the thread
  codex-pre-tool-use   Codex PreToolUse: the policy only; deny at once, else no output (Codex acts on deny only)
  codex-permission-request
                       Codex PermissionRequest: policy, else the phone → {"decision":{"behavior":…}};
                       no answer within --wait → no output (Codex's own approval prompt)
  codex-stop           Codex Stop: last_assistant_message (and a policy summary) into the thread
  codex-notify [--then PROG ARGS…] JSON
                       Codex notify (payload as the last argument): the turn's last message into the
                       thread; --then runs your previous notify program with the same payload
  refresh-policy       fetch the inbox policy into the local cache (run in the background by pre-tool-use)

Options:
  --wait S       give up just before S seconds (default ${HOOK_DEFAULTS.waitS}; notify/stop ${HOOK_DEFAULTS.reportWaitS}); lineup setup
                 writes it below the hook's timeout
  --defer-for S  how long a deferred card stays open on the phone (10–86400 s; default 86400 = 24 h)
  --project DIR  project directory (default LINEUP_PROJECT_DIR, CLAUDE_PROJECT_DIR, else the hook's cwd)
  --relay URL    relay (LINEUP_RELAY_URL)      --state-dir DIR  (LINEUP_STATE_DIR, default ~/.lineup)
  --agent NAME   how the card names the agent
The session: LINEUP_SESSION + LINEUP_TOKEN when set, else the one saved for the project directory
(created like \`lineup mcp\` does). Exit 0 always, except 1 for unusable input.
With \`lineup setup claude --http\` the relay answers pre-tool-use, permission-request and ask-user-question
itself (Claude Code's "type": "http" hooks, no local process; docs/permissions.md §7.12).`;

// ---------------------------------------------------------------- entry

const EVENTS = new Set([
  "permission-request",
  "pre-tool-use",
  "ask-user-question",
  "elicitation",
  "notify",
  "stop",
  "cursor-shell",
  "codex-notify",
  "refresh-policy",
  // i29-agents (issue 29 item 5): Codex lifecycle hooks, Cursor MCP and stop
  "cursor-mcp",
  "cursor-stop",
  "codex-pre-tool-use",
  "codex-permission-request",
  "codex-stop",
]);
const REPORTS = new Set(["notify", "stop", "codex-notify", "refresh-policy", "cursor-stop", "codex-stop"]);

/** Codex's and Cursor's newer hooks (hook-agents.ts, loaded when used). */
async function agentHook(event: string, cx: Ctx, text: string): Promise<number> {
  const m = await import("./hook-agents.js");
  if (event === "cursor-mcp") return m.cursorMcp(cx, text);
  if (event === "cursor-stop") return m.cursorStop(cx, text);
  if (event === "codex-pre-tool-use") return m.codexPreToolUse(cx, text);
  if (event === "codex-permission-request") return m.codexPermissionRequest(cx, text);
  return m.codexStop(cx, text);
}

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
      case "ask-user-question":
        return await (await import("./hook-asks.js")).askUserQuestion(cx, text); // loaded when used: the hook path stays light
      case "elicitation":
        return await (await import("./hook-asks.js")).elicitation(cx, text);
      case "notify":
        return await notify(cx, text);
      case "stop":
        return await stop(cx, text);
      case "cursor-mcp":
      case "cursor-stop":
      case "codex-pre-tool-use":
      case "codex-permission-request":
      case "codex-stop":
        return await agentHook(event, cx, text);
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
