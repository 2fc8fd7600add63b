// `lineup setup claude|cursor|codex`: writes the agent's hook configuration, merging into what is there and
// never clobbering it (a file we cannot read is left alone), and prints every change. Formats and their
// sources: docs/permissions.md §7 and §9. One file per agent in setup/ (claude.ts, cursor.ts, codex.ts).
import { accessSync, constants, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import { planClaude } from "./claude.js";
import { planCodex } from "./codex.js";
import { SETUP_DEFAULTS, SetupError, type SetupOptions, writeAtomic } from "./common.js";
import { planCursor } from "./cursor.js";
// i29-http: `--http` (Claude Code's http hooks to the relay).
import { checkHttpHookUrl, httpNextSteps } from "./http.js";

export { mergeCodexConfig } from "./codex.js";
export { isOurs, SETUP_DEFAULTS, shellQuote } from "./common.js";

export const SETUP_HELP = `Usage: lineup setup claude [--project DIR] [--timeout S] [--ask-wait S] [--command CMD] [--http [--relay URL]] [--dry-run]
       lineup setup cursor [--project DIR] [--wait S] [--command CMD] [--dry-run]
       lineup setup codex  [--config FILE] [--timeout S] [--command CMD] [--dry-run]

claude  <project>/.claude/settings.json: PreToolUse (policy), PermissionRequest (the phone; "timeout": S,
        default ${SETUP_DEFAULTS.claudeTimeoutS}, and --wait S-${SETUP_DEFAULTS.waitMarginS}), Notification idle_prompt|agent_needs_input|
        agent_completed and Stop (reports and pushes),
        PreToolUse AskUserQuestion and Elicitation (the question on the phone for --ask-wait S, default
        ${SETUP_DEFAULTS.askWaitS}; then Claude Code's own dialog in the terminal; with --defer, in a headless
        run, the run stops and \`lineup connect\` / \`lineup daemon\` resume it when the phone answers);
        <project>/.mcp.json: the lineup MCP server (for claude -p --permission-prompt-tool mcp__lineup__approve)
        --http: PreToolUse, PermissionRequest and AskUserQuestion as "type": "http" hooks that POST to the relay
        (--relay URL, default LINEUP_RELAY_URL) with Bearer $LINEUP_MACHINE_CREDENTIAL from the environment —
        no Node start per tool call; the credential is never written (docs/permissions.md §7.12)
cursor  <project>/.cursor/hooks.json: beforeShellExecution → cursor-shell, beforeMCPExecution → cursor-mcp
        (the phone, --wait S, default ${SETUP_DEFAULTS.cursorWaitS}), stop → cursor-stop (report)
codex   $CODEX_HOME/hooks.json (next to --config): PreToolUse → codex-pre-tool-use (policy),
        PermissionRequest → codex-permission-request (the phone; "timeout": S, default ${SETUP_DEFAULTS.claudeTimeoutS}),
        Stop → codex-stop (report); $CODEX_HOME/config.toml (default ~/.codex/config.toml): notify →
        lineup hook codex-notify for Codex versions without hooks (an existing notify program keeps
        running: it is chained with --then; a turn the Stop hook reported is not reported again)

Existing entries are kept; LineUp's own entries are updated in place; a file that is not valid is not
touched (exit 2). --command replaces how hooks start lineup (default: \`lineup\` when it is on PATH,
else node and the absolute path of this package's bin). --dry-run prints the changes without writing.`;

const BIN = fileURLToPath(new URL("../bin/lineup.mjs", import.meta.url));

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

// ---------------------------------------------------------------- entry

const NEXT_STEPS: Record<string, string> = {
  claude: `Next: run \`lineup mcp\` once (or start Claude Code) and open the pairing link on your phone.
Interactive Claude Code asks through the PermissionRequest hook; headless runs use
  claude -p --permission-prompt-tool mcp__lineup__approve "…"
Rules: <project>/.lineup/policy.json, the local policy file, and the inbox policy (docs/permissions.md).`,
  cursor: "Next: restart Cursor so it reads .cursor/hooks.json; shell commands and MCP tools the policy does not decide go to your phone.",
  codex: `Next: Codex asks your phone before commands and MCP tools the policy does not decide, and every finished
turn appears in the thread of the project's session (the turn's cwd). Codex versions whose hooks are still
behind a flag need [features] codex_hooks = true in config.toml (docs/permissions.md §8.4).`,
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
