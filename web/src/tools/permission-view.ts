// Pure helpers of the permission card: what a tool input is (a shell command, a file edit, a path, a URL,
// or just JSON), a line diff of an edit's old and new text, and the rules to offer. No DOM, so Node tests
// run them.
import { proposeRules, validatePolicyFile } from "../../../shared/policy/index.js";

export type InputView =
  | { kind: "bash"; command: string; description?: string }
  | { kind: "edit"; path: string; edits: { old: string; new: string }[] }
  | { kind: "write"; path: string; content: string }
  | { kind: "path"; path: string; pattern?: string }
  | { kind: "url"; url: string; prompt?: string }
  | { kind: "json"; json: string };

const s = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** Claude Code's tool inputs (and Cursor's shell command, sent as Bash; Hermes' `terminal` command) shown for what they are. */
export function viewOf(tool: string, input: Record<string, unknown>): InputView {
  const path = s(input.file_path) ?? s(input.notebook_path);
  if ((tool === "Bash" || tool === "PowerShell" || tool === "terminal") && s(input.command) !== undefined) {
    const d = s(input.description);
    return d ? { kind: "bash", command: s(input.command)!, description: d } : { kind: "bash", command: s(input.command)! };
  }
  if (tool === "Edit" && path !== undefined) return { kind: "edit", path, edits: [{ old: s(input.old_string) ?? "", new: s(input.new_string) ?? "" }] };
  if (tool === "MultiEdit" && path !== undefined && Array.isArray(input.edits)) {
    const edits = (input.edits as unknown[]).flatMap((e) =>
      e && typeof e === "object" ? [{ old: s((e as Record<string, unknown>).old_string) ?? "", new: s((e as Record<string, unknown>).new_string) ?? "" }] : [],
    );
    return { kind: "edit", path, edits };
  }
  if (tool === "NotebookEdit" && path !== undefined) return { kind: "write", path, content: s(input.new_source) ?? "" };
  if (tool === "Write" && path !== undefined) return { kind: "write", path, content: s(input.content) ?? "" };
  if ((tool === "Read" || tool === "NotebookRead") && path !== undefined) return { kind: "path", path };
  if (tool === "Glob" || tool === "Grep" || tool === "LS") {
    const p = s(input.path);
    const pattern = s(input.pattern);
    if (p !== undefined || pattern !== undefined) return pattern !== undefined ? { kind: "path", path: p ?? ".", pattern } : { kind: "path", path: p ?? "." };
  }
  if ((tool === "WebFetch" || tool === "WebSearch") && (s(input.url) ?? s(input.query)) !== undefined) {
    const prompt = s(input.prompt);
    const url = s(input.url) ?? s(input.query)!;
    return prompt ? { kind: "url", url, prompt } : { kind: "url", url };
  }
  let json: string;
  try {
    json = JSON.stringify(input, null, 2);
  } catch {
    json = String(input);
  }
  return { kind: "json", json };
}

export type DiffLine = { op: " " | "-" | "+"; text: string };

/** Longest-common-subsequence work above this many cells falls back to "all old, then all new". */
const MAX_CELLS = 250_000;

/** A line diff of `a` → `b` (unchanged lines kept as context). */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a === "" ? [] : a.split("\n");
  const y = b === "" ? [] : b.split("\n");
  // Common head and tail first: most edits change a few lines in the middle.
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xm = x.slice(head, x.length - tail);
  const ym = y.slice(head, y.length - tail);
  const mid: DiffLine[] = [];
  if (xm.length * ym.length > MAX_CELLS) {
    for (const t of xm) mid.push({ op: "-", text: t });
    for (const t of ym) mid.push({ op: "+", text: t });
  } else {
    const n = xm.length;
    const m = ym.length;
    const L: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) L[i]![j] = xm[i] === ym[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xm[i] === ym[j]) {
        mid.push({ op: " ", text: xm[i]! });
        i++;
        j++;
      } else if (i < n && (j === m || L[i + 1]![j]! >= L[i]![j + 1]!))
        mid.push({ op: "-", text: xm[i++]! }); // removals first, as diffs read
      else mid.push({ op: "+", text: ym[j++]! });
    }
  }
  return [...x.slice(0, head).map((t): DiffLine => ({ op: " ", text: t })), ...mid, ...y.slice(y.length - tail).map((t): DiffLine => ({ op: " ", text: t }))];
}

/** Keeps `context` unchanged lines around changes; longer unchanged runs become one "…" marker (undefined). */
export function withContext(lines: DiffLine[], context = 3): (DiffLine | undefined)[] {
  const keep = lines.map(() => false);
  lines.forEach((l, i) => {
    if (l.op === " ") return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++) keep[k] = true;
  });
  const out: (DiffLine | undefined)[] = [];
  lines.forEach((l, i) => {
    if (keep[i]) out.push(l);
    else if (out[out.length - 1] !== undefined || out.length === 0) out.push(undefined);
  });
  return out;
}

/** Splits text at `backticks` into plain and code parts (the policy's reasons quote commands that way). */
export function codeSpans(text: string): { code: boolean; text: string }[] {
  return text
    .split(/(`[^`]*`)/)
    .filter((p) => p !== "")
    .map((p) => (p.length > 1 && p.startsWith("`") && p.endsWith("`") ? { code: true, text: p.slice(1, -1) } : { code: false, text: p }));
}

const nonEmpty = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The rules the card offers: the request's own, else the engine's proposal for this call. */
export function rulesToOffer(args: Record<string, unknown>): string[] {
  const given = Array.isArray(args.suggestions) ? args.suggestions.filter((r): r is string => typeof r === "string") : [];
  const valid = (r: string) => validatePolicyFile({ permissions: { allow: [r] } }).ok;
  if (given.length > 0) return [...new Set(given)].filter(valid).slice(0, 10);
  const tool = nonEmpty(args.tool_name);
  if (!tool) return [];
  const dir = nonEmpty(args.project_directory);
  const input = args.input && typeof args.input === "object" ? args.input : {};
  return proposeRules(tool, input, dir ? { projectDir: dir, cwd: dir } : {}).filter(valid);
}

export function ruleError(rule: string): string | undefined {
  const v = validatePolicyFile({ permissions: { allow: [rule] } });
  return v.ok ? undefined : v.errors.join("; ").replace(/^permissions\.allow\[0\]: /, "");
}
