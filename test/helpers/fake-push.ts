// A fake Web Push service for tests (docs/push.md): it checks every request as a real one would (VAPID
// JWT with jose: ES256, `aud` = the endpoint's origin, `exp` ≤ 24 h, a `sub`; aes128gcm, TTL, Urgency,
// Topic) and decrypts every body with http_ece, an implementation independent of ours. Used inside workerd
// (global fetch stubbed) and from Node behind a real HTTP server on 127.0.0.1 (the Chromium test).
import { decodeJwt, importJWK, jwtVerify } from "jose";
import type { PushMessage } from "../../shared/contract/push.js";
import { b64u as toB64url, fromB64url } from "../../shared/crypto/bytes.js";

// node:crypto, node:buffer and http_ece by their few members used here: this file is type-checked by the
// workers project too, which has no Node types (workerd runs them under nodejs_compat).
interface Ecdh {
  generateKeys(): unknown;
  getPublicKey(): Uint8Array;
  setPrivateKey(key: Uint8Array): void;
}
interface NodeBytes extends Uint8Array {
  toString(encoding?: "utf8"): string;
}
interface HttpEce {
  decrypt(body: NodeBytes, params: { version: "aes128gcm"; privateKey: Ecdh; authSecret: string }): NodeBytes;
}
const crypto_ = (await import("node:crypto" as string)) as { createECDH(curve: "prime256v1"): Ecdh };
const NodeBuffer = ((await import("node:buffer" as string)) as { Buffer: { from(b: Uint8Array): NodeBytes } }).Buffer;
const eceModule = (await import("http_ece" as string)) as HttpEce & { default?: HttpEce };
// http_ece ships no types; decrypt is the one call we use.
const ece: HttpEce = eceModule.default ?? eceModule;

export interface Received {
  endpoint: string;
  headers: Record<string, string>;
  /** The decrypted JSON, parsed. */
  msg: PushMessage;
  plain: string;
  claims: { aud: string; exp: number; sub: string };
  status: number;
}

export type Answer = number | { status: number; headers?: Record<string, string> };

export class FakePushService {
  readonly received: Received[] = [];
  /** Requests refused before decryption (bad VAPID, bad headers): a test expects this to stay empty. */
  readonly problems: string[] = [];
  /** Endpoints asked, with the status answered (also for refused attempts, e.g. 503). */
  readonly attempts: { endpoint: string; status: number }[] = [];
  private readonly subs = new Map<string, { ecdh: Ecdh; auth: string }>();
  /** What to answer, per endpoint and attempt number (0-based); 201 by default. */
  answer: (endpoint: string, n: number) => Answer = () => 201;

  constructor(readonly base: string) {}

  /** A new subscriber with node:crypto keys: what `PushSubscription.toJSON()` would give. */
  subscriber(name: string): { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } } {
    const ecdh = crypto_.createECDH("prime256v1");
    ecdh.generateKeys();
    const auth = toB64url(crypto.getRandomValues(new Uint8Array(16)));
    const endpoint = `${this.base}/push/${name}`;
    this.subs.set(endpoint, { ecdh, auth });
    return { endpoint, expirationTime: null, keys: { p256dh: toB64url(ecdh.getPublicKey()), auth } };
  }

  /** A subscriber whose keys were made elsewhere (the browser page): its private scalar `d` and auth secret. */
  addSubscriber(endpoint: string, d: string, auth: string): void {
    const ecdh = crypto_.createECDH("prime256v1");
    ecdh.setPrivateKey(fromB64url(d));
    this.subs.set(endpoint, { ecdh, auth });
  }

  for(endpoint: string): Received[] {
    return this.received.filter((r) => r.endpoint === endpoint);
  }

  async handle(req: Request): Promise<Response> {
    const endpoint = req.url;
    const n = this.attempts.filter((a) => a.endpoint === endpoint).length;
    const a = this.answer(endpoint, n);
    const { status, headers } = typeof a === "number" ? { status: a, headers: {} } : { status: a.status, headers: a.headers ?? {} };
    this.attempts.push({ endpoint, status });
    const h: Record<string, string> = {};
    req.headers.forEach((v, k) => (h[k] = v));
    const body = NodeBuffer.from(new Uint8Array(await req.arrayBuffer()));
    const problem = (p: string) => {
      this.problems.push(`${endpoint}: ${p}`);
      return new Response(p, { status: 400 });
    };
    const sub = this.subs.get(endpoint);
    if (!sub) return new Response("no such subscription", { status: 404 });
    if (req.method !== "POST") return problem(`method ${req.method}`);
    if (h["content-encoding"] !== "aes128gcm") return problem(`content-encoding ${h["content-encoding"]}`);
    if (!/^\d+$/.test(h.ttl ?? "")) return problem(`TTL ${h.ttl}`);
    if (h.urgency && !["very-low", "low", "normal", "high"].includes(h.urgency)) return problem(`urgency ${h.urgency}`);
    if (h.topic && !/^[A-Za-z0-9_-]{1,32}$/.test(h.topic)) return problem(`topic ${h.topic}`);
    if (body.length > 4096) return problem(`body of ${body.length} bytes`);
    const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(h.authorization ?? "");
    if (!m) return problem(`authorization ${h.authorization}`);
    const [, jwt, k] = m;
    const point = fromB64url(k!);
    let claims: Received["claims"];
    try {
      const key = await importJWK({ kty: "EC", crv: "P-256", x: toB64url(point.subarray(1, 33)), y: toB64url(point.subarray(33)) }, "ES256");
      await jwtVerify(jwt!, key, { algorithms: ["ES256"], audience: new URL(endpoint).origin });
      claims = decodeJwt(jwt!) as Received["claims"];
    } catch (e) {
      return problem(`VAPID JWT: ${(e as Error).message}`);
    }
    if (!(claims.exp <= Math.floor(Date.now() / 1000) + 24 * 3600)) return problem(`exp ${claims.exp} more than 24 h ahead`);
    if (!/^(mailto:|https:)/.test(claims.sub ?? "")) return problem(`sub ${claims.sub}`);
    let plain: string;
    try {
      plain = ece.decrypt(body, { version: "aes128gcm", privateKey: sub.ecdh, authSecret: sub.auth }).toString("utf8");
    } catch (e) {
      return problem(`http_ece could not decrypt: ${(e as Error).message}`);
    }
    if (status >= 200 && status < 300) this.received.push({ endpoint, headers: h, msg: JSON.parse(plain) as PushMessage, plain, claims, status });
    return new Response(null, { status, headers });
  }
}
