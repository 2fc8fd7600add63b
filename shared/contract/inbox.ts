// The inbox: a human's home on a relay (docs/inbox.md). Its wire shapes are defined once here, for the
// edge (shared/edge/inbox.ts), the inbox object, the agent adapter's CLI and the PWA.
import { z } from "./zod.js";
import type { AttentionReason, ClosedCall } from "./push.js";
import type { Envelope } from "./envelope.js";
import { EnvelopeSchema } from "./protocol.js";

export const INBOX_LIMITS = {
  /** Single-use pairing and join codes live this long. */
  codeTtlMs: 10 * 60_000,
  /** Open codes per inbox (older ones are dropped first). */
  maxOpenCodes: 16,
  maxDevices: 32,
  maxMachines: 16,
  /** Sessions attached to one inbox; the oldest ended ones go first, then the least recently active. */
  maxSessions: 200,
  /** Waiting calls listed per session in the inbox state. */
  maxWaitingPerSession: 20,
  /** A waiting call's text in the inbox state, in characters. */
  maxWaitingText: 280,
  maxName: 64,
  maxProjectDir: 512,
  /** last_seen is written at most this often per device or machine. */
  lastSeenEveryMs: 60_000,
  /** Calls that recently left a session's Waiting list, kept in the inbox state for `lineup connect`'s log. */
  maxRecentPerSession: 3,
  /** …for this long after they left. */
  recentTtlMs: 10 * 60_000,
  /** A recent call's text, in characters. */
  maxRecentText: 120,
  /** The inbox socket coalesces changes into one state frame per this many ms. */
  pushDebounceMs: 100,
  /** Ending a revoked machine's sessions: the retry is armed this long after the revocation (it matters
   * only if the inbox is evicted before its first attempt); after a failed attempt 2 s, 4 s… at most
   * `endRetryMaxMs` apart, until the session ended or expired (docs/inbox.md "Revocation"). */
  endRetryBaseMs: 1000,
  endRetryMaxMs: 60_000,
} as const;

/** Reserved client-id prefix: only a device credential connects as `dv_…` (its device id). */
export const DEVICE_ID_PREFIX = "dv_";
export const MACHINE_ID_PREFIX = "mc_";
export const INBOX_ID_RE = /^[A-Za-z0-9_-]{12}$/;
export const DEVICE_ID_RE = /^dv_[A-Za-z0-9_-]{10}$/;
export const MACHINE_ID_RE = /^mc_[A-Za-z0-9_-]{10}$/;

/**
 * Credentials: `lud1.<inbox>.<device>.<secret>` (a device) and `lum1.<inbox>.<machine>.<secret>` (an agent
 * machine). The relay keeps only SHA-256 of the secret. Only [A-Za-z0-9._-]: valid in a header and as a
 * WebSocket subprotocol (`lineup.token.<credential>`).
 */
export type CredentialKind = "device" | "machine";
export interface ParsedCredential {
  kind: CredentialKind;
  inbox: string;
  id: string;
  secret: string;
}

export function parseCredential(s: string): ParsedCredential | undefined {
  const m = /^lu([dm])1\.([A-Za-z0-9_-]{12})\.((?:dv|mc)_[A-Za-z0-9_-]{10})\.([A-Za-z0-9_-]{43})$/.exec(s);
  if (!m) return undefined;
  const kind: CredentialKind = m[1] === "d" ? "device" : "machine";
  if ((kind === "device") !== m[3]!.startsWith(DEVICE_ID_PREFIX)) return undefined;
  return { kind, inbox: m[2]!, id: m[3]!, secret: m[4]! };
}

export function formatCredential(c: ParsedCredential): string {
  return `lu${c.kind === "device" ? "d" : "m"}1.${c.inbox}.${c.id}.${c.secret}`;
}

/** Pairing (device) and join (machine) codes: `<inbox>.<secret>`, single use, 10 minutes. */
export function parseCode(s: string): { inbox: string; secret: string } | undefined {
  const m = /^([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{16})$/.exec(s.trim());
  return m ? { inbox: m[1]!, secret: m[2]! } : undefined;
}

// ---------------------------------------------------------------- request bodies

const Name = z.string().trim().min(1).max(INBOX_LIMITS.maxName);

export const CreateInboxBody = z.object({ machine_name: Name.optional() }).strict();
export const RedeemPairingBody = z.object({ code: z.string().max(64), name: Name.optional() }).strict();
export const RedeemJoinBody = z.object({ code: z.string().max(64), machine_name: Name.optional() }).strict();
export const RenameBody = z.object({ name: Name }).strict();
export const InboxSessionBody = z
  .object({
    label: z.string().max(120).optional(),
    project_dir: z.string().max(INBOX_LIMITS.maxProjectDir).optional(),
    host: z.string().max(INBOX_LIMITS.maxName).optional(),
    ttl_s: z.number().int().optional(),
    /** docs/e2e.md: a sealed session (machine credential only; 409 e2e_off while the inbox's epoch is 0). */
    sealed: z.boolean().optional(),
  })
  .strict();

// ---------------------------------------------------------------- answers

export interface MachineCreated {
  inbox_id: string;
  machine_id: string;
  machine_credential: string;
}
export interface DevicePaired {
  inbox_id: string;
  device_id: string;
  device_credential: string;
  name: string;
}
export interface CodeIssued {
  code: string;
  /** For pairing codes: the link that pairs a device (`<relay>/#pair=<code>`). */
  url?: string;
  expires_at: number;
}

export interface DeviceInfo {
  id: string;
  name: string;
  paired_at: number;
  last_seen: number;
}
export interface MachineInfo {
  id: string;
  name: string;
  joined_at: number;
  last_seen: number;
}
export interface WaitingCall {
  call_id: string;
  name: string;
  /** The question, title or prompt of the call, cut to maxWaitingText. */
  text: string;
  created_at: number;
  deadline_at?: number;
  // What a push notification needs (docs/push.md), bounded: labels and options cut to 40 characters.
  /** confirm: its own button labels, when the agent gave them. */
  yes_label?: string;
  no_label?: string;
  /** single choice with at most 4 options: them (answered by index, so a cut label still picks right). */
  options?: string[];
  // Sealed sessions (docs/e2e.md): `text` is "", no labels or options; the caller's sealed preview instead.
  sealed?: true;
  preview?: Envelope;
  /** The caller as `role:client_id` (the preview's AAD sender). */
  from?: string;
}
/** What a session reports to its inbox (shared/session/report.ts). */
export interface SessionReport {
  agent_online: boolean;
  pending: number;
  last_activity: number;
  waiting: WaitingCall[];
  /** Calls that left `waiting` since the last report, and how (push updates the notifications: docs/push.md). */
  closed?: ClosedCall[];
  /** The session ended (deleted or expired): the inbox drops it. */
  ended?: boolean;
}
/** A call that left a session's Waiting list, and how (outcome, who answered, the answer when not sealed). */
export interface RecentCall extends ClosedCall {
  name: string;
  /** Its text as it was listed, cut to maxRecentText ("" in sealed sessions). */
  text: string;
  /** When it left the list. */
  at: number;
}
/**
 * i29-room (issue 29 item 3): what the agent last said it wants with no call — "needs you" or "finished" —
 * set by its attention report (`POST /api/inbox/push/attention` with `reason`, shared/contract/push.ts), shown on
 * the session's home row until a device opens the session or a new call waits in it (docs/inbox.md).
 */
export interface SessionAttention {
  reason: Exclude<AttentionReason, "waiting">;
  /** When the report arrived (the relay's clock). */
  at: number;
}
export interface InboxSession extends SessionReport {
  session_id: string;
  /** i29-room: the agent's last "needs you" / "finished" not yet seen; absent otherwise. */
  attention?: SessionAttention;
  /** The last few calls that left `waiting` (newest last), for a terminal that shows them as they happen. */
  recent?: RecentCall[];
  label: string;
  project_dir?: string;
  host?: string;
  machine_id?: string;
  created_at: number;
  expires_at: number;
  /** docs/e2e.md: a sealed session. */
  sealed?: boolean;
}
export interface InboxState {
  type: "inbox";
  inbox_id: string;
  you: { kind: CredentialKind; id: string };
  devices: DeviceInfo[];
  machines: MachineInfo[];
  sessions: InboxSession[];
  /** Bumped on every change of the inbox policy (GET /api/inbox/policy reads it). */
  policy_version: number;
  /** docs/e2e.md: the key state's summary (`pending`: hellos waiting for a sponsor). */
  e2e?: { epoch: number; rekey_needed: boolean; pending: number };
}

/**
 * A change of one session only (its report, its "needs you" mark, seen): sent to each device socket instead of the
 * whole InboxState, which the socket's first frame carries (issue 33: a call must not cost each phone the whole
 * inbox). `session` absent: the session left the list (ended or expired). shared/inbox/view.ts applies it.
 */
export interface InboxSessionFrame {
  type: "inbox.session";
  inbox_id: string;
  session_id: string;
  session?: InboxSession;
}

export const POLICY_LIMITS = { maxRules: 200, maxRuleChars: 512 } as const;
const Rules = z.array(z.string().min(1).max(POLICY_LIMITS.maxRuleChars)).max(POLICY_LIMITS.maxRules);
/** The policy's plaintext lists: what `PUT` takes while E2E is off, and what a sealed policy holds inside. */
export const PolicyLists = z.object({ allow: Rules.optional(), ask: Rules.optional(), deny: Rules.optional() }).strict();
/** A sealed policy's envelope, as JSON: ≤ 512 KiB (three full lists of ASCII rules take about 415 KiB sealed). */
export const SEALED_POLICY_MAX_CHARS = 512 * 1024;
const SealedPolicy = EnvelopeSchema.refine(
  (e) => JSON.stringify(e).length <= SEALED_POLICY_MAX_CHARS,
  `a sealed policy is at most ${SEALED_POLICY_MAX_CHARS} characters`,
);
/**
 * `PUT /api/inbox/policy`: plaintext lists while the inbox's epoch is 0; with E2E on only `sealed` (the
 * lists sealed under the current epoch for version `base_version + 1`, docs/e2e.md "The inbox policy").
 */
const PlainPolicyBody = z.object({ permissions: PolicyLists, base_version: z.number().int().optional() }).strict();
const SealedPolicyBody = z.object({ sealed: SealedPolicy, base_version: z.number().int().min(0) }).strict();
export type InboxPolicyWrite = z.infer<typeof PlainPolicyBody> | z.infer<typeof SealedPolicyBody>;
/** Picks the form by its key (`sealed` or not), so a refusal names the field at fault (a union would not). */
export const InboxPolicyBody = {
  safeParse: (v: unknown): z.ZodSafeParseResult<InboxPolicyWrite> =>
    typeof v === "object" && v !== null && "sealed" in v ? SealedPolicyBody.safeParse(v) : PlainPolicyBody.safeParse(v),
};
export interface InboxPolicy {
  /** Empty lists while the policy is sealed. */
  permissions: { allow: string[]; ask: string[]; deny: string[] };
  version: number;
  /** docs/e2e.md "The inbox policy": the lists sealed under the content key, opaque to the relay… */
  sealed?: Envelope;
  /** …and the holder id of the member that stored it (`holder:<id>` in its associated data). */
  sealed_by?: string;
}
