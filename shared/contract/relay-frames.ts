// Relay → client frames (`lineup/1`), the sealed shapes only a sealed session forwards, error codes and close codes.
import type { Envelope } from "./envelope.js";
import type { PROTOCOL, Role } from "./limits.js";
import type { ContentBlock, ToolDef, ToolError, ToolResultBody } from "./tools.js";
import type { SealedToolDef } from "./frames.js";
import type { RtcSignalOut } from "./rtc.js";

export interface PeerState {
  agent: { online: boolean; status?: AgentStatus };
  apps: number;
}
export interface AgentStatus {
  state: string;
  detail?: string;
  /** Sealed sessions: the sealed `{detail}` and its author. */
  sealed?: Envelope;
  sender?: string;
}
export interface HelloFrame {
  type: "hello";
  protocol: typeof PROTOCOL;
  session_id: string;
  role: Role;
  client_id: string;
  peers: PeerState;
  /** Only in a sealed session: the inbox epoch the relay knows (docs/e2e.md). */
  sealed?: { epoch: number };
}
export interface ToolListOut {
  type: "tool.list";
  tools: ToolDef[];
}
export interface ToolCallOut {
  type: "tool.call";
  call_id: string;
  name: string;
  action?: string;
  arguments: Record<string, unknown>;
  timeout_s?: number;
  deadline: number;
  from: Role;
  /** Issue 28: the caller is the relay's remote-MCP endpoint (`POST /mcp`, a `~mcp.` internal client), not
   * the agent's socket: the agent's presence says nothing about whether it waits (docs/mcp.md). */
  via?: "mcp";
}
/** A call of a sealed session as forwarded: `sealed`/`preview` instead of `arguments`, its author as `sender`. */
export interface SealedToolCallOut {
  type: "tool.call";
  call_id: string;
  name: string;
  action?: string;
  timeout_s?: number;
  deadline: number;
  from: Role;
  sender: string;
  sealed: Envelope;
  preview?: Envelope;
  /** Set when the caller re-sealed it after a re-key: the receiver replaces the card it shows. */
  resealed?: true;
}
export interface ToolResultOut {
  type: "tool.result";
  call_id: string;
  name: string;
  action?: string;
  result?: ToolResultBody;
  error?: ToolError;
  answered_by?: string;
  /** Sealed sessions: the sealed `{result}`/`{error}`, its author, and the instance id in plaintext. */
  sealed?: Envelope;
  sender?: string;
  instance_id?: string;
}
export type CancelReason = "answered" | "cancelled" | "timeout";
export interface ToolCancelOut {
  type: "tool.cancel";
  call_id: string;
  reason: CancelReason;
  /** With reason "answered": the answering device's name (or client id) and the winning result.message. */
  answered_by?: string;
  answer?: string;
  /**
   * Sealed sessions, reason "answered": the winning `tool.result`'s envelope as its device sent it, and that
   * device as `role:client_id` (the envelope's associated-data sender). Every device of the inbox opens it;
   * the relay cannot. Left out above SEALED_ANSWER_MAX bytes (docs/e2e.md rule 7).
   */
  answer_sealed?: Envelope;
  answer_sender?: string;
  /** Sealed sessions: a caller's sealed `{reason}` and its author. */
  sealed?: Envelope;
  sender?: string;
}
export interface MessageOut {
  type: "message";
  id: string;
  seq?: number;
  from: { role: Role; client_id: string };
  content: ContentBlock[];
  ts: number;
  /** Set on a kept entry whose large bodies the history budget replaced with placeholders. */
  elided?: boolean;
}
/** A message of a sealed session: `sealed` instead of `content` (none once the history budget elided it). */
export interface SealedMessageOut {
  type: "message";
  id: string;
  seq?: number;
  from: { role: Role; client_id: string };
  sealed?: Envelope;
  ts: number;
  elided?: boolean;
}

export interface PresenceOut extends PeerState {
  type: "presence";
  im?: { online: boolean };
}
export interface ErrorOut {
  type: "error";
  code: ErrorCode;
  message: string;
  call_id?: string;
}
export type RelayFrame = HelloFrame | ToolListOut | ToolCallOut | ToolResultOut | ToolCancelOut | MessageOut | PresenceOut | ErrorOut;
/** Frames only a sealed session forwards (docs/e2e.md); its clients open them (shared/client/codec.ts) into RelayFrames. */
export type SealedRelayFrame = SealedToolCallOut | SealedMessageOut;
/** A sealed session's tool definition as kept and listed: names in plaintext, the rest sealed, its author as `sender`. */
export type SealedToolDefOut = SealedToolDef & { sender: string };
/** A registration's tool as the relay keeps it: plaintext (v1) or sealed. */
export type KeptToolDef = ToolDef | SealedToolDefOut;
/** A tool list as the relay sends it: a sealed session's lists carry sealed definitions. */
export interface KeptToolListOut {
  type: "tool.list";
  tools: KeptToolDef[];
}
/** What the relay sends and keeps: the v1 frames and, in a sealed session, the sealed ones. */
export type OutFrame = RelayFrame | SealedRelayFrame | KeptToolListOut | RtcSignalOut;
/** A message as kept in the history: plain, or sealed (no `content`; nothing at all once elided). */
export type KeptMessage = MessageOut | SealedMessageOut;
/** A sealed session's frame (a call without `arguments`, a message without `content`): the relay cannot read it. */
export const isSealedFrame = (f: OutFrame): f is SealedRelayFrame =>
  (f.type === "tool.call" && !("arguments" in f)) || (f.type === "message" && !("content" in f));
export const isSealedTool = (t: KeptToolDef): t is SealedToolDefOut => "sealed" in t;

/** Error codes of `error` frames (protocol problems with a client's own frame). */
export type ErrorCode =
  | "bad_json"
  | "bad_frame"
  | "too_large"
  | "forbidden"
  | "rate_limited"
  | "revoked"
  | "unknown_call"
  | "duplicate_call"
  | "over_budget"
  | "tool_conflict"
  | "stale_epoch"
  | "peer_offline"
  | "internal";

/** Error codes the relay itself puts in a `tool.result` (a call that cannot go on). */
export type CallErrorCode =
  | "unknown_tool"
  | "unknown_action"
  | "invalid_arguments"
  | "too_many_calls"
  | "instance_gone"
  | "timeout"
  | "over_budget"
  | "im_undeliverable";

export { CLOSE } from "./close.js";
