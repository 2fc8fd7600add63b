// The exact hook formats of the agents LineUp answers for, as documented (docs/permissions.md §Hook
// formats cites each source): Claude Code's PermissionRequest / PreToolUse / Notification / Stop hooks
// and its --permission-prompt-tool MCP tool, Cursor's beforeShellExecution hook, Codex's `notify`.
// Parsers accept unknown extra fields (agents add fields over time); builders emit only documented ones.
import { z } from "../contract/zod.js";
import { isRuleError, parseRule } from "./rules.js";

// ---------------------------------------------------------------- Claude Code: rules in hook JSON

/** A rule as hook JSON carries it: `Bash(npm test)` is `{toolName:"Bash", ruleContent:"npm test"}`. */
export interface PermissionRuleValue {
  toolName: string;
  ruleContent?: string;
}

export type PermissionBehavior = "allow" | "deny" | "ask";
/** Where Claude Code writes an update: memory only, or .claude/settings.local.json, .claude/settings.json, ~/.claude/settings.json. */
export type PermissionUpdateDestination = "session" | "localSettings" | "projectSettings" | "userSettings";
export type PermissionMode = "default" | "acceptEdits" | "plan" | "auto" | "dontAsk" | "bypassPermissions" | "manual";

/** Entries of `permission_suggestions` (input) and `updatedPermissions` (output). */
export type PermissionUpdate =
  | { type: "addRules" | "replaceRules" | "removeRules"; rules: PermissionRuleValue[]; behavior: PermissionBehavior; destination: PermissionUpdateDestination }
  | { type: "setMode"; mode: PermissionMode; destination: PermissionUpdateDestination }
  | { type: "addDirectories" | "removeDirectories"; directories: string[]; destination: PermissionUpdateDestination };

export function ruleToValue(rule: string): PermissionRuleValue | { error: string } {
  const r = parseRule(rule);
  if (isRuleError(r)) return r;
  const open = r.text.indexOf("(");
  if (open === -1) return { toolName: r.text };
  return { toolName: r.text.slice(0, open), ruleContent: r.text.slice(open + 1, -1) };
}

export const valueToRule = (v: PermissionRuleValue): string =>
  v.ruleContent === undefined || v.ruleContent === "" ? v.toolName : `${v.toolName}(${v.ruleContent})`;

/** An `addRules` update for `updatedPermissions` (invalid rule strings are dropped). */
export function addRulesUpdate(
  rules: readonly string[],
  behavior: PermissionBehavior = "allow",
  destination: PermissionUpdateDestination = "localSettings",
): PermissionUpdate {
  const values = rules.map(ruleToValue).filter((v): v is PermissionRuleValue => !("error" in v));
  return { type: "addRules", rules: values, behavior, destination };
}

/** The rule strings of a hook's `permission_suggestions` that would allow something. */
export function rulesFromSuggestions(suggestions: unknown): string[] {
  const parsed = z.array(PermissionUpdateSchema).safeParse(suggestions);
  if (!parsed.success) return [];
  const out: string[] = [];
  for (const s of parsed.data) {
    if (s.type === "addRules" && s.behavior === "allow") for (const r of s.rules) out.push(valueToRule(r));
  }
  return [...new Set(out)];
}

const RuleValueSchema = z.looseObject({ toolName: z.string().min(1), ruleContent: z.string().optional() });
const Destination = z.enum(["session", "localSettings", "projectSettings", "userSettings", "cliArg"]);
const PermissionUpdateSchema = z.union([
  z.looseObject({
    type: z.enum(["addRules", "replaceRules", "removeRules"]),
    rules: z.array(RuleValueSchema),
    behavior: z.enum(["allow", "deny", "ask"]),
    destination: Destination,
  }),
  z.looseObject({ type: z.literal("setMode"), mode: z.string(), destination: Destination }),
  z.looseObject({ type: z.enum(["addDirectories", "removeDirectories"]), directories: z.array(z.string()), destination: Destination }),
]);

// ---------------------------------------------------------------- Claude Code: hook stdin

const Common = {
  session_id: z.string(),
  transcript_path: z.string().optional(),
  cwd: z.string(),
  permission_mode: z.string().optional(),
  prompt_id: z.string().optional(),
  agent_id: z.string().optional(),
  agent_type: z.string().optional(),
};
export const ToolInput = z.record(z.string(), z.unknown());
/** The tool call every agent's permission hooks carry (Claude Code's and Codex's PreToolUse and PermissionRequest). */
export const ToolCall = { tool_name: z.string(), tool_input: ToolInput };

export const PermissionRequestInput = z.looseObject({
  ...Common,
  hook_event_name: z.literal("PermissionRequest"),
  ...ToolCall,
  permission_suggestions: z.array(z.unknown()).optional(),
});
export const PreToolUseInput = z.looseObject({
  ...Common,
  hook_event_name: z.literal("PreToolUse"),
  ...ToolCall,
  tool_use_id: z.string().optional(),
});
export const NotificationInput = z.looseObject({
  ...Common,
  hook_event_name: z.literal("Notification"),
  message: z.string(),
  title: z.string().optional(),
  notification_type: z.string().optional(),
});
export const StopInput = z.looseObject({
  ...Common,
  hook_event_name: z.literal("Stop"),
  stop_hook_active: z.boolean().optional(),
  last_assistant_message: z.string().optional(),
  background_tasks: z.array(z.unknown()).optional(),
  session_crons: z.array(z.unknown()).optional(),
});
export const ClaudeHookInput = z.discriminatedUnion("hook_event_name", [PermissionRequestInput, PreToolUseInput, NotificationInput, StopInput]);

export type PermissionRequestInput = z.infer<typeof PermissionRequestInput>;
export type PreToolUseInput = z.infer<typeof PreToolUseInput>;
export type NotificationInput = z.infer<typeof NotificationInput>;
export type StopInput = z.infer<typeof StopInput>;
export type ClaudeHookInput = z.infer<typeof ClaudeHookInput>;

/** Parses a Claude Code hook's stdin (text or parsed JSON) for the four events LineUp handles. */
export function parseClaudeHookInput(stdin: unknown): { ok: true; input: ClaudeHookInput } | { ok: false; error: string } {
  let value = stdin;
  if (typeof stdin === "string") {
    try {
      value = JSON.parse(stdin) as unknown;
    } catch {
      return { ok: false, error: "hook input is not JSON" };
    }
  }
  const r = ClaudeHookInput.safeParse(value);
  if (!r.success)
    return {
      ok: false,
      error: `not a PermissionRequest/PreToolUse/Notification/Stop hook input: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
    };
  return { ok: true, input: r.data };
}

// ---------------------------------------------------------------- Claude Code: hook stdout

export interface PermissionRequestOutput {
  hookSpecificOutput: {
    hookEventName: "PermissionRequest";
    decision:
      | { behavior: "allow"; updatedInput?: Record<string, unknown>; updatedPermissions?: PermissionUpdate[] }
      | { behavior: "deny"; message?: string; interrupt?: boolean };
  };
}

export function permissionRequestAllow(
  opts: { updatedInput?: Record<string, unknown>; updatedPermissions?: PermissionUpdate[] } = {},
): PermissionRequestOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PermissionRequest",
      decision: {
        behavior: "allow",
        ...(opts.updatedInput !== undefined ? { updatedInput: opts.updatedInput } : {}),
        ...(opts.updatedPermissions !== undefined && opts.updatedPermissions.length > 0 ? { updatedPermissions: opts.updatedPermissions } : {}),
      },
    },
  };
}

export function permissionRequestDeny(opts: { message?: string; interrupt?: boolean } = {}): PermissionRequestOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PermissionRequest",
      decision: { behavior: "deny", ...(opts.message !== undefined ? { message: opts.message } : {}), ...(opts.interrupt ? { interrupt: true } : {}) },
    },
  };
}

export interface PreToolUseOutput {
  hookSpecificOutput: {
    hookEventName: "PreToolUse";
    permissionDecision: "allow" | "deny" | "ask" | "defer";
    permissionDecisionReason?: string;
    updatedInput?: Record<string, unknown>;
    additionalContext?: string;
  };
}

/** `permissionDecisionReason` is shown to the user for allow/ask and to Claude for deny. */
export function preToolUseOutput(
  permissionDecision: PreToolUseOutput["hookSpecificOutput"]["permissionDecision"],
  opts: { reason?: string; updatedInput?: Record<string, unknown>; additionalContext?: string } = {},
): PreToolUseOutput {
  return {
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision,
      ...(opts.reason !== undefined ? { permissionDecisionReason: opts.reason } : {}),
      ...(opts.updatedInput !== undefined ? { updatedInput: opts.updatedInput } : {}),
      ...(opts.additionalContext !== undefined ? { additionalContext: opts.additionalContext } : {}),
    },
  };
}

/** The `hooks` block of .claude/settings.json that runs `command` for an event (timeout in seconds). */
export function claudeHookSettings(
  event: "PermissionRequest" | "PreToolUse" | "Notification" | "Stop",
  command: string,
  opts: { matcher?: string; timeoutS?: number } = {},
) {
  return {
    hooks: {
      [event]: [
        {
          ...(opts.matcher !== undefined ? { matcher: opts.matcher } : {}),
          hooks: [{ type: "command" as const, command, ...(opts.timeoutS !== undefined ? { timeout: opts.timeoutS } : {}) }],
        },
      ],
    },
  };
}

/** Claude Code's default `timeout` for command hooks, in seconds (docs/permissions.md). */
export const CLAUDE_COMMAND_HOOK_DEFAULT_TIMEOUT_S = 600;

// ---------------------------------------------------------------- Claude Code: --permission-prompt-tool

export const PermissionPromptInput = z.looseObject({ tool_name: z.string(), input: ToolInput, tool_use_id: z.string().optional() });
export type PermissionPromptInput = z.infer<typeof PermissionPromptInput>;

export type PermissionPromptPayload = { behavior: "allow"; updatedInput: Record<string, unknown> } | { behavior: "deny"; message: string };

/** The MCP tool result: the payload JSON-stringified into one text block. */
export function permissionPromptResult(payload: PermissionPromptPayload): { content: [{ type: "text"; text: string }] } {
  return { content: [{ type: "text", text: JSON.stringify(payload) }] };
}

// ---------------------------------------------------------------- Cursor

export const CursorBeforeShellInput = z.looseObject({
  hook_event_name: z.literal("beforeShellExecution"),
  command: z.string(),
  cwd: z.string().optional(),
  conversation_id: z.string().optional(),
  generation_id: z.string().optional(),
  workspace_roots: z.array(z.string()).optional(),
  model: z.string().optional(),
  cursor_version: z.string().optional(),
  user_email: z.string().nullable().optional(),
});
export type CursorBeforeShellInput = z.infer<typeof CursorBeforeShellInput>;

export interface CursorPermissionOutput {
  permission: "allow" | "deny" | "ask";
  user_message?: string;
  agent_message?: string;
}

export function cursorPermissionOutput(
  permission: CursorPermissionOutput["permission"],
  opts: { userMessage?: string; agentMessage?: string } = {},
): CursorPermissionOutput {
  return {
    permission,
    ...(opts.userMessage !== undefined ? { user_message: opts.userMessage } : {}),
    ...(opts.agentMessage !== undefined ? { agent_message: opts.agentMessage } : {}),
  };
}

/** A Cursor shell command as a request for shared/policy/index.ts (Cursor's shell is checked with Bash rules). */
export function cursorShellRequest(input: CursorBeforeShellInput): { tool_name: "Bash"; tool_input: { command: string }; cwd?: string } {
  const cwd = input.cwd ?? input.workspace_roots?.[0];
  return { tool_name: "Bash", tool_input: { command: input.command }, ...(cwd !== undefined ? { cwd } : {}) };
}

/** `.cursor/hooks.json` with one beforeShellExecution command (`version` 1 is required). */
export function cursorHooksFile(command: string) {
  return { version: 1, hooks: { beforeShellExecution: [{ command }] } };
}

// ---------------------------------------------------------------- Codex

export const CodexNotifyPayload = z.looseObject({
  type: z.string(),
  "thread-id": z.string().optional(),
  "turn-id": z.string().optional(),
  cwd: z.string().optional(),
  client: z.string().optional(),
  "input-messages": z.array(z.string()).optional(),
  "last-assistant-message": z.string().nullable().optional(),
});
export type CodexNotifyPayload = z.infer<typeof CodexNotifyPayload>;

/** Codex appends the JSON payload as the last argv argument (stdin is /dev/null). */
export function parseCodexNotify(argv: readonly string[]): CodexNotifyPayload | undefined {
  const last = argv[argv.length - 1];
  if (last === undefined) return undefined;
  try {
    const r = CodexNotifyPayload.safeParse(JSON.parse(last) as unknown);
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
