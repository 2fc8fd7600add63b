// Declarations for claude-events.mjs (plain JavaScript so that scripts/pack-check.mjs runs on Node alone).
type Json = Record<string, unknown>;
export declare const common: (
  cwd: string,
  sessionId?: string,
) => { session_id: string; transcript_path: string; cwd: string; permission_mode: string };
export declare const preToolUse: (cwd: string, tool_name: string, tool_input: Json, tool_use_id?: string) => string;
export declare const permissionRequest: (cwd: string, tool_name: string, tool_input: Json, extra?: Json) => string;
export declare const askUserQuestion: (cwd: string, questions: unknown[], tool_use_id?: string) => string;
export declare const elicitation: (cwd: string, fields?: Json) => string;
