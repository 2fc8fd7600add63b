// Checking a `.lineup/policy.json` file (or the inbox policy) before it is used or stored: every error names
// the rule and what is wrong; unknown keys and duplicates are warnings. Pure: no I/O.
import { BEHAVIORS, isRuleError, parseRule, ruleWarnings, type Behavior } from "./rules.js";
import { isRecord, type PolicyFile } from "./types.js";

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
      else if (prev !== undefined)
        warnings.push(`${at}: "${rule.text}" is in both ${prev} and ${behavior}; ${BEHAVIORS.find((b) => b === prev || b === behavior)} wins`);
      seen.set(rule.text, behavior);
      policy.permissions[behavior].push(rule.text);
    });
  }
  return errors.length > 0 ? { ok: false, errors, warnings } : { ok: true, policy, warnings };
}
