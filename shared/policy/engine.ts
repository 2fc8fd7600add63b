// The permission policy engine: decides allow / ask / deny for one tool call of a coding agent, with
// Claude Code's rule syntax and precedence (https://code.claude.com/docs/en/permissions). Pure: no I/O
// and no Node imports, so the PWA runs the same code; paths and the home directory come in as options.
// "ask" means: put the question on the human's phone. docs/permissions.md is the user-facing contract.
import { analyzeBash, type BashAnalysis, type CommandForm } from "./bash.js";
import { mayMatch, shellMatch, type ShellRule } from "./match.js";
import { isWithin, normalizePath, resolvePath } from "./paths.js";
import { BEHAVIORS, collapseBlanks, isRuleError, parseRule, type Behavior, type Rule } from "./rules.js";
import { appliesTo, matchParam, matchPath, matchRequest, pathRuleCovers, requestPaths, toolGlob } from "./tools.js";
import {
  DEFAULT_ALLOWED_TOOLS,
  isRecord,
  unique,
  type Ctx,
  type Entry,
  type EvaluateOptions,
  type PermissionRequest,
  type PolicyDecision,
  type PolicySource,
  type RuleMatch,
} from "./types.js";

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
    if (outside.length === 0)
      return { decision: "allow", reason: `${tool} is read-only and allowed by default inside the working directories`, matches: [], warnings };
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
    const e = entries.find(
      (x) => x.behavior === "allow" && x.rule.kind === "shell" && x.rule.tool === "Bash" && u.allowForms.some((f) => formAllowed(x.rule, f)),
    );
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
    return {
      decision: "ask",
      reason: `no allow rule covers ${missing.join(", ")}${n > 1 ? " (every part of a command must be allowed)" : ""}`,
      matches,
      warnings,
    };
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
