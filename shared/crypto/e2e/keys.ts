// Key types of the end-to-end layer (docs/e2e.md "Keys"): one ECDH P-256 key pair per holder (a device
// `dv_…` or an agent machine `mc_…`) and one AES-256-GCM content key per inbox epoch.
import { b64u, randomBytes, unb64u, type Bytes } from "../bytes.js";
import { E2EError } from "./errors.js";

/** Device and machine ids (the same shapes as DEVICE_ID_RE / MACHINE_ID_RE in shared/contract/inbox.ts;
 * repeated so this folder imports nothing — the service worker bundles it alone). */
export const HOLDER_ID_RE = /^(?:dv|mc)_[A-Za-z0-9_-]{10}$/;
export type HolderKind = "device" | "machine";
export const holderKindOf = (id: string): HolderKind | undefined => (!HOLDER_ID_RE.test(id) ? undefined : id.startsWith("dv_") ? "device" : "machine");

/** Epochs are uint32 starting at 1; 0 is never used, so a missing epoch cannot pass for the first one. */
export const FIRST_EPOCH = 1;
export const MAX_EPOCH = 0xffffffff;
export const isEpoch = (e: unknown): e is number => typeof e === "number" && Number.isInteger(e) && e >= FIRST_EPOCH && e <= MAX_EPOCH;

const ECDH_P256 = { name: "ECDH", namedCurve: "P-256" } as const;
/** An uncompressed P-256 point: 0x04 ‖ X ‖ Y. */
export const PUBLIC_KEY_BYTES = 65;
export const CONTENT_KEY_BYTES = 32;

/**
 * A holder's ECDH key pair. Devices make it with `extractable: false` and keep the CryptoKey itself in
 * IndexedDB (structured clone keeps a non-extractable key usable but unreadable). Agent machines persist
 * theirs in the adapter's state file (mode 0600), so they need `extractable: true` to export a JWK.
 * The public key is always exportable (WebCrypto makes public keys extractable regardless).
 */
export async function generateHolderKeyPair(opts: { extractable: boolean }): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey(ECDH_P256, opts.extractable, ["deriveBits"])) as CryptoKeyPair;
}

/** The public key as base64url of its 65-byte uncompressed point (87 characters). */
export async function exportPublicKey(publicKey: CryptoKey): Promise<string> {
  return b64u(new Uint8Array((await crypto.subtle.exportKey("raw", publicKey)) as ArrayBuffer));
}

export async function importPublicKey(b64: string): Promise<CryptoKey> {
  let raw: Bytes;
  try {
    raw = unb64u(b64);
  } catch {
    throw new E2EError("bad_format", "public key: not base64url");
  }
  if (raw.length !== PUBLIC_KEY_BYTES || raw[0] !== 0x04) throw new E2EError("bad_format", "public key: not an uncompressed P-256 point");
  try {
    // importKey checks the point is on the curve: an invalid-curve point is refused here, not used.
    return await crypto.subtle.importKey("raw", raw, ECDH_P256, true, []);
  } catch {
    throw new E2EError("bad_format", "public key: not a P-256 point");
  }
}

/** A private key as a JWK (machines' state files; test vectors). Fails for a non-extractable key. */
export async function exportPrivateJwk(privateKey: CryptoKey): Promise<JsonWebKey> {
  return (await crypto.subtle.exportKey("jwk", privateKey)) as JsonWebKey;
}

/** A key pair from a private JWK (with its `x`, `y`). `extractable: false` gives a device-grade key. */
export async function importPrivateJwk(jwk: JsonWebKey, opts: { extractable: boolean }): Promise<CryptoKeyPair> {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string" || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
    throw new E2EError("bad_format", "private key: not a P-256 JWK");
  }
  const { kty, crv, d, x, y } = jwk;
  const privateKey = await crypto.subtle.importKey("jwk", { kty, crv, d, x, y }, ECDH_P256, opts.extractable, ["deriveBits"]);
  const publicKey = await crypto.subtle.importKey("jwk", { kty, crv, x, y }, ECDH_P256, true, []);
  return { privateKey, publicKey };
}

/** ECDH P-256 shared secret: the 32-byte X coordinate. */
export async function ecdh(privateKey: CryptoKey, publicKey: CryptoKey): Promise<Bytes> {
  // Built apart from the call: the DOM lib names the field `public`, workers-types `$public`; a
  // non-literal object satisfies both, and every runtime reads `public`.
  const alg = { name: "ECDH", public: publicKey };
  return new Uint8Array(await crypto.subtle.deriveBits(alg, privateKey, 256));
}

/**
 * The inbox content key of one epoch. `raw` is kept because a holder wraps it for others (pairing,
 * re-keying); `key` is a non-extractable AES-GCM CryptoKey made from it for sealing and opening.
 * At rest a device keeps the *wrapped* form (docs/e2e.md "Storage"), unwrapped at load with its
 * non-extractable device key.
 */
export interface ContentKey {
  readonly epoch: number;
  readonly key: CryptoKey;
  readonly raw: Bytes;
}

export async function importContentKey(raw: Uint8Array, epoch: number): Promise<ContentKey> {
  if (raw.length !== CONTENT_KEY_BYTES) throw new E2EError("bad_format", `content key: ${raw.length} bytes, not ${CONTENT_KEY_BYTES}`);
  if (!isEpoch(epoch)) throw new E2EError("bad_format", "content key: epoch is not a uint32 ≥ 1");
  const copy = new Uint8Array(raw);
  const key = await crypto.subtle.importKey("raw", copy, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
  return { epoch, key, raw: copy };
}

/** A fresh content key: 32 random bytes. */
export function generateContentKey(epoch: number = FIRST_EPOCH): Promise<ContentKey> {
  return importContentKey(randomBytes(CONTENT_KEY_BYTES), epoch);
}
