// The sealed envelope's wire shape (docs/e2e.md "Envelope"): what every party, the relay included, may check
// of it without a key. Sealing and opening live in shared/crypto/e2e/envelope.ts, which re-exports these.

export const ENVELOPE_VERSION = 1;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

/** Bytes (UTF-8 JSON) of a winning sealed answer the relay passes on in the other devices' `tool.cancel`
 * (`answer_sealed`, docs/e2e.md rule 7); a bigger one is left out and the card names the device only. */
export const SEALED_ANSWER_MAX = 8 * 1024;

/** The JSON-safe envelope that replaces a sealed field's value on the wire. */
export interface Envelope {
  v: typeof ENVELOPE_VERSION;
  /** Epoch of the content key it is sealed under. */
  e: number;
  /** base64url of the 12-byte nonce (16 characters). */
  n: string;
  /** base64url of ciphertext ‖ 16-byte GCM tag. */
  c: string;
}

/** A key epoch: a uint32 of at least 1. */
const isEpoch = (e: unknown): e is number => typeof e === "number" && Number.isInteger(e) && e >= 1 && e <= 0xffffffff;

const B64U_RE = /^[A-Za-z0-9_-]*$/;
const B64U_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Bytes a strict base64url text decodes to, or undefined when it is not canonical: no padding, no `+/`, and
 * unused trailing bits zero — so every byte string has exactly one spelling.
 */
export function b64uByteLength(s: string): number | undefined {
  if (!B64U_RE.test(s) || s.length % 4 === 1) return undefined;
  const rest = s.length % 4;
  if (rest && B64U_ALPHABET.indexOf(s[s.length - 1] ?? "") & (rest === 2 ? 0x0f : 0x03)) return undefined;
  return Math.floor((s.length * 3) / 4);
}

/** Why `v` is not an envelope (exactly the keys v, e, n, c, of the right sizes), or undefined when it is one. */
export function envelopeProblem(v: unknown): string | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "envelope: not an object";
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length !== 4 || !keys.every((k) => k === "v" || k === "e" || k === "n" || k === "c")) return "envelope: keys must be exactly v, e, n, c";
  if (o.v !== ENVELOPE_VERSION) return `envelope: version ${JSON.stringify(o.v)} unknown`;
  if (!isEpoch(o.e)) return "envelope: e is not a uint32 ≥ 1";
  if (typeof o.n !== "string" || typeof o.c !== "string") return "envelope: n and c must be strings";
  const n = b64uByteLength(o.n);
  const c = b64uByteLength(o.c);
  if (n === undefined || c === undefined) return "envelope: n or c is not canonical base64url";
  if (n !== NONCE_BYTES) return "envelope: nonce is not 12 bytes";
  if (c < TAG_BYTES) return "envelope: ciphertext shorter than its tag";
  return undefined;
}

/** Checks shape only (version, epoch, nonce and tag lengths, canonical base64url); never throws. */
export const isEnvelope = (v: unknown): v is Envelope => envelopeProblem(v) === undefined;
