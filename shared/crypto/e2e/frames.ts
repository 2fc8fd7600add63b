// Sealing and opening whole LineUp frames (docs/e2e.md "Wiring"): the one place that knows which fields of
// which frame are sealed and which associated data each gets. Used by the agent adapter, the PWA, its
// service worker and the tests alike. Frames are plain JSON objects here (this folder imports nothing
// outside it); the receiver validates what it opened against the protocol's own schemas.
import { E2EError } from "./errors.js";
import { openJson, sealJson, type Envelope, type FrameAad } from "./envelope.js";
import type { ContentKey } from "./keys.js";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Frame = Record<string, unknown>;

/** Where a frame is sealed: the session and the author (`<role>:<client_id>`) as the relay will name it. */
export interface SealContext {
  session_id: string;
  sender: string;
}

/** Finds the content key of an envelope's epoch (a holder keeps every epoch it received). */
export type KeyOf = (epoch: number) => ContentKey | undefined;

/** The sealed fields of each frame type, in the order they are put into the envelope's JSON. */
export const SEALED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  "tool.call": ["arguments"],
  "tool.result": ["result", "error"],
  "tool.cancel": ["reason"],
  message: ["content"],
  status: ["detail"],
  /** Issue 32: the handshake, and the recipient it was sealed for (the relay cannot redirect it). */
  "rtc.signal": ["signal", "for"],
};
/** A tool entry of `tool.list` keeps only these in plaintext (and its actions' names). */
const TOOL_PLAIN = new Set(["name", "type", "actions"]);

export const PREVIEW_TYPE = "tool.call.preview";
/** What a sealed call's preview carries (the inbox's waiting list and push; docs/push.md). */
export interface Preview {
  text: string;
  /** The call's tool (issue 26 audit): the tool `name` beside the envelope is the relay's word, this one the caller's. */
  tool?: string;
  yes_label?: string;
  no_label?: string;
  options?: string[];
}

const idOf = (f: Frame): string => (typeof f.call_id === "string" ? f.call_id : typeof f.id === "string" ? f.id : "");
const str = (v: unknown, what: string): string => {
  if (typeof v !== "string" || v === "") throw new E2EError("bad_format", `frame: ${what} is missing`);
  return v;
};

/** The AAD of a frame's envelope; `type` may be overridden (a reseal travels as its call's `tool.call`). */
export const frameAad = (session_id: string, type: string, call_id: string, sender: string): FrameAad => ({ session_id, type, call_id, sender });

/** Seals a client frame of a sealed session: its sealed fields move into `sealed`, the rest stays. */
export async function sealFrame(ck: ContentKey, ctx: SealContext, frame: Frame): Promise<Frame> {
  const type = str(frame.type, "type");
  if (type === "tool.list") return sealToolList(ck, ctx, frame);
  const fields = SEALED_FIELDS[type];
  if (!fields) return { ...frame }; // tool.ack: nothing to seal
  if (type === "message") str(frame.id, "a sealed message's id");
  const out: Frame = {};
  const inner: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(frame)) (fields.includes(k) ? inner : out)[k] = v;
  // tool.cancel / status without their optional sealed field stay as they are.
  if (Object.keys(inner).length === 0 && type !== "tool.call") return out;
  if (type === "tool.call" && inner.arguments === undefined) inner.arguments = {};
  out.sealed = await sealJson(ck, frameAad(ctx.session_id, type, idOf(frame), ctx.sender), inner);
  return out;
}

async function sealToolList(ck: ContentKey, ctx: SealContext, frame: Frame): Promise<Frame> {
  const tools = Array.isArray(frame.tools) ? (frame.tools as Frame[]) : undefined;
  if (!tools) return { ...frame };
  const sealed = await Promise.all(
    tools.map(async (t) => {
      const name = str(t.name, "tool name");
      const inner: Record<string, unknown> = {};
      const out: Frame = {};
      for (const [k, v] of Object.entries(t)) (TOOL_PLAIN.has(k) ? out : inner)[k] = v;
      if (Array.isArray(t.actions)) {
        inner.actions = t.actions;
        out.actions = (t.actions as Frame[]).map((a) => ({ name: a.name }));
      }
      out.sealed = await sealJson(ck, frameAad(ctx.session_id, "tool.list", name, ctx.sender), inner);
      return out;
    }),
  );
  return { ...frame, tools: sealed };
}

/** Seals a call's preview (AAD type `tool.call.preview`, the call's id and caller). */
export function sealPreview(ck: ContentKey, ctx: SealContext, call_id: string, preview: Preview): Promise<Envelope> {
  return sealJson(ck, frameAad(ctx.session_id, PREVIEW_TYPE, call_id, ctx.sender), preview);
}

export async function openPreview(keyOf: KeyOf, session_id: string, call_id: string, sender: string, envelope: unknown): Promise<Preview> {
  const v = await openWith(keyOf, frameAad(session_id, PREVIEW_TYPE, call_id, sender), envelope);
  if (typeof v !== "object" || v === null || typeof (v as Preview).text !== "string") throw new E2EError("bad_format", "preview: no text");
  return v as Preview;
}

/** The AAD sender of a frame from the relay: `from` on messages, `sender` (set by the relay) elsewhere. */
export function senderOf(frame: Frame): string | undefined {
  const from = frame.from;
  if (frame.type === "message" && typeof from === "object" && from !== null) {
    const f = from as { role?: unknown; client_id?: unknown };
    if (typeof f.role === "string" && typeof f.client_id === "string") return `${f.role}:${f.client_id}`;
  }
  return typeof frame.sender === "string" ? frame.sender : undefined;
}

async function openWith(keyOf: KeyOf, aad: FrameAad, envelope: unknown): Promise<unknown> {
  const e = typeof envelope === "object" && envelope !== null ? (envelope as { e?: unknown }).e : undefined;
  const ck = typeof e === "number" ? keyOf(e) : undefined;
  if (!ck) throw new E2EError("wrong_epoch", `no content key for epoch ${String(e)}`);
  return openJson(ck, aad, envelope);
}

/** True when a frame (from the relay or a client) carries sealed parts. */
export const isSealedFrame = (f: Frame): boolean =>
  f.sealed !== undefined || (f.type === "tool.list" && Array.isArray(f.tools) && (f.tools as Frame[]).some((t) => t.sealed !== undefined));

/**
 * Opens a frame of a sealed session back into its plaintext shape (the fields the v1 frame has). A frame with
 * nothing sealed comes back as it is. Throws E2EError when a part does not open: the caller shows that, never
 * the ciphertext. `resealed` tool.calls open as tool.call (their AAD is the call's).
 */
export async function openFrame(keyOf: KeyOf, session_id: string, frame: Frame): Promise<Frame> {
  const type = str(frame.type, "type");
  if (type === "tool.list") return openToolList(keyOf, session_id, frame);
  if (frame.sealed === undefined) return { ...frame };
  const sender = senderOf(frame);
  if (!sender) throw new E2EError("bad_format", "frame: no sender to open it with");
  const inner = await openWith(keyOf, frameAad(session_id, type, idOf(frame), sender), frame.sealed);
  if (typeof inner !== "object" || inner === null || Array.isArray(inner)) throw new E2EError("bad_format", "sealed part is not an object");
  const allowed = SEALED_FIELDS[type] ?? [];
  const out: Frame = {};
  // A sealed field in plaintext beside the envelope is the relay's, never the author's: left out (issue 26).
  for (const [k, v] of Object.entries(frame)) if (k !== "sealed" && k !== "preview" && !allowed.includes(k)) out[k] = v;
  for (const [k, v] of Object.entries(inner)) {
    if (!allowed.includes(k)) throw new E2EError("bad_format", `sealed part of ${type} has an unexpected field ${k}`);
    out[k] = v;
  }
  return out;
}

async function openToolList(keyOf: KeyOf, session_id: string, frame: Frame): Promise<Frame> {
  if (!Array.isArray(frame.tools)) return { ...frame };
  const tools = await Promise.all(
    (frame.tools as Frame[]).map(async (t) => {
      if (t.sealed === undefined) return t;
      const sender = senderOf(t);
      if (!sender) throw new E2EError("bad_format", "tool entry: no sender to open it with");
      const inner = await openWith(keyOf, frameAad(session_id, "tool.list", str(t.name, "tool name"), sender), t.sealed);
      if (typeof inner !== "object" || inner === null || Array.isArray(inner)) throw new E2EError("bad_format", "sealed tool is not an object");
      const out: Frame = { ...(inner as Frame), name: t.name, type: t.type };
      if (t.sender !== undefined) out.sender = t.sender;
      return out;
    }),
  );
  return { ...frame, tools };
}

/** A `tool.reseal` for an open call after a re-key: the caller seals the same arguments under the new key. */
export async function sealReseal(ck: ContentKey, ctx: SealContext, call_id: string, args: Record<string, unknown>, preview?: Preview): Promise<Frame> {
  const out: Frame = {
    type: "tool.reseal",
    call_id,
    sealed: await sealJson(ck, frameAad(ctx.session_id, "tool.call", call_id, ctx.sender), { arguments: args }),
  };
  if (preview) out.preview = await sealPreview(ck, ctx, call_id, preview);
  return out;
}
