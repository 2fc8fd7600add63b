// `lineup setup cursor`: <project>/.cursor/hooks.json (docs/permissions.md §7.7, §8.3). i29-agents (issue 29
// item 5) adds beforeMCPExecution and stop beside beforeShellExecution, each with an explicit timeout.
import { join } from "node:path";
import { type FileEdit, hookCommand, isObj, isOurs, type Json, planJson, SETUP_DEFAULTS, SetupError, type SetupOptions } from "./common.js";

/**
 * Cursor's `timeout` unit is not confirmed in a source we could read (third-party pages say seconds or
 * milliseconds; §7.7). We write the wait plus 10 s **in milliseconds**: read as milliseconds that is the
 * intended limit, read as seconds it is a longer one — either way the hook ends itself at its `--wait`, so
 * a unit mix-up can never kill it early (which Cursor would treat as "no answer").
 */
export const cursorTimeout = (waitS: number) => (waitS + SETUP_DEFAULTS.waitMarginS) * 1000;

export function cursorSpecs(waitS: number): { event: string; sub: string; args: string[]; timeout: number }[] {
  const reportWait = SETUP_DEFAULTS.reportTimeoutS - 5;
  return [
    { event: "beforeShellExecution", sub: "cursor-shell", args: ["--wait", String(waitS)], timeout: cursorTimeout(waitS) },
    { event: "beforeMCPExecution", sub: "cursor-mcp", args: ["--wait", String(waitS)], timeout: cursorTimeout(waitS) },
    { event: "stop", sub: "cursor-stop", args: ["--wait", String(reportWait)], timeout: cursorTimeout(reportWait) },
  ];
}

export function mergeCursorHooks(doc: Json, cmd: string[], waitS: number): string[] {
  if (doc.version === undefined) doc.version = 1;
  else if (doc.version !== 1) throw new SetupError(`"version" is ${JSON.stringify(doc.version)}, not 1 (the format LineUp knows)`);
  if (doc.hooks !== undefined && !isObj(doc.hooks)) throw new SetupError(`"hooks" is not an object`);
  const hooks = (doc.hooks ??= {}) as Json;
  for (const s of cursorSpecs(waitS)) {
    const list = (hooks[s.event] ??= []) as unknown;
    if (!Array.isArray(list)) throw new SetupError(`hooks.${s.event} is not a list`);
  }
  const changes: string[] = [];
  for (const s of cursorSpecs(waitS)) {
    const list = hooks[s.event] as unknown[];
    const command = hookCommand(cmd, s.sub, s.args);
    const mine = list.filter((h): h is Json => isObj(h) && isOurs(h.command, s.sub));
    if (mine.length === 0) {
      list.push({ command, timeout: s.timeout });
      changes.push(`added ${s.event} hook: ${command} (timeout ${s.timeout})`);
    }
    for (const h of mine) {
      if (h.command !== command || h.timeout !== s.timeout) {
        h.command = command;
        h.timeout = s.timeout;
        changes.push(`updated ${s.event} hook: ${command} (timeout ${s.timeout})`);
      }
    }
  }
  return changes;
}

export function planCursor(o: SetupOptions): FileEdit[] {
  return [planJson(join(o.project, ".cursor", "hooks.json"), (doc) => mergeCursorHooks(doc, o.command, o.waitS ?? SETUP_DEFAULTS.cursorWaitS))];
}
