// Client → relay frames: the v1 wire schemas, a sealed session's schemas (docs/e2e.md "Wiring"), and the ONE
// internal frame both decode into (`InFrame`, whose payload is plain or sealed) that the router handles.
import { z } from "./zod.js";
import { isEnvelope, type Envelope } from "./envelope.js";
import { LIMITS, type Role } from "./limits.js";
import { RtcSignalIn, SealedRtcSignalIn, type RtcSignal } from "./rtc.js";
import { CallId, ContentBlock, JsonObject, ToolDef, ToolError, ToolName, ToolResultBody } from "./tools.js";

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

export const ClientFrame = z.union([ToolListIn, ToolCallIn, ToolResultIn, ToolCancelIn, ToolAckIn, MessageIn, StatusIn, RtcSignalIn]);
export type ClientFrame = z.infer<typeof ClientFrame>;
export type ClientFrameType = ClientFrame["type"];
export type ClientFrameOf<T extends ClientFrameType> = Extract<ClientFrame, { type: T }>;
export const CLIENT_FRAME_TYPES = ["tool.list", "tool.call", "tool.result", "tool.cancel", "tool.ack", "message", "status", "rtc.signal"] as const;
export const frameSchemas: Record<ClientFrameType, z.ZodType> = {
  "tool.list": ToolListIn,
  "tool.call": ToolCallIn,
  "tool.result": ToolResultIn,
  "tool.cancel": ToolCancelIn,
  "tool.ack": ToolAckIn,
  message: MessageIn,
  status: StatusIn,
  "rtc.signal": RtcSignalIn,
};
// ---------------------------------------------------------------- sealed sessions (docs/e2e.md "Wiring")

/** An envelope exactly as shared/e2e checks it: `{v:1, e, n, c}`, nothing else. */
export const EnvelopeSchema = z.custom<Envelope>((v) => isEnvelope(v), "not an envelope {v:1, e, n, c}");
const SealedAction = z.object({ name: ToolName });
export const SealedToolDef = z.object({
  name: ToolName,
  type: z.enum(["action", "toolset", "app"]),
  actions: z.array(SealedAction).max(256).optional(),
  sealed: EnvelopeSchema,
});
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

export const SealedFrame = z.union([
  SealedToolListIn,
  SealedToolCallIn,
  SealedToolResultIn,
  SealedToolCancelIn,
  ToolAckIn,
  SealedMessageIn,
  SealedStatusIn,
  ToolResealIn,
  SealedRtcSignalIn,
]);
export type SealedFrame = z.infer<typeof SealedFrame>;
export type SealedFrameType = SealedFrame["type"];
export type SealedFrameOf<T extends SealedFrameType> = Extract<SealedFrame, { type: T }>;
export const sealedSchemas: Record<SealedFrameType, z.ZodType> = {
  "tool.list": SealedToolListIn,
  "tool.call": SealedToolCallIn,
  "tool.result": SealedToolResultIn,
  "tool.cancel": SealedToolCancelIn,
  "tool.ack": ToolAckIn,
  message: SealedMessageIn,
  status: SealedStatusIn,
  "tool.reseal": ToolResealIn,
  "rtc.signal": SealedRtcSignalIn,
};
/** Plaintext fields a sealed session refuses (they would reach the relay readable). */
export const PLAINTEXT_FIELDS: Record<SealedFrameType, readonly string[]> = {
  "tool.list": [],
  "tool.call": ["arguments"],
  "tool.result": ["result", "error"],
  "tool.cancel": ["reason"],
  "tool.ack": [],
  message: ["content"],
  status: ["detail"],
  "tool.reseal": ["arguments"],
  "rtc.signal": ["signal"],
};

/** Which role may send which frame. Everything is symmetric except `status` (agent only). */
export const MAY_SEND: Record<InFrameType, readonly Role[]> = {
  "tool.list": ["agent", "app"],
  "tool.call": ["agent", "app"],
  "tool.result": ["agent", "app"],
  "tool.cancel": ["agent", "app"],
  "tool.ack": ["agent", "app"],
  message: ["agent", "app"],
  status: ["agent"],
  "tool.reseal": ["agent", "app"],
  "rtc.signal": ["agent", "app"],
};

// ---------------------------------------------------------------- the one internal frame

/** A payload as decoded: readable (a plaintext session) or envelopes the relay cannot open (a sealed one). */
export type Payload<P, S> = { plain: P } | { sealed: S };

/** What a sealed call carries instead of arguments (and keeps in its row's `args`). */
export interface SealedArgs {
  sealed: Envelope;
  preview?: Envelope;
}

/** A sealed result: the envelope and, in plaintext, the instance id an app-type tool opened or closed. */
export interface SealedAnswer {
  sealed: Envelope;
  instance_id?: string;
}

/**
 * Every client frame after decode, plain and sealed alike: one shape per frame type, so the router has one
 * handler per type. Fields the relay never reads (a result's `name`/`action`, a cancel's `reason`) are dropped here.
 */
export type InFrame =
  | { type: "tool.list"; tools?: Payload<ToolDef[], SealedToolDef[]> }
  | { type: "tool.call"; call_id: string; name: string; action?: string; timeout_s?: number; args: Payload<Record<string, unknown>, SealedArgs> }
  | { type: "tool.result"; call_id: string; answer: Payload<{ result?: ToolResultBody; error?: ToolError }, SealedAnswer> }
  | { type: "tool.cancel"; call_id: string; sealed?: Envelope }
  | { type: "tool.ack"; call_id: string }
  | { type: "message"; id?: string; body: Payload<ContentBlock[], Envelope> }
  | { type: "status"; state: string; detail?: Payload<string, Envelope> }
  | { type: "tool.reseal"; call_id: string; args: SealedArgs }
  | { type: "rtc.signal"; id: string; to: string; signal: Payload<RtcSignal, Envelope> };
export type InFrameType = InFrame["type"];
export type InFrameOf<T extends InFrameType> = Extract<InFrame, { type: T }>;

const sealedArgs = (sealed: Envelope, preview: Envelope | undefined): SealedArgs => (preview ? { sealed, preview } : { sealed });
const callHead = (f: { call_id: string; name: string; action?: string | undefined; timeout_s?: number | undefined }) => ({
  call_id: f.call_id,
  name: f.name,
  ...(f.action !== undefined ? { action: f.action } : {}),
  ...(f.timeout_s !== undefined ? { timeout_s: f.timeout_s } : {}),
});

/** A v1 frame (a plaintext session, the IM bridge, a push answer) as the internal frame. */
export function fromPlain(f: ClientFrame): InFrame {
  switch (f.type) {
    case "tool.list":
      return f.tools === undefined ? { type: f.type } : { type: f.type, tools: { plain: f.tools } };
    case "tool.call":
      return { type: f.type, ...callHead(f), args: { plain: f.arguments } };
    case "tool.result":
      return {
        type: f.type,
        call_id: f.call_id,
        answer: { plain: f.result !== undefined ? { result: f.result } : f.error !== undefined ? { error: f.error } : {} },
      };
    case "tool.cancel":
    case "tool.ack":
      return { type: f.type, call_id: f.call_id };
    case "message":
      return f.id === undefined ? { type: f.type, body: { plain: f.content } } : { type: f.type, id: f.id, body: { plain: f.content } };
    case "status":
      return f.detail === undefined ? { type: f.type, state: f.state } : { type: f.type, state: f.state, detail: { plain: f.detail } };
    case "rtc.signal":
      return { type: f.type, id: f.id, to: f.to, signal: { plain: f.signal } };
  }
}

/** A sealed session's frame as the internal frame. */
export function fromSealed(f: SealedFrame): InFrame {
  switch (f.type) {
    case "tool.list":
      return f.tools === undefined ? { type: f.type } : { type: f.type, tools: { sealed: f.tools } };
    case "tool.call":
      return { type: f.type, ...callHead(f), args: { sealed: sealedArgs(f.sealed, f.preview) } };
    case "tool.result":
      return {
        type: f.type,
        call_id: f.call_id,
        answer: { sealed: f.instance_id === undefined ? { sealed: f.sealed } : { sealed: f.sealed, instance_id: f.instance_id } },
      };
    case "tool.cancel":
      return f.sealed === undefined ? { type: f.type, call_id: f.call_id } : { type: f.type, call_id: f.call_id, sealed: f.sealed };
    case "tool.ack":
      return { type: f.type, call_id: f.call_id };
    case "message":
      return { type: f.type, id: f.id, body: { sealed: f.sealed } };
    case "status":
      return f.sealed === undefined ? { type: f.type, state: f.state } : { type: f.type, state: f.state, detail: { sealed: f.sealed } };
    case "tool.reseal":
      return { type: f.type, call_id: f.call_id, args: sealedArgs(f.sealed, f.preview) };
    case "rtc.signal":
      return { type: f.type, id: f.id, to: f.to, signal: { sealed: f.sealed } };
  }
}
