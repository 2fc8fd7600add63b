// The permission policy engine's public shapes (requests, sources, decisions) and the internal rule entry and
// context every part of the engine shares. Pure: no I/O, no Node imports.
import type { Behavior, Rule } from "./rules.js";

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

export interface Entry {
  behavior: Behavior;
  rule: Rule;
  source: string;
  baseDir: string;
}

export interface Ctx {
  cwd: string;
  home: string;
  projectDir: string;
  scopeDirs: string[];
  readOnly: readonly string[];
}

export type Match = boolean | "uncertain";

export const unique = (xs: readonly string[]): string[] => [...new Set(xs)];
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
