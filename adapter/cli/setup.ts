// `lineup setup claude|cursor|codex`: writes the agent's hook configuration, merging into what is there and
// never clobbering it (a file we cannot read is left alone), and prints every change. Formats and their
// sources: docs/permissions.md §7 and §9.
import { parse as parseToml } from "smol-toml";
import { isDeepStrictEqual } from "node:util";
import { accessSync, constants, mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { randomId } from "../../shared/edge/tokens.js";
import { DEV_RELAY_URL } from "../../shared/contract/defaults.js";
// i29-http: `--http` (Claude Code's http hooks to the relay) lives in its own file.
import { checkHttpHookUrl, claudeHttpSpecs, dropClaudeHttpHooks, HTTP_SUBS, httpNextSteps, mergeClaudeHttpHooks } from "./setup-http.js";

export const SETUP_DEFAULTS = {
  /** Claude Code's PermissionRequest hook timeout we write (s); current versions default to 600, old ones to 60. */
  claudeTimeoutS: 600,
  /** The hook gives up this long before its timeout, so it can cancel the card and exit cleanly. */
  waitMarginS: 10,
  reportTimeoutS: 30,
  /** How long AskUserQuestion and elicitation cards wait for the phone before Claude Code's own dialog
   * appears in the terminal (--ask-wait; the hooks' `timeout` is this plus waitMarginS). */
  askWaitS: 120,
  /** Cursor documents no hook timeout we could confirm: the hook's own wait stays under a minute. */
  cursorWaitS: 55,
} as const;

export const SETUP_HELP = `Usage: lineup setup claude [--project DIR] [--timeout S] [--ask-wait S] [--command CMD] [--http [--relay URL]] [--dry-run]
       lineup setup cursor [--project DIR] [--wait S] [--command CMD] [--dry-run]
       lineup setup codex  [--config FILE] [--command CMD] [--dry-run]

claude  <project>/.claude/settings.json: PreToolUse (policy), PermissionRequest (the phone; "timeout": S,
        default ${SETUP_DEFAULTS.claudeTimeoutS}, and --wait S-${SETUP_DEFAULTS.waitMarginS}), Notification idle_prompt and Stop (reports),
        PreToolUse AskUserQuestion and Elicitation (the question on the phone for --ask-wait S, default
        ${SETUP_DEFAULTS.askWaitS}; then Claude Code's own dialog in the terminal; with --defer, in a headless
        run, the run stops and \`lineup connect\` / \`lineup daemon\` resume it when the phone answers);
        <project>/.mcp.json: the lineup MCP server (for claude -p --permission-prompt-tool mcp__lineup__approve)
        --http: PreToolUse, PermissionRequest and AskUserQuestion as "type": "http" hooks that POST to the relay
        (--relay URL, default LINEUP_RELAY_URL) with Bearer $LINEUP_MACHINE_CREDENTIAL from the environment —
        no Node start per tool call; the credential is never written (docs/permissions.md §7.12)
cursor  <project>/.cursor/hooks.json: beforeShellExecution → lineup hook cursor-shell
codex   $CODEX_HOME/config.toml (default ~/.codex/config.toml): notify → lineup hook codex-notify
        (an existing notify program keeps running: it is chained with --then)

Existing entries are kept; LineUp's own entries are updated in place; a file that is not valid is not
touched (exit 2). --command replaces how hooks start lineup (default: \`lineup\` when it is on PATH,
else node and the absolute path of this package's bin). --dry-run prints the changes without writing.`;

const BIN = fileURLToPath(new URL("../bin/lineup.mjs", import.meta.url));

class SetupError extends Error {}

export interface SetupOptions {
  project: string;
  timeoutS: number;
  waitS?: number;
  /** AskUserQuestion / Elicitation: seconds the phone has before the terminal's dialog */
  askWaitS: number;
  /** argv that starts lineup, e.g. ["lineup"] or [node, bin] */
  command: string[];
  codexConfig: string;
  dryRun: boolean;
  /** i29-http: the relay URL the http hooks POST to (`--http`), when wanted */
  http?: string;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** POSIX shell quoting for one word (hook commands run through a shell). */
export function shellQuote(w: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/** `lineup` when that is this package on PATH, else this Node and this bin, both absolute. */
export function defaultCommand(env: Record<string, string | undefined> = process.env): string[] {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, "lineup");
    try {
      accessSync(p, constants.X_OK);
      if (realpathSync(p) === realpathSync(BIN)) return ["lineup"];
    } catch {
      /* not here */
    }
  }
  return [process.execPath, BIN];
}

interface Change {
  file: string;
  what: string;
}

interface FileEdit {
  file: string;
  before: string | undefined;
  after: string;
  changes: string[];
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new SetupError(`${file}: cannot read: ${(e as Error).message}`);
  }
}

function readJsonFile(file: string): { text: string | undefined; doc: Json } {
  const text = readText(file);
  if (text === undefined || text.trim() === "") return { text, doc: {} };
  let doc: unknown;
  try {
    doc = JSON.parse(text) as unknown;
  } catch (e) {
    throw new SetupError(`${file} is not valid JSON (${(e as Error).message}); fix it or move it away — it was not changed`);
  }
  if (!isObj(doc)) throw new SetupError(`${file} is not a JSON object; it was not changed`);
  return { text, doc };
}

function writeAtomic(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomId(4)}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

// ---------------------------------------------------------------- Claude Code

interface ClaudeHookSpec {
  event: "PreToolUse" | "PermissionRequest" | "Notification" | "Stop" | "Elicitation";
  matcher?: string;
  sub: string;
  args: string[];
  timeout: number;
}

export function claudeSpecs(timeoutS: number, askWaitS: number = SETUP_DEFAULTS.askWaitS): ClaudeHookSpec[] {
  const reportWait = String(SETUP_DEFAULTS.reportTimeoutS - 5);
  const ask = { args: ["--wait", String(askWaitS)], timeout: askWaitS + SETUP_DEFAULTS.waitMarginS };
  // i29-defer: --defer is inert in interactive sessions; in a headless run (claude -p, the Agent SDK) an
  // unanswered card ends with PreToolUse "defer" and the run resumes when it is answered (docs/permissions.md §9.2).
  const defer = { args: ["--defer", ...ask.args], timeout: ask.timeout };
  return [
    { event: "PreToolUse", matcher: "*", sub: "pre-tool-use", ...defer },
    { event: "PreToolUse", matcher: "AskUserQuestion", sub: "ask-user-question", ...defer },
    { event: "Elicitation", sub: "elicitation", ...ask },
    {
      event: "PermissionRequest",
      matcher: "*",
      sub: "permission-request",
      args: ["--wait", String(Math.max(5, timeoutS - SETUP_DEFAULTS.waitMarginS))],
      timeout: timeoutS,
    },
    { event: "Notification", matcher: "idle_prompt", sub: "notify", args: ["--wait", reportWait], timeout: SETUP_DEFAULTS.reportTimeoutS },
    { event: "Stop", sub: "stop", args: ["--wait", reportWait], timeout: SETUP_DEFAULTS.reportTimeoutS },
  ];
}

/** Whether a hook command is LineUp's `hook <sub>` (however lineup is started). */
export const isOurs = (command: unknown, sub: string): boolean =>
  typeof command === "string" && new RegExp(`lineup(?:-relay|-agent|\\.mjs)?['"]?\\s+hook\\s+${sub}(?:\\s|$)`).test(command);

const hookCommand = (cmd: string[], sub: string, args: string[]) => [...cmd, "hook", sub, ...args].map(shellQuote).join(" ");

/** Merges LineUp's hooks into a parsed settings object; returns the change lines (empty: nothing to do). */
export function mergeClaudeHooks(
  doc: Json,
  cmd: string[],
  timeoutS: number,
  askWaitS: number = SETUP_DEFAULTS.askWaitS,
  except: readonly string[] = [],
): string[] {
  const changes: string[] = [];
  if (doc.hooks !== undefined && !isObj(doc.hooks)) throw new SetupError(`"hooks" is not an object`);
  const hooks = (doc.hooks ??= {}) as Json;
  for (const spec of claudeSpecs(timeoutS, askWaitS)) {
    if (except.includes(spec.sub)) continue;
    const command = hookCommand(cmd, spec.sub, spec.args);
    const groups = (hooks[spec.event] ??= []) as unknown;
    if (!Array.isArray(groups)) throw new SetupError(`hooks.${spec.event} is not a list`);
    let found = false;
    for (const g of groups as unknown[]) {
      if (!isObj(g) || !Array.isArray(g.hooks)) continue;
      for (const h of g.hooks as unknown[]) {
        if (!isObj(h) || !isOurs(h.command, spec.sub)) continue;
        found = true;
        if (h.command !== command || h.timeout !== spec.timeout || h.type !== "command") {
          h.type = "command";
          h.command = command;
          h.timeout = spec.timeout;
          changes.push(`updated ${spec.event} hook: ${command} (timeout ${spec.timeout} s)`);
        }
      }
    }
    if (!found) {
      (groups as unknown[]).push({
        ...(spec.matcher !== undefined ? { matcher: spec.matcher } : {}),
        hooks: [{ type: "command", command, timeout: spec.timeout }],
      });
      changes.push(`added ${spec.event} hook${spec.matcher !== undefined ? ` (matcher ${spec.matcher})` : ""}: ${command} (timeout ${spec.timeout} s)`);
    }
  }
  return changes;
}

/** The `.mcp.json` server entry for `lineup mcp`. */
export function mcpEntry(cmd: string[]): Json {
  return { command: cmd[0]!, args: [...cmd.slice(1), "mcp"] };
}

export function mergeMcpJson(doc: Json, cmd: string[]): string[] {
  if (doc.mcpServers !== undefined && !isObj(doc.mcpServers)) throw new SetupError(`"mcpServers" is not an object`);
  const servers = (doc.mcpServers ??= {}) as Json;
  const want = mcpEntry(cmd);
  const have = servers.lineup;
  if (have === undefined) {
    servers.lineup = want;
    return [`added MCP server "lineup": ${[want.command, ...(want.args as string[])].join(" ")}`];
  }
  if (JSON.stringify(have) !== JSON.stringify(want)) return [`kept your own MCP server "lineup" (it differs from ${JSON.stringify(want)})`];
  return [];
}

function planClaude(o: SetupOptions): FileEdit[] {
  const edits: FileEdit[] = [];
  const settings = join(o.project, ".claude", "settings.json");
  const s = readJsonFile(settings);
  let changes: string[];
  try {
    // i29-http: with --http three hooks are http ones (setup-http.ts); without, earlier http ones go back to commands.
    changes =
      o.http !== undefined
        ? [
            ...mergeClaudeHooks(s.doc, o.command, o.timeoutS, o.askWaitS, HTTP_SUBS),
            ...mergeClaudeHttpHooks(s.doc, o.http, claudeHttpSpecs(o.timeoutS, o.askWaitS, SETUP_DEFAULTS), isOurs),
          ]
        : [...dropClaudeHttpHooks(s.doc), ...mergeClaudeHooks(s.doc, o.command, o.timeoutS, o.askWaitS)];
  } catch (e) {
    throw new SetupError(`${settings}: ${(e as Error).message}; it was not changed`);
  }
  edits.push({ file: settings, before: s.text, after: `${JSON.stringify(s.doc, null, 2)}\n`, changes });
  const mcp = join(o.project, ".mcp.json");
  const m = readJsonFile(mcp);
  let mc: string[];
  try {
    mc = mergeMcpJson(m.doc, o.command);
  } catch (e) {
    throw new SetupError(`${mcp}: ${(e as Error).message}; it was not changed`);
  }
  // Notes ("kept your own …") are printed but change nothing.
  edits.push({ file: mcp, before: m.text, after: mc.some((c) => c.startsWith("added")) ? `${JSON.stringify(m.doc, null, 2)}\n` : (m.text ?? ""), changes: mc });
  return edits;
}

// ---------------------------------------------------------------- Cursor

export function mergeCursorHooks(doc: Json, cmd: string[], waitS: number): string[] {
  if (doc.version === undefined) doc.version = 1;
  else if (doc.version !== 1) throw new SetupError(`"version" is ${JSON.stringify(doc.version)}, not 1 (the format LineUp knows)`);
  if (doc.hooks !== undefined && !isObj(doc.hooks)) throw new SetupError(`"hooks" is not an object`);
  const hooks = (doc.hooks ??= {}) as Json;
  const list = (hooks.beforeShellExecution ??= []) as unknown;
  if (!Array.isArray(list)) throw new SetupError("hooks.beforeShellExecution is not a list");
  const command = hookCommand(cmd, "cursor-shell", ["--wait", String(waitS)]);
  const mine = (list as unknown[]).filter((h): h is Json => isObj(h) && isOurs(h.command, "cursor-shell"));
  if (mine.length === 0) {
    (list as unknown[]).push({ command });
    return [`added beforeShellExecution hook: ${command}`];
  }
  const changes: string[] = [];
  for (const h of mine) {
    if (h.command !== command) {
      h.command = command;
      changes.push(`updated beforeShellExecution hook: ${command}`);
    }
  }
  return changes;
}

function planCursor(o: SetupOptions): FileEdit[] {
  const file = join(o.project, ".cursor", "hooks.json");
  const f = readJsonFile(file);
  let changes: string[];
  try {
    changes = mergeCursorHooks(f.doc, o.command, o.waitS ?? SETUP_DEFAULTS.cursorWaitS);
  } catch (e) {
    throw new SetupError(`${file}: ${(e as Error).message}; it was not changed`);
  }
  return [{ file, before: f.text, after: `${JSON.stringify(f.doc, null, 2)}\n`, changes }];
}

// ---------------------------------------------------------------- Codex (TOML, edited as text)

/** The document as smol-toml reads it; a file that is not TOML is refused, never edited. */
function readToml(text: string): Record<string, unknown> {
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (e) {
    throw new SetupError(`it is not valid TOML (${String((e as Error).message).split("\n")[0]})`);
  }
}

/**
 * Where the value that starts at `start` ends: the first `]` after which smol-toml reads exactly `want`
 * (a `]` inside a string or a comment fails to parse, or reads as something else). The text is edited in
 * place, so the user's comments and layout elsewhere survive; the library does the reading.
 */
function valueEnd(text: string, start: number, want: unknown): number | undefined {
  for (let end = text.indexOf("]", start); end >= 0; end = text.indexOf("]", end + 1)) {
    try {
      if (isDeepStrictEqual(parseToml(`v = ${text.slice(start, end + 1)}`).v, want)) return end + 1;
    } catch {
      /* not the end yet */
    }
  }
  return undefined;
}

const tomlArray = (values: string[]) => `[${values.map((v) => JSON.stringify(v)).join(", ")}]`;

/** New config.toml text with LineUp's notify (chaining an existing program with --then). */
export function mergeCodexConfig(text: string, cmd: string[]): { text: string; changes: string[] } {
  const ours = [...cmd, "hook", "codex-notify"];
  const doc = readToml(text);
  const cur = doc.notify;
  let next: string[];
  let out: { text: string; changes: string[] };
  if (cur === undefined) {
    next = ours;
    // Top-level keys end at the first table header.
    const header = /^[ \t]*\[/m.exec(text);
    const topEnd = header ? header.index : text.length;
    const line = `# LineUp: each finished Codex turn is reported into the session's thread (lineup setup codex)\nnotify = ${tomlArray(ours)}\n`;
    const before = text.slice(0, topEnd);
    const sep = before === "" || before.endsWith("\n\n") ? "" : before.endsWith("\n") ? "\n" : "\n\n";
    const after = text.slice(topEnd);
    out = { text: `${before}${sep}${line}${after ? `\n${after}` : ""}`, changes: [`added notify = ${tomlArray(ours)}`] };
  } else {
    if (!Array.isArray(cur) || !cur.every((v): v is string => typeof v === "string"))
      throw new SetupError("its top-level `notify` is not an array of strings LineUp can rewrite");
    const m = /^[ \t]*notify[ \t]*=[ \t]*/m.exec(text);
    const start = m ? m.index + m[0].length : -1;
    const end = m ? valueEnd(text, start, cur) : undefined;
    if (end === undefined) throw new SetupError("its top-level `notify` is not written as a plain `notify = [ … ]` LineUp can rewrite");
    const at = cur.findIndex((v, k) => v === "hook" && cur[k + 1] === "codex-notify");
    let what: string;
    if (at >= 0) {
      const thenAt = cur.indexOf("--then", at);
      next = thenAt >= 0 ? [...ours, ...cur.slice(thenAt)] : ours;
      what = "updated";
    } else {
      next = cur.length > 0 ? [...ours, "--then", ...cur] : ours;
      what = cur.length > 0 ? `chained your notify program (${cur[0]}) after LineUp's:` : "set";
    }
    if (isDeepStrictEqual(next, cur)) return { text, changes: [] };
    out = { text: `${text.slice(0, start)}${tomlArray(next)}${text.slice(end)}`, changes: [`${what} notify = ${tomlArray(next)}`] };
  }
  // Checked by reading it back: the new notify, and every other value exactly as it was.
  let back: Record<string, unknown> | undefined;
  try {
    back = parseToml(out.text) as Record<string, unknown>;
  } catch {
    back = undefined;
  }
  const { notify: _was, ...others } = doc;
  const { notify: wrote, ...othersAfter } = back ?? {};
  if (!back || !isDeepStrictEqual(wrote, next) || !isDeepStrictEqual(othersAfter, others)) {
    throw new SetupError("LineUp could not add its notify without changing something else (an unusual layout); add it by hand (docs/permissions.md §8.4)");
  }
  return out;
}

function planCodex(o: SetupOptions): FileEdit[] {
  const file = o.codexConfig;
  const text = readText(file);
  let r: { text: string; changes: string[] };
  try {
    r = mergeCodexConfig(text ?? "", o.command);
  } catch (e) {
    throw new SetupError(`${file}: ${(e as Error).message}; it was not changed`);
  }
  return [{ file, before: text, after: r.text, changes: r.changes }];
}

// ---------------------------------------------------------------- entry

const NEXT_STEPS: Record<string, string> = {
  claude: `Next: run \`lineup mcp\` once (or start Claude Code) and open the pairing link on your phone.
Interactive Claude Code asks through the PermissionRequest hook; headless runs use
  claude -p --permission-prompt-tool mcp__lineup__approve "…"
Rules: <project>/.lineup/policy.json, the local policy file, and the inbox policy (docs/permissions.md).`,
  cursor: "Next: restart Cursor so it reads .cursor/hooks.json; shell commands the policy does not decide go to your phone.",
  codex: "Next: every finished Codex turn now appears in the thread of the project's session (the turn's cwd).",
};

function parseSetupArgs(argv: string[], env: Record<string, string | undefined>): { target: string; o: SetupOptions } {
  const [target, ...rest] = argv;
  if (target !== "claude" && target !== "cursor" && target !== "codex")
    throw new SetupError(`lineup setup: which agent? claude, cursor or codex\n\n${SETUP_HELP}`);
  const flags = new Map<string, string>();
  let dryRun = false;
  let http = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--dry-run") {
      dryRun = true;
      continue;
    }
    if (a === "--http" && target === "claude") {
      http = true;
      continue;
    }
    const m = /^--(project|timeout|wait|ask-wait|command|config|relay)(?:=(.*))?$/.exec(a);
    if (!m) throw new SetupError(`lineup setup: unknown argument ${JSON.stringify(a)}`);
    const v = m[2] ?? rest[++i];
    if (v === undefined) throw new SetupError(`--${m[1]} needs a value`);
    flags.set(m[1]!, v);
  }
  const num = (k: string, min: number, max: number) => {
    const v = flags.get(k);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new SetupError(`--${k} must be a whole number of seconds from ${min} to ${max}`);
    return n;
  };
  const codexHome = env.CODEX_HOME || join(homedir(), ".codex");
  const command = flags.get("command");
  const o: SetupOptions = {
    project: resolve(flags.get("project") ?? process.cwd()),
    timeoutS: num("timeout", 20, 86_400) ?? SETUP_DEFAULTS.claudeTimeoutS,
    askWaitS: num("ask-wait", 5, 86_400) ?? SETUP_DEFAULTS.askWaitS,
    command: command !== undefined ? command.split(/\s+/).filter(Boolean) : defaultCommand(env),
    codexConfig: resolve(flags.get("config") ?? join(codexHome, "config.toml")),
    dryRun,
  };
  const w = num("wait", 5, 86_400);
  if (w !== undefined) o.waitS = w;
  if (http) {
    try {
      o.http = checkHttpHookUrl(flags.get("relay") ?? (env.LINEUP_RELAY_URL || DEV_RELAY_URL), env);
    } catch (e) {
      throw new SetupError((e as Error).message);
    }
  } else if (flags.has("relay")) throw new SetupError("--relay is for --http");
  if (o.command.length === 0) throw new SetupError("--command is empty");
  return { target, o };
}

/** `lineup setup …`: prints the changes on stdout; exit 0, or 2 when a file could not be merged. */
export function runSetup(argv: string[], io: { out?: (s: string) => void; err?: (s: string) => void; env?: Record<string, string | undefined> } = {}): number {
  const out = io.out ?? ((s: string) => void process.stdout.write(`${s}\n`));
  const err = io.err ?? ((s: string) => void process.stderr.write(`${s}\n`));
  if (argv.includes("--help") || argv.includes("-h") || argv.length === 0) {
    out(SETUP_HELP);
    return argv.length === 0 ? 2 : 0;
  }
  try {
    const { target, o } = parseSetupArgs(argv, io.env ?? process.env);
    const edits = target === "claude" ? planClaude(o) : target === "cursor" ? planCursor(o) : planCodex(o);
    const all: Change[] = [];
    for (const e of edits) {
      for (const c of e.changes) all.push({ file: e.file, what: c });
      if (!o.dryRun && e.after !== (e.before ?? "") && e.changes.some((c) => !c.startsWith("kept"))) writeAtomic(e.file, e.after);
    }
    const note = (c: Change) => c.what.startsWith("kept");
    if (!all.some((c) => !note(c))) out(`lineup setup ${target}: already set up, nothing changed`);
    for (const c of all) out(`${note(c) ? "note" : o.dryRun ? "would change" : "changed"} ${c.file}: ${c.what}`);
    out(NEXT_STEPS[target]!);
    if (o.http !== undefined) out(httpNextSteps(o.http, io.env ?? process.env));
    return 0;
  } catch (e) {
    err(e instanceof SetupError ? e.message : `lineup setup: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 2;
  }
}
