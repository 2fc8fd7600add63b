// Turns a Bash command into what permission rules are checked against: one unit per simple command
// (each must be allowed on its own), the strings each unit is compared with, and the files its
// redirections and well-known file commands touch. Two stripping chains per unit:
// - for allow rules, only Claude Code's documented wrappers (`timeout`, `time`, `nice`, `nohup`,
//   `stdbuf`, `command`, `builtin`, `noglob`, bare `xargs`) and known-safe env assignments;
// - for deny/ask rules, every leading assignment and wrapper (`sudo`, `env`, `exec`, `xargs -n1`, …),
//   git's global options, and the scripts of `bash -c`, `eval`, `find -exec`, here-documents fed to a
//   shell; parts known only at run time stay unknown (templates), and a program that cannot be known
//   before it runs is flagged, so a deny rule is hard to slip past (stricter than Claude Code;
//   docs/permissions.md).
import { hasUnknown, templateOf, type Template } from "./match.js";
import { isWithin, resolvePath } from "./paths.js";
import { afterFunctionKeyword, programsOf } from "./programs.js";
import { parseShell, quoteWord, type Segment, type Word } from "./shell.js";
import { allowStrip, denyStrip, envSplitString } from "./wrappers.js";

export interface CommandForm {
  text: string;
  /** only an exact-match rule may allow this form (expansion in the command name, `watch`, `find -exec`) */
  exactOnly: boolean;
}

export interface BashUnit {
  /** the command as written, for reasons and prompts */
  display: string;
  /** strings allow rules are compared with: the command, then after each safe strip */
  allowForms: CommandForm[];
  /** strings deny/ask rules are compared with (a superset of allowForms' texts) */
  denyForms: string[];
  /** forms with parts known only at run time: a deny/ask rule that may match them makes the call ask */
  denyTemplates: Template[];
  /** why the program this unit runs cannot be known before it runs (`echo … | sh`, `source f`) */
  computed?: string;
  /** set when no specifier allow rule can cover this unit */
  allowBlocked?: string;
  /** set when the unit needs no rule (e.g. `cd` into the project) */
  implicit?: string;
  /** false for the inside of `bash -c "…"`, `eval`, `find -exec`: only deny/ask rules apply */
  required: boolean;
  /** the words after safe stripping (values), for proposed rules */
  words: string[];
  /** true when some of `words` came from an expansion (a proposed rule must then be exact) */
  dynamic: boolean;
  /** the program itself is named at run time (`$CMD x`): no deny rule can be checked against it */
  dynamicName?: boolean;
}

export interface PathUse {
  /** absolute, normalized; undefined when it cannot be known (`$VAR`, globs) */
  path?: string;
  display: string;
  access: "read" | "write";
  /** a redirection target (needs an Edit allow) vs. a file argument (deny/ask only) */
  required: boolean;
  /** false when an allow rule cannot vouch for it (`~`-prefixed, glob, unknown directory) */
  allowable: boolean;
}

export interface BashAnalysis {
  error?: string;
  units: BashUnit[];
  paths: PathUse[];
}

export interface BashContext {
  cwd: string;
  home: string;
  /** the working directories: `cd` into them needs no rule */
  scopeDirs: readonly string[];
}

/**
 * Environment variables whose leading assignment allow rules look past. Claude Code names only
 * NODE_ENV in its docs; this list is LineUp's choice of variables that cannot change which program
 * runs or what it loads (no PATH, LD_*, NODE_OPTIONS, PYTHONPATH, …).
 */
export const SAFE_ENV_VARS: ReadonlySet<string> = new Set([
  "NODE_ENV",
  "RAILS_ENV",
  "RACK_ENV",
  "APP_ENV",
  "CI",
  "DEBUG",
  "NO_COLOR",
  "FORCE_COLOR",
  "TERM",
  "TZ",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "RUST_LOG",
  "RUST_BACKTRACE",
  "PYTHONUNBUFFERED",
  "PYTHONDONTWRITEBYTECODE",
  "GOFLAGS",
  "CARGO_TERM_COLOR",
  "VERBOSE",
]);

/** Exec wrappers a prefix rule must not approve (Claude Code: they always prompt unless exact). */
const EXACT_ONLY_COMMANDS = new Set(["watch", "setsid", "ionice", "flock"]);
const FIND_EXEC_FLAGS = new Set(["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]);
const LEADING_KEYWORDS = new Set(["!", "{", "if", "then", "else", "elif", "while", "until", "do"]);
const CLOSING_KEYWORDS = new Set(["}", "fi", "done", "esac", "then", "else", "do", "{"]);
const NOOP_COMMANDS = new Set(["true", ":", "pwd"]);

const ASSIGNMENT_RE = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/;

const text = (ws: readonly Word[]): string => ws.map((w) => w.raw).join(" ");
const valueText = (ws: readonly Word[]): string => ws.map((w) => (w.expansion ? w.raw : w.value)).join(" ");
const isOption = (w: Word | undefined): boolean => w !== undefined && !w.expansion && w.value.startsWith("-") && w.value !== "-";

function assignmentName(w: Word): string | undefined {
  // The name part must be unquoted for bash to treat the word as an assignment.
  const m = ASSIGNMENT_RE.exec(w.raw);
  return m?.[1];
}

interface FileArgs {
  reads: Word[];
  writes: Word[];
}

/** File arguments of well-known commands, so Read/Edit deny rules also cover `cat`, `rm`, `sed -i`, … */
function fileArgs(ws: readonly Word[]): FileArgs {
  const head = (ws[0]?.value ?? "").split("/").pop() ?? "";
  const args: Word[] = [];
  const opts: string[] = [];
  let ended = false;
  for (const w of ws.slice(1)) {
    if (!ended && w.value === "--") ended = true;
    else if (!ended && isOption(w)) opts.push(w.value);
    else args.push(w);
  }
  const none: FileArgs = { reads: [], writes: [] };
  const hasOpt = (...names: string[]) =>
    opts.some((o) => names.some((n) => o === n || (n.length === 2 && o.startsWith("-") && !o.startsWith("--") && o.includes(n[1] ?? ""))));
  switch (head) {
    case "cat":
    case "head":
    case "tail":
    case "less":
    case "more":
    case "nl":
    case "tac":
    case "od":
    case "xxd":
    case "hexdump":
    case "strings":
    case "base64":
    case "md5sum":
    case "sha1sum":
    case "sha256sum":
    case "sha512sum":
    case "wc":
    case "sort":
    case "uniq":
    case "cut":
    case "paste":
    case "diff":
    case "cmp":
    case "file":
    case "stat":
    case "source":
    case ".":
    case "bat":
    case "jq":
    case "iconv":
    case "fold":
    case "column":
    case "tr":
      return { reads: args, writes: [] };
    case "grep":
    case "egrep":
    case "fgrep":
    case "rg":
    case "ag":
      return { reads: hasOpt("-e", "-f", "--regexp", "--file") ? args : args.slice(1), writes: [] };
    case "sed":
    case "awk":
    case "gawk":
    case "perl": {
      const files = hasOpt("-e", "-f", "--expression", "--file") ? args : args.slice(1);
      return head === "sed" && opts.some((o) => o.startsWith("-i") || o.startsWith("--in-place"))
        ? { reads: files, writes: files }
        : { reads: files, writes: [] };
    }
    case "tee":
    case "touch":
    case "rm":
    case "rmdir":
    case "mkdir":
    case "truncate":
    case "shred":
    case "unlink":
      return { reads: [], writes: args };
    case "chmod":
    case "chown":
    case "chgrp":
      return { reads: [], writes: args.slice(1) };
    case "mv":
      return { reads: [], writes: args };
    case "cp":
    case "ln":
    case "install":
    case "rsync":
      return { reads: args.slice(0, -1), writes: args.slice(-1) };
    case "dd": {
      const pick = (k: string) => args.filter((a) => a.value.startsWith(k)).map((a) => ({ ...a, value: a.value.slice(k.length) }));
      return { reads: pick("if="), writes: pick("of=") };
    }
    default:
      return none;
  }
}

/** Analyzes a Bash command for rule matching. Never throws; a parse error is reported in `error`. */
export function analyzeBash(command: string, ctx: BashContext, depth = 0): BashAnalysis {
  if (depth > 8) return { error: "scripts nested too deeply", units: [], paths: [] };
  const parsed = parseShell(command);
  if (parsed.error !== undefined) return { error: parsed.error, units: [], paths: [] };
  const units: BashUnit[] = [];
  const paths: PathUse[] = [];
  let cwd = ctx.cwd;
  let cwdKnown = true;

  const addPath = (w: Word, access: "read" | "write", required: boolean) => {
    if (w.value === "/dev/null") return;
    // An unquoted `~` is expanded by the shell; a quoted one names a directory called "~".
    const tilde = w.raw.startsWith("~");
    const literal = tilde ? w.value : w.value.replace(/^~/, "./~");
    // Globs stay literal: `cat secrets/*` still hits a deny rule for secrets/**.
    const path = w.expansion ? undefined : resolvePath(literal, cwd, ctx.home);
    paths.push({ path, display: w.raw, access, required, allowable: !w.expansion && !w.glob && !tilde && cwdKnown });
    // A relative path after a `cd` is checked against the starting directory too (deny is best effort).
    if (!w.expansion && !tilde && cwd !== ctx.cwd && !literal.startsWith("/")) {
      paths.push({ path: resolvePath(literal, ctx.cwd, ctx.home), display: w.raw, access, required: false, allowable: false });
    }
  };

  const top = parsed.segments.filter((s) => !s.nested);
  const gitLater = (from: number) => top.slice(from + 1).some((s) => denyChain(strippedWords(s.words), s).final[0]?.value === "git");

  const analyzeSegment = (seg: Segment, topIndex: number, required: boolean) => {
    for (const r of seg.redirects) {
      if (r.kind === "write") addPath(r.target, "write", required);
      else if (r.kind === "read") addPath(r.target, "read", false);
    }
    const words = strippedWords(seg.words);
    if (words.length === 0) return;
    const display = text(seg.words);
    const deny = denyChain(words, seg);
    const allow = allowChain(words);

    for (const script of deny.scripts) {
      const inner = analyzeBash(script, { ...ctx, cwd }, depth + 1);
      // An unreadable script is still compared whole, so `Bash(rm *)` catches `bash -c "rm -rf x; '"`.
      if (inner.error !== undefined)
        units.push({ display: script, allowForms: [], denyForms: [script], denyTemplates: [], required: false, words: [], dynamic: true });
      for (const u of inner.units) units.push({ ...u, required: false });
      for (const p of inner.paths) paths.push({ ...p, required: false });
    }
    const args = fileArgs(deny.final);
    for (const w of args.reads) addPath(w, "read", false);
    for (const w of args.writes) addPath(w, "write", false);

    const unit: BashUnit = {
      display,
      allowForms: allow.forms,
      denyForms: unique([...deny.forms, ...allow.forms.map((f) => f.text)]),
      denyTemplates: deny.templates,
      ...(deny.computed !== undefined ? { computed: deny.computed } : {}),
      required,
      words: allow.final.map((w) => (w.expansion ? w.raw : w.value)),
      dynamic: allow.final.some((w) => w.expansion || w.glob),
    };
    const program = deny.final[0];
    if (program && (program.expansion || program.glob)) unit.dynamicName = true;
    // A prefix rule for `bash`/`eval`/`find` must not approve whatever script they are given.
    if (allow.blocked) unit.allowBlocked = allow.blocked;
    else if (deny.runsScript) unit.allowBlocked = "it runs a script of its own";
    if (unit.allowBlocked) unit.allowForms = unit.allowForms.map((f) => ({ ...f, exactOnly: true }));

    const head = allow.final[0];
    if (allow.final.length === 0) {
      // Only assignments: a no-op if every variable is harmless, else it changes later commands.
      if (allow.blocked === undefined) unit.implicit = "sets only harmless variables";
    } else if (head && !head.expansion && NOOP_COMMANDS.has(head.value) && allow.final.length === 1) {
      unit.implicit = `${head.value} changes nothing`;
    } else if (head && !head.expansion && head.value === "cd" && topIndex >= 0) {
      const target = allow.final[1];
      const dir =
        allow.final.length === 2 && target && !target.expansion && !target.glob && target.value !== "-" ? resolvePath(target.value, cwd, ctx.home) : undefined;
      const absolute = target !== undefined && (target.value.startsWith("/") || target.raw.startsWith("~"));
      if (dir !== undefined && (cwdKnown || absolute)) {
        const inScope = ctx.scopeDirs.some((d) => isWithin(dir, d));
        // Running git in another directory runs that directory's git hooks (Claude Code prompts too).
        if (inScope && (dir === cwd || !gitLater(topIndex))) unit.implicit = "cd inside the working directories";
        cwd = dir;
        cwdKnown = true;
      } else {
        cwdKnown = false;
      }
    }
    units.push(unit);
  };

  for (const seg of parsed.segments) {
    const topIndex = seg.nested ? -1 : top.indexOf(seg);
    analyzeSegment(seg, topIndex, true);
  }
  return { units, paths };
}

/** Drops leading shell keywords (`if`, `then`, `!`, `{`, …) and segments that are only closers. */
function strippedWords(all: readonly Word[]): Word[] {
  const ws = afterFunctionKeyword(all);
  let i = 0;
  for (;;) {
    if (i < ws.length && !ws[i]?.quoted && LEADING_KEYWORDS.has(ws[i]?.value ?? "")) i++;
    else if (ws[i]?.value === "time" && !ws[i]?.quoted) {
      // The reserved word `time` (with -p, --) before a keyword or group: `time { git push; }`, `time ! x`.
      let j = i + 1;
      while (ws[j]?.value === "-p" || ws[j]?.value === "--") j++;
      if (!LEADING_KEYWORDS.has(ws[j]?.value ?? "") || ws[j]?.quoted) break;
      i = j;
    } else break;
  }
  const rest = ws.slice(i);
  if (rest.every((w) => !w.quoted && CLOSING_KEYWORDS.has(w.value))) return [];
  return rest;
}

interface AllowChain {
  forms: CommandForm[];
  final: Word[];
  blocked?: string;
}

function allowChain(words: readonly Word[]): AllowChain {
  const forms: CommandForm[] = [];
  let cur = [...words];
  let blocked: string | undefined;
  const push = () => {
    if (cur.length > 0) forms.push({ text: valueText(cur), exactOnly: exactOnly(cur) }, { text: text(cur), exactOnly: exactOnly(cur) });
  };
  push();
  for (let guard = 0; guard < 32 && cur.length > 0; guard++) {
    const head = cur[0] as Word;
    const name = assignmentName(head);
    if (name !== undefined) {
      if (!SAFE_ENV_VARS.has(name) || head.expansion) {
        blocked = `it sets ${name} first`;
        break;
      }
      cur = cur.slice(1);
      push();
      continue;
    }
    const next = allowStrip(cur);
    if (!next) break;
    cur = next;
    push();
  }
  if (!blocked && cur[0] && (cur[0].expansion || cur[0].value === "")) blocked = "its command name is computed at run time";
  return { forms: uniqueForms(forms), final: cur, ...(blocked ? { blocked } : {}) };
}

interface DenyChain {
  forms: string[];
  templates: Template[];
  /** the command along the first reading of each wrapper (for file arguments) */
  final: Word[];
  scripts: string[];
  computed?: string;
  runsScript: boolean;
}

/** Every command a deny/ask rule should see in one simple command: past assignments, wrappers, git's options, … */
function denyChain(words: readonly Word[], seg: Segment): DenyChain {
  const forms: string[] = [];
  const templates: Template[] = [];
  const scripts: string[] = [];
  let computed: string | undefined;
  let runsScript = false;
  const seen = new Set<string>();
  const queue: Word[][] = [[...words]];
  for (let guard = 0; guard < 64 && queue.length > 0; guard++) {
    const cur = queue.shift() as Word[];
    const key = cur.map((w) => `${w.start}:${w.raw}:${w.parts.length}`).join(" ");
    if (cur.length === 0 || seen.has(key)) continue;
    seen.add(key);
    const head = cur[0] as Word;
    // `/bin/rm x` is `rm x` to a deny rule.
    const base = head.value.split("/").pop() ?? "";
    const variants = [cur];
    if (head.value.includes("/") && !hasUnknown([head]) && base !== "") variants.push([{ ...head, value: base, parts: [base] }, ...cur.slice(1)]);
    // `/usr/lib/git-core/git-push` is `git push`.
    const sub = hasUnknown([head]) ? undefined : /^git-([A-Za-z0-9][A-Za-z0-9-]*)$/.exec(base)?.[1];
    if (sub) variants.push([{ ...head, raw: "git", value: "git", parts: ["git"] }, { ...head, raw: sub, value: sub, parts: [sub] }, ...cur.slice(1)]);
    for (const v of variants) {
      forms.push(valueText(v), text(v));
      if (hasUnknown(v)) templates.push(templateOf(v));
    }
    const p = programsOf(cur, seg.redirects, seg.words);
    scripts.push(...p.scripts);
    queue.push(...p.commands);
    computed ??= p.computed;
    runsScript ||= p.runsScript;
    if (assignmentName(head) !== undefined) {
      queue.push(cur.slice(1));
      continue;
    }
    const split = envSplitString(cur);
    if (split) scripts.push([split.script, ...split.rest.map((w) => (hasUnknown([w]) ? w.raw : quoteWord(w.value)))].join(" "));
    queue.push(...denyStrip(cur));
  }
  let final = [...words];
  for (let guard = 0; guard < 32 && final.length > 0; guard++) {
    const next = assignmentName(final[0] as Word) !== undefined ? final.slice(1) : denyStrip(final)[0];
    if (!next || next.length === 0) break;
    final = next;
  }
  return { forms: unique(forms), templates, final, scripts: unique(scripts), runsScript, ...(computed !== undefined ? { computed } : {}) };
}

function exactOnly(ws: readonly Word[]): boolean {
  const head = ws[0];
  if (!head || head.expansion || head.glob) return true;
  const name = head.value.split("/").pop() ?? "";
  if (EXACT_ONLY_COMMANDS.has(name)) return true;
  if (name === "find" && ws.some((w) => FIND_EXEC_FLAGS.has(w.value))) return true;
  return false;
}

const unique = (xs: readonly string[]): string[] => [...new Set(xs)];
function uniqueForms(xs: readonly CommandForm[]): CommandForm[] {
  const seen = new Map<string, CommandForm>();
  for (const f of xs) {
    const prev = seen.get(f.text);
    seen.set(f.text, prev ? { text: f.text, exactOnly: prev.exactOnly && f.exactOnly } : f);
  }
  return [...seen.values()];
}
