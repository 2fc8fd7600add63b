// The user agent's side of RFC 8291, on WebCrypto: make subscription keys and decrypt a push body.
// For tests and fake push services wanting no Node APIs (http_ece needs node:crypto, which workerd has
// only under nodejs_compat); the relay itself only ever encrypts.
import { b64u as toB64url, concat, fromB64url, utf8, type Bytes } from "../../shared/crypto/bytes.js";
import { ecdh, exportRaw, hkdf, isKeyPair } from "../../shared/crypto/webpush/primitives.js";

const P256 = { name: "ECDH", namedCurve: "P-256" } as const;

export interface SubscriberKeys {
  /** As in PushSubscription.toJSON().keys */
  p256dh: string;
  auth: string;
  keyPair: CryptoKeyPair;
}

export async function generateSubscriberKeys(): Promise<SubscriberKeys> {
  const keyPair = await crypto.subtle.generateKey(P256, false, ["deriveBits"]);
  if (!isKeyPair(keyPair)) throw new TypeError("ECDH key generation returned a single key");
  return {
    p256dh: toB64url(await exportRaw(keyPair.publicKey)),
    auth: toB64url(crypto.getRandomValues(new Uint8Array(16))),
    keyPair,
  };
}

/** Decrypts a single-record `aes128gcm` push body; throws on any malformed header, tag or padding. */
export async function decryptPayload(body: Uint8Array, keys: { auth: string; keyPair: CryptoKeyPair }): Promise<Bytes> {
  if (body.length < 21) throw new Error("body shorter than the aes128gcm header");
  const salt = body.slice(0, 16);
  const rs = new DataView(body.buffer, body.byteOffset + 16, 4).getUint32(0);
  const idlen = body[20];
  if (idlen !== 65) throw new Error(`keyid must be a 65-byte P-256 point, got ${idlen} bytes`);
  const asPublic = body.slice(21, 21 + idlen);
  const record = body.slice(21 + idlen);
  if (record.length > rs) throw new Error("more than one record: push messages carry one");
  if (record.length < 17) throw new Error("record shorter than tag and delimiter");

  const uaPublic = await exportRaw(keys.keyPair.publicKey);
  const asKey = await crypto.subtle.importKey("raw", asPublic, P256, false, []);
  const shared = await ecdh(keys.keyPair.privateKey, asKey);
  const ikm = await hkdf(fromB64url(keys.auth), shared, concat(utf8("WebPush: info\0"), uaPublic, asPublic), 32);
  const cek = await hkdf(salt, ikm, utf8("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, utf8("Content-Encoding: nonce\0"), 12);
  const key = await crypto.subtle.importKey("raw", cek, { name: "AES-GCM" }, false, ["decrypt"]);
  const plain = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, record));

  // Strip zero padding; the last record's delimiter must be 0x02 (RFC 8188 §2).
  let end = plain.length - 1;
  while (end >= 0 && plain[end] === 0) end--;
  if (end < 0 || plain[end] !== 0x02) throw new Error("last record must end its data with the 0x02 delimiter");
  return plain.slice(0, end);
}
