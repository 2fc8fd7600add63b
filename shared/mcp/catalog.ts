// The MCP face of the LineUp catalog, shared by `lineup mcp` (stdio) and the relay's own `POST /mcp`: every
// LineUp tool becomes one MCP tool with a FLAT object schema. Some model APIs reject a top-level
// oneOf/anyOf/allOf, so a toolset/app tool is flattened to `{action: enum, ...every action's properties}` and
// the relay (or checkArguments before sending) validates the chosen action's real schema.
import { BUILTIN_TOOLS, HOOK_TOOL_NAMES, HUMAN_TOOL_NAMES } from "../contract/builtin-tools.js";
import type { ActionDef, ToolDef } from "../contract/protocol.js";
import { LIMITS } from "../contract/protocol.js";

export type JsonSchema = Record<string, unknown>;

/** One tool as listed to the MCP host. */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: { type: "object"; properties: Record<string, JsonSchema>; required?: string[] };
}

/** How an MCP tool maps back to a LineUp call. */
export interface Route {
  mcpName: string;
  /** The LineUp tool name (may contain `.` or `-`, which MCP names may not). */
  tool: string;
  def: ToolDef;
  /** True when the MCP schema carries `action` (toolset/app tools). */
  flattened: boolean;
  /** True when the MCP schema carries the bridge's own `timeout` argument. */
  takesTimeout: boolean;
}

export const MCP_NAME_RE = /^[a-z0-9_]{1,64}$/;
export const GENERIC_CALL = "lineup_call";
export const GENERIC_LIST = "lineup_tools";
export const AWAIT_ANSWER = "await_answer";
/** Names of the bridge's own tools: an app tool mapping to one of them is reachable through lineup_call only. */
const RESERVED = new Set([GENERIC_CALL, GENERIC_LIST, AWAIT_ANSWER]);

/** The MCP server's instructions (both transports). */
export const SERVER_INSTRUCTIONS =
  "Tools that reach the human who runs this agent, on their phone. Use ask_question when you need their input and work_report when a task is done; keep calling them until the human says the session is over. A reply may carry images, audio or files. If a call comes back saying the human has not answered yet, call await_answer with its call_id instead of asking again.";

/** Tools where a human answers: the `timeout` argument is offered (seconds, default 600). */
const timeoutProp = (defaultS: number, maxS: number = LIMITS.maxTimeoutS): JsonSchema => ({
  type: "number",
  minimum: LIMITS.minTimeoutS,
  maximum: Math.min(maxS, LIMITS.maxTimeoutS),
  description: `seconds to wait for the human (default ${defaultS}); on timeout you get a note, not an error`,
});

/** `ask.question-2` → `ask_question_2`: MCP hosts want [a-z0-9_]. */
export function mcpNameOf(tool: string): string {
  return tool
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 64);
}

/** Merges the actions' properties into one flat object schema (first definition of a name wins its shape). */
function flatten(def: Extract<ToolDef, { actions: ActionDef[] }>): { properties: Record<string, JsonSchema>; notes: string[] } {
  const properties: Record<string, JsonSchema> = {
    action: { type: "string", enum: def.actions.map((a) => a.name), description: "which action to run" },
  };
  const notes: string[] = [];
  for (const a of def.actions) {
    const props = (a.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
    const required = Array.isArray(a.inputSchema.required) ? (a.inputSchema.required as string[]) : [];
    for (const [k, v] of Object.entries(props)) {
      if (k === "action") continue;
      const have = properties[k];
      if (!have) properties[k] = { ...v };
      else if (JSON.stringify(have) !== JSON.stringify(v)) {
        // Same name, different shape per action: keep only a shared type so no action's value is rejected.
        const loose: JsonSchema = {};
        if (have.type !== undefined && have.type === v.type) loose.type = have.type;
        const descs = [have.description, v.description].filter((d): d is string => typeof d === "string");
        if (descs.length) loose.description = [...new Set(descs)].join("; ");
        properties[k] = loose;
      }
    }
    const args = Object.keys(props);
    notes.push(
      `- ${a.name}${a.description ? `: ${a.description}` : ""}${args.length ? ` (arguments: ${args.map((n) => (required.includes(n) ? n : `${n}?`)).join(", ")})` : ""}`,
    );
  }
  return { properties, notes };
}

/** The MCP tool for one LineUp tool, or undefined when its name cannot be expressed. */
export function toMcpTool(def: ToolDef, defaultTimeoutS: number, maxTimeoutS: number = LIMITS.maxTimeoutS): { tool: McpTool; route: Route } | undefined {
  const mcpName = mcpNameOf(def.name);
  if (!MCP_NAME_RE.test(mcpName) || RESERVED.has(mcpName)) return undefined;
  let properties: Record<string, JsonSchema>;
  let required: string[];
  let description = def.description || `LineUp tool ${def.name}`;
  let flattened = false;
  if (def.type === "action") {
    properties = { ...((def.inputSchema.properties ?? {}) as Record<string, JsonSchema>) };
    required = Array.isArray(def.inputSchema.required) ? [...(def.inputSchema.required as string[])] : [];
  } else {
    const f = flatten(def);
    properties = f.properties;
    required = ["action"];
    flattened = true;
    description += `\nActions:\n${f.notes.join("\n")}`;
  }
  // Only action tools are answered by a human and wait; a tool that already has `timeout` keeps its own.
  const takesTimeout = def.type === "action" && !("timeout" in properties);
  if (takesTimeout) properties.timeout = timeoutProp(defaultTimeoutS, maxTimeoutS);
  const inputSchema: McpTool["inputSchema"] = { type: "object", properties };
  if (required.length) inputSchema.required = required;
  return { tool: { name: mcpName, description, inputSchema }, route: { mcpName, tool: def.name, def, flattened, takesTimeout } };
}

const lineupCallTool = (defaultS: number, maxS: number): McpTool => ({
  name: GENERIC_CALL,
  description:
    "Call any tool the human's LineUp app registers (see lineup_tools), by its LineUp name. Use the named tools (ask_question, work_report, choice, …) when they fit.",
  inputSchema: {
    type: "object",
    properties: {
      tool: { type: "string", description: "the LineUp tool name, as lineup_tools lists it" },
      action: { type: "string", description: "the action, for toolset/app tools" },
      arguments: { type: "object", description: "the tool's arguments", additionalProperties: true },
      timeout: timeoutProp(defaultS, maxS),
    },
    required: ["tool"],
  },
});

export const LINEUP_TOOLS_TOOL: McpTool = {
  name: GENERIC_LIST,
  description: "List the tools the human's LineUp app provides right now (names, actions, argument schemas), and whether the app is open.",
  inputSchema: { type: "object", properties: {} },
};

/** `mcp_` + 22 base64url characters (see call-id.ts). */
export const CALL_ID_RE = /^mcp_[A-Za-z0-9_-]{22}$/;

export const AWAIT_ANSWER_TOOL: McpTool = {
  name: AWAIT_ANSWER,
  description:
    "Wait for the human's answer to an earlier request that came back saying the human has not answered yet. Pass the call_id from that result. The question is still on the human's phone: never ask it again, call this instead (as often as it says so).",
  inputSchema: {
    type: "object",
    properties: {
      call_id: { type: "string", description: "the call_id of the pending request (mcp_…)" },
      timeout: {
        type: "number",
        minimum: 1,
        description: "seconds to wait at most this time (default: as long as the server waits for any call); then you get the same 'not answered yet' result",
      },
    },
    required: ["call_id"],
  },
};

/** The listed catalog: built-ins always (hosts may read the list once), then app tools, then the bridge's own. */
const BUILTIN_NAMES = new Set([...BUILTIN_TOOLS.map((t) => t.name), ...HUMAN_TOOL_NAMES]);
/** The prefix of an app-provided tool's description: the model learns it is not LineUp's own. */
export const APP_TOOL_LABEL = "[Provided by the human's LineUp app, not built into LineUp]";

/** What the model reads of a tool, in the list and in lineup_tools alike: a built-in name's canonical
 * definition (an app cannot reword it), any other tool labelled as the app's. */
export function canonicalTool(def: ToolDef): ToolDef {
  const builtin = BUILTIN_NAMES.has(def.name) ? BUILTIN_TOOLS.find((t) => t.name === def.name) : undefined;
  return builtin ?? { ...def, description: `${APP_TOOL_LABEL} ${def.description || `LineUp tool ${def.name}`}` };
}

export function buildCatalog(
  appTools: ToolDef[],
  defaultTimeoutS: number,
  maxTimeoutS: number = LIMITS.maxTimeoutS,
): { tools: McpTool[]; routes: Map<string, Route> } {
  const routes = new Map<string, Route>();
  const tools: McpTool[] = [];
  const add = (def: ToolDef) => {
    const t = toMcpTool(def, defaultTimeoutS, maxTimeoutS);
    if (!t || routes.has(t.route.mcpName)) return; // a clash keeps the first; lineup_call still reaches the other
    routes.set(t.route.mcpName, t.route);
    tools.push(t.tool);
  };
  // Built-in names always carry the canonical definition (an app's own registration of one is skipped), so
  // nobody can reword what the model reads about `ask_question`; other tools say where they come from.
  // `permission`, `ask_questions` and `elicitation` carry an agent's own dialogs (hooks, `approve`), not questions for the model.
  for (const def of BUILTIN_TOOLS) if (!HOOK_TOOL_NAMES.has(def.name)) add(def);
  for (const def of appTools)
    if (!BUILTIN_NAMES.has(def.name)) add({ ...def, description: `${APP_TOOL_LABEL} ${def.description || `LineUp tool ${def.name}`}` });
  tools.push(lineupCallTool(defaultTimeoutS, maxTimeoutS), LINEUP_TOOLS_TOOL, AWAIT_ANSWER_TOOL);
  return { tools, routes };
}

/** A LineUp call ready to send: the tool's arguments without the bridge's own fields. */
export interface PlannedCall {
  tool: string;
  action?: string;
  args: Record<string, unknown>;
  timeoutS: number;
}

/** Clamps a requested timeout to the relay's 1…86400 s and to the operator's ceiling. */
export function clampTimeoutS(v: unknown, defaultS: number, maxS: number): number {
  const n = typeof v === "number" && Number.isFinite(v) ? v : defaultS;
  return Math.min(maxS, LIMITS.maxTimeoutS, Math.max(LIMITS.minTimeoutS, n));
}

/** Splits MCP arguments into the LineUp call; returns a string describing bad input. */
export function planCall(route: Route, input: Record<string, unknown>, defaultS: number, maxS: number): PlannedCall | string {
  const args: Record<string, unknown> = { ...input };
  let action: string | undefined;
  if (route.flattened) {
    if (typeof args.action !== "string" || !args.action) return "`action` is required: one of the tool's actions";
    action = args.action;
    delete args.action;
  }
  let timeoutS = clampTimeoutS(undefined, defaultS, maxS);
  if (route.takesTimeout) {
    if (args.timeout !== undefined && (typeof args.timeout !== "number" || !Number.isFinite(args.timeout))) return "`timeout` must be a number of seconds";
    timeoutS = clampTimeoutS(args.timeout, defaultS, maxS);
    delete args.timeout;
  }
  return action === undefined ? { tool: route.tool, args, timeoutS } : { tool: route.tool, action, args, timeoutS };
}

/** `lineup_call {tool, action?, arguments?, timeout?}` → a planned call, or a string describing bad input. */
export function planGenericCall(input: Record<string, unknown>, defaultS: number, maxS: number): PlannedCall | string {
  const { tool, action, arguments: a, timeout } = input;
  if (typeof tool !== "string" || !tool) return "`tool` is required: a LineUp tool name from lineup_tools";
  if (action !== undefined && (typeof action !== "string" || !action)) return "`action` must be a non-empty string";
  if (a !== undefined && (typeof a !== "object" || a === null || Array.isArray(a))) return "`arguments` must be an object";
  if (timeout !== undefined && (typeof timeout !== "number" || !Number.isFinite(timeout))) return "`timeout` must be a number of seconds";
  const args = { ...((a ?? {}) as Record<string, unknown>) };
  const timeoutS = clampTimeoutS(timeout, defaultS, maxS);
  return typeof action === "string" ? { tool, action, args, timeoutS } : { tool, args, timeoutS };
}

/** The schema of one planned call, to check arguments before anything is sent. */
export function schemaFor(def: ToolDef, action: string | undefined): Record<string, unknown> | undefined | "unknown_action" {
  if (def.type === "action") return def.inputSchema;
  const a = def.actions.find((x) => x.name === action);
  return a ? a.inputSchema : "unknown_action";
}
