// Key wrapping (docs/e2e.md "Wrapped key"): a holder hands an epoch's content key to another holder.
// Static-static ECDH between the two holders' keys → HKDF-SHA-256 → a one-off AES-256-GCM key that
// encrypts the 32 raw key bytes. Static on both sides on purpose: only the named sender (or the
// recipient) can make a wrap that opens, so a relay — or a revoked device, which knows no remaining
// holder's private key — cannot slip a content key of its own choosing to a holder.
import { b64u, fields, randomBytes, unb64u, type Bytes } from "../bytes.js";
import { E2EError } from "./errors.js";
import { CONTENT_KEY_BYTES, HOLDER_ID_RE, ecdh, exportPublicKey, importContentKey, importPublicKey, isEpoch, type ContentKey } from "./keys.js";
import { NONCE_BYTES, TAG_BYTES } from "./envelope.js";

export const WRAP_VERSION = 1;
export const WRAP_KEY_INFO_LABEL = "lineup-e2e/1 wrap-key";
export const WRAP_AAD_LABEL = "lineup-e2e/1 wrap";

/** A content key wrapped for one holder. JSON-safe; the relay may store and forward it. */
export interface WrappedKey {
  v: typeof WRAP_VERSION;
  /** Inbox id. */
  i: string;
  /** Epoch of the wrapped content key. */
  e: number;
  /** Sender holder id (dv_… / mc_…) and its public key (base64url, 65-byte point). */
  from: string;
  k: string;
  /** Recipient holder id. */
  to: string;
  /** base64url nonce (12 bytes) and ciphertext ‖ tag (32 + 16 bytes). */
  n: string;
  c: string;
}

/** One side of a wrap: a holder id and its key pair (`publicKey` as exported base64url). */
export interface HolderSelf {
  id: string;
  privateKey: CryptoKey;
  publicKey: string;
}
export interface HolderPublic {
  id: string;
  publicKey: string;
}

async function wrapKeyFor(own: CryptoKey, peer: string, inboxId: string, epoch: number, from: HolderPublic, to: HolderPublic): Promise<CryptoKey> {
  const z = await ecdh(own, await importPublicKey(peer));
  const info = fields([WRAP_KEY_INFO_LABEL, inboxId, String(epoch), from.id, from.publicKey, to.id, to.publicKey]);
  const ikm = await crypto.subtle.importKey("raw", z, "HKDF", false, ["deriveKey"]);
  // Empty salt: HKDF then uses HashLen zero bytes (RFC 5869 §2.2); the ECDH secret is already uniform enough.
  const salt: Bytes = new Uint8Array(0);
  return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt, info }, ikm, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
}

const wrapAad = (inboxId: string, epoch: number, from: string, to: string): Bytes => fields([WRAP_AAD_LABEL, inboxId, String(epoch), from, to]);

function checkIds(...ids: string[]): void {
  for (const id of ids) if (!HOLDER_ID_RE.test(id)) throw new E2EError("bad_format", `holder id ${JSON.stringify(id.slice(0, 20))} is not dv_… / mc_…`);
}

/** Wraps `ck` for `recipient`. `nonce` is for fixed test vectors only (see sealWithNonce). */
export async function wrapContentKey(opts: {
  inboxId: string;
  sender: HolderSelf;
  recipient: HolderPublic;
  key: ContentKey;
  nonce?: Uint8Array;
}): Promise<WrappedKey> {
  const { inboxId, sender, recipient, key } = opts;
  checkIds(sender.id, recipient.id);
  const nonce = opts.nonce ? new Uint8Array(opts.nonce) : randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES) throw new E2EError("bad_format", "nonce is not 12 bytes");
  const k = await wrapKeyFor(sender.privateKey, recipient.publicKey, inboxId, key.epoch, sender, recipient);
  const c = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: wrapAad(inboxId, key.epoch, sender.id, recipient.id) }, k, key.raw),
  );
  return { v: WRAP_VERSION, i: inboxId, e: key.epoch, from: sender.id, k: sender.publicKey, to: recipient.id, n: b64u(nonce), c: b64u(c) };
}

export function parseWrappedKey(v: unknown): WrappedKey {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new E2EError("bad_format", "wrapped key: not an object");
  const o = v as Record<string, unknown>;
  const want = ["v", "i", "e", "from", "k", "to", "n", "c"];
  const keys = Object.keys(o);
  if (keys.length !== want.length || !keys.every((k) => want.includes(k)))
    throw new E2EError("bad_format", `wrapped key: keys must be exactly ${want.join(", ")}`);
  if (o.v !== WRAP_VERSION) throw new E2EError("bad_format", "wrapped key: unknown version");
  if (!isEpoch(o.e)) throw new E2EError("bad_format", "wrapped key: e is not a uint32 ≥ 1");
  const str = (k: "i" | "from" | "k" | "to" | "n" | "c"): string => {
    const x = o[k];
    if (typeof x !== "string") throw new E2EError("bad_format", `wrapped key: ${k} is not a string`);
    return x;
  };
  const w: WrappedKey = { v: WRAP_VERSION, i: str("i"), e: Number(o.e), from: str("from"), k: str("k"), to: str("to"), n: str("n"), c: str("c") };
  checkIds(w.from, w.to);
  let n: Bytes, c: Bytes;
  try {
    n = unb64u(w.n);
    c = unb64u(w.c);
  } catch {
    throw new E2EError("bad_format", "wrapped key: n or c is not canonical base64url");
  }
  if (n.length !== NONCE_BYTES || c.length !== CONTENT_KEY_BYTES + TAG_BYTES) throw new E2EError("bad_format", "wrapped key: wrong nonce or ciphertext length");
  return { v: WRAP_VERSION, i: w.i, e: w.e, from: w.from, k: w.k, to: w.to, n: w.n, c: w.c };
}

/**
 * Unwraps a content key sent to `recipient`. `trusted` maps holder ids to the public keys this holder has
 * authenticated (the pairing sponsor's, and the holder roster: docs/e2e.md "Holder roster"); a wrap from
 * anyone else — or from a trusted id with another key — is refused before any decryption.
 */
export async function unwrapContentKey(opts: {
  inboxId: string;
  recipient: HolderSelf;
  wrapped: unknown;
  trusted: Readonly<Record<string, string>>;
  /** When set, a wrap of another epoch is refused (e.g. re-keying must move forward). */
  epoch?: number;
}): Promise<ContentKey> {
  const w = parseWrappedKey(opts.wrapped);
  if (w.i !== opts.inboxId || w.to !== opts.recipient.id) throw new E2EError("not_for_us", `wrapped key is for ${w.to} in inbox ${w.i}`);
  if (opts.epoch !== undefined && w.e !== opts.epoch) throw new E2EError("wrong_epoch", `wrapped key is epoch ${w.e}, expected ${opts.epoch}`);
  if (!Object.hasOwn(opts.trusted, w.from) || opts.trusted[w.from] !== w.k)
    throw new E2EError("untrusted_sender", `wrapped key from ${w.from}, whose key this holder does not trust`);
  const k = await wrapKeyFor(opts.recipient.privateKey, w.k, w.i, w.e, { id: w.from, publicKey: w.k }, opts.recipient);
  let raw: Bytes;
  try {
    raw = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: unb64u(w.n), additionalData: wrapAad(w.i, w.e, w.from, w.to) }, k, unb64u(w.c)));
  } catch {
    throw new E2EError("open_failed", "wrapped key does not open (changed, or not made with these keys)");
  }
  return importContentKey(raw, w.e);
}

/** A holder's identity from its key pair (the public half exported). */
export async function holderSelf(id: string, pair: CryptoKeyPair): Promise<HolderSelf> {
  checkIds(id);
  return { id, privateKey: pair.privateKey, publicKey: await exportPublicKey(pair.publicKey) };
}
