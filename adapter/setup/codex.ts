// `lineup setup codex` (docs/permissions.md §8.4): $CODEX_HOME/config.toml's `notify` (every Codex version
// with it) and — i29-agents, issue 29 item 5 — the lifecycle hooks in $CODEX_HOME/hooks.json (PreToolUse,
// PermissionRequest, Stop), in the Claude Code format (developers.openai.com/codex/hooks).
import { parse as parseToml } from "smol-toml";
import { isDeepStrictEqual } from "node:util";
import { dirname, join } from "node:path";
import { type FileEdit, type HookSpec, mergeHookGroups, planJson, readText, SETUP_DEFAULTS, SetupError, type SetupOptions } from "./common.js";

/**
 * Codex's hooks (timeouts in seconds, default 600): no matcher, so every tool. PreToolUse answers from the
 * policy on disk (Codex acts only on `deny`); PermissionRequest asks the phone; Stop reports the turn.
 */
export function codexSpecs(timeoutS: number): HookSpec[] {
  const reportWait = String(SETUP_DEFAULTS.reportTimeoutS - 5);
  return [
    { event: "PreToolUse", sub: "codex-pre-tool-use", args: [], timeout: SETUP_DEFAULTS.preToolUseTimeoutS },
    {
      event: "PermissionRequest",
      sub: "codex-permission-request",
      args: ["--wait", String(Math.max(5, timeoutS - SETUP_DEFAULTS.waitMarginS))],
      timeout: timeoutS,
    },
    { event: "Stop", sub: "codex-stop", args: ["--wait", reportWait], timeout: SETUP_DEFAULTS.reportTimeoutS },
  ];
}

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

export function planCodex(o: SetupOptions): FileEdit[] {
  const file = o.codexConfig;
  const text = readText(file);
  let r: { text: string; changes: string[] };
  try {
    r = mergeCodexConfig(text ?? "", o.command);
  } catch (e) {
    throw new SetupError(`${file}: ${(e as Error).message}; it was not changed`);
  }
  const hooks = planJson(join(dirname(file), "hooks.json"), (doc) => mergeHookGroups(doc, o.command, codexSpecs(o.timeoutS)));
  return [{ file, before: text, after: r.text, changes: r.changes }, hooks];
}
