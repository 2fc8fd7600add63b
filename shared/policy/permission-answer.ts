// One permission question's card and answer, written once for every host that asks (issue 29 item 6): the
// `permission` card's arguments, its "Always allow" suggestions, the phone's answer read back, and that answer
// as Claude Code's PermissionRequest hook output. `lineup hook permission-request` (adapter/permissions) prints
// it on stdout; the relay's http hook route (worker/hooks/routes.ts) returns it as the response body. Pure: no
// I/O, no Node imports (it runs in workerd too).
import type { ToolResultBody } from "../contract/protocol.js";
import { validatePolicyFile } from "./file.js";
import {
  addRulesUpdate,
  permissionRequestAllow,
  permissionRequestDeny,
  preToolUseOutput,
  ruleToValue,
  rulesFromSuggestions,
  type PermissionRequestOutput,
  type PermissionUpdate,
  type PreToolUseOutput,
} from "./hooks.js";
import { proposeRules } from "./propose.js";
import type { PolicySource } from "./types.js";

export interface PermissionAsk {
  agent: string;
  toolName: string;
  input: Record<string, unknown>;
  /** the request's working directory (relative paths and `./` rules resolve from it) */
  cwd: string;
}

export type HumanAnswer =
  | { kind: "allow"; rule?: string }
  | { kind: "deny"; feedback?: string; declined?: boolean }
  | { kind: "timeout" }
  | { kind: "error"; code: string; message: string };

/** The agent's own proposals first (Claude Code's `permission_suggestions`), then LineUp's; at most 5 valid rules. */
export function suggestionList(
  req: PermissionAsk,
  agentRules: readonly string[],
  o: { projectDir: string; homeDir: string; sources: readonly PolicySource[] },
): string[] {
  const ours = proposeRules(req.toolName, req.input, { projectDir: o.projectDir, homeDir: o.homeDir, cwd: req.cwd, sources: [...o.sources] });
  const valid = (r: string) => validatePolicyFile({ permissions: { allow: [r] } }).ok;
  return [...new Set([...agentRules, ...ours])].filter(valid).slice(0, 5);
}

/** The `permission` tool's arguments (../shared/spec/builtin-tools.md). */
export function permissionArgs(req: PermissionAsk, projectDir: string, suggestions: readonly string[], reason?: string): Record<string, unknown> {
  return {
    tool_name: req.toolName,
    input: req.input,
    project_directory: projectDir,
    agent: req.agent,
    ...(reason !== undefined ? { reason } : {}),
    ...(suggestions.length > 0 ? { suggestions: [...suggestions] } : {}),
  };
}

/** Reads the card's result `{message: allow|deny|always, behavior, rule?, feedback?}`. */
export function readAnswer(r: ToolResultBody): HumanAnswer {
  const behavior = typeof r.behavior === "string" ? r.behavior : r.message === "always" ? "allow" : r.message;
  const feedback = typeof r.feedback === "string" && r.feedback.trim() !== "" ? r.feedback.trim() : undefined;
  if (behavior === "deny") return feedback !== undefined ? { kind: "deny", feedback } : { kind: "deny" };
  if (behavior !== "allow") return { kind: "error", code: "bad_answer", message: `the app answered ${JSON.stringify(r.message)}, not allow/deny/always` };
  const rule = r.message === "always" && typeof r.rule === "string" && validatePolicyFile({ permissions: { allow: [r.rule] } }).ok ? r.rule : undefined;
  return rule !== undefined ? { kind: "allow", rule } : { kind: "allow" };
}

/** The suggestion entry to echo in `updatedPermissions` for a rule the human chose. */
export function updateFor(rule: string, suggestions: unknown): PermissionUpdate[] {
  const v = ruleToValue(rule);
  if (Array.isArray(suggestions) && !("error" in v)) {
    for (const s of suggestions as unknown[]) {
      if (rulesFromSuggestions([s]).includes(rule)) return [s as PermissionUpdate];
    }
  }
  return [addRulesUpdate([rule], "allow", "localSettings")];
}

export const DENIED = "The human denied this in the LineUp app.";
export const DECLINED = "The human declined this in the LineUp app.";

/**
 * The human's answer as Claude Code's PermissionRequest output; undefined when there is no decision (no answer in
 * time, or an error): then nothing is returned and Claude Code's own dialog decides.
 */
export function permissionRequestOutputFor(
  a: HumanAnswer,
  input: { tool_input: Record<string, unknown>; permission_suggestions?: unknown },
): PermissionRequestOutput | undefined {
  if (a.kind === "allow")
    // Always send updatedInput: recent Claude Code versions reject an allow without it.
    return permissionRequestAllow({
      updatedInput: input.tool_input,
      ...(a.rule !== undefined ? { updatedPermissions: updateFor(a.rule, input.permission_suggestions) } : {}),
    });
  if (a.kind === "deny") return permissionRequestDeny({ message: a.feedback ?? (a.declined ? DECLINED : DENIED) });
  return undefined;
}

/** The policy's own decision as Claude Code's PermissionRequest output (allow keeps the input as it was). */
export function permissionRequestPolicyOutput(decision: "allow" | "deny", reason: string, toolInput: Record<string, unknown>): PermissionRequestOutput {
  return decision === "allow" ? permissionRequestAllow({ updatedInput: toolInput }) : permissionRequestDeny({ message: `LineUp policy: ${reason}` });
}

/** The policy's own decision as Claude Code's PreToolUse output (`ask` is never sent: no output instead). */
export function preToolUsePolicyOutput(decision: "allow" | "deny", reason: string): PreToolUseOutput {
  return preToolUseOutput(decision, { reason: `LineUp policy: ${reason}` });
}
