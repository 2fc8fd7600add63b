// The pairing exchange (docs/e2e.md "Pairing"): a new holder (the joiner: a device opening a pairing
// link, or a machine running `lineup join`) and a holder of the content key (the sponsor: an agent
// machine, or an already paired device) swap ECDH public keys THROUGH the relay. Each message carries
// an HMAC keyed from the pairing secret, which travels only in the link's #fragment (never to the relay),
// so a relay that substitutes either public key is detected. The sponsor's reply also carries the
// content key wrapped for the joiner.
import { b64u, fields, randomBytes, unb64u, type Bytes } from "../bytes.js";
import { E2EError } from "./errors.js";
import { HOLDER_ID_RE, importPublicKey, type ContentKey } from "./keys.js";
import { parseWrappedKey, unwrapContentKey, wrapContentKey, type HolderPublic, type HolderSelf, type WrappedKey } from "./wrap.js";

export const PAIR_VERSION = 1;
export const PAIRING_SECRET_BYTES = 32;
export const LABELS = {
  codeId: "lineup-e2e/1 code-id",
  mac: "lineup-e2e/1 pair-mac",
  hello: "lineup-e2e/1 pair-hello",
  reply: "lineup-e2e/1 pair-reply",
  compare: "lineup-e2e/1 compare",
} as const;

/** Joiner → sponsor. */
export interface PairHello {
  v: typeof PAIR_VERSION;
  t: "pair.hello";
  /** Inbox id and pairing code id (pairingCodeId). */
  i: string;
  code_id: string;
  joiner: HolderPublic;
  /** base64url HMAC-SHA-256 over the hello transcript. */
  mac: string;
}
/** Sponsor → joiner. */
export interface PairReply {
  v: typeof PAIR_VERSION;
  t: "pair.reply";
  i: string;
  code_id: string;
  sponsor: HolderPublic;
  /** The current content key, wrapped for the joiner. */
  wrap: WrappedKey;
  /** base64url HMAC-SHA-256 over the full transcript (both keys, both roles). */
  mac: string;
}

/** A fresh pairing secret: 32 random bytes, base64url (43 characters). */
export const newPairingSecret = (): string => b64u(randomBytes(PAIRING_SECRET_BYTES));

/** The link fragment: `pair=<code>&k=<secret>` (the relay's v1 parser reads `pair=` and ignores `k`). */
export const pairingFragment = (code: string, secret: string): string => `pair=${code}&k=${secret}`;

/** Reads `#pair=<code>&k=<secret>` (with or without the `#`). `secret` is absent on a v1 (plaintext) link. */
export function parsePairingFragment(hash: string): { code: string; secret?: string } | undefined {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const code = params.get("pair");
  if (!code) return undefined;
  const k = params.get("k");
  return k && isPairingSecret(k) ? { code, secret: k } : { code };
}

export function isPairingSecret(s: string): boolean {
  try {
    return unb64u(s).length === PAIRING_SECRET_BYTES;
  } catch {
    return false;
  }
}

function secretBytes(secret: string): Bytes {
  if (!isPairingSecret(secret)) throw new E2EError("bad_format", "pairing secret: not 32 bytes of base64url");
  return unb64u(secret);
}

/**
 * The public name of a pairing (or join) code inside the exchange: base64url of the first 16 bytes of
 * SHA-256(fields(label, code)). The relay can compute it too; it is a name, not a secret.
 */
export async function pairingCodeId(code: string): Promise<string> {
  const h = new Uint8Array(await crypto.subtle.digest("SHA-256", fields([LABELS.codeId, code])));
  return b64u(h.subarray(0, 16));
}

/** HKDF-SHA-256(salt = empty, ikm = secret, info = fields("lineup-e2e/1 pair-mac", inbox, code_id)) → HMAC-SHA-256 key. */
export async function pairingMacKey(secret: string, inboxId: string, codeId: string): Promise<CryptoKey> {
  const ikm = await crypto.subtle.importKey("raw", secretBytes(secret), "HKDF", false, ["deriveKey"]);
  const salt: Bytes = new Uint8Array(0);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt, info: fields([LABELS.mac, inboxId, codeId]) },
    ikm,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

const helloTranscript = (i: string, codeId: string, j: HolderPublic): Bytes => fields([LABELS.hello, i, codeId, "joiner", j.id, j.publicKey]);
const replyTranscript = (i: string, codeId: string, j: HolderPublic, s: HolderPublic): Bytes =>
  fields([LABELS.reply, i, codeId, "joiner", j.id, j.publicKey, "sponsor", s.id, s.publicKey]);

async function mac(key: CryptoKey, data: Bytes): Promise<string> {
  return b64u(new Uint8Array(await crypto.subtle.sign("HMAC", key, data)));
}
async function checkMac(key: CryptoKey, data: Bytes, tag: string, what: string): Promise<void> {
  let t: Bytes;
  try {
    t = unb64u(tag);
  } catch {
    throw new E2EError("bad_mac", `${what}: MAC is not base64url`);
  }
  // subtle.verify compares in constant time.
  if (t.length !== 32 || !(await crypto.subtle.verify("HMAC", key, t, data)))
    throw new E2EError("bad_mac", `${what}: MAC does not verify (wrong pairing secret, or a key was substituted)`);
}

function holderPublic(v: unknown, what: string): HolderPublic {
  const o = v as Record<string, unknown> | null;
  if (typeof o !== "object" || o === null || typeof o.id !== "string" || typeof o.publicKey !== "string" || !HOLDER_ID_RE.test(o.id))
    throw new E2EError("bad_format", `${what}: not {id, publicKey}`);
  return { id: o.id, publicKey: o.publicKey };
}

function header(v: unknown, t: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new E2EError("bad_format", `${t}: not an object`);
  const o = v as Record<string, unknown>;
  if (o.v !== PAIR_VERSION || o.t !== t || typeof o.i !== "string" || typeof o.code_id !== "string" || typeof o.mac !== "string")
    throw new E2EError("bad_format", `${t}: bad header`);
  return o;
}

/** Step 2 (joiner): its public key, MAC'd with the pairing secret. */
export async function makePairHello(opts: { secret: string; inboxId: string; codeId: string; joiner: HolderPublic }): Promise<PairHello> {
  const joiner = holderPublic(opts.joiner, "joiner");
  await importPublicKey(joiner.publicKey); // refuse to send a key nobody can use
  const key = await pairingMacKey(opts.secret, opts.inboxId, opts.codeId);
  return {
    v: PAIR_VERSION,
    t: "pair.hello",
    i: opts.inboxId,
    code_id: opts.codeId,
    joiner,
    mac: await mac(key, helloTranscript(opts.inboxId, opts.codeId, joiner)),
  };
}

/** Step 3a (sponsor): the hello is for this inbox and code, and its MAC verifies. */
export async function verifyPairHello(opts: { secret: string; inboxId: string; codeId: string; hello: unknown }): Promise<PairHello> {
  const o = header(opts.hello, "pair.hello");
  const joiner = holderPublic(o.joiner, "pair.hello joiner");
  if (o.i !== opts.inboxId || o.code_id !== opts.codeId) throw new E2EError("not_for_us", "pair.hello: another inbox or code");
  await checkMac(
    await pairingMacKey(opts.secret, opts.inboxId, opts.codeId),
    helloTranscript(opts.inboxId, opts.codeId, joiner),
    o.mac as string,
    "pair.hello",
  );
  await importPublicKey(joiner.publicKey);
  return { v: PAIR_VERSION, t: "pair.hello", i: opts.inboxId, code_id: opts.codeId, joiner, mac: o.mac as string };
}

/**
 * Step 3b (sponsor): verifies the hello, wraps the content key for the joiner, MACs the full transcript.
 * Returns the reply and the comparison code the sponsor may show.
 */
export async function makePairReply(opts: {
  secret: string;
  inboxId: string;
  codeId: string;
  hello: unknown;
  sponsor: HolderSelf;
  key: ContentKey;
  nonce?: Uint8Array;
}): Promise<{ reply: PairReply; comparisonCode: string; joiner: HolderPublic }> {
  const hello = await verifyPairHello(opts);
  const sponsor: HolderPublic = { id: opts.sponsor.id, publicKey: opts.sponsor.publicKey };
  if (sponsor.id === hello.joiner.id) throw new E2EError("bad_format", "sponsor and joiner are the same holder");
  const wrap = await wrapContentKey({
    inboxId: opts.inboxId,
    sender: opts.sponsor,
    recipient: hello.joiner,
    key: opts.key,
    ...(opts.nonce ? { nonce: opts.nonce } : {}),
  });
  const key = await pairingMacKey(opts.secret, opts.inboxId, opts.codeId);
  const reply: PairReply = {
    v: PAIR_VERSION,
    t: "pair.reply",
    i: opts.inboxId,
    code_id: opts.codeId,
    sponsor,
    wrap,
    mac: await mac(key, replyTranscript(opts.inboxId, opts.codeId, hello.joiner, sponsor)),
  };
  return { reply, comparisonCode: await comparisonCode({ inboxId: opts.inboxId, codeId: opts.codeId, joiner: hello.joiner, sponsor }), joiner: hello.joiner };
}

/**
 * Step 4 (joiner): the reply's MAC covers the joiner's own key as it sent it and the sponsor's key, so a
 * substitution either way fails here; then the wrap must come from that very sponsor key.
 */
export async function acceptPairReply(opts: {
  secret: string;
  inboxId: string;
  codeId: string;
  joiner: HolderSelf;
  reply: unknown;
}): Promise<{ key: ContentKey; sponsor: HolderPublic; comparisonCode: string }> {
  const o = header(opts.reply, "pair.reply");
  const sponsor = holderPublic(o.sponsor, "pair.reply sponsor");
  if (o.i !== opts.inboxId || o.code_id !== opts.codeId) throw new E2EError("not_for_us", "pair.reply: another inbox or code");
  const joiner: HolderPublic = { id: opts.joiner.id, publicKey: opts.joiner.publicKey };
  await checkMac(
    await pairingMacKey(opts.secret, opts.inboxId, opts.codeId),
    replyTranscript(opts.inboxId, opts.codeId, joiner, sponsor),
    o.mac as string,
    "pair.reply",
  );
  const wrap = parseWrappedKey(o.wrap);
  if (wrap.from !== sponsor.id || wrap.k !== sponsor.publicKey) throw new E2EError("untrusted_sender", "pair.reply: the wrap is not from the sponsor's key");
  const key = await unwrapContentKey({ inboxId: opts.inboxId, recipient: opts.joiner, wrapped: wrap, trusted: { [sponsor.id]: sponsor.publicKey } });
  return { key, sponsor, comparisonCode: await comparisonCode({ inboxId: opts.inboxId, codeId: opts.codeId, joiner, sponsor }) };
}

/**
 * A 6-digit code both sides can show ("123 456"): SHA-256(fields("lineup-e2e/1 compare", inbox, code_id,
 * joiner id, joiner key, sponsor id, sponsor key)), first 4 bytes big-endian mod 10^6. It does not use the
 * pairing secret, so even someone who read the link and relayed two different key pairs would make the
 * two screens show different codes.
 */
export async function comparisonCode(t: { inboxId: string; codeId: string; joiner: HolderPublic; sponsor: HolderPublic }): Promise<string> {
  const h = new Uint8Array(
    await crypto.subtle.digest("SHA-256", fields([LABELS.compare, t.inboxId, t.codeId, t.joiner.id, t.joiner.publicKey, t.sponsor.id, t.sponsor.publicKey])),
  );
  const n = ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
  const s = String(n % 1_000_000).padStart(6, "0");
  return `${s.slice(0, 3)} ${s.slice(3)}`;
}
