// Session tokens: `v2.<session>.<role>.<expiry>.<epoch>.<hmac>` signed with HMAC-SHA256 by the relay's
// token secret (never RELAY_KEY, which every agent machine holds), so they are bound to one session, one
// role and one incarnation of the session (`epoch`: a re-created session refuses the old tokens),
// unforgeable, and their signature is checked without storage. A session an inbox machine created has
// `v3.<session>.<role>.<expiry>.<epoch>.<inbox>.<machine>.<hmac>`: its owner, which the edge checks against
// the inbox, so revoking the machine refuses the token at once (docs/inbox.md "Revocation").
// Only [A-Za-z0-9._~-] appear, so a token is valid in a URL and as a WebSocket subprotocol.
import { TOKEN_SUBPROTOCOL_PREFIX } from "../contract/limits.js";
import type { Role } from "../contract/protocol.js";
import { SESSION_ID_RE } from "../contract/protocol.js";
import { INBOX_ID_RE, MACHINE_ID_RE } from "../contract/inbox.js";

import { b64u as b64url, randomId } from "../crypto/bytes.js";

// Kept as re-exports so callers' import lines stay; the code lives in shared/crypto/bytes.ts.
export { b64url, randomId };

const enc = new TextEncoder();

const keys = new Map<string, Promise<CryptoKey>>();
function hmacKey(secret: string): Promise<CryptoKey> {
  let k = keys.get(secret);
  if (!k) {
    k = crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keys.set(secret, k);
  }
  return k;
}

export async function hmac(secret: string, data: string): Promise<string> {
  const sig = await crypto.subtle.sign("HMAC", await hmacKey(secret), enc.encode(data));
  return b64url(new Uint8Array(sig));
}

/** The inbox machine that created a token's session. */
export interface TokenOwner {
  inbox: string;
  machine: string;
}

export async function signToken(secret: string, sessionId: string, role: Role, expiresAt: number, epoch: number, owner?: TokenOwner): Promise<string> {
  const head = `${sessionId}.${role}.${expiresAt.toString(36)}.${epoch.toString(36)}`;
  const body = owner ? `v3.${head}.${owner.inbox}.${owner.machine}` : `v2.${head}`;
  return `${body}.${await hmac(secret, body)}`;
}

export type TokenCheck = { ok: true; sessionId: string; role: Role; expiresAt: number; epoch: number; expired: boolean; owner?: TokenOwner } | { ok: false };

/** Verifies signature and shape in constant time with respect to the signature. */
export async function verifyToken(secret: string, token: string): Promise<TokenCheck> {
  if (token.length > 256) return { ok: false };
  const parts = token.split(".");
  if (!((parts.length === 6 && parts[0] === "v2") || (parts.length === 8 && parts[0] === "v3"))) return { ok: false };
  const [, sessionId, role, exp, ep] = parts as [string, string, string, string, string];
  const sig = parts.at(-1)!;
  const owner = parts.length === 8 ? { inbox: parts[5]!, machine: parts[6]! } : undefined;
  if (!SESSION_ID_RE.test(sessionId) || (role !== "agent" && role !== "app") || !/^[0-9a-z]{1,12}$/.test(exp) || !/^[0-9a-z]{1,12}$/.test(ep))
    return { ok: false };
  if (owner && !(INBOX_ID_RE.test(owner.inbox) && MACHINE_ID_RE.test(owner.machine))) return { ok: false };
  // Only the canonical encoding of a 32-byte HMAC: atob() also takes `=` padding and ignores the unused
  // low bits of the last character, so `<token>=` or a last character off by one bit would verify too.
  if (!/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/.test(sig)) return { ok: false };
  const body = parts.slice(0, -1).join(".");
  // crypto.subtle.verify compares in constant time; decoding the signature first keeps it that way.
  let sigBytes: Uint8Array<ArrayBuffer>;
  try {
    sigBytes = Uint8Array.from(atob(sig.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  } catch {
    return { ok: false };
  }
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(secret), sigBytes, enc.encode(body));
  if (!valid) return { ok: false };
  const expiresAt = parseInt(exp, 36);
  return { ok: true, sessionId, role, expiresAt, epoch: parseInt(ep, 36), expired: Date.now() >= expiresAt, ...(owner ? { owner } : {}) };
}

let eqKey: string | undefined;

/** Constant-time string comparison (for RELAY_KEY and webhook secrets). */
export async function safeEqual(a: string, b: string): Promise<boolean> {
  // Compare HMACs of both under a random key: equal length, and no early exit on the secret's bytes.
  // One key per isolate, made on first use (Workers forbid random values at global scope): a fresh key
  // per call filled the key cache with one CryptoKey per request, forever.
  eqKey ??= randomId(16);
  const [x, y] = await Promise.all([hmac(eqKey, a), hmac(eqKey, b)]);
  let d = x.length ^ y.length;
  for (let i = 0; i < Math.min(x.length, y.length); i++) d |= x.charCodeAt(i) ^ y.charCodeAt(i);
  return d === 0;
}

/** Where a client may put its token: Authorization header, subprotocol `lineup.token.<t>`, or `?token=`. */
export function tokenFrom(headers: Headers, url: URL): { token?: string; viaSubprotocol: boolean } {
  const auth = headers.get("authorization");
  if (auth && /^Bearer\s+/i.test(auth)) return { token: auth.replace(/^Bearer\s+/i, "").trim(), viaSubprotocol: false };
  const proto = headers.get("sec-websocket-protocol");
  if (proto) {
    for (const p of proto.split(",").map((s) => s.trim())) {
      if (p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) return { token: p.slice(TOKEN_SUBPROTOCOL_PREFIX.length), viaSubprotocol: true };
    }
  }
  const q = url.searchParams.get("token");
  if (q) return { token: q, viaSubprotocol: false };
  return { viaSubprotocol: false };
}
