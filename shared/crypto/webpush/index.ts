// Web Push sending: RFC 8291 message encryption (RFC 8188 `aes128gcm`) and RFC 8292 VAPID, on WebCrypto
// and TextEncoder only, so the same module runs in a Durable Object (workerd), Node 20+ and the LAN server.
// It builds requests and classifies answers; sending (fetch), retries and subscription storage are the caller's.
// Why our own code rather than a package: docs/push.md, "Library choice".
import { b64u, concat, fromB64url, own, utf8, type Bytes } from "../bytes.js";
import { ecdh, exportRaw, hkdf, isKeyPair } from "./primitives.js";

// ── errors ───────────────────────────────────────────────────────────────────────────────────────

export type WebPushErrorCode =
  | "invalid_endpoint"
  | "invalid_subscription_keys"
  | "invalid_vapid_keys"
  | "invalid_subject"
  | "invalid_expiry"
  | "invalid_ttl"
  | "invalid_urgency"
  | "invalid_topic"
  | "payload_too_large";

/** Every input problem this module detects; `code` is stable, `message` is for humans. */
export class WebPushError extends Error {
  readonly code: WebPushErrorCode;
  constructor(code: WebPushErrorCode, message: string) {
    super(message);
    this.name = "WebPushError";
    this.code = code;
  }
}

/** The plaintext does not fit the one 4096-byte record every push service must accept. */
export class PushPayloadTooLargeError extends WebPushError {
  readonly size: number;
  readonly limit: number;
  constructor(size: number) {
    super("payload_too_large", `push payload is ${size} bytes; the limit is ${MAX_PAYLOAD_BYTES}`);
    this.name = "PushPayloadTooLargeError";
    this.size = size;
    this.limit = MAX_PAYLOAD_BYTES;
  }
}

// ── RFC 8188 / 8291 layout ───────────────────────────────────────────────────────────────────────

/** Record size written in the header; RFC 8030 push services must accept a 4096-byte body. */
export const RECORD_SIZE = 4096;
/** salt(16) ‖ rs(4) ‖ idlen(1) ‖ keyid = application server public key(65). */
export const HEADER_BYTES = 16 + 4 + 1 + 65;
const TAG_BYTES = 16;
/** 4096 − 16 tag − 1 delimiter − 86 header: the whole body then stays within 4096 bytes. */
export const MAX_PAYLOAD_BYTES = RECORD_SIZE - TAG_BYTES - 1 - HEADER_BYTES;

const P256 = { name: "ECDH", namedCurve: "P-256" } as const;

function decodeKey(value: string, bytes: number, what: string, code: WebPushErrorCode): Bytes {
  let out: Bytes;
  try {
    out = fromB64url(value);
  } catch {
    throw new WebPushError(code, `${what} is not base64url`);
  }
  if (out.length !== bytes) throw new WebPushError(code, `${what} must be ${bytes} bytes, got ${out.length}`);
  return out;
}

function decodePoint(value: string, what: string, code: WebPushErrorCode): Bytes {
  const p = decodeKey(value, 65, what, code);
  if (p[0] !== 0x04) throw new WebPushError(code, `${what} is not an uncompressed P-256 point`);
  return p;
}

export interface EncryptOptions {
  /** Subscription `keys.p256dh`: the user agent's P-256 public key, base64url, 65 bytes uncompressed. */
  p256dh: string;
  /** Subscription `keys.auth`: the 16-byte authentication secret, base64url. */
  auth: string;
  payload: Uint8Array;
  /** Pad the record with zeros so every body is 4096 bytes and its length tells nothing. */
  pad?: boolean;
  /** Tests only (RFC 8291 §5 vector): a fixed 16-byte salt. Production must leave it random. */
  salt?: Uint8Array;
  /** Tests only (RFC 8291 §5 vector): a fixed ECDH key pair. Production must use a fresh one per message. */
  asKeyPair?: CryptoKeyPair;
}

/** RFC 8291 `aes128gcm` body: RFC 8188 header (salt, rs=4096, keyid = our ephemeral public key) and one record. */
export async function encryptPayload(opts: EncryptOptions): Promise<Bytes> {
  const uaPublic = decodePoint(opts.p256dh, "p256dh", "invalid_subscription_keys");
  const authSecret = decodeKey(opts.auth, 16, "auth", "invalid_subscription_keys");
  if (opts.payload.length > MAX_PAYLOAD_BYTES) throw new PushPayloadTooLargeError(opts.payload.length);
  if (opts.salt && opts.salt.length !== 16) throw new TypeError("salt must be 16 bytes");
  const salt = opts.salt ? own(opts.salt) : crypto.getRandomValues(new Uint8Array(16));

  let asKeys = opts.asKeyPair;
  if (!asKeys) {
    const generated = await crypto.subtle.generateKey(P256, false, ["deriveBits"]);
    if (!isKeyPair(generated)) throw new TypeError("ECDH key generation returned a single key");
    asKeys = generated;
  }
  const asPublic = await exportRaw(asKeys.publicKey);

  let uaKey: CryptoKey;
  try {
    uaKey = await crypto.subtle.importKey("raw", uaPublic, P256, false, []);
  } catch {
    throw new WebPushError("invalid_subscription_keys", "p256dh is not a point on P-256");
  }
  const shared = await ecdh(asKeys.privateKey, uaKey);

  // RFC 8291 §3.3–3.4: IKM binds the auth secret and both public keys; CEK and nonce come from the salt.
  const ikm = await hkdf(authSecret, shared, concat(utf8("WebPush: info\0"), uaPublic, asPublic), 32);
  const cek = await hkdf(salt, ikm, utf8("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, utf8("Content-Encoding: nonce\0"), 12);

  // One record, so it is the last: data ‖ 0x02 ‖ zero padding (RFC 8188 §2). Sequence 0: nonce as is.
  const record = new Uint8Array(opts.pad ? MAX_PAYLOAD_BYTES + 1 : opts.payload.length + 1);
  record.set(opts.payload);
  record[opts.payload.length] = 0x02;
  const key = await crypto.subtle.importKey("raw", cek, { name: "AES-GCM" }, false, ["encrypt"]);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, record));

  const header = new Uint8Array(HEADER_BYTES);
  header.set(salt, 0);
  new DataView(header.buffer).setUint32(16, RECORD_SIZE);
  header[20] = asPublic.length;
  header.set(asPublic, 21);
  return concat(header, sealed);
}

// ── VAPID (RFC 8292) ─────────────────────────────────────────────────────────────────────────────

/** What a relay stores (as JSON) and reloads: the base64url public point and the private key as a JWK. */
export interface VapidKeys {
  /** base64url uncompressed P-256 point (65 bytes): also the PWA's `applicationServerKey`. */
  publicKey: string;
  privateJwk: JsonWebKey;
}

export async function generateVapidKeys(): Promise<VapidKeys> {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  if (!isKeyPair(pair)) throw new TypeError("ECDSA key generation returned a single key");
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  if (jwk instanceof ArrayBuffer) throw new TypeError("jwk export returned bytes");
  // Only the fields that matter, so a stored key never carries `key_ops` that would refuse a later import.
  const privateJwk: JsonWebKey = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, d: jwk.d };
  return { publicKey: b64u(await exportRaw(pair.publicKey)), privateJwk };
}

const signingKeys = new Map<string, Promise<CryptoKey>>();

/** Imports (and caches) the signing key after checking that the public key is the private key's. */
function signingKey(keys: VapidKeys): Promise<CryptoKey> {
  const point = decodePoint(keys.publicKey, "VAPID publicKey", "invalid_vapid_keys");
  const { kty, crv, x, y, d } = keys.privateJwk;
  if (kty !== "EC" || crv !== "P-256" || !x || !y || !d) {
    throw new WebPushError("invalid_vapid_keys", "VAPID privateJwk must be an EC P-256 private key (kty, crv, x, y, d)");
  }
  if (b64u(point.subarray(1, 33)) !== x || b64u(point.subarray(33)) !== y) {
    throw new WebPushError("invalid_vapid_keys", "VAPID publicKey does not belong to privateJwk");
  }
  const cacheKey = `${x}.${y}.${d}`;
  let key = signingKeys.get(cacheKey);
  if (!key) {
    if (signingKeys.size >= 16) signingKeys.clear(); // a relay has one or two keys; never grow without bound
    key = crypto.subtle.importKey("jwk", { kty, crv, x, y, d }, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
    key.catch(() => signingKeys.delete(cacheKey));
    signingKeys.set(cacheKey, key);
  }
  return key.catch(() => {
    throw new WebPushError("invalid_vapid_keys", "VAPID privateJwk could not be imported");
  });
}

/** RFC 8292 §2.1: a contact URI, `mailto:` with an address or `https:` with a host. */
export function checkSubject(subject: string): void {
  let ok = false;
  try {
    const u = new URL(subject);
    ok = (u.protocol === "mailto:" && /^[^@\s]+@[^@\s]+$/.test(decodeURIComponent(u.pathname))) || (u.protocol === "https:" && u.hostname !== "");
  } catch {
    ok = false; // not a URL, or a mailto: with a broken %-escape
  }
  if (!ok) throw new WebPushError("invalid_subject", `VAPID subject must be a mailto: address or an https: URL, got ${JSON.stringify(subject)}`);
}

/** RFC 8292 §2: `exp` must be no more than 24 hours ahead. */
export const MAX_VAPID_EXP_SECONDS = 24 * 60 * 60;
export const DEFAULT_VAPID_EXP_SECONDS = 12 * 60 * 60;

export interface VapidOptions {
  endpoint: string;
  subject: string;
  keys: VapidKeys;
  /** Lifetime of the JWT in seconds, 1…86400; default 12 h. */
  expSeconds?: number;
}

/** Signed tokens kept for reuse: a JWT holds until its `exp` (RFC 8292 §2 caps that at 24 h), so one per push
 * service origin, subject, key and lifetime serves every push until half its lifetime is gone — a push then costs
 * no ECDSA signature (issue 33: the push delay). At most VAPID_REUSE_MAX kept; the map is emptied when full. */
const reusable = new Map<string, { value: string; renewAt: number }>();
const VAPID_REUSE_MAX = 64;

/** The `Authorization` value: `vapid t=<ES256 JWT>, k=<public key>`, with `aud` = the endpoint's origin. A token
 * signed earlier for the same origin, subject, key and lifetime is reused while more than half its lifetime is left. */
export async function vapidAuthorization(opts: VapidOptions): Promise<string> {
  checkSubject(opts.subject);
  const expSeconds = opts.expSeconds ?? DEFAULT_VAPID_EXP_SECONDS;
  if (!Number.isInteger(expSeconds) || expSeconds < 1 || expSeconds > MAX_VAPID_EXP_SECONDS) {
    throw new WebPushError("invalid_expiry", `expSeconds must be an integer from 1 to ${MAX_VAPID_EXP_SECONDS}, got ${expSeconds}`);
  }
  let aud: string;
  try {
    aud = new URL(opts.endpoint).origin;
  } catch {
    throw new WebPushError("invalid_endpoint", "push endpoint is not a URL");
  }
  const key = await signingKey(opts.keys); // also checks that the public key is the private key's
  const cacheKey = JSON.stringify([aud, opts.subject, opts.keys.publicKey, opts.keys.privateJwk.d, expSeconds]);
  const now = Date.now();
  const kept = reusable.get(cacheKey);
  if (kept && now < kept.renewAt) return kept.value;
  const header = b64u(utf8(JSON.stringify({ typ: "JWT", alg: "ES256" })));
  const claims = b64u(utf8(JSON.stringify({ aud, exp: Math.floor(now / 1000) + expSeconds, sub: opts.subject })));
  const input = `${header}.${claims}`;
  // WebCrypto ECDSA signatures are already r ‖ s (64 bytes), the form JWS ES256 wants.
  const sig = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, utf8(input)));
  const value = `vapid t=${input}.${b64u(sig)}, k=${opts.keys.publicKey}`;
  if (reusable.size >= VAPID_REUSE_MAX) reusable.clear();
  reusable.set(cacheKey, { value, renewAt: now + (expSeconds * 1000) / 2 });
  return value;
}

// ── endpoints, headers, requests ─────────────────────────────────────────────────────────────────

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Which push endpoints a caller accepts. The public-name rule is the caller's (shared/edge/public-host.ts
 * `publicUrlProblem`), passed in so this crypto module imports nothing else of ours. */
export interface EndpointPolicy {
  /** Accept `http://127.0.0.1|localhost|[::1]` endpoints (fake push services). */
  allowLocalHttp: boolean;
  /** Why an https endpoint is not a public name on the default port, or undefined when it is. */
  publicHost: (u: URL) => string | undefined;
}

/**
 * A push endpoint must be the https URL of a public name on the default port (`opts.publicHost`: push
 * services are public names, and a relay must not POST to an address a device picks). Plain http is
 * accepted only for a loopback host and only with `allowLocalHttp` (a fake push service in tests or on a
 * developer machine). Checked when a device subscribes and again before every send. Returns the parsed URL.
 */
export function checkEndpoint(endpoint: string, opts: EndpointPolicy): URL {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    throw new WebPushError("invalid_endpoint", "push endpoint is not a URL");
  }
  // Credentials in a URL would be sent to whoever runs the endpoint; no push service uses them.
  if (u.username || u.password) throw new WebPushError("invalid_endpoint", "push endpoint must not carry credentials");
  if (u.protocol === "https:") {
    const problem = opts.publicHost(u);
    if (problem) throw new WebPushError("invalid_endpoint", `push endpoints are https URLs of a push service's name on the default port: this one ${problem}`);
    return u;
  }
  if (u.protocol === "http:" && opts.allowLocalHttp && LOOPBACK_HOSTS.has(u.hostname)) return u;
  throw new WebPushError(
    "invalid_endpoint",
    u.protocol === "http:" && LOOPBACK_HOSTS.has(u.hostname) ? "http push endpoints on loopback need allowLocalHttp" : "push endpoint must be https",
  );
}

export type Urgency = "very-low" | "low" | "normal" | "high";
const URGENCIES: ReadonlySet<string> = new Set(["very-low", "low", "normal", "high"]);

/** RFC 8030 §5.4: at most 32 characters of the URL- and filename-safe base64 alphabet. */
export function checkTopic(topic: string): void {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(topic)) {
    throw new WebPushError("invalid_topic", "Topic must be 1–32 characters of A–Z a–z 0–9 - _");
  }
}

export interface PushSubscriptionJSON {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface PushRequestOptions {
  subscription: PushSubscriptionJSON;
  payload: string | Uint8Array;
  vapid: { subject: string; keys: VapidKeys; expSeconds?: number };
  /** Seconds the push service may keep the message for an offline device (0 = deliver now or drop). */
  ttl: number;
  urgency?: Urgency;
  /** Replaces an undelivered message with the same topic (e.g. one per session). */
  topic?: string;
  /** Accept `http://127.0.0.1|localhost|[::1]` endpoints (fake push services); default false. */
  allowLocalHttp?: boolean;
  /** The public-name rule of https endpoints (EndpointPolicy.publicHost), checked again at every send. */
  publicHost: (u: URL) => string | undefined;
  /** Pad every body to 4096 bytes (see EncryptOptions.pad); default false. */
  pad?: boolean;
}

export interface PushRequest {
  url: string;
  init: { method: "POST"; headers: Record<string, string>; body: Bytes; redirect: "manual" };
}

/** Everything needed for `fetch(url, init)` to a push service: encrypted body and RFC 8030/8292 headers. */
export async function buildPushRequest(opts: PushRequestOptions): Promise<PushRequest> {
  const url = checkEndpoint(opts.subscription.endpoint, { allowLocalHttp: opts.allowLocalHttp ?? false, publicHost: opts.publicHost });
  if (!Number.isSafeInteger(opts.ttl) || opts.ttl < 0) {
    throw new WebPushError("invalid_ttl", `TTL must be a non-negative integer number of seconds, got ${opts.ttl}`);
  }
  if (opts.urgency !== undefined && !URGENCIES.has(opts.urgency)) {
    throw new WebPushError("invalid_urgency", `Urgency must be very-low, low, normal or high, got ${JSON.stringify(opts.urgency)}`);
  }
  if (opts.topic !== undefined) checkTopic(opts.topic);
  const payload = typeof opts.payload === "string" ? utf8(opts.payload) : opts.payload;
  if (payload.length > MAX_PAYLOAD_BYTES) throw new PushPayloadTooLargeError(payload.length);

  const body = await encryptPayload({
    p256dh: opts.subscription.keys.p256dh,
    auth: opts.subscription.keys.auth,
    payload,
    pad: opts.pad,
  });
  const headers: Record<string, string> = {
    TTL: String(opts.ttl),
    "Content-Encoding": "aes128gcm",
    "Content-Type": "application/octet-stream",
    Authorization: await vapidAuthorization({
      endpoint: url.href,
      subject: opts.vapid.subject,
      keys: opts.vapid.keys,
      expSeconds: opts.vapid.expSeconds,
    }),
  };
  if (opts.urgency !== undefined) headers.Urgency = opts.urgency;
  if (opts.topic !== undefined) headers.Topic = opts.topic;
  // Never follow a redirect: a subscription endpoint answering 307 would make the sender POST wherever it points.
  return { url: url.href, init: { method: "POST", headers, body, redirect: "manual" } };
}

// ── answers ──────────────────────────────────────────────────────────────────────────────────────

/** sent: accepted (201 normally). gone: 404/410, delete the subscription. retry: 429/5xx. failed: the rest. */
export type PushOutcome = "sent" | "gone" | "retry" | "failed";

export function classifyPushResponse(status: number): PushOutcome {
  if (status >= 200 && status < 300) return "sent";
  if (status === 404 || status === 410) return "gone";
  if (status === 429 || (status >= 500 && status < 600)) return "retry";
  return "failed";
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) as a delay in milliseconds: delta-seconds or an HTTP-date, a past date
 * giving 0. Undefined when absent or unparsable, so the caller falls back to its own backoff.
 */
export function retryAfterMs(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[A-Za-z]/.test(v)) return undefined; // Date.parse takes bare numbers like "-5"; HTTP-dates have names
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
