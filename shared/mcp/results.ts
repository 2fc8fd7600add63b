// LineUp results → MCP tool results, shared by `lineup mcp` and `POST /mcp`. The text block comes first (hosts
// that show only the first block still see the answer and a line per attachment), then the attachments as MCP
// content blocks. No SDK types here: these shapes are the MCP spec's and fit SDK v1 and v2 alike.
import type { ContentBlock, ToolResultBody } from "../contract/protocol.js";

export type McpContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text: string } | { uri: string; mimeType?: string; blob: string } }
  | { type: "resource_link"; uri: string; name: string; mimeType?: string };

export interface McpCallResult {
  content: McpContent[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

/** Decoded size of base64 data, without decoding it. */
export function base64Bytes(b64: string): number {
  const s = b64.replace(/\s+/g, "");
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((s.length * 3) / 4) - pad);
}

export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const utf8 = new TextEncoder();

/** `[image 1: image/png, 240 KB]`; numbered per kind. */
function describe(blocks: ContentBlock[]): string[] {
  const n = { image: 0, audio: 0, file: 0 };
  const lines: string[] = [];
  for (const b of blocks) {
    if (b.type === "image" || b.type === "audio") {
      n[b.type] += 1;
      lines.push(`[${b.type} ${n[b.type]}: ${b.mimeType}, ${humanSize(base64Bytes(b.data))}]`);
    } else if (b.type === "resource") {
      n.file += 1;
      const r = b.resource;
      const size = r.blob !== undefined ? `, ${humanSize(base64Bytes(r.blob))}` : r.text !== undefined ? `, ${humanSize(utf8.encode(r.text).byteLength)}` : "";
      lines.push(`[file ${n.file}: ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ""}${size}]`);
    }
  }
  return lines;
}

function toMcp(b: ContentBlock): McpContent {
  switch (b.type) {
    case "text":
      return { type: "text", text: b.text };
    case "image":
      return { type: "image", data: b.data, mimeType: b.mimeType };
    case "audio":
      return { type: "audio", data: b.data, mimeType: b.mimeType };
    case "resource": {
      const r = b.resource;
      const mime = r.mimeType !== undefined ? { mimeType: r.mimeType } : {};
      if (r.blob !== undefined) return { type: "resource", resource: { uri: r.uri, ...mime, blob: r.blob } };
      if (r.text !== undefined) return { type: "resource", resource: { uri: r.uri, ...mime, text: r.text } };
      // MCP embedded resources need text or blob; a bare reference is a resource link.
      return { type: "resource_link", uri: r.uri, name: r.uri.split("/").pop() || r.uri, ...mime };
    }
  }
}

/** Fields a provider added beyond message/content (e.g. `selected`, `approved`, `instance_id`, `value`). */
function extras(result: ToolResultBody): string | undefined {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) if (k !== "message" && k !== "content" && v !== undefined) rest[k] = v;
  return Object.keys(rest).length ? `details: ${JSON.stringify(rest)}` : undefined;
}

export function resultToMcp(result: ToolResultBody): McpCallResult {
  const blocks = result.content ?? [];
  const lines = [result.message.trim() === "" && blocks.length === 0 ? "(the human sent an empty reply)" : result.message];
  const more = describe(blocks);
  const ex = extras(result);
  const text = [...lines, ...more, ...(ex ? [ex] : [])].filter((l) => l !== "").join("\n") || "(no text; see the attachments)";
  return { content: [{ type: "text", text }, ...blocks.map(toMcp)] };
}

/** What the model should do next, per error code (error results make agents retry in loops: be explicit). */
const ADVICE: Record<string, string> = {
  declined:
    "The human dismissed this request without answering. Do not send the same request again right away; continue with your best judgement, or ask something different later.",
  unknown_tool: "The human's app does not provide this tool. Call lineup_tools to see what it offers, or use ask_question.",
  unknown_action: "That action does not exist for this tool. Call lineup_tools to see the actions, then call again with a valid one.",
  invalid_arguments: "The arguments do not match the tool's schema. Fix the field named above and call again.",
  instance_gone: 'That canvas/app instance no longer exists (it was closed or never opened). Open a new one (action "open") and use its instance_id.',
  divide_by_zero: "Division by zero is undefined. Do not retry with b = 0.",
  too_many_calls: "Too many requests are waiting for the human (1000 open calls). Wait for answers before sending more.",
  cancelled: "The request was cancelled before the human answered. Do not re-send it in a loop; continue or ask later.",
  session_ended:
    "The LineUp session ended (deleted or expired). The next call starts a new one; tell the user the human must pair again with the new link in the MCP server's log.",
  session_gone:
    "The LineUp session of this token ended (deleted or expired). Tell the user to create a new session and configure its agent token; do not retry in a loop.",
  auth: "The relay refused this server's credentials. Tell the user to check LINEUP_RELAY_KEY / LINEUP_TOKEN. Do not retry in a loop.",
  not_connected: "The bridge cannot reach the LineUp relay. Tell the user; check LINEUP_RELAY_URL and the network. Do not retry in a loop.",
  e2e_sealed:
    "This session is end-to-end encrypted and the relay cannot seal a request for you. Tell the user to configure `lineup mcp` (it seals on their machine) or a plaintext session's token. Do not retry in a loop.",
  unknown_call:
    "Nothing is waiting under this call_id any more: its answer was already returned (possibly to an identical request), or it was cancelled or timed out. Do not call await_answer with it again; if you still need the human, ask again.",
};

export function errorToMcp(code: string, message: string, tool: string): McpCallResult {
  const advice = ADVICE[code] ?? "The call failed. Do not retry the identical call in a loop; adjust or continue without it.";
  return { isError: true, content: [{ type: "text", text: `${tool} failed (${code}): ${message}\n${advice}` }] };
}

/** A timeout is a terminal answer, not an error: error results make agents re-ask in loops. */
export function timeoutToMcp(tool: string, timeoutS: number | undefined, nobodyOpen: boolean, appUrl?: string): McpCallResult {
  const lines = [
    timeoutS === undefined
      ? `No answer came from the human within the request's time limit, so ${tool} ended without a reply.`
      : `No answer came from the human within ${timeoutS} s, so ${tool} ended without a reply.`,
    "Do not ask the same thing again in a loop. Summarise where you are and what you need, continue with the work you can do on your own (or stop at a safe point), and ask again later only if you still need the answer.",
  ];
  if (nobodyOpen) lines.push(`Nobody has the LineUp app open at the moment${appUrl ? `; the human can pair at ${appUrl}` : ""}.`);
  return { content: [{ type: "text", text: lines.join("\n") }] };
}

/**
 * The wait budget ran out before the human answered: a normal (non-error) result that hands the model a
 * handle. The question stays open on the human's phone; `await_answer` picks the answer up.
 */
export function pendingToMcp(tool: string, callId: string, waitedS: number, nobodyOpen: boolean, appUrl?: string): McpCallResult {
  const lines = [
    `The human has not answered ${tool} yet (waited ${Math.round(waitedS)} s). The request stays open on their phone.`,
    `call_id: ${callId}`,
    `Call await_answer with {"call_id": "${callId}"} to keep waiting for the answer. Do not ask the question again (that would only show it twice); you may do other work first and call await_answer later.`,
  ];
  if (nobodyOpen)
    lines.push(`Nobody has the LineUp app open at the moment${appUrl ? `; the human can pair at ${appUrl}` : ""}; the request is queued for them.`);
  const text = lines.join("\n");
  // Some hosts hand the model only structuredContent when it is present, so it carries the instruction too.
  return { content: [{ type: "text", text }], structuredContent: { status: "pending", call_id: callId, tool, message: text } };
}

/** The result of a LineUp call, as the relay ended it, in MCP terms. */
export type CallEnd = { kind: "result"; result: ToolResultBody } | { kind: "error"; code: string; message: string };

/** Shapes a finished call: an answer, the non-error timeout, or an error with advice. */
export function endToMcp(end: CallEnd, tool: string, timeoutS: number | undefined, nobodyOpen: boolean, appUrl?: string): McpCallResult {
  if (end.kind === "result") return resultToMcp(end.result);
  if (end.code === "timeout") return timeoutToMcp(tool, timeoutS, nobodyOpen, appUrl);
  return errorToMcp(end.code, end.message, tool);
}
