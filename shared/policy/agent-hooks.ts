// Codex's lifecycle hooks and Cursor's MCP and stop hooks, in and out (i29-agents, issue 29 item 5;
// docs/permissions.md §7.14–7.15). Parsers accept unknown fields: agents add them.
import { z } from "../contract/zod.js";
import { ToolCall, ToolInput } from "./hooks.js";

// ---------------------------------------------------------------- Codex (hooks.json)

/** The fields every Codex hook input carries (codex-rs/hooks/schema/generated/*.command.input.schema.json). */
const CodexCommon = {
  session_id: z.string().optional(),
  turn_id: z.string().optional(),
  transcript_path: z.string().nullable().optional(),
  cwd: z.string(),
  model: z.string().optional(),
  permission_mode: z.string().optional(),
};

export const CodexPreToolUseInput = z.looseObject({
  ...CodexCommon,
  hook_event_name: z.literal("PreToolUse"),
  ...ToolCall,
  tool_use_id: z.string().optional(),
});
export const CodexPermissionRequestInput = z.looseObject({
  ...CodexCommon,
  hook_event_name: z.literal("PermissionRequest"),
  ...ToolCall,
});
export const CodexStopInput = z.looseObject({
  ...CodexCommon,
  hook_event_name: z.literal("Stop"),
  stop_hook_active: z.boolean().optional(),
  last_assistant_message: z.string().nullable().optional(),
});
export type CodexPreToolUseInput = z.infer<typeof CodexPreToolUseInput>;
export type CodexPermissionRequestInput = z.infer<typeof CodexPermissionRequestInput>;
export type CodexStopInput = z.infer<typeof CodexStopInput>;

/** PreToolUse: Codex acts on `deny` only (an `allow` is reported as unsupported; silence lets the call go on). */
export function codexPreToolUseDeny(reason: string) {
  return { hookSpecificOutput: { hookEventName: "PreToolUse" as const, permissionDecision: "deny" as const, permissionDecisionReason: reason } };
}

/** PermissionRequest: `{behavior}` and a deny's `message` only — Codex fails closed on `updatedInput`/`updatedPermissions`. */
export function codexPermissionDecision(behavior: "allow" | "deny", message?: string) {
  return {
    hookSpecificOutput: {
      hookEventName: "PermissionRequest" as const,
      decision: { behavior, ...(behavior === "deny" && message !== undefined ? { message } : {}) },
    },
  };
}

// ---------------------------------------------------------------- Cursor (.cursor/hooks.json)

const CursorCommon = {
  conversation_id: z.string().optional(),
  generation_id: z.string().optional(),
  workspace_roots: z.array(z.string()).optional(),
  model: z.string().optional(),
  cursor_version: z.string().optional(),
  user_email: z.string().nullable().optional(),
  cwd: z.string().optional(),
};

export const CursorMcpInput = z.looseObject({
  ...CursorCommon,
  hook_event_name: z.literal("beforeMCPExecution"),
  tool_name: z.string().min(1),
  /** An object, or (some Cursor versions) the same as a JSON string. */
  tool_input: z.union([ToolInput, z.string()]).optional(),
  url: z.string().optional(),
  command: z.string().optional(),
});
export const CursorStopInput = z.looseObject({
  ...CursorCommon,
  hook_event_name: z.literal("stop"),
  status: z.string().optional(),
  loop_count: z.number().optional(),
});
export type CursorMcpInput = z.infer<typeof CursorMcpInput>;
export type CursorStopInput = z.infer<typeof CursorStopInput>;

/** The server Cursor's MCP tools are named under when Cursor sends a bare tool name (docs/permissions.md §7.15). */
export const CURSOR_UNNAMED_SERVER = "cursor";

/**
 * A Cursor MCP call as a policy request: `MCP:server:tool` and `mcp__server__tool` keep their server, a bare
 * name becomes `mcp__cursor__<tool>`, so `mcp__server__tool` rules apply; a string input is parsed as JSON
 * (kept as `{input: "<text>"}` when it is not an object).
 */
export function cursorMcpRequest(input: CursorMcpInput): { tool_name: string; tool_input: Record<string, unknown> } {
  const name = input.tool_name;
  const colon = /^MCP:([^:]+):(.+)$/.exec(name);
  const tool_name = colon ? `mcp__${colon[1]}__${colon[2]}` : name.startsWith("mcp__") ? name : `mcp__${CURSOR_UNNAMED_SERVER}__${name}`;
  let tool_input: Record<string, unknown> = {};
  const raw = input.tool_input;
  if (typeof raw === "string") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw) as unknown;
    } catch {
      parsed = undefined;
    }
    const obj = ToolInput.safeParse(parsed);
    tool_input = obj.success ? obj.data : { input: raw };
  } else if (raw !== undefined) tool_input = raw;
  return { tool_name, tool_input };
}
