// The document of one inbox's Web Push state (docs/push.md) and the ports its hosts give it: the shape shared/inbox/push.ts
// reads and writes, read → modify → write, and the small pure helpers over it.
import type { InboxData } from "./core.js";
import type { WaitingCall } from "../contract/inbox.js";
import {
  type AttentionReason,
  DEFAULT_PUSH_SETTINGS,
  PUSH_LIMITS,
  type ClosedCall,
  type DeviceView,
  type PushAnswerInput,
  type PushKind,
  type PushLang,
  type PushLogEntry,
  type PushSettings,
  type SessionPushAnswer,
} from "../contract/push.js";
import { sha256 } from "../crypto/bytes.js";
import type { PushRequest, VapidKeys } from "../crypto/webpush/index.js";

/** The JWT `sub` when VAPID_SUBJECT is not set and the relay is not on https (docs/push.md). */
export const FALLBACK_VAPID_SUBJECT = "https://lineup-relay.invalid";

export interface PushSub {
  endpoint: string;
  p256dh: string;
  auth: string;
  /** The VAPID public key it was made with: pushes signed with another key would be refused. */
  key: string;
  /** An http://127.0.0.1|localhost endpoint (a fake push service), accepted only where EdgePush.allowLocalHttp held. */
  local: boolean;
  lang: PushLang;
  at: number;
}
export interface JobDevice {
  /** SHA-256 of this device's answer tokens (the latest two: a reminder replaces the notification). */
  tokens: string[];
  /** A push about this call reached its push service: the device gets the update when it ends. */
  notified: boolean;
}
export interface Job {
  sid: string;
  call: WaitingCall;
  at: number;
  reminders: number;
  next_reminder_at?: number;
  devices: Record<string, JobDevice>;
  ended?: { at: number; closed: ClosedCall };
  /** Answered from a notification: repeats of the same answer are answered again (idempotent). */
  answered?: { device: string; action: string };
}
export interface Item {
  id: number;
  job: string;
  device: string;
  kind: PushKind;
  attempt: number;
  due: number;
  reminder?: number;
  /** An attention push (no job): its text, "" for the service worker's own words. */
  text?: string;
  /** An attention push: why, when not "waiting". */
  reason?: AttentionReason;
}
export interface PushData {
  subs: Record<string, PushSub>;
  settings: PushSettings;
  jobs: Record<string, Job>;
  queue: Item[];
  log: PushLogEntry[];
  /** The relay's public origin, learnt from subscriptions (the default VAPID subject when https). */
  origin?: string;
  seq: number;
  /** When each session last queued an attention push (at most one per PUSH_LIMITS.attentionGapMs). */
  attention?: Record<string, number>;
}

export interface PushPorts {
  load(): PushData | undefined;
  save(d: PushData): void;
  inbox(): InboxData | undefined;
  /** What the device's open inbox sockets last said they show. */
  views(deviceId: string): DeviceView[];
  /** Run `pump` at `at` (the one alarm), or never. */
  wake(at: number | undefined): void;
  vapid(): Promise<{ keys: VapidKeys; subject?: string }>;
  /** One request to a push service; throws on a network error. `refused`: not sent (e.g. `blocked_address`), failed for good. */
  send(req: PushRequest): Promise<{ status: number; retryAfter: string | null; refused?: string }>;
  /** Routes the answer into the session as that device (a virtual app peer). */
  answer(sid: string, epoch: number, device: { id: string; name: string }, callId: string, answer: PushAnswerInput): Promise<SessionPushAnswer>;
}

/**
 * A job of `d` that may be changed: a host's store may hand out jobs (and queue items) it shares with its cache, frozen
 * (worker/push-store.ts: a load copies no job, so it costs the same beside 100 jobs as beside one); the first
 * change of one replaces it in `d` with a copy of its own. Every change of a job goes through here.
 */
export function own(d: PushData, key: string): Job | undefined {
  const j = Object.hasOwn(d.jobs, key) ? d.jobs[key] : undefined;
  if (!j || !Object.isFrozen(j)) return j;
  return (d.jobs[key] = structuredClone(j));
}

/** A queue item of `d` that may be changed (frozen ones are shared with a store's cache, as jobs are). */
export function ownItem(d: PushData, id: number): Item | undefined {
  const i = d.queue.findIndex((q) => q.id === id);
  const q = d.queue[i];
  if (!q || !Object.isFrozen(q)) return q;
  return (d.queue[i] = { ...q });
}

export const empty = (): PushData => ({ subs: {}, settings: { ...DEFAULT_PUSH_SETTINGS }, jobs: {}, queue: [], log: [], seq: 0 });
export const jobKey = (sid: string, callId: string) => `${sid}/${callId}`;

export async function tokenHash(secret: string): Promise<string> {
  return sha256(secret);
}

/** RFC 8030 Topic for a call (≤ 32 base64url characters): an undelivered push is replaced by the next one. */
export async function topicOf(key: string): Promise<string> {
  return (await tokenHash(`topic:${key}`)).slice(0, 22);
}

export const backoffMs = (attempt: number) => Math.min(PUSH_LIMITS.retryMaxMs, PUSH_LIMITS.retryBaseMs * 2 ** attempt);
