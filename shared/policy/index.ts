// The permission policy engine: decides allow / ask / deny for one tool call of a coding agent, with
// Claude Code's rule syntax and precedence (https://code.claude.com/docs/en/permissions). Pure: no I/O
// and no Node imports, so the PWA runs the same code; paths and the home directory come in as options.
// "ask" means: put the question on the human's phone. docs/permissions.md is the user-facing contract.
import { analyzeBash, type BashAnalysis, type BashUnit, type CommandForm } from "./bash.js";
import { mayMatch, shellMatch, type ShellRule } from "./match.js";
import { compileGlob, dirname, escapeGlob, isWithin, normalizePath, relativeTo, resolvePath } from "./paths.js";
import {
  BEHAVIORS,
  CONTENT_FIELD,
  EDIT_TOOLS,
  PRIMARY_FIELD,
  READ_TOOLS,
  collapseBlanks,
  isMcpTool,
  isRuleError,
  parseRule,
  ruleWarnings,
  type Behavior,
  type Rule,
} from "./rules.js";

export { parseRule, ruleWarnings, isRuleError, BEHAVIORS, type Behavior, type Rule, type RuleError } from "./rules.js";
export { parseShell, type ShellParse, type Segment, type Word } from "./shell.js";
export { analyzeBash, SAFE_ENV_VARS } from "./bash.js";

export type Decision = "allow" | "ask" | "deny";

export interface PermissionLists {
  allow?: string[];
  ask?: string[];
  deny?: string[];
}

/** The file format of `.lineup/policy.json` and the local adapter policy. */
export interface PolicyFile {
  permissions: { allow: string[]; ask: string[]; deny: string[] };
}

export interface PolicySource {
  /** shown in reasons, e.g. "project .lineup/policy.json" */
  name: string;
  permissions: PermissionLists;
  /** what a `/path` rule is relative to (default: the project directory) */
  baseDir?: string;
}

/** One tool call, in the shape of Claude Code's hook input (`tool_name`, `tool_input`, `cwd`). */
export interface PermissionRequest {
  tool_name: string;
  tool_input?: unknown;
  cwd?: string;
}

export interface EvaluateOptions {
  projectDir: string;
  homeDir: string;
  /** more working directories (Claude Code's additionalDirectories): read-only tools may read there */
  additionalDirectories?: readonly string[];
  /** tools allowed when no rule matches (default DEFAULT_ALLOWED_TOOLS) */
  readOnlyTools?: readonly string[];
}

export interface RuleMatch {
  behavior: Behavior;
  rule: string;
  source: string;
  /** the part of the call the rule matched: a subcommand, a file, … */
  subject?: string;
}

export interface PolicyDecision {
  decision: Decision;
  /** the rule that decided (for a compound allow: the first of `matches`) */
  rule?: string;
  source?: string;
  reason: string;
  /** every rule that took part in the decision */
  matches: RuleMatch[];
  /** rules that were skipped (invalid) or could not be checked */
  warnings: string[];
}

/** Read-only tools run without a rule inside the working directories (docs/permissions.md §Defaults). */
export const DEFAULT_ALLOWED_TOOLS: readonly string[] = ["Read", "Glob", "Grep", "LS", "WebSearch", "TodoWrite"];

interface Entry {
  behavior: Behavior;
  rule: Rule;
  source: string;
  baseDir: string;
}

interface Ctx {
  cwd: string;
  home: string;
  projectDir: string;
  scopeDirs: string[];
  readOnly: readonly string[];
}

type Match = boolean | "uncertain";

// ---------------------------------------------------------------- evaluate

/**
 * Decides one tool call. Every source's deny rules are checked first, then every ask rule, then allow
 * rules; the first behavior with a match wins, whichever source it came from. With no match,
 * read-only tools are allowed inside the working directories and everything else is "ask".
 */
export function evaluate(request: PermissionRequest, sources: readonly PolicySource[], opts: EvaluateOptions): PolicyDecision {
  const projectDir = normalizePath(opts.projectDir);
  const home = normalizePath(opts.homeDir);
  const cwd = typeof request.cwd === "string" && request.cwd !== "" ? resolvePath(request.cwd, projectDir, home) : projectDir;
  const ctx: Ctx = {
    cwd,
    home,
    projectDir,
    scopeDirs: unique([cwd, projectDir, ...(opts.additionalDirectories ?? []).map((d) => resolvePath(d, projectDir, home))]),
    readOnly: opts.readOnlyTools ?? DEFAULT_ALLOWED_TOOLS,
  };
  const warnings: string[] = [];
  const entries = collectEntries(sources, projectDir, home, warnings);
  const tool = typeof request.tool_name === "string" ? request.tool_name : "";
  const input = isRecord(request.tool_input) ? request.tool_input : {};
  if (tool === "") return { decision: "ask", reason: "the request names no tool", matches: [], warnings };
  if (tool === "Bash") return evaluateBash(input, entries, ctx, warnings);
  return evaluateTool(tool, input, entries, ctx, warnings);
}

function collectEntries(sources: readonly PolicySource[], projectDir: string, home: string, warnings: string[]): Entry[] {
  const out: Entry[] = [];
  for (const src of sources) {
    const baseDir = src.baseDir !== undefined ? resolvePath(src.baseDir, projectDir, home) : projectDir;
    for (const behavior of BEHAVIORS) {
      const list: unknown = src.permissions?.[behavior];
      if (list === undefined) continue;
      if (!Array.isArray(list)) {
        warnings.push(`${src.name}: permissions.${behavior} is not a list; ignored`);
        continue;
      }
      for (const item of list) {
        const rule = typeof item === "string" ? parseRule(item) : { error: "a rule must be a string" };
        if (isRuleError(rule)) warnings.push(`${src.name}: ${behavior} rule skipped: ${rule.error}`);
        else out.push({ behavior, rule, source: src.name, baseDir });
      }
    }
  }
  return out;
}

function evaluateTool(tool: string, input: Record<string, unknown>, entries: readonly Entry[], ctx: Ctx, warnings: string[]): PolicyDecision {
  const targets = requestPaths(tool, input, ctx);
  const uncertain: Entry[] = [];
  for (const behavior of ["deny", "ask"] as const) {
    for (const e of entries) {
      if (e.behavior !== behavior) continue;
      const m = matchRequest(e, tool, input, targets, ctx);
      if (m === true) return decided(behavior, e, undefined, warnings);
      if (m === "uncertain") uncertain.push(e);
    }
  }
  if (uncertain.length > 0) {
    const first = uncertain[0] as Entry;
    return {
      decision: "ask",
      rule: first.rule.text,
      source: first.source,
      reason: `${first.rule.text} (${first.source}) cannot be checked against this ${tool} call, so the human decides`,
      matches: uncertain.map((e) => ({ behavior: e.behavior, rule: e.rule.text, source: e.source })),
      warnings,
    };
  }
  for (const e of entries) {
    if (e.behavior === "allow" && matchRequest(e, tool, input, targets, ctx) === true) return decided("allow", e, undefined, warnings);
  }
  if (ctx.readOnly.includes(tool)) {
    const outside = (targets ?? []).filter((t) => !ctx.scopeDirs.some((d) => isWithin(t, d)));
    if (outside.length === 0) return { decision: "allow", reason: `${tool} is read-only and allowed by default inside the working directories`, matches: [], warnings };
    return { decision: "ask", reason: `${tool} of ${outside.join(", ")} is outside the working directories and no rule allows it`, matches: [], warnings };
  }
  return { decision: "ask", reason: `no rule allows ${tool}`, matches: [], warnings };
}

function decided(behavior: Behavior, e: Entry, subject: string | undefined, warnings: string[]): PolicyDecision {
  const on = subject !== undefined ? ` for ${subject}` : "";
  const reason =
    behavior === "deny"
      ? `denied by ${e.rule.text} (${e.source})${on}`
      : behavior === "ask"
        ? `${e.rule.text} (${e.source}) asks the human${on}`
        : `allowed by ${e.rule.text} (${e.source})${on}`;
  return {
    decision: behavior,
    rule: e.rule.text,
    source: e.source,
    reason,
    matches: [{ behavior, rule: e.rule.text, source: e.source, ...(subject !== undefined ? { subject } : {}) }],
    warnings,
  };
}

// ---------------------------------------------------------------- Bash

function evaluateBash(input: Record<string, unknown>, entries: readonly Entry[], ctx: Ctx, warnings: string[]): PolicyDecision {
  const command = typeof input.command === "string" ? input.command : "";
  const analysis: BashAnalysis = command.trim() === "" ? { error: "empty command", units: [], paths: [] } : analyzeBash(command, ctx);
  const whole = collapseBlanks(command);
  let unreadable: Entry | undefined;

  for (const behavior of ["deny", "ask"] as const) {
    for (const e of entries) {
      if (e.behavior !== behavior) continue;
      const r = e.rule;
      if ((r.kind === "tool" && appliesTo(r.tool, "Bash")) || (r.kind === "toolGlob" && toolGlob(r.pattern).test("Bash"))) {
        return decided(behavior, e, undefined, warnings);
      }
      if (r.kind === "param" && appliesTo(r.tool, "Bash") && matchParam(r, input)) return decided(behavior, e, undefined, warnings);
      if (r.kind === "shell" && r.tool === "Bash") {
        if (analysis.error !== undefined) {
          if (shellMatch(r, whole, false, false)) return decided(behavior, e, `\`${whole}\``, warnings);
          unreadable ??= e;
          continue;
        }
        for (const u of analysis.units) {
          if (u.denyForms.some((f) => shellMatch(r, f, false, false))) return decided(behavior, e, `\`${u.display}\``, warnings);
        }
      }
      if (r.kind === "path") {
        for (const p of analysis.paths) {
          if (p.path !== undefined && pathRuleCovers(e, p.access === "read" ? "Read" : "Edit", behavior) && matchPath(e, p.path, ctx)) {
            return decided(behavior, e, `${p.access === "read" ? "reading" : "writing"} ${p.display}`, warnings);
          }
        }
      }
    }
  }

  // A deny/ask rule that may match once the shell expands the command (`git ${x:-push}`, `xargs git`), or a
  // program known only at run time (`$CMD x`, `echo … | sh`, `source f`): the human decides.
  const shellRules = ["deny", "ask"].flatMap((b) => entries.filter((e) => e.behavior === b && e.rule.kind === "shell" && e.rule.tool === "Bash"));
  for (const e of shellRules) {
    const u = analysis.units.find((x) => x.denyTemplates.some((t) => mayMatch(e.rule as ShellRule, t)));
    const verb = e.behavior === "deny" ? "denies" : "asks about";
    if (u) return doubted(e, `\`${u.display}\` may run what ${e.rule.text} (${e.source}) ${verb} once the shell expands it`, warnings);
  }
  const hidden = analysis.units.find((u) => u.dynamicName || u.computed !== undefined);
  const shellRule = shellRules[0];
  if (hidden && shellRule) {
    const why = hidden.computed ?? "runs a program named only at run time";
    return doubted(shellRule, `\`${hidden.display}\` ${why}, so ${shellRule.rule.text} (${shellRule.source}) cannot be checked`, warnings);
  }

  const bare = entries.find((e) => e.behavior === "allow" && e.rule.kind === "tool" && appliesTo(e.rule.tool, "Bash"));
  if (analysis.error !== undefined) {
    if (bare && !unreadable) return decided("allow", bare, undefined, warnings);
    return {
      decision: "ask",
      reason: `the command cannot be read reliably (${analysis.error}), so no rule can allow it`,
      matches: [],
      warnings,
      ...(unreadable ? { rule: unreadable.rule.text, source: unreadable.source } : {}),
    };
  }
  if (bare) return decided("allow", bare, undefined, warnings);

  const matches: RuleMatch[] = [];
  const missing: string[] = [];
  const required = analysis.units.filter((u) => u.required);
  for (const u of required) {
    if (u.implicit !== undefined) continue;
    const e = entries.find((x) => x.behavior === "allow" && x.rule.kind === "shell" && x.rule.tool === "Bash" && u.allowForms.some((f) => formAllowed(x.rule, f)));
    if (e) matches.push({ behavior: "allow", rule: e.rule.text, source: e.source, subject: `\`${u.display}\`` });
    else missing.push(u.allowBlocked ? `\`${u.display}\` (${u.allowBlocked})` : `\`${u.display}\``);
  }
  for (const p of analysis.paths) {
    if (!p.required || p.access !== "write") continue;
    const e = p.allowable && p.path !== undefined ? entries.find((x) => x.behavior === "allow" && editAllows(x, p.path as string, ctx)) : undefined;
    if (e) matches.push({ behavior: "allow", rule: e.rule.text, source: e.source, subject: `writing ${p.display}` });
    else missing.push(`writing to ${p.display}`);
  }
  if (required.length === 0) return { decision: "ask", reason: "the command runs nothing LineUp can recognize", matches: [], warnings };
  if (missing.length > 0) {
    const n = missing.length;
    return { decision: "ask", reason: `no allow rule covers ${missing.join(", ")}${n > 1 ? " (every part of a command must be allowed)" : ""}`, matches, warnings };
  }
  const first = matches[0];
  if (!first) return { decision: "allow", reason: `${required.map((u) => u.implicit).join("; ")}`, matches, warnings };
  const reason =
    matches.length === 1 && required.length === 1
      ? `allowed by ${first.rule} (${first.source})`
      : `allowed: ${matches.map((m) => `${m.subject} by ${m.rule} (${m.source})`).join("; ")}`;
  return { decision: "allow", rule: first.rule, source: first.source, reason, matches, warnings };
}

function doubted(e: Entry, reason: string, warnings: string[]): PolicyDecision {
  return { decision: "ask", rule: e.rule.text, source: e.source, reason, matches: [], warnings };
}

function formAllowed(rule: Rule, f: CommandForm): boolean {
  return rule.kind === "shell" && shellMatch(rule, f.text, true, f.exactOnly);
}

function editAllows(e: Entry, path: string, ctx: Ctx): boolean {
  const r = e.rule;
  if (r.kind === "tool") return r.tool === "Edit" || r.tool === "Write";
  if (r.kind === "path") return (r.tool === "Edit" || r.tool === "Write") && matchPath(e, path, ctx);
  return false;
}

// ---------------------------------------------------------------- other tools

function matchRequest(e: Entry, tool: string, input: Record<string, unknown>, targets: string[] | undefined, ctx: Ctx): Match {
  const r = e.rule;
  const denyish = e.behavior !== "allow";
  switch (r.kind) {
    case "tool":
      return appliesTo(r.tool, tool);
    case "toolGlob":
      if (!denyish && !/^mcp__[^*_][^*]*?__/.test(r.pattern)) return false;
      return toolGlob(r.pattern).test(tool);
    case "param":
      if (!denyish || PRIMARY_FIELD[r.tool] === r.param || !appliesTo(r.tool, tool)) return false;
      return matchParam(r, input);
    case "content": {
      if (!appliesTo(r.tool, tool)) return false;
      const field = CONTENT_FIELD[r.tool];
      if (field === undefined) return denyish ? "uncertain" : false;
      const v = input[field];
      return typeof v === "string" && globText(r.value).test(v);
    }
    case "shell":
      // PowerShell specifiers are not evaluated (docs/permissions.md): never allow, always ask.
      return r.tool === tool && denyish ? "uncertain" : false;
    case "domain": {
      if (r.tool !== tool) return false;
      const host = hostOf(input.url);
      if (host === undefined) return denyish ? "uncertain" : false;
      return matchDomain(r.domain, host);
    }
    case "path": {
      if (!pathRuleCovers(e, tool, e.behavior)) return false;
      if (targets === undefined || targets.length === 0) return denyish ? "uncertain" : false;
      return denyish ? targets.some((t) => matchPath(e, t, ctx)) : targets.every((t) => matchPath(e, t, ctx));
    }
    default:
      return false;
  }
}

/** Whether a rule for `ruleTool` covers a call of `tool`: `Read` covers the read tools, `Edit` the edit tools. */
function appliesTo(ruleTool: string, tool: string): boolean {
  if (ruleTool === tool) return true;
  if (ruleTool === "Read" && READ_TOOLS.includes(tool)) return true;
  if (ruleTool === "Edit" && EDIT_TOOLS.includes(tool)) return true;
  if ((ruleTool === "Agent" && tool === "Task") || (ruleTool === "Task" && tool === "Agent")) return true;
  // `mcp__server` covers every tool of that server.
  return isMcpTool(ruleTool) && ruleTool.split("__").length === 2 && tool.startsWith(`${ruleTool}__`);
}

/** Path rules: `Read(…)` for the read tools; `Edit(…)` for the edit tools; a Read deny also blocks writes. */
function pathRuleCovers(e: Entry, tool: string, behavior: Behavior): boolean {
  const t = (e.rule as { tool: string }).tool;
  if (appliesTo(t, tool)) return true;
  return behavior === "deny" && t === "Read" && ["Edit", "Write", "MultiEdit"].includes(tool);
}

function matchParam(r: Extract<Rule, { kind: "param" }>, input: Record<string, unknown>): boolean {
  if (PRIMARY_FIELD[r.tool] === r.param) return false;
  const v = input[r.param];
  if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") return false;
  return globText(r.value).test(String(v));
}

/** The files or directories a tool call touches (absolute), or undefined for tools without paths. */
function requestPaths(tool: string, input: Record<string, unknown>, ctx: Ctx): string[] | undefined {
  const str = (k: string): string | undefined => (typeof input[k] === "string" && input[k] !== "" ? (input[k] as string) : undefined);
  const abs = (p: string) => resolvePath(p, ctx.cwd, ctx.home);
  switch (tool) {
    case "Read":
    case "Edit":
    case "Write":
    case "MultiEdit": {
      const p = str("file_path");
      return p === undefined ? [] : [abs(p)];
    }
    case "NotebookEdit":
    case "NotebookRead": {
      const p = str("notebook_path") ?? str("file_path");
      return p === undefined ? [] : [abs(p)];
    }
    case "Grep":
    case "LS":
      return [abs(str("path") ?? ctx.cwd)];
    case "Glob": {
      const pattern = str("pattern") ?? "";
      const root = str("path") ?? ctx.cwd;
      // An absolute pattern (`/etc/**/*.conf`) searches from its own fixed prefix.
      if (pattern.startsWith("/") || pattern.startsWith("~")) {
        const fixed = pattern.split("/").filter((_, i, a) => !a.slice(0, i + 1).some((s) => /[*?[{]/.test(s)));
        return [abs(fixed.join("/") || "/")];
      }
      return [abs(root)];
    }
    default:
      return undefined;
  }
}

/** Compiles a Read/Edit rule's gitignore pattern against its anchor (docs/permissions.md §Paths). */
function matchPath(e: Entry, target: string, ctx: Ctx): boolean {
  const r = e.rule;
  if (r.kind !== "path") return false;
  let p = r.pattern;
  let anchor: string;
  let explicit = true;
  if (p.startsWith("//")) {
    anchor = "/";
    p = p.slice(2);
  } else if (p === "~" || p.startsWith("~/")) {
    anchor = ctx.home;
    p = p.slice(2);
  } else if (p.startsWith("/")) {
    anchor = e.baseDir;
    p = p.slice(1);
  } else if (p.startsWith("./")) {
    anchor = ctx.cwd;
    p = p.replace(/^(\.\/)+/, "");
  } else {
    anchor = ctx.cwd;
    explicit = false;
  }
  if (p.endsWith("/")) p += "**";
  if (p === "") p = "**";
  // A single-directory pattern like `src/**` matches only <cwd>/src in an allow rule, but a directory
  // of that name at any depth in a deny or ask rule (Claude Code's documented behavior).
  const singleDir = /^[^/]+\/\*\*$/.test(p);
  const floating = !explicit && (!p.includes("/") || (singleDir && e.behavior !== "allow"));
  const rel = relativeTo(target, anchor);
  if (rel === undefined) return false;
  return compileGlob(p, floating).test(rel);
}

function hostOf(url: unknown): string | undefined {
  if (typeof url !== "string" || url.trim() === "") return undefined;
  const s = url.trim();
  try {
    const u = new URL(/^[a-z][a-z0-9+.-]*:/i.test(s) ? s : `https://${s}`);
    const host = u.hostname.toLowerCase().replace(/\.$/, "");
    return host === "" ? undefined : host;
  } catch {
    return undefined;
  }
}

/** `*.example.com` is any subdomain (not the apex); any other `*` stays within one label. */
function matchDomain(pattern: string, host: string): boolean {
  if (pattern.startsWith("*.") && !pattern.slice(2).includes("*")) return host.endsWith(pattern.slice(1));
  const re = new RegExp(`^${pattern.split("*").map(escapeRe).join("[^.]*")}$`);
  return re.test(host);
}

const toolGlob = (pattern: string): RegExp => new RegExp(`^${pattern.split("*").map(escapeRe).join(".*")}$`);
const globText = (pattern: string): RegExp => new RegExp(`^${pattern.split("*").map(escapeRe).join("[\\s\\S]*")}$`);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const unique = (xs: readonly string[]): string[] => [...new Set(xs)];
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------- proposed rules

export interface ProposeOptions {
  projectDir?: string;
  homeDir?: string;
  cwd?: string;
  /** with sources, parts of a compound command that are already allowed get no rule */
  sources?: readonly PolicySource[];
}

/** Commands a prefix rule would approve too much for: only the exact command is proposed. */
const EXACT_PROPOSAL = new Set([
  "sh", "bash", "zsh", "fish", "dash", "ksh", "python", "python3", "node", "deno", "ruby", "perl", "php", "lua",
  "env", "sudo", "su", "doas", "eval", "exec", "xargs", "rm", "rmdir", "dd", "mkfs", "chmod", "chown", "curl", "wget",
  "ssh", "scp", "sftp", "rsync", "nc", "ncat", "telnet", "kill", "pkill", "killall", "shutdown", "reboot", "find",
]);
/** Tools whose second word is a subcommand worth keeping in the prefix (`git push`, `npm test`). */
const TWO_LEVEL = new Set([
  "npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "uvx", "uv", "pip", "pip3", "poetry", "pipenv", "cargo", "go",
  "git", "gh", "glab", "docker", "podman", "kubectl", "helm", "terraform", "make", "just", "brew", "apt", "apt-get",
  "dnf", "yum", "dotnet", "mvn", "gradle", "rake", "bundle", "mix", "composer", "swift", "flutter", "dart", "aws",
  "gcloud", "az", "systemctl", "nx", "turbo", "pytest", "vitest", "jest",
]);
const RUN_SUBCOMMANDS = new Set(["run", "run-script", "exec", "x"]);
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * The rules an "Always allow" button proposes for this call: one per part of a compound command that
 * needs one (at most 5, like Claude Code), the file's directory for file tools, the domain for
 * WebFetch, the tool for MCP. Empty when no rule would be safe or useful (e.g. unreadable commands).
 */
export function proposeRules(toolName: string, toolInput: unknown, opts: ProposeOptions = {}): string[] {
  const input = isRecord(toolInput) ? toolInput : {};
  const home = opts.homeDir !== undefined ? normalizePath(opts.homeDir) : undefined;
  const projectDir = opts.projectDir !== undefined ? normalizePath(opts.projectDir) : undefined;
  const cwd = opts.cwd !== undefined ? resolvePath(opts.cwd, projectDir ?? "/", home ?? "/") : (projectDir ?? "/");
  const abs = (p: string) => resolvePath(p, cwd, home ?? "/");
  const str = (k: string): string | undefined => (typeof input[k] === "string" && input[k] !== "" ? (input[k] as string) : undefined);
  const dirRule = (tool: "Read" | "Edit", dir: string) => `${tool}(${anchored(dir, projectDir, home)})`;

  switch (toolName) {
    case "Bash": {
      const command = str("command");
      if (command === undefined) return [];
      const analysis = analyzeBash(command, { cwd, home: home ?? "/", scopeDirs: unique([cwd, ...(projectDir ? [projectDir] : [])]) });
      if (analysis.error !== undefined) return [];
      const out: string[] = [];
      const evalOpts = { projectDir: projectDir ?? cwd, homeDir: home ?? "/" };
      for (const u of analysis.units) {
        if (!u.required || u.implicit !== undefined) continue;
        if (opts.sources && evaluate({ tool_name: "Bash", tool_input: { command: u.display }, cwd }, opts.sources, evalOpts).decision === "allow") continue;
        const rule = bashRuleFor(u);
        if (rule) out.push(rule);
      }
      for (const p of analysis.paths) {
        if (p.required && p.access === "write" && p.allowable && p.path !== undefined) out.push(`Edit(${anchored(p.path, projectDir, home, false)})`);
      }
      return unique(out).slice(0, 5);
    }
    case "Edit":
    case "Write":
    case "MultiEdit": {
      const p = str("file_path");
      return p === undefined ? [] : [dirRule("Edit", dirname(abs(p)))];
    }
    case "NotebookEdit": {
      const p = str("notebook_path") ?? str("file_path");
      return p === undefined ? [] : [dirRule("Edit", dirname(abs(p)))];
    }
    case "Read":
    case "NotebookRead": {
      const p = str("file_path") ?? str("notebook_path");
      return p === undefined ? [] : [dirRule("Read", dirname(abs(p)))];
    }
    case "Glob":
    case "Grep":
    case "LS":
      return [dirRule("Read", abs(str("path") ?? cwd))];
    case "WebFetch": {
      const host = hostOf(input.url);
      return host === undefined ? [] : [`WebFetch(domain:${host})`];
    }
    case "Agent":
    case "Task": {
      const name = str("subagent_type");
      return [name !== undefined && !/[()]/.test(name) ? `${toolName}(${name})` : toolName];
    }
    case "PowerShell":
      return [];
    default:
      return /^[A-Za-z0-9_.-]+$/.test(toolName) ? [toolName] : [];
  }
}

/** The first rule of proposeRules, or undefined when none is safe to propose. */
export function proposeRule(toolName: string, toolInput: unknown, opts: ProposeOptions = {}): string | undefined {
  return proposeRules(toolName, toolInput, opts)[0];
}

function bashRuleFor(u: BashUnit): string | undefined {
  const ws = u.words;
  const head = ws[0];
  if (head === undefined) return undefined;
  const exact = () => `Bash(${u.allowForms[u.allowForms.length - 1]?.text.replace(/[*\\]/g, "\\$&") ?? ""})`;
  if (u.dynamic || u.allowBlocked !== undefined || u.allowForms.every((f) => f.exactOnly) || head.includes("/") || EXACT_PROPOSAL.has(head)) {
    return u.allowForms.length > 0 ? exact() : undefined;
  }
  let prefix = [head];
  if (TWO_LEVEL.has(head)) {
    const sub = ws[1];
    if (sub === undefined || sub.startsWith("-")) return ws.length === 1 ? `Bash(${head})` : exact();
    prefix = [head, sub];
    const third = ws[2];
    if (RUN_SUBCOMMANDS.has(sub) && third !== undefined && !third.startsWith("-")) prefix.push(third);
  }
  if (!prefix.every((w) => PLAIN_WORD.test(w))) return exact();
  return `Bash(${prefix.join(" ")}:*)`;
}

/** `/rel` inside the project, `~/rel` inside home, `//abs` elsewhere; `/**` appended for directories. */
function anchored(path: string, projectDir: string | undefined, home: string | undefined, dir = true): string {
  const tail = dir ? "/**" : "";
  const esc = (rel: string) => rel.split("/").map(escapeGlob).join("/");
  const inProject = projectDir !== undefined ? relativeTo(path, projectDir) : undefined;
  if (inProject !== undefined) return inProject === "" ? (dir ? "/**" : "/") : `/${esc(inProject)}${tail}`;
  const inHome = home !== undefined && home !== "/" ? relativeTo(path, home) : undefined;
  if (inHome !== undefined) return inHome === "" ? `~${tail}` : `~/${esc(inHome)}${tail}`;
  return path === "/" ? `//**` : `/${esc(path)}${tail}`;
}

// ---------------------------------------------------------------- policy files

export type PolicyValidation = { ok: true; policy: PolicyFile; warnings: string[] } | { ok: false; errors: string[]; warnings: string[] };

const FILE_SHAPE = `{"permissions":{"allow":[…],"ask":[…],"deny":[…]}}`;

/** Checks a parsed (or raw JSON text) policy file; every error names the rule and what is wrong. */
export function validatePolicyFile(json: unknown): PolicyValidation {
  const errors: string[] = [];
  const warnings: string[] = [];
  let value = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json) as unknown;
    } catch (e) {
      return { ok: false, errors: [`not valid JSON: ${e instanceof Error ? e.message : String(e)}`], warnings };
    }
  }
  if (!isRecord(value)) return { ok: false, errors: [`a policy file is a JSON object like ${FILE_SHAPE}`], warnings };
  for (const k of Object.keys(value)) if (k !== "permissions" && k !== "$schema") warnings.push(`unknown key "${k}" is ignored`);
  const perms = value.permissions;
  if (!isRecord(perms)) return { ok: false, errors: [`missing "permissions" object: expected ${FILE_SHAPE}`], warnings };
  const policy: PolicyFile = { permissions: { allow: [], ask: [], deny: [] } };
  for (const k of Object.keys(perms)) {
    if (!(BEHAVIORS as readonly string[]).includes(k)) warnings.push(`permissions.${k} is not used by LineUp and is ignored (only allow, ask, deny)`);
  }
  const seen = new Map<string, Behavior>();
  for (const behavior of ["allow", "ask", "deny"] as const) {
    const list = perms[behavior];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      errors.push(`permissions.${behavior} must be a list of rule strings`);
      continue;
    }
    list.forEach((item: unknown, i: number) => {
      const at = `permissions.${behavior}[${i}]`;
      if (typeof item !== "string") {
        errors.push(`${at}: a rule must be a string, got ${JSON.stringify(item)}`);
        return;
      }
      const rule = parseRule(item);
      if (isRuleError(rule)) {
        errors.push(`${at}: ${rule.error}`);
        return;
      }
      for (const w of ruleWarnings(rule, behavior)) warnings.push(`${at}: ${w}`);
      const prev = seen.get(rule.text);
      if (prev === behavior) warnings.push(`${at}: "${rule.text}" is listed twice`);
      else if (prev !== undefined) warnings.push(`${at}: "${rule.text}" is in both ${prev} and ${behavior}; ${BEHAVIORS.find((b) => b === prev || b === behavior)} wins`);
      seen.set(rule.text, behavior);
      policy.permissions[behavior].push(rule.text);
    });
  }
  return errors.length > 0 ? { ok: false, errors, warnings } : { ok: true, policy, warnings };
}
