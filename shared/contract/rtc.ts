// Issue 32: the direct path's handshake (docs/direct.md). A WebRTC offer, answer and ICE candidates travel as
// `rtc.signal` frames of the session between the agent and ONE named device (and back), relayed to that peer
// only and never kept. In a sealed session the signal (and the recipient it was meant for) travels inside an
// envelope, so the relay can neither read nor substitute the DTLS fingerprint in the SDP.
import { z } from "./zod.js";
import { isEnvelope, type Envelope } from "./envelope.js";
import { CLIENT_ID_RE, type Role } from "./limits.js";

/** frames.ts's EnvelopeSchema (not imported: frames.ts imports this module). */
const EnvelopeSchema = z.custom<Envelope>((v) => isEnvelope(v), "not an envelope {v:1, e, n, c}");

/** Limits of the handshake (docs/direct.md lists them). */
export const RTC_LIMITS = {
  /** One signal as JSON (an SDP of a data-channel-only offer is ~1 KB; 16 KiB leaves room, not abuse). */
  maxSignalBytes: 16 * 1024,
  /** One ICE candidate line. */
  maxCandidateChars: 1024,
  /** Per sending client: signals per second refilled, and the burst (an offer, an answer and ~20 candidates). */
  signalsPerS: 2,
  signalBurst: 40,
} as const;

/** A handshake's id: one per attempt, so stale signals of an earlier attempt are told apart (and the AAD's id). */
export const SignalId = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, "1-128 of A-Z a-z 0-9 _ . : -");
export const SignalTo = z.string().regex(CLIENT_ID_RE, "a client id");

/** base64url of a 65-byte uncompressed P-256 point (87 chars) and of a 64-byte P1363 signature r‖s (86 chars). */
export const DIRECT_KEY_RE = /^[A-Za-z0-9_-]{87}$/;
export const DIRECT_SIG_RE = /^[A-Za-z0-9_-]{86}$/;

/** The agent machine's signature binding the answer's and the offer's DTLS fingerprints to its direct key
 * (shared/client/direct-bind.ts, docs/protocol.md). Required by devices in plaintext sessions, optional in sealed. */
export const DirectBind = z.object({
  key: z.string().regex(DIRECT_KEY_RE, "an uncompressed P-256 point, base64url"),
  sig: z.string().regex(DIRECT_SIG_RE, "an ECDSA P-256 signature (r||s), base64url"),
});

export type DirectBind = z.infer<typeof DirectBind>;

/** What one signal says: the SDP of an offer or answer, one ICE candidate, or the end of the attempt. */
export const RtcSignal = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("offer"), sdp: z.string().min(1).max(RTC_LIMITS.maxSignalBytes) }),
  z.object({ kind: z.literal("answer"), sdp: z.string().min(1).max(RTC_LIMITS.maxSignalBytes), bind: DirectBind.optional() }),
  z.object({ kind: z.literal("candidate"), candidate: z.string().max(RTC_LIMITS.maxCandidateChars), mid: z.string().max(64) }),
  z.object({ kind: z.literal("bye") }),
]);
export type RtcSignal = z.infer<typeof RtcSignal>;

/** Client → relay, plaintext session: `to` is the other side's client id (the agent names a device, a device the agent). */
export const RtcSignalIn = z.object({ type: z.literal("rtc.signal"), id: SignalId, to: SignalTo, signal: RtcSignal });
/** Client → relay, sealed session: `{signal, for}` sealed (AAD: session, `rtc.signal`, id, sender). */
export const SealedRtcSignalIn = z.object({ type: z.literal("rtc.signal"), id: SignalId, to: SignalTo, sealed: EnvelopeSchema });

/** Relay → the named peer: who sent it, and the signal (plain) or its envelope and author (sealed). */
export interface RtcSignalOut {
  type: "rtc.signal";
  id: string;
  from: { role: Role; client_id: string };
  signal?: RtcSignal;
  sealed?: Envelope;
  sender?: string;
}
