// What `lineup setup` shares across agents (adapter/setup/index.ts is the entry): options, reading and writing
// files without clobbering them, shell quoting, recognising LineUp's own hook commands, and merging hooks into
// the `{hooks: {Event: [{matcher?, hooks: [{type, command, timeout}]}]}}` format Claude Code and Codex share.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { randomId } from "../../shared/edge/tokens.js";

export const SETUP_DEFAULTS = {
  /** Claude Code's PermissionRequest hook timeout we write (s); current versions default to 600, old ones to 60. */
  claudeTimeoutS: 600,
  /** The hook gives up this long before its timeout, so it can cancel the card and exit cleanly. */
  waitMarginS: 10,
  /** PreToolUse hooks that answer from the policy alone (Codex; Claude Code's without --defer). */
  preToolUseTimeoutS: 10,
  reportTimeoutS: 30,
  /** How long AskUserQuestion and elicitation cards wait for the phone before Claude Code's own dialog
   * appears in the terminal (--ask-wait; the hooks' `timeout` is this plus waitMarginS). */
  askWaitS: 120,
  /** Cursor: the hook's own wait stays under a minute (docs/permissions.md §8.3). */
  cursorWaitS: 55,
} as const;

export class SetupError extends Error {}

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

export type Json = Record<string, unknown>;
export const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** POSIX shell quoting for one word (hook commands run through a shell). */
export function shellQuote(w: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

export interface FileEdit {
  file: string;
  before: string | undefined;
  after: string;
  changes: string[];
}

export function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new SetupError(`${file}: cannot read: ${(e as Error).message}`);
  }
}

export function readJsonFile(file: string): { text: string | undefined; doc: Json } {
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

/** A JSON file merged by `merge` (which throws SetupError for a shape it cannot merge): the edit, or exit 2. */
export function planJson(file: string, merge: (doc: Json) => string[]): FileEdit {
  const f = readJsonFile(file);
  let changes: string[];
  try {
    changes = merge(f.doc);
  } catch (e) {
    throw new SetupError(`${file}: ${(e as Error).message}; it was not changed`);
  }
  return { file, before: f.text, after: `${JSON.stringify(f.doc, null, 2)}\n`, changes };
}

export function writeAtomic(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomId(4)}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** Whether a hook command is LineUp's `hook <sub>` (however lineup is started). */
export const isOurs = (command: unknown, sub: string): boolean =>
  typeof command === "string" && new RegExp(`lineup(?:-relay|-agent|\\.mjs)?['"]?\\s+hook\\s+${sub}(?:\\s|$)`).test(command);

export const hookCommand = (cmd: string[], sub: string, args: string[]) => [...cmd, "hook", sub, ...args].map(shellQuote).join(" ");

/** One hook LineUp writes in the Claude Code / Codex format. */
export interface HookSpec {
  event: string;
  matcher?: string;
  /** Matchers earlier LineUp versions wrote: a group with one of these (and only our hook) gets `matcher`. */
  oldMatchers?: string[];
  sub: string;
  args: string[];
  timeout: number;
}

/** Merges hooks into a parsed `{hooks: {Event: [group…]}}` document; returns the change lines (empty: nothing to do). */
export function mergeHookGroups(doc: Json, cmd: string[], specs: HookSpec[]): string[] {
  const changes: string[] = [];
  if (doc.hooks !== undefined && !isObj(doc.hooks)) throw new SetupError(`"hooks" is not an object`);
  const hooks = (doc.hooks ??= {}) as Json;
  for (const spec of specs) {
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
        // A matcher we wrote before is widened in place; one the user narrowed stays (§8.1).
        if (spec.matcher !== undefined && typeof g.matcher === "string" && spec.oldMatchers?.includes(g.matcher) && g.hooks.length === 1) {
          g.matcher = spec.matcher;
          changes.push(`updated ${spec.event} matcher: ${spec.matcher}`);
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
