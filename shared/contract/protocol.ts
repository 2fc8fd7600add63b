// The LineUp relay wire contract (`lineup/1`) as one zod module, imported by the Worker, the Durable
// Object, the PWA, the agent adapter and the tests. Frames are parsed once, here, at the edge.
import { z } from "zod";
import { isEnvelope, type Envelope } from "../crypto/e2e/envelope.js";

export type { Envelope };

export const PROTOCOL = "lineup/1";
export const SUBPROTOCOL = "lineup.v1";
export const TOKEN_SUBPROTOCOL_PREFIX = "lineup.token.";

/** Every default and limit of the contract (docs/protocol.md lists them). */
export const LIMITS = {
  maxFrameBytes: 1024 * 1024,
  maxOpenCalls: 1000,
  defaultTimeoutS: 600,
  minTimeoutS: 1,
  maxTimeoutS: 86_400,
  historySize: 200,
  resultRetentionMs: 24 * 60 * 60 * 1000,
  maxCallIdLength: 128,
  maxStatusState: 64,
  maxStatusDetail: 1024,
  maxToolsPerRegistration: 256,
  /** Per-connection token bucket: frames per second refilled, and the burst size (room for a client to
   * fill the session's 1000 open calls at once). */
  rateLimitPerS: 200,
  rateLimitBurst: 1500,
  defaultSessionTtlS: 30 * 24 * 3600,
  minSessionTtlS: 60,
  maxSessionTtlS: 365 * 24 * 3600,
  maxLabel: 120,
  maxHttpBodyBytes: 1024 * 1024,
  maxHttpWaitS: 55,
  defaultHttpWaitS: 25,
  /** Deepest nesting of arrays/objects in a frame: deeper JSON overflows the stack of recursive code. */
  maxJsonDepth: 100,
  // ---- budgets inside a session (issue 11): one token holder cannot fill, brick or slow it for others.
  /** Bytes (UTF-8 of the stored JSON) of everything a session keeps: call arguments, kept results, history,
   * registrations (and the WuKongIM outbox). A write past it is refused with `over_budget`. */
  sessionBudgetBytes: 32 * 1024 * 1024,
  /** Bytes of the kept message history; past it the oldest large bodies become placeholders (the last
   * 200 entries always stay, as entries). */
  historyBudgetBytes: 8 * 1024 * 1024,
  /** A message body at least this large is replaced by a placeholder first when the history is over budget. */
  historyLargeBodyBytes: 1024,
  /** Text (UTF-8) of one message, all its text blocks together. */
  maxMessageTextBytes: 64 * 1024,
  /** One client's registration (its `tools` as JSON). */
  maxRegistrationBytes: 256 * 1024,
  /** One tool's or action's description, in characters. */
  maxDescriptionChars: 4096,
  /** One tool's or action's `inputSchema` as JSON. */
  maxSchemaBytes: 64 * 1024,
  /** A registration of a client not connected for this long is dropped (v1 keeps them "connected or not"). */
  registrationIdleMs: 7 * 24 * 60 * 60 * 1000,
  /** Open WebSocket connections per session. */
  maxConnections: 64,
  /** Frames per second (and burst) for one token across all its connections, and for its HTTP calls:
   * this many times the per-connection rate. */
  tokenRateFactor: 2,
  /** Rows the alarm closes or forgets per run; more wait for the next run, right after. */
  maxRowsPerTick: 200,
  /** Messages per page of `GET /api/sessions/:sid/messages`. */
  maxHistoryPage: 100,
} as const;

/** Caller identity of calls made over HTTP (§7): `~` is outside the client id alphabet, so no socket can claim it. */
export const HTTP_CLIENT_ID = "~http";

export const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
export const CLIENT_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** Client ids of the relay's own callers (`~` is outside the client alphabet, so no socket can claim one). */
export const INTERNAL_CLIENT_RE = /^~[A-Za-z0-9_.-]{1,63}$/;
export const SESSION_ID_RE = /^[A-Za-z0-9_-]{8,64}$/;

export type Role = "agent" | "app";
export const otherRole = (r: Role): Role => (r === "agent" ? "app" : "agent");

// ---------------------------------------------------------------- shapes

const JsonObject = z.record(z.string(), z.unknown());

export const ContentBlock = z.union([
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("image"), data: z.string(), mimeType: z.string() }),
  z.looseObject({ type: z.literal("audio"), data: z.string(), mimeType: z.string() }),
  z.looseObject({
    type: z.literal("resource"),
    resource: z.looseObject({
      uri: z.string(),
      mimeType: z.string().optional(),
      text: z.string().optional(),
      blob: z.string().optional(),
    }),
  }),
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

const ToolName = z.string().regex(NAME_RE, "1-64 chars of [A-Za-z0-9_.-]");
const InputSchema = JsonObject;

export const ActionDef = z.looseObject({
  name: ToolName,
  description: z.string().default(""),
  inputSchema: InputSchema.default({ type: "object" }),
});
export type ActionDef = z.infer<typeof ActionDef>;

export const ToolDef = z.discriminatedUnion("type", [
  z.looseObject({
    name: ToolName,
    type: z.literal("action"),
    description: z.string().default(""),
    inputSchema: InputSchema.default({ type: "object" }),
  }),
  z.looseObject({
    name: ToolName,
    type: z.enum(["toolset", "app"]),
    description: z.string().default(""),
    actions: z.array(ActionDef).max(256),
  }),
]);
export type ToolDef = z.infer<typeof ToolDef>;

export const ToolError = z.looseObject({ code: z.string().min(1).max(64), message: z.string() });
export type ToolError = z.infer<typeof ToolError>;

export const ToolResultBody = z.looseObject({
  message: z.string(),
  content: z.array(ContentBlock).optional(),
  instance_id: z.string().optional(),
});
export type ToolResultBody = z.infer<typeof ToolResultBody>;

const CallId = z.string().min(1).max(LIMITS.maxCallIdLength);

// ---------------------------------------------------------------- client → relay

export const ToolListIn = z.object({
  type: z.literal("tool.list"),
  tools: z.array(ToolDef).max(LIMITS.maxToolsPerRegistration).optional(),
});
export const ToolCallIn = z.object({
  type: z.literal("tool.call"),
  call_id: CallId,
  name: ToolName,
  action: z.string().min(1).max(64).optional(),
  arguments: JsonObject.default({}),
  timeout_s: z.number().finite().optional(),
});
export const ToolResultIn = z
  .object({
    type: z.literal("tool.result"),
    call_id: CallId,
    name: z.string().optional(),
    action: z.string().optional(),
    result: ToolResultBody.optional(),
    error: ToolError.optional(),
  })
  .refine((f) => (f.result === undefined) !== (f.error === undefined), {
    message: "exactly one of result or error",
  });
export const ToolCancelIn = z.object({
  type: z.literal("tool.cancel"),
  call_id: CallId,
  reason: z.string().max(256).optional(),
});
export const ToolAckIn = z.object({ type: z.literal("tool.ack"), call_id: CallId });
export const MessageIn = z.object({
  type: z.literal("message"),
  content: z.array(ContentBlock).min(1).max(64),
  id: z.string().min(1).max(128).optional(),
});
export const StatusIn = z.object({
  type: z.literal("status"),
  state: z.string().min(1).max(LIMITS.maxStatusState),
  detail: z.string().max(LIMITS.maxStatusDetail).optional(),
});

export const ClientFrame = z.union([ToolListIn, ToolCallIn, ToolResultIn, ToolCancelIn, ToolAckIn, MessageIn, StatusIn]);
export type ClientFrame = z.infer<typeof ClientFrame>;
export type ClientFrameType = ClientFrame["type"];
export type ClientFrameOf<T extends ClientFrameType> = Extract<ClientFrame, { type: T }>;
export const CLIENT_FRAME_TYPES = ["tool.list", "tool.call", "tool.result", "tool.cancel", "tool.ack", "message", "status"] as const;
const frameSchemas: Record<ClientFrameType, z.ZodType> = {
  "tool.list": ToolListIn,
  "tool.call": ToolCallIn,
  "tool.result": ToolResultIn,
  "tool.cancel": ToolCancelIn,
  "tool.ack": ToolAckIn,
  message: MessageIn,
  status: StatusIn,
};

// ---------------------------------------------------------------- sealed sessions (docs/e2e.md "Wiring")

/** An envelope exactly as shared/e2e checks it: `{v:1, e, n, c}`, nothing else. */
export const EnvelopeSchema = z.custom<Envelope>((v) => isEnvelope(v), "not an envelope {v:1, e, n, c}");
const SealedAction = z.object({ name: ToolName });
export const SealedToolDef = z.object({ name: ToolName, type: z.enum(["action", "toolset", "app"]), actions: z.array(SealedAction).max(256).optional(), sealed: EnvelopeSchema });
export type SealedToolDef = z.infer<typeof SealedToolDef>;
export const SealedToolListIn = z.object({ type: z.literal("tool.list"), tools: z.array(SealedToolDef).max(LIMITS.maxToolsPerRegistration).optional() });
export const SealedToolCallIn = z.object({
  type: z.literal("tool.call"),
  call_id: CallId,
  name: ToolName,
  action: z.string().min(1).max(64).optional(),
  timeout_s: z.number().finite().optional(),
  sealed: EnvelopeSchema,
  preview: EnvelopeSchema.optional(),
});
export const SealedToolResultIn = z.object({
  type: z.literal("tool.result"),
  call_id: CallId,
  name: z.string().optional(),
  action: z.string().optional(),
  instance_id: z.string().min(1).max(128).optional(),
  sealed: EnvelopeSchema,
});
export const SealedToolCancelIn = z.object({ type: z.literal("tool.cancel"), call_id: CallId, sealed: EnvelopeSchema.optional() });
export const SealedMessageIn = z.object({ type: z.literal("message"), id: z.string().min(1).max(128), sealed: EnvelopeSchema });
export const SealedStatusIn = z.object({ type: z.literal("status"), state: z.string().min(1).max(LIMITS.maxStatusState), sealed: EnvelopeSchema.optional() });
/** New in sealed sessions: the caller re-seals its open call under the current epoch after a re-key. */
export const ToolResealIn = z.object({ type: z.literal("tool.reseal"), call_id: CallId, sealed: EnvelopeSchema, preview: EnvelopeSchema.optional() });

export const SealedFrame = z.union([SealedToolListIn, SealedToolCallIn, SealedToolResultIn, SealedToolCancelIn, ToolAckIn, SealedMessageIn, SealedStatusIn, ToolResealIn]);
export type SealedFrame = z.infer<typeof SealedFrame>;
export type SealedFrameType = SealedFrame["type"];
export type SealedFrameOf<T extends SealedFrameType> = Extract<SealedFrame, { type: T }>;
const sealedSchemas: Record<SealedFrameType, z.ZodType> = {
  "tool.list": SealedToolListIn,
  "tool.call": SealedToolCallIn,
  "tool.result": SealedToolResultIn,
  "tool.cancel": SealedToolCancelIn,
  "tool.ack": ToolAckIn,
  message: SealedMessageIn,
  status: SealedStatusIn,
  "tool.reseal": ToolResealIn,
};
/** Plaintext fields a sealed session refuses (they would reach the relay readable). */
const PLAINTEXT_FIELDS: Record<SealedFrameType, readonly string[]> = {
  "tool.list": [],
  "tool.call": ["arguments"],
  "tool.result": ["result", "error"],
  "tool.cancel": ["reason"],
  "tool.ack": [],
  message: ["content"],
  status: ["detail"],
  "tool.reseal": ["arguments"],
};

/** Which role may send which frame. Everything is symmetric except `status` (agent only). */
export const MAY_SEND: Record<ClientFrameType, readonly Role[]> = {
  "tool.list": ["agent", "app"],
  "tool.call": ["agent", "app"],
  "tool.result": ["agent", "app"],
  "tool.cancel": ["agent", "app"],
  "tool.ack": ["agent", "app"],
  message: ["agent", "app"],
  status: ["agent"],
};

// ---------------------------------------------------------------- relay → client

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
/** Frames only a sealed session forwards (docs/e2e.md). They travel in the v1 slots (shared/session/sealed.ts asWire). */
export type SealedRelayFrame = SealedToolCallOut | SealedMessageOut;

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

// ---------------------------------------------------------------- decoding at the edge

export type Decoded = { ok: true; frame: ClientFrame } | { ok: false; error: ErrorOut };
export type DecodedAny = Decoded | { ok: true; sealed: SealedFrame };

/** Exact UTF-8 length of a string, without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 2; // a surrogate pair: 2 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

const utf8 = new TextEncoder();
export function byteLength(s: string): number {
  // Fast path: a string of n UTF-16 units is at most 3n bytes.
  if (s.length * 3 <= LIMITS.maxFrameBytes) return s.length;
  return utf8.encode(s).byteLength;
}

function err(code: ErrorCode, message: string, call_id?: string): { ok: false; error: ErrorOut } {
  return { ok: false, error: call_id === undefined ? { type: "error", code, message } : { type: "error", code, message, call_id } };
}

/** Parses one raw WebSocket frame (`sealed`: of a sealed session, docs/e2e.md). Never throws. */
export function decodeFrame(raw: string | ArrayBuffer | ArrayBufferView): Decoded;
export function decodeFrame(raw: string | ArrayBuffer | ArrayBufferView, sealed: boolean): DecodedAny;
export function decodeFrame(raw: string | ArrayBuffer | ArrayBufferView, sealed = false): DecodedAny {
  if (typeof raw !== "string") {
    const size = raw.byteLength;
    if (size > LIMITS.maxFrameBytes) return err("too_large", `frame is ${size} bytes; the limit is ${LIMITS.maxFrameBytes}`);
    return err("bad_frame", "binary frames are not part of lineup/1; send UTF-8 JSON text frames");
  }
  if (raw.length > LIMITS.maxFrameBytes || byteLength(raw) > LIMITS.maxFrameBytes) {
    return err("too_large", `frame exceeds ${LIMITS.maxFrameBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return err("bad_json", "frame is not valid JSON");
  }
  // Checked after parsing (so bad JSON stays bad_json): 10,000 levels crashed the handler with a RangeError (found by the fuzzer).
  if (jsonDepth(raw) > LIMITS.maxJsonDepth) return err("bad_frame", `frame nests deeper than ${LIMITS.maxJsonDepth} levels`);
  return sealed ? parseSealedValue(value) : parseFrameValue(value);
}

/** Deepest array/object nesting of JSON text, in one pass without recursion (string contents skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped char
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) max = Math.max(max, ++depth);
    else if (c === 125 || c === 93) depth--;
  }
  return max;
}

export function parseFrameValue(value: unknown): Decoded {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return err("bad_frame", "a frame is one JSON object with a string `type`");
  }
  const rec = value as Record<string, unknown>;
  const type = rec.type;
  const callId = typeof rec.call_id === "string" && rec.call_id.length <= LIMITS.maxCallIdLength ? rec.call_id : undefined;
  if (typeof type !== "string" || !Object.hasOwn(frameSchemas, type)) {
    // Never String() a client's value: {"type":{"toString":1}} makes it throw (found by the fuzzer).
    const shown = typeof type === "string" ? type.slice(0, 40) : type === null ? "null" : typeof type;
    return err("bad_frame", `unknown frame type ${JSON.stringify(shown)}`, callId);
  }
  // A plaintext session carries no sealed parts: one key test per frame (a loop only for a tool list).
  if (rec.sealed !== undefined || rec.preview !== undefined || (type === "tool.list" && Array.isArray(rec.tools) && rec.tools.some((t) => typeof t === "object" && t !== null && "sealed" in t))) {
    return err("bad_frame", `${type}: this session is not sealed; send plaintext fields, not sealed or preview`, callId);
  }
  const parsed = frameSchemas[type as ClientFrameType].safeParse(value);
  if (!parsed.success) return err("bad_frame", `${type}: ${describeIssues(parsed.error)}`, callId);
  return { ok: true, frame: parsed.data as ClientFrame };
}

/** A frame of a sealed session: envelopes where v1 has content, and none of the plaintext fields. */
export function parseSealedValue(value: unknown): DecodedAny {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return err("bad_frame", "a frame is one JSON object with a string `type`");
  const rec = value as Record<string, unknown>;
  const type = rec.type;
  const callId = typeof rec.call_id === "string" && rec.call_id.length <= LIMITS.maxCallIdLength ? rec.call_id : undefined;
  if (typeof type !== "string" || !Object.hasOwn(sealedSchemas, type)) {
    const shown = typeof type === "string" ? type.slice(0, 40) : type === null ? "null" : typeof type;
    return err("bad_frame", `unknown frame type ${JSON.stringify(shown)}`, callId);
  }
  const t = type as SealedFrameType;
  const plain = PLAINTEXT_FIELDS[t].find((k) => rec[k] !== undefined) ?? (t === "tool.list" ? plaintextToolField(rec.tools) : undefined);
  if (plain) return err("bad_frame", `${t}: this session is sealed; ${plain} must travel inside the sealed envelope`, callId);
  const parsed = sealedSchemas[t].safeParse(value);
  if (!parsed.success) return err("bad_frame", `${t}: ${describeIssues(parsed.error)}`, callId);
  return { ok: true, sealed: parsed.data as SealedFrame };
}

/** A tool description or schema in plaintext inside a sealed session's tool list. */
function plaintextToolField(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  for (const t of tools) {
    if (typeof t !== "object" || t === null) continue;
    const o = t as Record<string, unknown>;
    for (const k of ["description", "inputSchema"]) if (o[k] !== undefined) return `tools[].${k}`;
    if (Array.isArray(o.actions)) for (const a of o.actions) if (typeof a === "object" && a !== null && ((a as Record<string, unknown>).description !== undefined || (a as Record<string, unknown>).inputSchema !== undefined)) return "tools[].actions[].description/inputSchema";
  }
  return undefined;
}

export function describeIssues(e: z.ZodError): string {
  return e.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join(".") : "(frame)"}: ${i.message}`)
    .join("; ");
}

// ---------------------------------------------------------------- HTTP bodies

export const CreateSessionBody = z.object({
  ttl_s: z.number().int().min(LIMITS.minSessionTtlS).max(LIMITS.maxSessionTtlS).optional(),
  label: z.string().max(LIMITS.maxLabel).optional(),
  im: z
    .object({
      channel_id: z.string().min(1).max(128),
      channel_type: z.number().int().min(1).max(255),
      /** A group's bound human (uid): the only member who may register tools in it. */
      owner_uid: z.string().min(1).max(128).optional(),
    })
    .optional(),
});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export interface SessionCreated {
  session_id: string;
  agent_token: string;
  app_token: string;
  ws_url: string;
  app_url: string;
  expires_at: number;
}

/** Body of `POST /api/sessions/:sid/calls`: a tool.call frame whose `type` and `call_id` may be omitted. */
export const HttpCallBody = z.object({
  type: z.literal("tool.call").optional(),
  call_id: CallId.optional(),
  name: ToolName,
  action: z.string().min(1).max(64).optional(),
  arguments: JsonObject.default({}),
  timeout_s: z.number().finite().optional(),
});

export interface SessionStatus {
  session_id: string;
  label?: string;
  expires_at: number;
  agent: { online: boolean; status?: AgentStatus };
  apps: number;
  app_clients: string[];
  agent_clients: string[];
  tools: { agent: ToolDef[]; app: ToolDef[] };
  pending_calls: number;
  messages: MessageOut[];
  im?: { channel_id: string; channel_type: number; online?: boolean };
  /** docs/e2e.md: true for a sealed session. */
  sealed: boolean;
}

export function httpError(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

export function clampTimeout(t: number | undefined): number {
  if (t === undefined || !Number.isFinite(t)) return LIMITS.defaultTimeoutS;
  return Math.min(LIMITS.maxTimeoutS, Math.max(LIMITS.minTimeoutS, t));
}

/** Extracts an instance id from a result: `result.instance_id`, else `instance_id: <id>` in `result.message`. */
export function instanceIdOf(result: ToolResultBody | undefined): string | undefined {
  if (!result) return undefined;
  if (typeof result.instance_id === "string" && result.instance_id) return result.instance_id;
  const m = /instance_id\s*[:=]\s*["']?([A-Za-z0-9_.:-]+)/.exec(result.message);
  // "… instance_id: inst_001." — a sentence's final period or colon is not part of the id.
  return m?.[1]?.replace(/[.:]+$/, "") || undefined;
}

/** Stable JSON with sorted keys: how the relay decides two `tool.call`s are identical. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
