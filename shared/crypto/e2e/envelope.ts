// Sealing (docs/e2e.md "Envelope"): AES-256-GCM under the inbox content key, a fresh 96-bit random nonce
// per seal, and associated data binding where the ciphertext belongs (session, epoch, frame type, call
// id, sender), so the relay cannot move a sealed answer to another call, session, sender or epoch.
import { b64u, fields, fromUtf8, randomBytes, unb64u, utf8, type Bytes } from "../bytes.js";
import { E2EError } from "./errors.js";
import { isEpoch, type ContentKey } from "./keys.js";
import { ENVELOPE_VERSION, envelopeProblem, NONCE_BYTES, TAG_BYTES, type Envelope } from "../../contract/envelope.js";

// The envelope's shape is the contract's (shared/contract/envelope.ts): re-exported for the e2e layer's callers.
export { ENVELOPE_VERSION, NONCE_BYTES, TAG_BYTES, isEnvelope, type Envelope } from "../../contract/envelope.js";
export const FRAME_AAD_LABEL = "lineup-e2e/1 frame";

/** What a sealed payload belongs to. The epoch comes from the content key (and must equal the envelope's). */
export interface FrameAad {
  /** The session's id (SESSION_ID_RE). */
  session_id: string;
  /** The frame type it travels in: "tool.call", "tool.result", "message", "tool.list", … */
  type: string;
  /** tool.call / tool.result / tool.cancel: the call_id; message: the message id; others: "". */
  call_id: string;
  /** "<role>:<client_id>" of the frame's author, e.g. "app:dv_AbCdEfGhIj", "agent:agent-1". */
  sender: string;
}

/** The exact associated data: fields("lineup-e2e/1 frame", session_id, epoch, type, call_id, sender). */
export function encodeFrameAad(epoch: number, aad: FrameAad): Bytes {
  if (!isEpoch(epoch)) throw new E2EError("bad_format", "aad: epoch is not a uint32 ≥ 1");
  for (const k of ["session_id", "type", "sender"] as const) {
    if (typeof aad[k] !== "string" || aad[k] === "") throw new E2EError("bad_format", `aad: ${k} is empty`);
  }
  if (typeof aad.call_id !== "string") throw new E2EError("bad_format", "aad: call_id is not a string");
  return fields([FRAME_AAD_LABEL, aad.session_id, String(epoch), aad.type, aad.call_id, aad.sender]);
}

/** Validates an envelope from the wire: exactly the keys v, e, n, c (the relay may check this much). */
export function parseEnvelope(v: unknown): Envelope {
  const problem = envelopeProblem(v);
  if (problem !== undefined) throw new E2EError("bad_format", problem);
  const o = v as Envelope;
  return { v: ENVELOPE_VERSION, e: o.e, n: o.n, c: o.c };
}

async function gcmSeal(key: CryptoKey, aad: Bytes, nonce: Bytes, plaintext: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: aad, tagLength: 128 }, key, plaintext));
}

async function gcmOpen(key: CryptoKey, aad: Bytes, nonce: Bytes, sealed: Bytes): Promise<Bytes> {
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData: aad, tagLength: 128 }, key, sealed));
  } catch {
    throw new E2EError("open_failed", "cannot open: wrong key, or the associated data, nonce or ciphertext changed");
  }
}

function checkJson(text: string): void {
  try {
    JSON.parse(text);
  } catch {
    throw new E2EError("bad_format", "plaintext is not JSON text");
  }
}

/**
 * Seals one JSON text. A fresh random nonce every time: 2^-32 collision odds are reached only after
 * ~2^32 seals under one key (NIST SP 800-38D), far beyond one epoch of an inbox.
 */
export function seal(ck: ContentKey, aad: FrameAad, plaintextJson: string): Promise<Envelope> {
  return sealWithNonce(ck, aad, plaintextJson, randomBytes(NONCE_BYTES));
}

/**
 * seal() with a given nonce — ONLY for fixed test vectors. Two seals with one nonce under one key reveal
 * the XOR of the plaintexts and let anyone forge tags: never call this with a nonce used before.
 */
export async function sealWithNonce(ck: ContentKey, aad: FrameAad, plaintextJson: string, nonce: Uint8Array): Promise<Envelope> {
  if (nonce.length !== NONCE_BYTES) throw new E2EError("bad_format", "nonce is not 12 bytes");
  checkJson(plaintextJson);
  const n = new Uint8Array(nonce);
  const c = await gcmSeal(ck.key, encodeFrameAad(ck.epoch, aad), n, utf8(plaintextJson));
  return { v: ENVELOPE_VERSION, e: ck.epoch, n: b64u(n), c: b64u(c) };
}

/** Opens an envelope sealed under `ck` for exactly `aad`; returns the JSON text. */
export async function open(ck: ContentKey, aad: FrameAad, envelope: unknown): Promise<string> {
  const env = parseEnvelope(envelope);
  if (env.e !== ck.epoch) throw new E2EError("wrong_epoch", `sealed under epoch ${env.e}, key is epoch ${ck.epoch}`);
  const plain = await gcmOpen(ck.key, encodeFrameAad(ck.epoch, aad), unb64u(env.n), unb64u(env.c));
  let text: string;
  try {
    text = fromUtf8(plain);
  } catch {
    throw new E2EError("bad_format", "plaintext is not UTF-8");
  }
  checkJson(text);
  return text;
}

/** seal(JSON.stringify(value)). */
export function sealJson(ck: ContentKey, aad: FrameAad, value: unknown): Promise<Envelope> {
  const text = JSON.stringify(value);
  if (typeof text !== "string") throw new E2EError("bad_format", "value has no JSON form");
  return seal(ck, aad, text);
}

/** JSON.parse(open(…)). */
export async function openJson(ck: ContentKey, aad: FrameAad, envelope: unknown): Promise<unknown> {
  return JSON.parse(await open(ck, aad, envelope)) as unknown;
}

/**
 * Re-seals an envelope from one epoch to the next (open calls at a re-key: docs/e2e.md "Re-keying"):
 * same associated data, new key, new nonce. Fails if it does not open under `from`.
 */
export async function reseal(from: ContentKey, to: ContentKey, aad: FrameAad, envelope: unknown): Promise<Envelope> {
  if (to.epoch <= from.epoch) throw new E2EError("wrong_epoch", `re-seal goes forward only (${from.epoch} → ${to.epoch})`);
  return seal(to, aad, await open(from, aad, envelope));
}

/**
 * Exact JSON length of an envelope (JSON.stringify, ASCII only) for a plaintext of `plaintextBytes`
 * UTF-8 bytes: `{"v":1,"e":E,"n":"<16>","c":"<b64u(L+16)>"}` = 42 + digits(E) + ⌈4(L+16)/3⌉.
 */
export function envelopeLength(plaintextBytes: number, epoch: number): number {
  return 42 + String(epoch).length + Math.ceil((4 * (plaintextBytes + TAG_BYTES)) / 3);
}
