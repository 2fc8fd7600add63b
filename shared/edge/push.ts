// The Web Push endpoints of the shared edge (docs/push.md, docs/inbox.md), for the Worker and the LAN
// server alike: the relay's public key, a device's subscription, the inbox's reminder settings and the
// log, and answers from a notification's action (a single-use token instead of a credential: the service
// worker holds none). A sub-app mounted by shared/edge/app.ts; the server's offer is `EdgePush` (shared/edge/host.ts).
import { Hono, type Context } from "hono";
import type { PushSub } from "../inbox/push.js";
import { PUSH_TOKEN_RE, PushAnswerBody, PushAttentionBody, PushSettingsBody, PushSubscribeBody, type PushSettings } from "../contract/push.js";
import { braked, holder, relayKey, sha256 } from "./credential.js";
import type { HostVars } from "./host.js";
import { body, fail } from "./http.js";
import { checkEndpoint, WebPushError } from "../crypto/webpush/index.js";
import { publicUrlProblem } from "./public-host.js";
import { b64u as toB64url, fromB64url } from "../crypto/bytes.js";

/** A base64url key of exactly `n` bytes (p256dh: an uncompressed P-256 point), normalized to base64url. */
function key(v: string, n: number, point: boolean): string | undefined {
  try {
    const b = fromB64url(v);
    return b.length === n && (!point || b[0] === 0x04) ? toB64url(b) : undefined;
  } catch {
    return undefined;
  }
}

const none = (c: Context) => fail(c, 404, "not_found", "this server does not send Web Push");

export const pushRoutes = new Hono<HostVars>();

pushRoutes.get("/api/push/key", async (c) => {
  const p = c.var.host.push;
  if (!p) return none(c);
  return c.json({ public_key: await p.publicKey() });
});

// Rotation: the old key's subscriptions are skipped (logged `stale_key`) until each device re-subscribes.
const rotatable = (c: Context<HostVars>) => (c.var.host.push?.rotate ? undefined : none(c));
pushRoutes.post(
  "/api/push/rotate-key",
  relayKey("rotating the VAPID key", () => "too many wrong keys from this address; wait a minute", { retryAfter: false, before: rotatable }),
  async (c) => {
    return c.json({ public_key: await c.var.host.push!.rotate!() });
  },
);

const pushing = async (c: Context<HostVars>, next: () => Promise<void>) => (c.var.host.push ? next() : none(c));
pushRoutes.put("/api/inbox/push", holder("device"), pushing, ...body(PushSubscribeBody), async (c) => {
  const who = c.var.holder;
  const p = c.var.host.push!;
  const b = c.req.valid("json");
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
  if (key(b.application_server_key, 65, true) !== current)
    return fail(c, 409, "stale_key", "the subscription was made with another key: unsubscribe, subscribe with GET /api/push/key's key, and register again");
  const sub: PushSub = { endpoint: b.subscription.endpoint, p256dh, auth, key: current, local: url.protocol === "http:", lang: b.lang ?? "en", at: Date.now() };
  const h = c.var.host;
  const inbox = h.inboxes!.inbox(who.inbox);
  await inbox.pushSubscribe(who.id, sub, h.publicBase ?? new URL(c.req.url).origin);
  return c.json(await inbox.pushInfo(who.id));
});

pushRoutes.delete("/api/inbox/push", holder("device"), async (c) => {
  await c.var.host.inboxes!.inbox(c.var.holder.inbox).pushUnsubscribe(c.var.holder.id);
  return c.body(null, 204);
});

pushRoutes.get("/api/inbox/push", holder("device", "machine"), async (c) => {
  const who = c.var.holder;
  const sid = c.req.query("session_id");
  return c.json(await c.var.host.inboxes!.inbox(who.inbox).pushInfo(who.kind === "device" ? who.id : undefined, sid));
});

pushRoutes.put("/api/inbox/push/settings", holder("device", "machine"), ...body(PushSettingsBody), async (c) => {
  const clean = Object.fromEntries(Object.entries(c.req.valid("json")).filter(([, v]) => v !== undefined)) as Partial<PushSettings>;
  return c.json(await c.var.host.inboxes!.inbox(c.var.holder.inbox).pushSettings(clean));
});

// An agent's "waiting for you" with no call (lineup hook notify): a machine of the inbox, for a session of it.
pushRoutes.post("/api/inbox/push/attention", holder("machine"), ...body(PushAttentionBody), async (c) => {
  const b = c.req.valid("json");
  const r = await c.var.host.inboxes!.inbox(c.var.holder.inbox).pushAttention(b.session_id, b.text, b.reason);
  if (r.status === "unknown_session") return fail(c, 404, "not_found", "no live session of this inbox has that id");
  if (r.status === "throttled") {
    c.header("retry-after", String(r.retry_after_s));
    return fail(c, 429, "rate_limited", `one attention push per session a minute; again in ${r.retry_after_s} s`);
  }
  return c.json({ queued: r.devices }, 202);
});

// Idempotent: the same token and action answer again; first answer wins as everywhere (409 after).
const answerGate = async (c: Context<HostVars>, next: () => Promise<void>) =>
  c.var.host.inboxes ? (braked(c, c.var.host, "too many wrong tokens from this address; wait a minute") ?? next()) : none(c);
pushRoutes.post("/api/push/answer", answerGate, ...body(PushAnswerBody), async (c) => {
  const h = c.var.host;
  const b = c.req.valid("json");
  const m = PUSH_TOKEN_RE.exec(b.token);
  const invalid = () => {
    h.brake.failed(h.clientAddr, Date.now());
    return fail(c, 404, "invalid_token", "this answer token is unknown or its call is long gone");
  };
  if (!m) return invalid();
  const r = await h.inboxes!.inbox(m[1]!).pushAnswer(await sha256(m[2]!), "action" in b ? b.action : { sealed: b.sealed });
  switch (r.status) {
    case "answered":
      return c.json({ status: "answered" });
    case "already_answered":
      return fail(c, 409, "already_answered", "another answer came first", {
        ...(r.by ? { answered_by: r.by } : {}),
        ...(r.answer ? { answer: r.answer } : {}),
      });
    case "closed":
      return fail(c, 409, "call_closed", `the call is no longer waiting (${r.outcome})`, { outcome: r.outcome });
    case "bad_action":
      return fail(c, 400, "bad_action", "this action does not answer this call");
    default:
      return invalid();
  }
});
