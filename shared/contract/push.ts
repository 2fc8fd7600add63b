// Web Push for the inbox (docs/push.md): the wire shapes between the edge, the inbox object, the PWA and
// its service worker, defined once here. Sending itself is shared/crypto/webpush/index.ts; the decisions shared/inbox/push.ts.
import { z } from "./zod.js";
import type { Envelope } from "./envelope.js";
import { EnvelopeSchema } from "./protocol.js";

export const PUSH_LIMITS = {
  /** A visibility report counts this long; the PWA repeats it every `visibleEveryMs` while it is shown. */
  visibleTtlMs: 70_000,
  visibleEveryMs: 30_000,
  /** Attempts of one push (429/5xx and network errors are retried with backoff, Retry-After wins). */
  maxAttempts: 5,
  retryBaseMs: 5_000,
  retryMaxMs: 10 * 60_000,
  /** A push being sent is leased this long: an object evicted mid-send retries it from the alarm. */
  leaseMs: 30_000,
  /** Pushes one alarm run sends at most (more follow at once in the next run). */
  perRun: 32,
  /** Calls whose pushes an inbox tracks at once (the oldest finished, then the oldest open, go first). */
  maxJobs: 100,
  /** A finished call is remembered this long: late answers get their true outcome, not "invalid". */
  keepEndedMs: 10 * 60_000,
  /** Outcomes kept for the tool log. */
  maxLog: 200,
  /** Reminders: default period, bounds, and how many at most per call. */
  reminderDefaultMin: 10,
  reminderMinMin: 1,
  reminderMaxMin: 120,
  maxReminders: 3,
  /** What a notification shows of a call. */
  maxTitle: 120,
  maxLabel: 40,
  /** Single choices with at most this many options carry them (browsers show 2–4 actions). */
  maxOptions: 4,
  maxAnswer: 80,
  /** TTL of an update (the outcome replacing a notification); a call's own TTL is its remaining time. */
  updateTtlS: 24 * 3600,
  /** Push services keep messages at most 28 days (FCM's limit). */
  maxTtlS: 28 * 24 * 3600,
  /** "The agent is waiting for you" (an agent's idle report, no call): its text, how often per session, its TTL. */
  maxAttentionText: 300,
  attentionGapMs: 60_000,
  attentionTtlS: 3600,
} as const;

/** Tools the app answers by itself: never a notification. */
export const AUTOMATIC_TOOLS: ReadonlySet<string> = new Set(["calculator", "canvas"]);

export type PushLang = "en" | "zh";

// ---------------------------------------------------------------- the inbox socket's one client frame

/** What the device shows right now: the Waiting list (home), one session, something else, nothing. */
export const VisibilityFrame = z
  .object({
    type: z.literal("visible"),
    view: z.enum(["home", "session", "other", "hidden"]),
    session_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{8,64}$/)
      .optional(),
  })
  .strict();
export type VisibilityFrame = z.infer<typeof VisibilityFrame>;
/** The only frame an inbox socket accepts from a device is this small. */
export const MAX_VISIBILITY_FRAME = 200;

export interface DeviceView {
  view: VisibilityFrame["view"];
  session_id?: string;
  at: number;
}

// ---------------------------------------------------------------- request bodies

const B64 = z.string().regex(/^[A-Za-z0-9_=+/-]+$/);

/** `PUT /api/inbox/push`: the device's `PushSubscription.toJSON()` and the key it was made with. */
export const PushSubscribeBody = z
  .object({
    subscription: z
      .object({
        endpoint: z.string().url().max(2048),
        expirationTime: z.number().nullable().optional(),
        keys: z.object({ p256dh: B64.max(128), auth: B64.max(64) }).strict(),
      })
      .strict(),
    /** The applicationServerKey the subscription was made with (base64url): a stale one is refused. */
    application_server_key: B64.max(128),
    lang: z.enum(["en", "zh"]).optional(),
  })
  .strict();

export const PushSettingsBody = z
  .object({
    reminders: z.boolean().optional(),
    reminder_every_min: z.number().int().min(PUSH_LIMITS.reminderMinMin).max(PUSH_LIMITS.reminderMaxMin).optional(),
  })
  .strict();

/** Why an agent wants the human with no call: waiting (default), needs input, finished (docs/push.md). */
export const ATTENTION_REASONS = ["waiting", "needs_input", "completed"] as const;
export type AttentionReason = (typeof ATTENTION_REASONS)[number];

/** `POST /api/inbox/push/attention` (a machine of the inbox): "the agent is waiting for you" in that session. */
export const PushAttentionBody = z
  .object({
    session_id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
    /** Shown as the notification's body in a plaintext session; a sealed session's push never carries it. */
    text: z.string().max(PUSH_LIMITS.maxAttentionText).optional(),
    /** i29-agents (issue 29 item 3): why — the service worker's own words when there is no text (a sealed session). */
    reason: z.enum(ATTENTION_REASONS).optional(),
  })
  .strict();
export type PushAttentionResult = { status: "queued"; devices: number } | { status: "throttled"; retry_after_s: number } | { status: "unknown_session" };

/** `yes` / `no` answer a confirm, `allow` / `deny` a permission (with `choices` also `session` / `always`), `opt:<i>`
 * picks option i of a single choice. Which of them answers a given call: shared/tools/meaning.ts `tapResult`. */
export const PUSH_ACTION_RE = /^(yes|no|allow|deny|session|always|opt:\d{1,2})$/;
export const PushAnswerBody = z.union([
  z.object({ token: z.string().max(128), action: z.string().regex(PUSH_ACTION_RE) }).strict(),
  // A sealed session's answer (docs/e2e.md): the service worker sealed the tool.result's `{result}` itself.
  z.object({ token: z.string().max(128), sealed: EnvelopeSchema }).strict(),
]);

/** `lpt1.<inbox>.<secret>`: single use per call and device; the inbox keeps only its SHA-256. */
export const PUSH_TOKEN_RE = /^lpt1\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/;

// ---------------------------------------------------------------- answers and records

export interface PushSettings {
  reminders: boolean;
  reminder_every_min: number;
}
export const DEFAULT_PUSH_SETTINGS: PushSettings = { reminders: true, reminder_every_min: PUSH_LIMITS.reminderDefaultMin };

export type PushKind = "call" | "reminder" | "update" | "attention";
/** sent (2xx), suppressed (the device was showing it), gone (404/410: deleted), failed (+ status; retried when `retry_at`). */
export type PushLogOutcome = "sent" | "suppressed" | "gone" | "failed";
export interface PushLogEntry {
  at: number;
  session_id: string;
  call_id: string;
  device_id: string;
  kind: PushKind;
  outcome: PushLogOutcome;
  /** The push service's HTTP status (0: no answer, a network error). */
  status?: number;
  /** Why it failed without an HTTP status, e.g. `stale_key`, `invalid_endpoint`. */
  error?: string;
  /** A failed attempt that will be retried then. */
  retry_at?: number;
}

/** `GET /api/inbox/push`: this device's subscription state, the settings and the log (of one session with `?session_id=`). */
export interface PushInfo {
  subscribed: boolean;
  settings: PushSettings;
  log: (PushLogEntry & { device_name?: string })[];
}

/** How a call left the Waiting list (the session reports it; shared/session/report.ts). */
export type CallOutcome = "answered" | "declined" | "timeout" | "cancelled" | "error" | "ended";
export interface ClosedCall {
  call_id: string;
  outcome: CallOutcome;
  /** Client id of who answered (a device id for paired devices). */
  by?: string;
  /** The winning result.message, cut to PUSH_LIMITS.maxAnswer. */
  answer?: string;
}

export type PushAnswerResult =
  | { status: "answered" }
  | { status: "already_answered"; by?: string; answer?: string }
  | { status: "closed"; outcome: CallOutcome }
  | { status: "bad_action" }
  | { status: "invalid" };

/** An answer from a notification: the tapped action, or (sealed sessions, docs/e2e.md) the envelope of a
 * tool.result's sealed part, made by the service worker. */
export type PushAnswerInput = string | { sealed: Envelope };

/** What the session says about an answer from a notification (worker/session.ts → shared/session/push-answer.ts). */
export type SessionPushAnswer = { status: "answered" } | { status: "bad_action" } | { status: "closed"; by?: string; answer?: string; outcome: CallOutcome };

// ---------------------------------------------------------------- the encrypted payload (service worker)

interface PushMessageBase {
  v: 1;
  inbox: string;
  sid: string;
  call: string;
  /** The session's label: the notification's title. */
  title: string;
  lang: PushLang;
}
export interface PushCallMessage extends PushMessageBase {
  kind: "call" | "reminder";
  tool: string;
  /** The question (plaintext sessions carry it; cut to fit the 3993-byte payload). */
  body: string;
  token: string;
  created_at: number;
  deadline_at?: number;
  /** confirm: its button labels (the app's Yes/No when absent). */
  confirm?: { yes?: string; no?: string };
  /** single choice: its options (display copies; the answer is by index). */
  options?: string[];
  /** 1…3 for a reminder. */
  reminder?: number;
  /** A sealed session's call (docs/e2e.md): `body` is "", the service worker opens `preview` with the
   * device's key ("An agent is waiting" when it cannot, or when the preview did not fit). */
  sealed?: { session_id: string; call_id: string; name: string; from: string; epoch: number; preview?: Envelope };
}
export interface PushUpdateMessage extends PushMessageBase {
  kind: "update";
  outcome: CallOutcome;
  /** Who answered: a device's name, or a client id. */
  by?: string;
  answer?: string;
}
/** An agent's "waiting for you" with no call (`lineup hook notify`): `call` is "attention"; `body` "" means the
 * service worker's own words (always so in a sealed session). No actions: a tap opens the session. */
export interface PushAttentionMessage extends PushMessageBase {
  kind: "attention";
  body: string;
  /** Set when not "waiting": the service worker's words for an empty body ("The agent finished"). */
  reason?: AttentionReason;
}
export type PushMessage = PushCallMessage | PushUpdateMessage | PushAttentionMessage;
