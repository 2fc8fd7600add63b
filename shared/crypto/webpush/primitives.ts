// WebCrypto primitives of Web Push (RFC 8291): HKDF, ECDH P-256, raw key export. Bytes and base64url are
// shared/crypto/bytes.ts.
import type { Bytes } from "../bytes.js";

/** HKDF-SHA-256 (RFC 5869) via WebCrypto: extract with `salt`, expand with `info`. */
export async function hkdf(salt: Bytes, ikm: Bytes, info: Bytes, length: number): Promise<Bytes> {
  const key = await crypto.subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, length * 8));
}

/** ECDH P-256 shared secret (32 bytes). */
export async function ecdh(privateKey: CryptoKey, publicKey: CryptoKey): Promise<Bytes> {
  // Built apart from the call: the DOM lib names the field `public`, workers-types `$public`;
  // a non-literal object satisfies both, and the runtime reads `public`.
  const alg = { name: "ECDH", public: publicKey };
  return new Uint8Array(await crypto.subtle.deriveBits(alg, privateKey, 256));
}

export async function exportRaw(publicKey: CryptoKey): Promise<Bytes> {
  const raw = await crypto.subtle.exportKey("raw", publicKey);
  if (!(raw instanceof ArrayBuffer)) throw new TypeError("raw export did not return bytes");
  return new Uint8Array(raw);
}

export function isKeyPair(k: CryptoKey | CryptoKeyPair): k is CryptoKeyPair {
  return "privateKey" in k && "publicKey" in k;
}
