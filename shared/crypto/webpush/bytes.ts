// Byte helpers for Web Push on WebCrypto only (no Buffer), so they run in workerd, Node and browsers.
// `Bytes` pins the buffer to ArrayBuffer: WebCrypto's BufferSource type rejects SharedArrayBuffer views.

export type Bytes = Uint8Array<ArrayBuffer>;

const B64URL_RE = /^[A-Za-z0-9_-]*$/;

export function toB64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decodes base64url; also takes standard base64 and `=` padding, since subscriptions arrive in both. */
export function fromB64url(s: string): Bytes {
  const url = s.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  if (!B64URL_RE.test(url) || url.length % 4 === 1) throw new TypeError("not base64url");
  const bin = atob(url.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function concat(...parts: Uint8Array[]): Bytes {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Copies into a fresh ArrayBuffer-backed array (callers may hand us any Uint8Array). */
export function own(bytes: Uint8Array): Bytes {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}

// workers-types type encode() as Uint8Array<ArrayBufferLike>, so copy into an ArrayBuffer-backed array.
export const utf8 = (s: string): Bytes => own(new TextEncoder().encode(s));

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
