// The `lineup` CLI. Exit codes: 0 ok / a result, 1 an error result (from the provider or the relay),
// 2 usage, auth or connection failures, 130 interrupted. Human progress goes to stderr; `call` prints
// exactly one JSON document on stdout.
import { forTerminal } from "../../shared/text/terminal.js";
import { cut } from "../../shared/text/cut.js";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs, type ParseArgsConfig } from "node:util";
import qrcode from "qrcode-terminal";
import { LAN_PORT } from "../../shared/contract/defaults.js";
import type { DeviceInfo, RecentCall } from "../../shared/contract/inbox.js";
import type { SessionStatus } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { connectAgent, LineUpError, resolveSession, type Client, type ConnectOptions } from "../client/index.js";
import { announceSession, INBOX_COMMANDS, INBOX_HELP, runInboxCommand, UsageError } from "./inbox.js";
import { InboxApi } from "../client/inbox.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import {
  clientIdFor,
  defaultRelayKey,
  defaultRelayUrl,
  defaultStateDir,
  findInbox,
  findSaved,
  forgetSessions,
  loadState,
  normalizeUrl,
  probeSession,
  savedFromCreated,
  saveSession,
  type SavedSession,
} from "../client/state.js";

const out = (s: string) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
const err = (s: string) => process.stderr.write(s.endsWith("\n") ? s : `${s}\n`);
const stamp = () => new Date().toTimeString().slice(0, 8);
// Every human-facing line goes through forTerminal: parts of it come from the other side of the session.
const say = (s: string) => err(`[${stamp()}] ${forTerminal(s)}`);

const COMMON: ParseArgsConfig["options"] = {
  help: { type: "boolean", short: "h" },
  relay: { type: "string" },
  key: { type: "string" },
  session: { type: "string" },
  token: { type: "string" },
  "state-dir": { type: "string" },
};

const ENV_HELP = `Environment (flags win):
  LINEUP_RELAY_URL   relay base URL            (--relay;     default http://127.0.0.1:8787, the local dev relay)
  LINEUP_RELAY_KEY   key that creates sessions (--key;       default the local dev key)
  LINEUP_SESSION     join this session ...     (--session)
  LINEUP_TOKEN       ... with its agent token  (--token)
  LINEUP_STATE_DIR   saved sessions, client ids (--state-dir; default ~/.lineup)
Without LINEUP_SESSION, commands use the session saved for the current directory and relay,
creating one if there is none.`;

const HELP: Record<string, string> = {
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
  permissions                   the permission decisions logged here: allow/deny/ask, by which rule or by whom
  serve                         direct LAN mode: the relay contract + the app on this machine (port ${LAN_PORT})
  mcp                           run the MCP server (stdio) for MCP hosts

Run \`lineup <command> --help\` for its options.

${ENV_HELP}

Exit codes: 0 ok, 1 error result, 2 usage/auth/connection failure, 130 interrupted.`,
  connect: `Usage: lineup connect [--label L] [--no-qr] [--guest-link] [common options]

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
${commonHelp()}`,
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

list     every saved session (relay, directory, id, expiry)
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
  // Issue 17 (permissions): full help in adapter/permissions/hooks.ts and adapter/cli/setup.ts (`lineup hook --help`, `lineup setup --help`).
  hook: "Usage: lineup hook permission-request|pre-tool-use|notify|stop|cursor-shell|codex-notify [--wait S]\n\nHook commands for Claude Code, Cursor and Codex (docs/permissions.md); `lineup hook --help` for details.",
  setup: "Usage: lineup setup claude|cursor|codex [--project DIR] [--dry-run]\n\nWrites the agent's hook configuration, merging (docs/permissions.md); `lineup setup --help` for details.",
  permissions: "Usage: lineup permissions [--project DIR | --all] [--limit N] [--json]\n\nThe permission decisions logged on this machine; `lineup permissions --help` for details.",
};

/** "question* (string), options* (string[]), multiple (boolean)": * marks a required argument. */
function argsOf(schema: Record<string, unknown>): string {
  const props = (schema.properties ?? {}) as Record<string, { type?: string; items?: { type?: string } }>;
  const required = new Set((schema.required ?? []) as string[]);
  const list = Object.entries(props).map(([k, v]) => `${k}${required.has(k) ? "*" : ""} (${v.type === "array" ? `${v.items?.type ?? "any"}[]` : (v.type ?? "any")})`);
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

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

function parse(argv: string[], extra: ParseArgsConfig["options"] = {}): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args: argv, options: { ...COMMON, ...extra }, allowPositionals: true, strict: true });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

const str = (v: Values, k: string) => (typeof v[k] === "string" ? (v[k] as string) : undefined);

/** Secrets given as flags end up in shell history and in every user's `ps`: say so once. */
function warnSecretFlags(v: Values, names: string[]): void {
  for (const [flag, env] of names.map((n) => n.split("=") as [string, string])) {
    if (str(v, flag) !== undefined) err(`lineup: warning: --${flag} puts a secret in your shell history and the process list; prefer ${env}`);
  }
}

function connectOptions(v: Values, log: (s: string) => void): ConnectOptions {
  warnSecretFlags(v, ["key=LINEUP_RELAY_KEY", "token=LINEUP_TOKEN"]);
  const o: ConnectOptions = { log, relayUrl: str(v, "relay") ?? defaultRelayUrl(), stateDir: str(v, "state-dir") ?? defaultStateDir() };
  const key = str(v, "key");
  if (key) o.relayKey = key;
  const session = str(v, "session") ?? process.env.LINEUP_SESSION;
  const token = str(v, "token") ?? process.env.LINEUP_TOKEN;
  if (session) o.sessionId = session;
  if (token) o.token = token;
  return o;
}

function errorJson(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

/** Connection-level failures (exit 2) versus error results (exit 1). */
const CONNECTION_CODES = new Set(["auth", "connect", "usage", "session_ended", "replaced", "closed", "bad_request", "http_400", "http_404", "http_500", "http_503", "e2e_downgrade"]);
const isConnectionError = (e: LineUpError) => CONNECTION_CODES.has(e.code) || e.code.startsWith("closed_") || e.code.startsWith("http_");

// ------------------------------------------------------------------ call

async function cmdCall(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { args: { type: "string" }, timeout: { type: "string" }, "call-id": { type: "string" } });
  if (values.help) return out(HELP.call!), 0;
  const [tool, action, ...rest] = positionals;
  if (!tool) throw new UsageError("lineup call: missing <tool> (try `lineup call --help`)");
  if (rest.length) throw new UsageError(`lineup call: unexpected argument ${JSON.stringify(rest[0])}`);
  let args: Record<string, unknown> = {};
  const rawArgs = str(values, "args");
  if (rawArgs !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawArgs);
    } catch (e) {
      throw new UsageError(`--args is not valid JSON: ${(e as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError("--args must be a JSON object");
    args = parsed as Record<string, unknown>;
  }
  let timeoutS: number | undefined;
  const rawTimeout = str(values, "timeout");
  if (rawTimeout !== undefined) {
    timeoutS = Number(rawTimeout);
    if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError("--timeout must be a positive number of seconds");
  }
  const callId = str(values, "call-id");
  if (callId !== undefined && !/^[A-Za-z0-9_.:~-]{1,128}$/.test(callId)) throw new UsageError("--call-id must be 1-128 chars of [A-Za-z0-9_.:~-]");

  const opts = connectOptions(values, (s) => say(s));
  let client: Client;
  try {
    const r = await resolveSession(opts);
    // Its own client id, so a running `lineup connect` is not replaced (4409). With --call-id the id is
    // derived from it: a re-run is the same client, and the relay re-sends a result it missed.
    const base = clientIdFor(r.stateDir, r.sessionId);
    const cid = callId !== undefined ? `${base}-${createHash("sha256").update(callId).digest("hex").slice(0, 16)}` : `cli_${randomId(9)}`;
    client = await connectAgent({ ...opts, sessionId: r.sessionId, token: r.token, clientId: cid });
  } catch (e) {
    return failConnect(e);
  }
  const ac = new AbortController();
  let interrupted = false;
  const onSig = () => {
    interrupted = true;
    say("interrupted: cancelling the call");
    ac.abort();
  };
  process.once("SIGINT", onSig);
  process.once("SIGTERM", onSig);
  say(`calling ${tool}${action ? `.${action}` : ""} in session ${client.sessionId}${client.presence.apps ? "" : " (no app connected yet: the call waits for one)"}`);
  try {
    const result = await client.call(tool, action, args, { ...(timeoutS !== undefined ? { timeoutS } : {}), signal: ac.signal, ...(callId !== undefined ? { callId } : {}) });
    out(JSON.stringify(result));
    return 0;
  } catch (e) {
    const le = e instanceof LineUpError ? e : new LineUpError("internal", String(e));
    out(errorJson(le.code, le.message));
    say(`${le.code}: ${le.message}`);
    if (interrupted) return 130;
    return isConnectionError(le) ? 2 : 1;
  } finally {
    process.off("SIGINT", onSig);
    process.off("SIGTERM", onSig);
    await client.close();
  }
}

function failConnect(e: unknown): number {
  const le = e instanceof LineUpError ? e : new LineUpError("connect", e instanceof Error ? e.message : String(e));
  out(errorJson(le.code, le.message));
  err(`lineup: ${forTerminal(le.message)}`);
  return 2;
}

// ------------------------------------------------------------------ connect

function printLink(url: string, qr: boolean): void {
  err(`\nOpen this link on your phone (it carries the session's app token — treat it like a password):\n\n  ${url}\n`);
  if (qr) qrcode.generate(url, { small: true }, (code) => err(code));
}

async function cmdConnect(argv: string[]): Promise<number> {
  const { values } = parse(argv, { label: { type: "string" }, "no-qr": { type: "boolean" }, "guest-link": { type: "boolean" } });
  if (values.help) return out(HELP.connect!), 0;
  const opts = connectOptions(values, (s) => say(s));
  const label = str(values, "label");
  if (label) opts.label = label;
  let client: Client;
  try {
    client = await connectAgent(opts);
  } catch (e) {
    return failConnect(e);
  }
  say(`session ${client.sessionId} on ${client.relayUrl} (client ${client.clientId})`);
  const appUrl = client.appUrl;
  await announceSession({
    relayUrl: client.relayUrl,
    stateDir: opts.stateDir ?? defaultStateDir(),
    sessionId: client.sessionId,
    qr: !values["no-qr"],
    guestLink: values["guest-link"] === true,
    ...(appUrl ? { appUrl } : {}),
    log: say,
    v1: () => (appUrl ? printLink(appUrl, !values["no-qr"]) : say("joined with LINEUP_SESSION/LINEUP_TOKEN: the app link is not known here (the session's creator has it)")),
  });
  const p = client.presence;
  const apps = (n: number) => `${n} app${n === 1 ? "" : "s"} connected`;
  say(apps(p.apps));
  // Presence only when it changes: a phone's reconnects are not news, the calls and answers below are.
  let shown = { apps: p.apps, status: JSON.stringify(p.agent.status ?? null) };
  client.on("presence", (pr) => {
    const now = { apps: pr.apps, status: JSON.stringify(pr.agent.status ?? null) };
    if (now.apps !== shown.apps) say(pr.apps ? apps(pr.apps) : `${apps(0)}: calls wait until the phone is back`);
    if (now.status !== shown.status && pr.agent.status) say(`agent status: ${pr.agent.status.state}${pr.agent.status.detail ? ` (${pr.agent.status.detail})` : ""}`);
    shown = now;
  });
  const unwatch = watchWaiting(client, opts.stateDir ?? defaultStateDir());
  let tools = "";
  client.on("tools", (t) => {
    const now = t.map((x) => x.name).join(", ") || "(none)";
    if (now !== tools) say(`app tools: ${now}`); // again only when the catalog changed
    tools = now;
  });
  client.on("message", (m) => say(`message from ${m.from.role} ${m.from.client_id}: ${m.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ")}`));
  client.on("connection", (s) => s !== "open" && say(`connection ${s}`));
  client.on("result", (r) => say(`result for an earlier call ${r.call_id}: ${JSON.stringify(r.result ?? r.error)}`));

  return new Promise<number>((done) => {
    let finished = false;
    const finish = async (code: number) => {
      if (finished) return;
      finished = true;
      unwatch();
      rl?.close();
      await client.close();
      done(code);
    };
    client.on("connection", (s) => {
      if (s === "closed" && client.lastError && client.lastError.code !== "closed") {
        say(`stopped: ${client.lastError.message}`);
        void finish(2);
      }
    });
    process.once("SIGINT", () => void finish(0));
    process.once("SIGTERM", () => void finish(0));
    const rl = process.stdin.isTTY || !process.stdin.readableEnded ? createInterface({ input: process.stdin }) : undefined;
    rl?.on("line", (line) => void onLine(client, line.trim(), () => void finish(0)));
    // stdin closing (e.g. `< /dev/null`) does not disconnect: the agent stays until a signal.
  });
}

/** How often `lineup connect` asks what waits for the human (one small GET; the relay has no push for it). */
const WATCH_MS = 3_000;

/**
 * The session's calls as they come and go, from any caller (`lineup call`, MCP, hooks): an inbox session's
 * waiting list says what each asks; a v1 session's status only how many wait. Returns the stop function.
 */
function watchWaiting(client: Client, stateDir: string): () => void {
  const relayUrl = normalizeUrl(client.relayUrl);
  const saved = loadState(stateDir).sessions.find((s) => s.sessionId === client.sessionId && s.relayUrl === relayUrl);
  const inbox = saved?.inboxId ? findInbox(stateDir, relayUrl) : undefined;
  let known = new Map<string, string>();
  let count: number | undefined;
  let busy = false;
  const since = Date.now();
  const told = new Set<string>();
  const what = (name: string, text: string) => `${name} ${JSON.stringify(cut(text, 120))}`;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      if (inbox && inbox.inboxId === saved?.inboxId) {
        const st = await new InboxApi(relayUrl).state(inbox.machineCredential);
        const mine = st.sessions.find((x) => x.session_id === client.sessionId);
        const now = new Map((mine?.waiting ?? []).map((w) => [w.call_id, what(w.name, w.text)]));
        for (const [id, w] of now) if (!known.has(id)) say(`call waiting for the human: ${w}`);
        // How each call ended, with the human's answer: also those answered between two polls.
        for (const r of mine?.recent ?? []) {
          if (told.has(r.call_id) || r.at < since) continue;
          told.add(r.call_id);
          if (!known.has(r.call_id)) say(`call waiting for the human: ${what(r.name, r.text)}`);
          say(`call ${ended(r, st.devices)}: ${what(r.name, r.text)}`);
        }
        for (const [id, w] of known) if (!now.has(id) && !told.has(id)) say(`call settled: ${w} (answered, timed out or cancelled)`);
        // A call the relay no longer lists as recent never comes back: forget it (connect may run for days).
        for (const id of told) if (!mine?.recent?.some((r) => r.call_id === id)) told.delete(id);
        known = now;
      } else if (saved?.agentToken) {
        const r = await fetch(`${relayUrl}/api/sessions/${encodeURIComponent(client.sessionId)}`, { headers: { authorization: `Bearer ${saved.agentToken}` }, signal: AbortSignal.timeout(10_000) });
        if (!r.ok) return;
        const n = ((await r.json()) as SessionStatus).pending_calls;
        if (n !== count && (count !== undefined || n > 0)) say(`${n} call${n === 1 ? "" : "s"} waiting for the human`);
        count = n;
      }
    } catch {
      /* unreachable for now: the connection lines say so */
    } finally {
      busy = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), WATCH_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** "answered on Phone → yes", "timed out", … for `lineup connect`'s log (the answer is cut by the relay). */
function ended(r: RecentCall, devices: readonly DeviceInfo[]): string {
  if (r.outcome !== "answered") return ({ declined: "declined", timeout: "timed out", cancelled: "cancelled", ended: "ended with the session", error: "ended with an error" } as const)[r.outcome];
  const by = r.by ? (devices.find((d) => d.id === r.by)?.name ?? r.by) : undefined;
  return `answered${by ? ` on ${by}` : ""}${r.answer !== undefined ? ` → ${JSON.stringify(r.answer)}` : ""}`;
}

async function onLine(client: Client, line: string, quit: () => void): Promise<void> {
  if (!line) return;
  if (line === "/quit" || line === "/exit") return quit();
  if (line.startsWith("/status ")) {
    const [, state, ...detail] = line.split(/\s+/);
    client.setStatus(state!, detail.length ? detail.join(" ") : undefined);
    say(`status set to ${state}`);
    return;
  }
  if (line.startsWith("/call ")) {
    const m = /^\/call\s+(\S+)(?:\s+([A-Za-z0-9_.-]+))?(?:\s+(\{.*\}))?\s*$/.exec(line);
    if (!m) {
      say("usage: /call <tool> [action] [json-args]");
      return;
    }
    let args: Record<string, unknown> = {};
    try {
      if (m[3]) args = JSON.parse(m[3]) as Record<string, unknown>;
    } catch {
      say("the arguments are not valid JSON");
      return;
    }
    say(`calling ${m[1]}${m[2] ? `.${m[2]}` : ""} …`);
    try {
      say(`result: ${JSON.stringify(await client.call(m[1]!, m[2], args))}`);
    } catch (e) {
      const le = e as LineUpError;
      say(`error ${le.code}: ${le.message}`);
    }
    return;
  }
  if (line.startsWith("/")) {
    say("commands: /status <state> [detail], /call <tool> [action] [json], /quit; anything else is sent as a message");
    return;
  }
  client.send(line);
}

// ------------------------------------------------------------------ status, sessions

async function cmdStatus(argv: string[]): Promise<number> {
  const { values } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return out(HELP.status!), 0;
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  const relayUrl = normalizeUrl(str(values, "relay") ?? defaultRelayUrl());
  const sid = str(values, "session") ?? process.env.LINEUP_SESSION;
  const token = str(values, "token") ?? process.env.LINEUP_TOKEN;
  let target: { sessionId: string; token: string; saved?: SavedSession };
  if (sid && token) target = { sessionId: sid, token };
  else {
    const saved = findSaved(stateDir, relayUrl, process.cwd());
    if (!saved) {
      err(`no session saved for ${process.cwd()} on ${relayUrl} (run \`lineup connect\`)`);
      return 2;
    }
    target = { sessionId: saved.sessionId, token: saved.agentToken, saved };
  }
  let res: Response;
  try {
    res = await fetch(`${relayUrl}/api/sessions/${encodeURIComponent(target.sessionId)}`, { headers: { authorization: `Bearer ${target.token}` }, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    err(`cannot reach the relay at ${relayUrl}: ${(e as Error).message}`);
    return 2;
  }
  if (!res.ok) {
    err(`the relay answered ${res.status}: ${await res.text()}`);
    return 2;
  }
  const s = (await res.json()) as SessionStatus;
  if (values.json) {
    out(JSON.stringify({ relay_url: relayUrl, ...(target.saved?.appUrl ? { app_url: target.saved.appUrl } : {}), ...s }));
    return 0;
  }
  const st = s.agent.status ? ` — ${s.agent.status.state}${s.agent.status.detail ? ` (${s.agent.status.detail})` : ""}` : "";
  out(`session    ${s.session_id}${s.label ? `  "${s.label}"` : ""}
relay      ${relayUrl}
expires    ${new Date(s.expires_at).toISOString()}
agent      ${s.agent.online ? "online" : "offline"}${st}
apps       ${s.apps} connected
app tools  ${s.tools.app.map((t) => t.name).join(", ") || "(none)"}
agent tools ${s.tools.agent.map((t) => t.name).join(", ") || "(none)"}
open calls ${s.pending_calls}${target.saved?.appUrl ? `\napp link   ${target.saved.appUrl}` : ""}`);
  return 0;
}

async function cmdSessions(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, all: { type: "boolean" } });
  if (values.help) return out(HELP.sessions!), 0;
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  const [sub = "list", arg, ...rest] = positionals;
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  if (sub === "list") {
    const list = loadState(stateDir).sessions;
    if (values.json) return out(JSON.stringify(list.map(({ agentToken: _a, appToken: _b, ...s }) => s))), 0;
    if (!list.length) return out(`no saved sessions in ${stateDir}`), 0;
    for (const s of list) {
      const exp = s.expiresAt ? (s.expiresAt <= Date.now() ? "expired" : `expires ${new Date(s.expiresAt).toISOString().slice(0, 16)}Z`) : "";
      out(`${s.sessionId}  ${s.relayUrl}  ${s.cwd}  ${exp}`);
    }
    return 0;
  }
  if (sub === "forget") {
    const relayUrl = normalizeUrl(str(values, "relay") ?? defaultRelayUrl());
    const cwd = resolve(process.cwd());
    const gone = forgetSessions(stateDir, (s) => (values.all ? true : arg ? s.sessionId === arg : s.relayUrl === relayUrl && s.cwd === cwd));
    out(gone.length ? `forgot ${gone.map((g) => g.sessionId).join(", ")}` : "nothing to forget");
    return 0;
  }
  throw new UsageError(`unknown sessions command ${JSON.stringify(sub)} (list | forget)`);
}

// ------------------------------------------------------------------ serve

export function lanAddresses(): string[] {
  const ips: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) ips.push(a.address);
  return ips;
}

async function cmdServe(argv: string[]): Promise<number> {
  const { values } = parse(argv, { port: { type: "string" }, host: { type: "string" }, web: { type: "string" }, ttl: { type: "string" }, "no-qr": { type: "boolean" }, "allow-host": { type: "string", multiple: true } });
  if (values.help) return out(HELP.serve!), 0;
  const port = Number(str(values, "port") ?? (process.env.LINEUP_PORT || LAN_PORT));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port must be an integer 0-65535");
  const ttl = str(values, "ttl") === undefined ? undefined : Number(str(values, "ttl"));
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 60)) throw new UsageError("--ttl must be an integer number of seconds ≥ 60");
  warnSecretFlags(values, ["token=LINEUP_LAN_TOKEN"]);
  let token = str(values, "token") ?? (process.env.LINEUP_LAN_TOKEN || undefined);
  if (token !== undefined && token.length < 16) throw new UsageError("the token must be at least 16 characters");
  const generated = token === undefined;
  token ??= randomId(24);
  const host = str(values, "host") ?? "0.0.0.0";
  const { startLanServer } = await import("../lan/server.js");
  let server: Awaited<ReturnType<typeof startLanServer>>;
  try {
    const allowHosts = Array.isArray(values["allow-host"]) ? values["allow-host"].filter((h): h is string => typeof h === "string") : [];
    server = await startLanServer({ port, host, token, allowHosts, ...(str(values, "web") ? { webDir: resolve(str(values, "web")!) } : {}) });
  } catch (e) {
    err(`lineup serve: cannot listen on ${host}:${port}: ${(e as Error).message}`);
    return 2;
  }
  const local = `http://127.0.0.1:${server.port}`;
  const res = await fetch(`${local}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ label: `lineup serve ${process.cwd()}`.slice(0, 120), ...(ttl ? { ttl_s: ttl } : {}) }),
  });
  const created = (await res.json()) as import("../../shared/contract/protocol.js").SessionCreated;
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  // Saved for (local URL, cwd): `LINEUP_RELAY_URL=http://127.0.0.1:<port> lineup call …` finds it.
  saveSession(stateDir, savedFromCreated(created, local, process.cwd(), clientIdFor(stateDir, created.session_id)));
  const ips = host === "0.0.0.0" || host === "::" ? lanAddresses() : [host];
  const frag = `#s=${encodeURIComponent(created.session_id)}&t=${encodeURIComponent(created.app_token)}`;
  const links = ips.map((ip) => `http://${ip}:${server.port}/${frag}`);
  err(`LineUp direct LAN mode on ${host}:${server.port} (no relay; in-memory: restarting forgets sessions)`);
  err("warning: this is plain HTTP. Anyone on the same network can read the tokens and answers that cross it; use it on a network you trust, or bind one interface with --host.");
  if (generated) err(`\npre-shared token (generated; set LINEUP_LAN_TOKEN to keep it across restarts — a flag would show in the process list):\n  ${token}`);
  err(`\nLAN URLs:\n${(ips.length ? ips : ["127.0.0.1"]).map((ip) => `  http://${ip}:${server.port}/`).join("\n")}`);
  err(`\nagent, on this machine (the line carries the agent token — a credential):\n  LINEUP_RELAY_URL=${local} LINEUP_SESSION=${created.session_id} LINEUP_TOKEN=${created.agent_token} npx lineup connect`);
  err(`  (or just LINEUP_RELAY_URL=${local} npx lineup call … from ${process.cwd()})`);
  const link = links[0] ?? `${local}/${frag}`;
  printLink(link, !values["no-qr"]);
  for (const l of links.slice(1)) err(`  also: ${l}`);
  // One machine-readable line on stdout for scripts and tests.
  out(JSON.stringify({ url: `http://${ips[0] ?? "127.0.0.1"}:${server.port}`, local_url: local, port: server.port, token, session_id: created.session_id, agent_token: created.agent_token, app_token: created.app_token, app_url: link }));
  return new Promise<number>((done) => {
    const stop = async () => {
      say("stopping");
      await server.close();
      done(0);
    };
    process.once("SIGINT", () => void stop());
    process.once("SIGTERM", () => void stop());
  });
}

// ------------------------------------------------------------------ mcp

async function cmdMcp(argv: string[]): Promise<number> {
  const file = fileURLToPath(new URL("../mcp/server.ts", import.meta.url));
  if (!existsSync(file)) {
    err("lineup mcp: the MCP server (adapter/mcp/server.ts) is not part of this build");
    return 2;
  }
  const mod = (await import(pathToFileURL(file).href)) as { runMcp?: (argv: string[]) => Promise<void> };
  if (typeof mod.runMcp !== "function") {
    err("lineup mcp: adapter/mcp/server.ts does not export runMcp(argv)");
    return 2;
  }
  await mod.runMcp(argv);
  return 0;
}

// ------------------------------------------------------------------ main

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  connect: cmdConnect,
  call: cmdCall,
  status: cmdStatus,
  sessions: cmdSessions,
  serve: cmdServe,
  mcp: cmdMcp,
  // Issue 17 (permissions): loaded on demand, so other commands do not pay for them.
  hook: async (argv) => (await import("../permissions/hooks.js")).runHook(argv),
  setup: async (argv) => (await import("./setup.js")).runSetup(argv),
  permissions: async (argv) => (await import("../permissions/log.js")).runPermissionsLog(argv),
  ...Object.fromEntries(Object.keys(INBOX_COMMANDS).map((name) => [name, (argv: string[]) => runInboxCommand(name, argv)])),
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === "--help" || cmd === "-h" || cmd === "help") {
    const topic = cmd === "help" ? rest[0] : undefined;
    out(topic && HELP[topic] ? HELP[topic] : HELP.main!);
    return cmd ? 0 : 2;
  }
  if (cmd === "--version" || cmd === "-v") return out("lineup 0.1.0 (protocol lineup/1)"), 0;
  const run = COMMANDS[cmd];
  if (!run) {
    err(`lineup: unknown command ${JSON.stringify(cmd)}\n\n${HELP.main}`);
    return 2;
  }
  try {
    return await run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`lineup ${cmd}: ${e.message}\n(see \`lineup ${cmd} --help\`)`);
      return 2;
    }
    if (e instanceof LineUpError) return failConnect(e);
    err(`lineup ${cmd}: ${(e as Error).stack ?? String(e)}`);
    return 2;
  }
}
