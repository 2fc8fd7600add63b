// Loads the policy files the engine (shared/policy/index.ts) evaluates: the project's `.lineup/policy.json`
// and this machine's local adapter policy (`$LINEUP_POLICY_FILE`, else `<state dir>/policy.json`).
// The only Node-specific part of the policy engine; docs/permissions.md describes both files.
import { readFileSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { validatePolicyFile, type PolicySource } from "../../shared/policy/index.js";
import { defaultStateDir } from "../client/state.js";

export const PROJECT_POLICY_FILE = ".lineup/policy.json";

export interface LoadedPolicyFile {
  file: string;
  /** the file does not exist (not an error: no rules from it) */
  missing: boolean;
  source?: PolicySource;
  errors: string[];
  warnings: string[];
}

export interface LoadedPolicies {
  /** valid sources in evaluation order: project, then local */
  sources: PolicySource[];
  files: LoadedPolicyFile[];
  /** every file error, prefixed with its path; when not empty, callers should answer "ask" for everything */
  errors: string[];
  warnings: string[];
}

export interface LoadPoliciesOptions {
  projectDir: string;
  /** default: $LINEUP_POLICY_FILE, else <LINEUP_STATE_DIR or ~/.lineup>/policy.json; null: none */
  localPolicyFile?: string | null;
  env?: Record<string, string | undefined>;
}

export function defaultLocalPolicyFile(env: Record<string, string | undefined> = process.env): string {
  return env.LINEUP_POLICY_FILE || join(env.LINEUP_STATE_DIR || defaultStateDir(), "policy.json");
}

/** Reads and validates one policy file. `/path` rules in it are relative to `baseDir`. */
export function loadPolicyFile(file: string, name: string, baseDir: string): LoadedPolicyFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { file, missing: true, errors: [], warnings: [] };
    return { file, missing: false, errors: [`${file}: cannot read: ${(e as Error).message}`], warnings: [] };
  }
  const v = validatePolicyFile(text);
  const warnings = v.warnings.map((w) => `${file}: ${w}`);
  if (!v.ok) return { file, missing: false, errors: v.errors.map((m) => `${file}: ${m}`), warnings };
  return { file, missing: false, source: { name, permissions: v.policy.permissions, baseDir }, errors: [], warnings };
}

/**
 * The project policy and the local adapter policy, in that order. Both anchor `/path` rules at the
 * project directory (the local file is per machine, not per directory, so its own directory would
 * be no useful anchor). A per-inbox policy from the app is added by the caller.
 */
export function loadPolicySources(opts: LoadPoliciesOptions): LoadedPolicies {
  const projectDir = resolve(opts.projectDir);
  const env = opts.env ?? process.env;
  const files: LoadedPolicyFile[] = [loadPolicyFile(join(projectDir, PROJECT_POLICY_FILE), `project ${PROJECT_POLICY_FILE}`, projectDir)];
  const local = opts.localPolicyFile === undefined ? defaultLocalPolicyFile(env) : opts.localPolicyFile;
  if (local !== null) {
    const file = isAbsolute(local) ? local : resolve(projectDir, local);
    const shown = relative(projectDir, file).startsWith("..") ? file : relative(projectDir, file);
    files.push(loadPolicyFile(file, `local ${shown}`, projectDir));
  }
  return {
    sources: files.flatMap((f) => (f.source ? [f.source] : [])),
    files,
    errors: files.flatMap((f) => f.errors),
    warnings: files.flatMap((f) => f.warnings),
  };
}
