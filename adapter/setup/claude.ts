// `lineup setup claude`: <project>/.claude/settings.json hooks and <project>/.mcp.json (docs/permissions.md §8.1).
import { join } from "node:path";
import {
  type FileEdit,
  type HookSpec,
  type Json,
  isObj,
  isOurs,
  mergeHookGroups,
  planJson,
  readJsonFile,
  SETUP_DEFAULTS,
  SetupError,
  type SetupOptions,
} from "./common.js";
// i29-http: `--http` (Claude Code's http hooks to the relay) lives in its own file.
import { claudeHttpSpecs, dropClaudeHttpHooks, HTTP_SUBS, mergeClaudeHttpHooks } from "./http.js";

/** The Notification kinds `lineup hook notify` reports (i29-agents: needs-input and completion, issue 29 item 3). */
export const NOTIFY_MATCHER = "idle_prompt|agent_needs_input|agent_completed";

export function claudeSpecs(timeoutS: number, askWaitS: number = SETUP_DEFAULTS.askWaitS): HookSpec[] {
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
    {
      event: "Notification",
      matcher: NOTIFY_MATCHER,
      oldMatchers: ["idle_prompt"],
      sub: "notify",
      args: ["--wait", reportWait],
      timeout: SETUP_DEFAULTS.reportTimeoutS,
    },
    { event: "Stop", sub: "stop", args: ["--wait", reportWait], timeout: SETUP_DEFAULTS.reportTimeoutS },
  ];
}

/** Merges LineUp's hooks into a parsed settings object; returns the change lines (empty: nothing to do). */
export function mergeClaudeHooks(
  doc: Json,
  cmd: string[],
  timeoutS: number,
  askWaitS: number = SETUP_DEFAULTS.askWaitS,
  except: readonly string[] = [],
): string[] {
  return mergeHookGroups(
    doc,
    cmd,
    claudeSpecs(timeoutS, askWaitS).filter((s) => !except.includes(s.sub)),
  );
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

export function planClaude(o: SetupOptions): FileEdit[] {
  // i29-http: with --http three hooks are http ones (http.ts); without, earlier http ones go back to commands.
  const settings = planJson(join(o.project, ".claude", "settings.json"), (doc) =>
    o.http !== undefined
      ? [
          ...mergeClaudeHooks(doc, o.command, o.timeoutS, o.askWaitS, HTTP_SUBS),
          ...mergeClaudeHttpHooks(doc, o.http, claudeHttpSpecs(o.timeoutS, o.askWaitS, SETUP_DEFAULTS), isOurs),
        ]
      : [...dropClaudeHttpHooks(doc), ...mergeClaudeHooks(doc, o.command, o.timeoutS, o.askWaitS)],
  );
  const mcp = join(o.project, ".mcp.json");
  const m = readJsonFile(mcp);
  let mc: string[];
  try {
    mc = mergeMcpJson(m.doc, o.command);
  } catch (e) {
    throw new SetupError(`${mcp}: ${(e as Error).message}; it was not changed`);
  }
  // Notes ("kept your own …") are printed but change nothing.
  return [
    settings,
    { file: mcp, before: m.text, after: mc.some((c) => c.startsWith("added")) ? `${JSON.stringify(m.doc, null, 2)}\n` : (m.text ?? ""), changes: mc },
  ];
}
