// The one byte module: bytes, base64url, UTF-8, random ids and SHA-256, WebCrypto and standard globals only (no
// Buffer, no imports), so the same file runs in Node, workerd, Chromium pages and the service worker. Used by
// the end-to-end layer (docs/e2e.md "Encodings"), Web Push, tokens and the edge.
// `Bytes` pins the buffer to ArrayBuffer: WebCrypto's BufferSource type rejects SharedArrayBuffer views.

export type Bytes = Uint8Array<ArrayBuffer>;

/** base64url without padding (RFC 4648 §5). */
export function b64u(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decodes base64url, lenient: also takes standard base64 and `=` padding (push subscriptions arrive in both). */
export function fromB64url(s: string): Bytes {
  const url = s.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  if (!B64U_RE.test(url) || url.length % 4 === 1) throw new TypeError("not base64url");
  const bin = atob(url.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const B64U_RE = /^[A-Za-z0-9_-]*$/;
const B64U_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Strict base64url: no padding, no `+/`, and unused trailing bits must be zero — so every byte string has
 * exactly one spelling and a string compare (e.g. replay de-dup by nonce) means a byte compare.
 */
export function unb64u(s: string): Bytes {
  if (!B64U_RE.test(s) || s.length % 4 === 1) throw new TypeError("not canonical base64url");
  const rest = s.length % 4;
  if (rest) {
    const last = B64U_ALPHABET.indexOf(s[s.length - 1]!);
    if (last & (rest === 2 ? 0x0f : 0x03)) throw new TypeError("not canonical base64url");
  }
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
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
// fatal: a ciphertext that authenticates but is not UTF-8 is refused, never "repaired" with U+FFFD;
// ignoreBOM: a leading BOM is kept, not silently dropped, so the text is exactly what was sealed.
export const fromUtf8 = (b: Uint8Array): string => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(b);

export function randomBytes(n: number): Bytes {
  return crypto.getRandomValues(new Uint8Array(n));
}

/** `bytes` random bytes as base64url: ids, secrets, nonces in text form. */
export function randomId(bytes = 16): string {
  return b64u(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** SHA-256 of the UTF-8 of `s`, as base64url (credential hashes, deterministic ids). */
export async function sha256(s: string): Promise<string> {
  return b64u(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(s))));
}

export function u32be(n: number): Bytes {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError("not a uint32");
  return new Uint8Array([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
}

/**
 * The one canonical encoding of every AAD, HKDF info and MAC transcript (docs/e2e.md "Canonical
 * encoding"): each field as a 4-byte big-endian byte length, then its UTF-8 bytes. Length prefixes make
 * the encoding injective — no choice of field values can make two different field lists collide.
 */
export function fields(values: readonly string[]): Bytes {
  const parts: Uint8Array[] = [];
  for (const v of values) {
    const b = utf8(v);
    parts.push(u32be(b.length), b);
  }
  return concat(...parts);
}

/** Constant-time compare of two byte strings (timing must not reveal how much of a MAC matched). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
