// The transport-independent front half of a tools/call: which of the bridge's tools it is, the planned LineUp
// call, and every check that can be made before anything reaches the human (bad input is answered at once, even
// while no app is open to check it). Used by `lineup mcp` (adapter/mcp/bridge.ts) and `POST /mcp`.
import { BUILTIN_TOOLS } from "../contract/builtin-tools.js";
import type { ToolDef } from "../contract/protocol.js";
import { checkArguments } from "../contract/schema.js";
import { AWAIT_ANSWER, buildCatalog, canonicalTool, GENERIC_CALL, GENERIC_LIST, planCall, planGenericCall, schemaFor, type PlannedCall } from "./catalog.js";
import { isMcpCallId } from "./call-id.js";
import { errorToMcp, type McpCallResult } from "./results.js";

export interface CatalogContext {
  appTools: ToolDef[];
  defaultTimeoutS: number;
  maxTimeoutS: number;
}

export type Prepared =
  | { kind: "list" }
  /** `waitS`: await_answer's own `timeout`, which caps this request's wait (never the call's deadline). */
  | { kind: "await"; callId: string; waitS?: number }
  | { kind: "call"; planned: PlannedCall }
  | { kind: "done"; result: McpCallResult };

/** True when `name` can be planned from the built-ins alone (no need to fetch the app's catalog first). */
export function needsAppCatalog(name: string): boolean {
  if (name === GENERIC_LIST || name === AWAIT_ANSWER) return false;
  if (name === GENERIC_CALL) return true;
  return !buildCatalog([], 1).routes.has(name);
}

export function prepareToolCall(name: string, input: Record<string, unknown>, cx: CatalogContext): Prepared {
  if (name === GENERIC_LIST) return { kind: "list" };
  if (name === AWAIT_ANSWER) {
    const id = input.call_id;
    if (!isMcpCallId(id)) return { kind: "done", result: errorToMcp("invalid_arguments", "`call_id` must be the call_id (mcp_…) from a pending result", name) };
    const t = input.timeout;
    if (t === undefined) return { kind: "await", callId: id };
    if (typeof t !== "number" || !Number.isFinite(t) || t <= 0)
      return { kind: "done", result: errorToMcp("invalid_arguments", "`timeout` must be a positive number of seconds", name) };
    return { kind: "await", callId: id, waitS: Math.min(t, cx.maxTimeoutS) };
  }
  let planned: PlannedCall | string;
  let def: ToolDef | undefined;
  if (name === GENERIC_CALL) {
    planned = planGenericCall(input, cx.defaultTimeoutS, cx.maxTimeoutS);
    if (typeof planned !== "string") {
      const tool = planned.tool;
      def = cx.appTools.find((t) => t.name === tool) ?? BUILTIN_TOOLS.find((t) => t.name === tool);
    }
  } else {
    const route = buildCatalog(cx.appTools, cx.defaultTimeoutS, cx.maxTimeoutS).routes.get(name);
    if (!route) return { kind: "done", result: errorToMcp("unknown_tool", `no tool named ${name}`, name) };
    def = route.def;
    planned = planCall(route, input, cx.defaultTimeoutS, cx.maxTimeoutS);
  }
  if (typeof planned === "string") return { kind: "done", result: errorToMcp("invalid_arguments", planned, name) };
  if (def) {
    const schema = schemaFor(def, planned.action);
    if (schema === "unknown_action") {
      const names = def.type === "action" ? [] : def.actions.map((a) => a.name);
      return {
        kind: "done",
        result: errorToMcp("unknown_action", `${def.name} has no action ${JSON.stringify(planned.action)}; actions: ${names.join(", ")}`, name),
      };
    }
    const bad = schema ? checkArguments(schema, planned.args) : null;
    if (bad) return { kind: "done", result: errorToMcp("invalid_arguments", bad, name) };
  }
  return { kind: "call", planned };
}

/** lineup_tools: the app's catalog (or the built-ins while no app registered), with MCP names and apps open. */
export function lineupToolsResult(appTools: ToolDef[], apps: number, cx: CatalogContext, appUrl?: string): McpCallResult {
  const { routes } = buildCatalog(appTools, cx.defaultTimeoutS, cx.maxTimeoutS);
  const mcpNameOf = new Map([...routes.values()].map((r) => [r.tool, r.mcpName]));
  // The same canonical, labelled definitions as the tool list: lineup_tools is no way around them.
  const tools = (appTools.length ? appTools.map(canonicalTool) : BUILTIN_TOOLS).map((t) => ({ ...t, mcp_tool: mcpNameOf.get(t.name) ?? null }));
  const head = [
    `apps open: ${apps}${apps === 0 && appUrl ? ` (pairing link: ${appUrl})` : ""}`,
    appTools.length
      ? `The app registers ${appTools.length} tool(s). Call them by their MCP tool name, or with lineup_call {tool, action, arguments}.`
      : "No app has registered tools yet; these are the built-in tools every LineUp app provides.",
  ];
  return { content: [{ type: "text", text: `${head.join("\n")}\n${JSON.stringify(tools, null, 2)}` }] };
}

/** The progress/status line while a call waits. */
export function waitingText(o: {
  tool: string;
  waitedS: number;
  timeoutS?: number | undefined;
  state: "connecting" | "reconnecting" | "no_app" | "waiting";
  appUrl?: string | undefined;
}): string {
  const of = o.timeoutS !== undefined ? ` (${Math.round(o.waitedS)} s of ${o.timeoutS} s)` : ` (${Math.round(o.waitedS)} s)`;
  switch (o.state) {
    case "connecting":
      return `Connecting to the LineUp relay…${of}`;
    case "reconnecting":
      return `Reconnecting to the LineUp relay; the request stays queued there${of}`;
    case "no_app":
      return `Nobody has the LineUp app open yet; the request is queued for the human${o.appUrl ? `. Pairing link: ${o.appUrl}` : ""}${of}`;
    case "waiting":
      return `Waiting for the human to answer ${o.tool}${of}`;
  }
}
