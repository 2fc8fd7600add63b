// The JSON a notification push carries (docs/push.md, "What is sent"), always within the 3993 bytes one
// aes128gcm record holds: a long question is cut, never refused.
import type { WaitingCall } from "../contract/inbox.js";
import {
  type AttentionReason,
  PUSH_LIMITS,
  type ClosedCall,
  type PushAttentionMessage,
  type PushCallMessage,
  type PushLang,
  type PushMessage,
  type PushUpdateMessage,
} from "../contract/push.js";
import { cut } from "../text/cut.js";
import { MAX_PAYLOAD_BYTES } from "../crypto/webpush/index.js";

const bytes = (s: string) => new TextEncoder().encode(s).length;

export interface CallPushInput {
  inbox: string;
  sid: string;
  label: string;
  lang: PushLang;
  call: WaitingCall;
  token: string;
  reminder?: number;
  /** The inbox's epoch (sealed calls without a preview name it for the service worker). */
  epoch?: number;
}

export function callMessage(i: CallPushInput): PushCallMessage {
  const m: PushCallMessage = {
    v: 1,
    kind: i.reminder ? "reminder" : "call",
    inbox: i.inbox,
    sid: i.sid,
    call: i.call.call_id,
    title: cut(i.label, PUSH_LIMITS.maxTitle),
    lang: i.lang,
    tool: i.call.name,
    body: i.call.text,
    token: i.token,
    created_at: i.call.created_at,
  };
  if (i.call.deadline_at !== undefined) m.deadline_at = i.call.deadline_at;
  if (i.call.sealed) {
    // Never text: the relay has none; the sealed preview and what the service worker needs to open it.
    m.body = "";
    m.sealed = { session_id: i.sid, call_id: i.call.call_id, name: i.call.name, from: i.call.from ?? "", epoch: i.call.preview?.e ?? i.epoch ?? 0 };
    if (i.call.preview) m.sealed.preview = i.call.preview;
    if (i.reminder) m.reminder = i.reminder;
    return m;
  }
  if (i.call.name === "confirm") {
    m.confirm = {};
    if (i.call.yes_label) m.confirm.yes = i.call.yes_label;
    if (i.call.no_label) m.confirm.no = i.call.no_label;
  }
  if (i.call.options?.length) m.options = i.call.options.slice(0, PUSH_LIMITS.maxOptions);
  if (i.reminder) m.reminder = i.reminder;
  return m;
}

export function updateMessage(i: { inbox: string; sid: string; label: string; lang: PushLang; closed: ClosedCall; by?: string }): PushUpdateMessage {
  const m: PushUpdateMessage = {
    v: 1,
    kind: "update",
    inbox: i.inbox,
    sid: i.sid,
    call: i.closed.call_id,
    title: cut(i.label, PUSH_LIMITS.maxTitle),
    lang: i.lang,
    outcome: i.closed.outcome,
  };
  if (i.by) m.by = cut(i.by, 64);
  if (i.closed.answer !== undefined) m.answer = cut(i.closed.answer, PUSH_LIMITS.maxAnswer);
  return m;
}

export function attentionMessage(i: {
  inbox: string;
  sid: string;
  label: string;
  lang: PushLang;
  text: string;
  reason?: AttentionReason | undefined;
}): PushAttentionMessage {
  return {
    v: 1,
    kind: "attention",
    inbox: i.inbox,
    sid: i.sid,
    call: "attention",
    title: cut(i.label, PUSH_LIMITS.maxTitle),
    lang: i.lang,
    body: cut(i.text, PUSH_LIMITS.maxAttentionText),
    ...(i.reason !== undefined && i.reason !== "waiting" ? { reason: i.reason } : {}),
  };
}

/**
 * The message as JSON of at most MAX_PAYLOAD_BYTES: the question is shortened first (halving), then the
 * options go (the notification then opens the app), then the title. Ids and the token are never cut.
 */
export function encodeMessage(m: PushMessage): string {
  // Bounded by its construction (a 120-character title, a 300-character body): always fits.
  if (m.kind === "attention") return JSON.stringify(m);
  let out = JSON.stringify(m);
  if (bytes(out) <= MAX_PAYLOAD_BYTES) return out;
  const copy: PushMessage = { ...m };
  // A sealed preview that does not fit goes whole (a cut envelope opens nothing).
  if (copy.kind !== "update" && copy.sealed?.preview) {
    const { preview: _p, ...rest } = copy.sealed;
    copy.sealed = rest;
    out = JSON.stringify(copy);
    if (bytes(out) <= MAX_PAYLOAD_BYTES) return out;
  }
  if (copy.kind !== "update") {
    for (let n = [...copy.body].length; n > 16 && bytes(out) > MAX_PAYLOAD_BYTES; n = Math.floor(n / 2)) {
      copy.body = cut(m.kind !== "update" ? m.body : "", n);
      out = JSON.stringify(copy);
    }
    if (bytes(out) > MAX_PAYLOAD_BYTES) {
      delete copy.options;
      copy.body = cut(copy.body, 16);
      out = JSON.stringify(copy);
    }
  }
  if (bytes(out) > MAX_PAYLOAD_BYTES) {
    copy.title = cut(copy.title, 16);
    if (copy.kind === "update") delete copy.answer;
    out = JSON.stringify(copy);
  }
  return out;
}
