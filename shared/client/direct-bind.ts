// Issue 32 (docs/protocol.md "The direct path's binding", docs/direct.md): binds a direct path's DTLS
// fingerprints to the agent machine's persistent DIRECT KEY, so that in a plaintext session a relay that
// rewrites the handshake's SDP cannot sit in the middle of the data channel. PURE (WebCrypto and the byte
// module only): the agent signs with it, the PWA verifies with it.
//  - Each agent machine has one ECDSA P-256 key (the adapter keeps it 0600 in its state dir).
//  - The agent's answer carries `bind: {key, sig}`: `key` = the public key (65-byte uncompressed point,
//    base64url), `sig` = ECDSA-SHA256 (IEEE P1363 r‖s, base64url) over `fields(["lineup-rtc/1", session id,
//    signal id, the device's client id, the OFFER's fingerprint, the ANSWER's fingerprint])`.
//  - The phone checks `sig` with its own offer's fingerprint and the answer's, and `key` against its pin (from
//    the pairing link's `dk=`, else the first contact) BEFORE `setRemoteDescription`.
import { b64u, fields, unb64u, type Bytes } from "../crypto/bytes.js";
import { DIRECT_KEY_RE, DIRECT_SIG_RE, type DirectBind } from "../contract/rtc.js";

export { DIRECT_KEY_RE, DIRECT_SIG_RE, type DirectBind };

/** The domain label of the signed bytes (the first field). */
export const DIRECT_BIND_LABEL = "lineup-rtc/1";
/** The pairing link fragment's parameter that carries the machine's direct key: `#pair=<code>&dk=<key>`. */
export const DIRECT_KEY_PARAM = "dk";

const ECDSA_P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
const ECDSA_SHA256 = { name: "ECDSA", hash: "SHA-256" } as const;

/** Everything the signature covers besides the fingerprints (both ends know these without trusting the SDP). */
export interface BindContext {
  sessionId: string;
  /** The handshake's `rtc.signal` id (one per attempt). */
  signalId: string;
  /** The device's (offerer's) client id in the session. */
  deviceId: string;
}

/** A machine's direct key: the private half signs, `publicKey` is what links and answers carry. */
export interface DirectKey {
  privateKey: CryptoKey;
  publicKey: string;
}

export type FingerprintResult = { ok: true; fingerprint: string } | { ok: false; reason: string };

const FP_LINE = /^a=fingerprint:(\S+) (\S+)$/i;
const SHA256_FP = /^[0-9A-F]{2}(?::[0-9A-F]{2}){31}$/;

/**
 * The SDP's DTLS certificate fingerprint, canonical: `sha-256 AB:CD:…` (upper-case hex). Taken from every
 * `a=fingerprint:` line, session- or media-level. Refused: none; a hash other than sha-256; several DIFFERENT
 * values (the DTLS stack would accept a certificate matching any of them). The same value repeated (session
 * and media level) counts once.
 */
export function sdpFingerprint(sdp: string): FingerprintResult {
  const seen = new Set<string>();
  for (const line of sdp.split(/\r?\n/)) {
    if (!/^a=fingerprint:/i.test(line)) continue;
    const m = FP_LINE.exec(line.trim());
    if (!m) return { ok: false, reason: "a malformed a=fingerprint line" };
    const alg = m[1]!.toLowerCase();
    const value = m[2]!.toUpperCase();
    if (alg !== "sha-256") return { ok: false, reason: `a fingerprint with ${alg} (only sha-256 is taken)` };
    if (!SHA256_FP.test(value)) return { ok: false, reason: "a sha-256 fingerprint that is not 32 bytes of hex" };
    seen.add(`sha-256 ${value}`);
  }
  if (seen.size === 0) return { ok: false, reason: "no a=fingerprint line" };
  if (seen.size > 1) return { ok: false, reason: "several different fingerprints" };
  return { ok: true, fingerprint: [...seen][0]! };
}

/** The signed bytes: the label, the context, then the offer's and the answer's canonical fingerprints. */
export function bindBytes(ctx: BindContext, offerFp: string, answerFp: string): Bytes {
  return fields([DIRECT_BIND_LABEL, ctx.sessionId, ctx.signalId, ctx.deviceId, offerFp, answerFp]);
}

/** A fresh direct key pair (the private key extractable so the adapter can keep it as a JWK). */
export async function generateDirectKey(): Promise<{ key: DirectKey; jwk: JsonWebKey }> {
  const pair = (await crypto.subtle.generateKey(ECDSA_P256, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  return { key: { privateKey: pair.privateKey, publicKey: await publicOf(pair.publicKey) }, jwk };
}

/** A saved direct key (its private JWK, which also holds the public point). Throws on a JWK that is not one. */
export async function importDirectKey(jwk: JsonWebKey): Promise<DirectKey> {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string") throw new TypeError("not a P-256 private JWK");
  const privateKey = await crypto.subtle.importKey("jwk", jwk, ECDSA_P256, false, ["sign"]);
  const { d: _d, key_ops: _ops, ...pub } = jwk;
  const publicKey = await crypto.subtle.importKey("jwk", { ...pub, key_ops: ["verify"] }, ECDSA_P256, true, ["verify"]);
  return { privateKey, publicKey: await publicOf(publicKey) };
}

async function publicOf(k: CryptoKey): Promise<string> {
  return b64u(new Uint8Array((await crypto.subtle.exportKey("raw", k)) as ArrayBuffer));
}

/** The agent's side: the bind of its answer to a device's offer (throws when either SDP has no single fingerprint). */
export async function signBind(key: DirectKey, ctx: BindContext, offerSdp: string, answerSdp: string): Promise<DirectBind> {
  const o = sdpFingerprint(offerSdp);
  if (!o.ok) throw new TypeError(`the offer: ${o.reason}`);
  const a = sdpFingerprint(answerSdp);
  if (!a.ok) throw new TypeError(`the answer: ${a.reason}`);
  const sig = await crypto.subtle.sign(ECDSA_SHA256, key.privateKey, bindBytes(ctx, o.fingerprint, a.fingerprint));
  return { key: key.publicKey, sig: b64u(new Uint8Array(sig)) };
}

export type BindVerdict =
  /** `firstContact`: no pin was given, so the caller pins `key` now (trust on first use). */
  { ok: true; key: string; firstContact: boolean } | { ok: false; reason: string };

/**
 * The device's side, before `setRemoteDescription`: the answer's bind verifies over the device's OWN offer's
 * fingerprint and the answer's, and its key is the pinned one (when a pin is given). Never throws.
 */
export async function verifyBind(
  bind: DirectBind | undefined,
  ctx: BindContext,
  ownOfferSdp: string,
  answerSdp: string,
  pinned: string | undefined,
): Promise<BindVerdict> {
  if (!bind) return { ok: false, reason: "the answer carries no bind" };
  if (!DIRECT_KEY_RE.test(bind.key) || !DIRECT_SIG_RE.test(bind.sig)) return { ok: false, reason: "a malformed bind" };
  if (pinned !== undefined && bind.key !== pinned) return { ok: false, reason: "the answer is signed by another key than the machine's pinned one" };
  const o = sdpFingerprint(ownOfferSdp);
  if (!o.ok) return { ok: false, reason: `the offer: ${o.reason}` };
  const a = sdpFingerprint(answerSdp);
  if (!a.ok) return { ok: false, reason: `the answer: ${a.reason}` };
  let good: boolean;
  try {
    const pub = await crypto.subtle.importKey("raw", unb64u(bind.key), ECDSA_P256, false, ["verify"]);
    good = await crypto.subtle.verify(ECDSA_SHA256, pub, unb64u(bind.sig), bindBytes(ctx, o.fingerprint, a.fingerprint));
  } catch {
    return { ok: false, reason: "the bind's key is not a P-256 point" };
  }
  if (!good) return { ok: false, reason: "the bind's signature does not match this handshake's fingerprints" };
  return { ok: true, key: bind.key, firstContact: pinned === undefined };
}

/** A pairing link with the machine's direct key added to its fragment (`…#pair=<code>&k=…&dk=<key>`). */
export function withDirectKey(url: string, key: string): string {
  if (!DIRECT_KEY_RE.test(key)) throw new TypeError("not a direct key");
  const hash = url.indexOf("#");
  return hash < 0 ? `${url}#${DIRECT_KEY_PARAM}=${key}` : `${url}${hash === url.length - 1 ? "" : "&"}${DIRECT_KEY_PARAM}=${key}`;
}

/** The direct key a pairing link's fragment carries (undefined: none, or not a key's shape). */
export function directKeyOfFragment(hash: string): string | undefined {
  const k = new URLSearchParams(hash.replace(/^#/, "")).get(DIRECT_KEY_PARAM);
  return k && DIRECT_KEY_RE.test(k) ? k : undefined;
}
