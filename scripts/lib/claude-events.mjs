// Claude Code hook stdin, as documented at https://code.claude.com/docs/en/hooks ("Common input fields",
// "PreToolUse input", "PermissionRequest input", "Elicitation input"; AskUserQuestion's tool_input is
// {questions: [{question, header, options: [{label, description}], multiSelect}]}). One builder per event,
// shared by the tests (test/helpers/hooks-helpers.ts), the bench (bench/lib/startup.ts) and the package check
// (scripts/pack-check.mjs), which runs on plain Node — hence JavaScript with declarations beside it.

/** The fields every hook event carries; `session_id` and `transcript_path` are fixed test values. */
export const common = (cwd, sessionId = "abc123") => ({
  session_id: sessionId,
  transcript_path: "/tmp/t.jsonl",
  cwd,
  permission_mode: "default",
});

export const preToolUse = (cwd, tool_name, tool_input, tool_use_id = "toolu_01") =>
  JSON.stringify({ ...common(cwd), hook_event_name: "PreToolUse", tool_name, tool_input, tool_use_id });

export const permissionRequest = (cwd, tool_name, tool_input, extra = {}) =>
  JSON.stringify({ ...common(cwd), hook_event_name: "PermissionRequest", tool_name, tool_input, ...extra });

/** PreToolUse for Claude Code's AskUserQuestion tool. */
export const askUserQuestion = (cwd, questions, tool_use_id = "toolu_01ask") => preToolUse(cwd, "AskUserQuestion", { questions }, tool_use_id);

/** Elicitation from the MCP server "billing"; `fields` carries mode, url, elicitation_id, requested_schema, or overrides. */
export const elicitation = (cwd, fields = {}) =>
  JSON.stringify({
    ...common(cwd),
    hook_event_name: "Elicitation",
    mcp_server_name: "billing",
    message: "Set up the **billing** account",
    ...fields,
  });
