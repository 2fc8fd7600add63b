// The Web Push endpoints of the shared edge (docs/push.md, docs/inbox.md), for the Worker and the LAN
// server alike: the relay's public key, a device's subscription, the inbox's reminder settings and the
// log, and answers from a notification's action (a single-use token instead of a credential: the service
// worker holds none).
import type { Context, Hono } from "hono";
import { fail, type EdgeEnv, type EdgeHost } from "./app.js";
import { sha256, type Holder } from "./inbox.js";
import type { CredentialKind } from "../contract/inbox.js";
import type { PushSub } from "../inbox/push.js";
import { PUSH_TOKEN_RE, PushAnswerBody, PushAttentionBody, PushSettingsBody, PushSubscribeBody, type PushSettings } from "../contract/push.js";
import { describeIssues } from "../contract/protocol.js";
import { safeEqual } from "./tokens.js";
import { checkEndpoint, WebPushError } from "../crypto/webpush/index.js";
import { publicUrlProblem } from "./public-host.js";
import { b64u as toB64url, fromB64url } from "../crypto/bytes.js";

/** What a server offers for push: its VAPID public key, and whether http://127.0.0.1 endpoints are fine here. */
export interface EdgePush {
  publicKey(): Promise<string>;
  /** Makes a new key pair (devices re-subscribe on their next open); a server may not offer it. */
  rotate?(): Promise<string>;
  /**
   * http://127.0.0.1|localhost|[::1] endpoints (a local fake push service) are fine for this request: the Worker
   * when it is served on localhost (the dev key's rule); the LAN server only with its test-only `allowLocalPush`
   * and a request whose socket peer is loopback — never because of the Host header.
   */
  allowLocalHttp: boolean;
}

type BodyOf = <T>(c: Context, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof describeIssues>[0] } }) => Promise<T | Response>;
type HolderOf<B extends object> = (c: Context<EdgeEnv<B>>, kinds: readonly CredentialKind[]) => Promise<Holder | Response>;

/** A base64url key of exactly `n` bytes (p256dh: an uncompressed P-256 point), normalized to base64url. */
function key(v: string, n: number, point: boolean): string | undefined {
  try {
    const b = fromB64url(v);
    return b.length === n && (!point || b[0] === 0x04) ? toB64url(b) : undefined;
  } catch {
    return undefined;
  }
}

export function pushRoutes<B extends object>(app: Hono<EdgeEnv<B>>, host: (c: Context<EdgeEnv<B>>) => EdgeHost, holder: HolderOf<B>, body: BodyOf): void {
  const push = (c: Context<EdgeEnv<B>>) => host(c).push;
  const none = (c: Context) => fail(c, 404, "not_found", "this server does not send Web Push");

  app.get("/api/push/key", async (c) => {
    const p = push(c);
    if (!p) return none(c);
    return c.json({ public_key: await p.publicKey() });
  });

  // Rotation: the old key's subscriptions are skipped (logged `stale_key`) until each device re-subscribes.
  app.post("/api/push/rotate-key", async (c) => {
    const h = host(c);
    const p = h.push;
    if (!p?.rotate) return none(c);
    if (!h.relayKey) return fail(c, 503, "not_configured", h.unconfigured);
    const given = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    if (h.brake.blocked(h.clientAddr, Date.now())) return fail(c, 429, "rate_limited", "too many wrong keys from this address; wait a minute");
    if (!(await safeEqual(given, h.relayKey))) {
      h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 401, "unauthorized", "rotating the VAPID key needs Authorization: Bearer <RELAY_KEY>");
    }
    return c.json({ public_key: await p.rotate() });
  });

  app.put("/api/inbox/push", async (c) => {
    const who = await holder(c, ["device"]);
    if (who instanceof Response) return who;
    const p = push(c);
    if (!p) return none(c);
    const b = await body(c, PushSubscribeBody);
    if (b instanceof Response) return b;
    // Push services are public names on the default port: the relay (or a LAN server inside a home
    // network) must not be made to POST to an address of the device's choosing (checked again at each send).
    let url: URL;
    try {
      url = checkEndpoint(b.subscription.endpoint, { allowLocalHttp: p.allowLocalHttp, publicHost: publicUrlProblem });
    } catch (e) {
      return fail(c, 400, "invalid_endpoint", e instanceof WebPushError ? e.message : "bad endpoint");
    }
    const p256dh = key(b.subscription.keys.p256dh, 65, true);
    const auth = key(b.subscription.keys.auth, 16, false);
    if (!p256dh || !auth) return fail(c, 400, "invalid_subscription_keys", "keys.p256dh must be a 65-byte P-256 point and keys.auth 16 bytes, base64url");
    const current = await p.publicKey();
    if (key(b.application_server_key, 65, true) !== current) return fail(c, 409, "stale_key", "the subscription was made with another key: unsubscribe, subscribe with GET /api/push/key's key, and register again");
    const sub: PushSub = { endpoint: b.subscription.endpoint, p256dh, auth, key: current, local: url.protocol === "http:", lang: b.lang ?? "en", at: Date.now() };
    const h = host(c);
    const inbox = h.inboxes!.inbox(who.inbox);
    await inbox.pushSubscribe(who.id, sub, h.publicBase ?? new URL(c.req.url).origin);
    return c.json(await inbox.pushInfo(who.id));
  });

  app.delete("/api/inbox/push", async (c) => {
    const who = await holder(c, ["device"]);
    if (who instanceof Response) return who;
    await host(c).inboxes!.inbox(who.inbox).pushUnsubscribe(who.id);
    return c.body(null, 204);
  });

  app.get("/api/inbox/push", async (c) => {
    const who = await holder(c, ["device", "machine"]);
    if (who instanceof Response) return who;
    const sid = c.req.query("session_id");
    return c.json(await host(c).inboxes!.inbox(who.inbox).pushInfo(who.kind === "device" ? who.id : undefined, sid));
  });

  app.put("/api/inbox/push/settings", async (c) => {
    const who = await holder(c, ["device", "machine"]);
    if (who instanceof Response) return who;
    const b = await body(c, PushSettingsBody);
    if (b instanceof Response) return b;
    const clean = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) as Partial<PushSettings>;
    return c.json(await host(c).inboxes!.inbox(who.inbox).pushSettings(clean));
  });

  // An agent's "waiting for you" with no call (lineup hook notify): a machine of the inbox, for a session of it.
  app.post("/api/inbox/push/attention", async (c) => {
    const who = await holder(c, ["machine"]);
    if (who instanceof Response) return who;
    const b = await body(c, PushAttentionBody);
    if (b instanceof Response) return b;
    const r = await host(c).inboxes!.inbox(who.inbox).pushAttention(b.session_id, b.text);
    if (r.status === "unknown_session") return fail(c, 404, "not_found", "no live session of this inbox has that id");
    if (r.status === "throttled") {
      c.header("retry-after", String(r.retry_after_s));
      return fail(c, 429, "rate_limited", `one attention push per session a minute; again in ${r.retry_after_s} s`);
    }
    return c.json({ queued: r.devices }, 202);
  });

  // Idempotent: the same token and action answer again; first answer wins as everywhere (409 after).
  app.post("/api/push/answer", async (c) => {
    const h = host(c);
    if (!h.inboxes) return none(c);
    if (h.brake.blocked(h.clientAddr, Date.now())) {
      c.header("retry-after", "60");
      return fail(c, 429, "rate_limited", "too many wrong tokens from this address; wait a minute");
    }
    const b = await body(c, PushAnswerBody);
    if (b instanceof Response) return b;
    const m = PUSH_TOKEN_RE.exec(b.token);
    const invalid = () => {
      h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 404, "invalid_token", "this answer token is unknown or its call is long gone");
    };
    if (!m) return invalid();
    const r = await h.inboxes.inbox(m[1]!).pushAnswer(await sha256(m[2]!), "action" in b ? b.action : { sealed: b.sealed });
    switch (r.status) {
      case "answered":
        return c.json({ status: "answered" });
      case "already_answered":
        return c.json({ error: { code: "already_answered", message: "another answer came first", ...(r.by ? { answered_by: r.by } : {}), ...(r.answer ? { answer: r.answer } : {}) } }, 409);
      case "closed":
        return c.json({ error: { code: "call_closed", message: `the call is no longer waiting (${r.outcome})`, outcome: r.outcome } }, 409);
      case "bad_action":
        return fail(c, 400, "bad_action", "this action does not answer this call");
      default:
        return invalid();
    }
  });
}
