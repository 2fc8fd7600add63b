// The permission policy engine: decides allow / ask / deny for one tool call of a coding agent, with
// Claude Code's rule syntax and precedence (https://code.claude.com/docs/en/permissions). Pure: no I/O
// and no Node imports, so the PWA runs the same code; paths and the home directory come in as options.
// "ask" means: put the question on the human's phone. docs/permissions.md is the user-facing contract.// This file is the engine's one entry point; the parts, by concern: types.ts (requests, sources, decisions),
// engine.ts (evaluate: precedence, Bash, other tools), tools.ts (matching one rule against a call),
// propose.ts ("Always allow" rules), file.ts (policy file validation), and beneath them rules.ts,
// shell.ts, bash.ts, match.ts, paths.ts, programs.ts, wrappers.ts; hooks.ts holds the agents' hook formats.
export { parseRule, ruleWarnings, isRuleError, BEHAVIORS, type Behavior, type Rule, type RuleError } from "./rules.js";
export { parseShell, type ShellParse, type Segment, type Word } from "./shell.js";
export { analyzeBash, SAFE_ENV_VARS } from "./bash.js";
export {
  DEFAULT_ALLOWED_TOOLS,
  type Decision,
  type EvaluateOptions,
  type PermissionLists,
  type PermissionRequest,
  type PolicyDecision,
  type PolicyFile,
  type PolicySource,
  type RuleMatch,
} from "./types.js";
export { evaluate } from "./engine.js";
export { proposeRule, proposeRules, type ProposeOptions } from "./propose.js";
export { validatePolicyFile, type PolicyValidation } from "./file.js";
