// The help texts of the `lineup` CLI: the command list, each command's options, the common options and the
// environment, and the built-in tools (from shared/contract/builtin-tools.ts, so they never drift).
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { LAN_PORT } from "../../shared/contract/defaults.js";
import { INBOX_HELP } from "./inbox-help.js";

const ENV_HELP = `Environment (flags win):
  LINEUP_RELAY_URL   relay base URL            (--relay;     default http://127.0.0.1:8787, the local dev relay)
  LINEUP_RELAY_KEY   key that creates sessions (--key;       default the local dev key)
  LINEUP_SESSION     join this session ...     (--session)
  LINEUP_TOKEN       ... with its agent token  (--token)
  LINEUP_STATE_DIR   saved sessions, client ids (--state-dir; default ~/.lineup)
Without LINEUP_SESSION, commands use the session saved for the current directory and relay,
creating one if there is none.`;

export const HELP: Record<string, string> = {
  main: `lineup — connect an AI agent to the humans it works for (LineUp Relay).

Usage: lineup <command> [options]

Commands:
  connect                       create or reuse this directory's session (in this machine's inbox), print a
                                pairing link while no device is paired, stay connected and log presence,
                                calls and messages
  call <tool> [action]          one tool call for shell scripts; prints the result JSON on stdout
  status                        the saved session and what the relay says about it
  sessions [list|forget]        list or forget saved sessions
  pair [--json]                 pair a phone once: a single-use link + QR code for this machine's inbox
  devices [list|rename|revoke]  the paired devices; revoke one
  machines [list|revoke]        the agent machines of the inbox
  join CODE                     make this machine a machine of an existing inbox (a code from the app)
  e2e on|off|status             end-to-end encryption for the inbox: the relay routes what it cannot read
  hook <event>                  Claude Code / Cursor / Codex hooks: permission-request, pre-tool-use,
                                notify, stop (docs/permissions.md)
  setup claude|cursor|codex     write the hooks and MCP entry into this project (merging, never clobbering)
  daemon                        resume headless Claude Code runs deferred on a question once it is answered
  permissions                   the permission decisions logged here: allow/deny/ask, by which rule or by whom
  serve                         direct LAN mode: the relay contract + the app on this machine (port ${LAN_PORT})
  mcp                           run the MCP server (stdio) for MCP hosts

Run \`lineup <command> --help\` for its options.

${ENV_HELP}

Exit codes: 0 ok, 1 error result, 2 usage/auth/connection failure, 130 interrupted.`,
  connect: `Usage: lineup connect [--label L] [--no-qr] [--guest-link] [--no-direct] [common options]

Creates a session for the current directory (or reuses the saved one), attached to this machine's inbox
(created once per relay with the relay key). While the inbox has no paired device it prints a pairing link
and QR code (single-use, 10 minutes; \`lineup pair\` makes another); once one is paired it says so and the
session shows up on that device by itself. On a relay without inboxes it prints the session's app link.
Then it stays connected and logs, as they happen: apps connecting and leaving (not every reconnect), the
calls waiting for the human in this session — from any caller (\`lineup call\`, MCP, hooks) — and when each
settles, results of its own calls, and messages. Reconnects on drops;
stops (exit 2) if the session ends (close 4004) or another process takes over this client (4409).
Type into stdin while connected:
  <text>                               send a message to the app
  /status <state> [detail]             set the agent status (idle, working, waiting, error, …)
  /call <tool> [action] [json-args]    call a tool and print its result
  /quit                                disconnect

Options:
  --label L        session label when creating (default "lineup <cwd>")
  --no-qr          do not print the QR code
  --guest-link     also print the session's app link (LINEUP_GUEST_LINK=1): a shared credential for this
                   one session that cannot be revoked without ending it — prefer pairing
  --no-resume      do not resume deferred headless Claude Code runs here (see \`lineup daemon --help\`)
  --no-direct      relay only: do not answer a device's direct-path offer (LINEUP_DIRECT=0). By default a
                   phone on the same network talks to this process directly over WebRTC (node-datachannel,
                   an optional dependency: without it, relay only, said once)
${commonHelp()}`,
  daemon: `Usage: lineup daemon [--state-dir DIR]

Resumes headless Claude Code runs (claude -p, the Agent SDK) that stopped with "defer" because nobody had
answered their question on the phone yet (docs/permissions.md §9.2). It watches <state dir>/deferred/, waits
for each card's answer (however late, up to the card's 24 h deadline), then runs
\`claude -p --resume <session> --output-format json\` in the run's directory, once, and says in the session's
thread whether it resumed. \`lineup connect\` does the same while it runs; one process handles each run.
The claude binary: LINEUP_CLAUDE_BIN, else \`claude\` on PATH. Stops on Ctrl-C / SIGTERM.`,
  call: `Usage: lineup call <tool> [action] [--args '<json>'] [--timeout S] [--call-id ID] [common options]

Makes one call and waits for its result. stdout: the result object as JSON, or {"error":{"code","message"}}.
stderr: progress. Exit 0 result; 1 error result (unknown_tool, timeout, declined, cancelled, …);
2 usage, auth or connection failure; 130 interrupted (the call is cancelled).

Options:
  --args JSON      the call's arguments, a JSON object (default {})
  --timeout S      how long the human has, in seconds (relay default 600, clamped to 1…86400)
  --call-id ID     make the call idempotent: running the same command again (e.g. after a crash or
                   a kill) resumes the same call and prints its result, even if it came while away

${toolsHelp()}
${commonHelp()}`,
  status: `Usage: lineup status [--json] [common options]

Shows the session saved for this directory (or LINEUP_SESSION) and the relay's view of it: agent online,
status, connected apps, both tool catalogs, open calls. Exit 2 if there is no session or the relay is
unreachable.
${commonHelp()}`,
  sessions: `Usage: lineup sessions [list] [--json]
       lineup sessions forget [<session-id>] [--all]

list     the sessions this machine's inbox lists on its devices (same names, same order: waiting
         first, then the most recent activity), then every saved session (relay, directory, id, expiry)
forget   forget this directory's session for the relay (or the given id, or --all) — local only;
         the session on the relay expires by itself (DELETE it with the agent token to end it now)

Options:
  --state-dir DIR  (LINEUP_STATE_DIR, default ~/.lineup)
  --relay URL      which relay's session "forget" means (LINEUP_RELAY_URL)`,
  serve: `Usage: lineup serve [--port ${LAN_PORT}] [--token T] [--host H] [--web DIR]

Direct LAN mode: serves the LineUp relay contract (same routing core, in memory) and the built app on this
machine, so a phone on the same network opens http://<this-ip>:${LAN_PORT} and works with no relay.
The pre-shared token plays the role of RELAY_KEY (it creates sessions); without --token one is generated
and printed. Creates one session at start, prints the LAN URLs, the app link and a QR code, and saves the
session for this directory so \`LINEUP_RELAY_URL=http://127.0.0.1:<port> lineup call …\` uses it.

Options:
  --port N         TCP port (default ${LAN_PORT}; LINEUP_PORT)
  --token T        pre-shared token (default: LINEUP_LAN_TOKEN, else a new random one)
  --host H         bind address (default 0.0.0.0: every interface; 127.0.0.1 keeps it to this machine)
  --allow-host N   also answer Host N (e.g. a reverse proxy's name); repeatable. Other Host values get 403
                   (DNS rebinding): the server answers only its own addresses and names
  --web DIR        built app directory (default <package>/dist/web; run \`npm run build\`)
  --ttl S          session lifetime in seconds (default 30 days)
  --no-qr          do not print the QR code`,
  mcp: `Usage: lineup mcp [options]

Runs the MCP server on stdio (see docs/mcp.md). Options are the MCP server's own. Like \`lineup connect\`
it prints a pairing link (stderr) while this machine's inbox has no device.`,
  ...INBOX_HELP,
  // Issue 17 (permissions): full help in adapter/permissions/hooks.ts and adapter/setup/index.ts (`lineup hook --help`, `lineup setup --help`).
  hook: "Usage: lineup hook permission-request|pre-tool-use|notify|stop|cursor-shell|codex-notify [--wait S]\n\nHook commands for Claude Code, Cursor and Codex (docs/permissions.md); `lineup hook --help` for details.",
  setup:
    "Usage: lineup setup claude|cursor|codex [--project DIR] [--dry-run]\n\nWrites the agent's hook configuration, merging (docs/permissions.md); `lineup setup --help` for details.",
  permissions:
    "Usage: lineup permissions [--project DIR | --all] [--limit N] [--json]\n\nThe permission decisions logged on this machine; `lineup permissions --help` for details.",
};

/** "question* (string), options* (string[]), multiple (boolean)": * marks a required argument. */
function argsOf(schema: Record<string, unknown>): string {
  const props = (schema.properties ?? {}) as Record<string, { type?: string; items?: { type?: string } }>;
  const required = new Set((schema.required ?? []) as string[]);
  const list = Object.entries(props).map(
    ([k, v]) => `${k}${required.has(k) ? "*" : ""} (${v.type === "array" ? `${v.items?.type ?? "any"}[]` : (v.type ?? "any")})`,
  );
  return list.join(", ") || "(none)";
}

function toolsHelp(): string {
  /** One example per built-in tool (the arguments themselves come from shared/contract/builtin-tools.ts, so they never drift). */
  const EXAMPLES: Record<string, string[]> = {
    choice: [`choice --args '{"question":"Deploy where?","options":["staging","production"]}'`],
    confirm: [`confirm --args '{"question":"Deploy to staging?","yes_label":"Deploy","no_label":"Wait"}'`],
    input: [`input --args '{"question":"Release name?","default":"v1.2"}'`],
    ask_question: [`ask_question --args '{"project_directory":"/srv/app","question":"Which **migration**?\\n1. shadow table\\n2. window"}'`],
    work_report: [`work_report --args '{"project_directory":"/srv/app","summary":"Added the currency column; tests pass."}'`],
    permission: [`permission --args '{"tool_name":"Bash","input":{"command":"npm test"}}'`],
    ask_questions: [
      `ask_questions --args '{"questions":[{"question":"Which database?","header":"DB","multiSelect":false,"options":[{"label":"Postgres","description":"managed"},{"label":"SQLite","description":"a file"}]}]}'`,
    ],
    elicitation: [
      `elicitation --args '{"server":"github","message":"Your e-mail for the report?","mode":"form","requested_schema":{"type":"object","properties":{"email":{"type":"string","format":"email"}}}}'`,
    ],
    calculator: [`calculator add --args '{"a":2,"b":3}'`],
    canvas: [`canvas open --args '{"width":400,"height":300}'`, `canvas draw --args '{"instance_id":"<from open>","path":"M10 10 L200 120"}'`],
  };
  const lines = ["Built-in tools (the app answers them; * = required argument):"];
  for (const d of BUILTIN_TOOLS) {
    // The first sentence ("e.g." does not end one).
    lines.push(`  ${d.name} — ${/^(.+?)(?<!e\.g)\.(?:\s|$)/.exec(d.description)?.[1] ?? d.description}`);
    if (d.type === "action") lines.push(`      args: ${argsOf(d.inputSchema)}`);
    else for (const a of d.actions) lines.push(`      ${a.name}: ${argsOf(a.inputSchema)}`);
    for (const e of EXAMPLES[d.name] ?? []) lines.push(`      e.g. lineup call ${e}`);
  }
  return lines.join("\n");
}

function commonHelp(): string {
  return `
Common options:
  --relay URL      relay base URL (LINEUP_RELAY_URL)
  --key K          relay key that creates sessions (LINEUP_RELAY_KEY)
  --session ID     join this session (LINEUP_SESSION) ...
  --token T        ... with its agent token (LINEUP_TOKEN)
  --state-dir DIR  state directory (LINEUP_STATE_DIR, default ~/.lineup)
  -h, --help       this help

${ENV_HELP}`;
}
