// WuKongIM webhook endpoint: `POST /webhooks/wukongim/<secret>?event=…` (docs/wukongim.md).
// WuKongIM signs nothing, so the path secret (constant-time compare) is the only guard; every field is
// untrusted. WuKongIM counts only HTTP 200 as success and retries otherwise, so we answer fast and do the
// session work after the acknowledgement (waitUntil → the session's Durable Object).
import { Hono, type Context } from "hono";
import { fail, readCapped } from "../../shared/edge/http.js";
import { safeEqual } from "../../shared/edge/tokens.js";
import type { Env } from "../env.js";
import type { ImChannel, ImInbound, ImMessage } from "./bridge.js";
import { decodePayload, LINEUP_TYPE, mentions, parseWebhook, TEXT_TYPE, WK_LIMITS, type WebhookEvent, type WkMessage } from "./wire.js";
import { parseCodeReply } from "./text.js";

type C = Context<{ Bindings: Env }>;

export const wukongimRoutes = new Hono<{ Bindings: Env }>();

const notFound = (c: C) => fail(c, 404, "not_found", "no such endpoint");

wukongimRoutes.post("/:secret", async (c) => {
  const secret = c.env.WUKONGIM_WEBHOOK_SECRET;
  // Wrong or missing secret: the same 404 as any unknown path, and nothing is read or touched.
  if (!secret || !(await safeEqual(c.req.param("secret"), secret))) return notFound(c);
  const event = c.req.query("event") ?? "";
  // Counted while streaming, like every other body: a chunked flood is cut off, never buffered whole.
  const text = await readCapped(c.req.raw, WK_LIMITS.maxWebhookBytes);
  if (text === undefined) return tooLarge(c);
  const parsed = parseWebhook(event, text);
  if (!parsed.ok) return fail(c, 400, "bad_request", parsed.message);

  const work = dispatch(c.env, parsed.value).catch((e: unknown) => console.error("wukongim: dispatch failed", (e as Error).message));
  c.executionCtx.waitUntil(work);

  if (c.env.WUKONGIM_FORWARD_URL) {
    // TSDD deployments: WuKongIM has one webhook target, so every event goes on to TSDD unchanged, and
    // WuKongIM hears 200 only once TSDD did (otherwise it retries; our side de-duplicates).
    const status = await forward(c.env.WUKONGIM_FORWARD_URL, event, text, c.req.header("content-type"));
    if (status !== 200) return fail(c, 502, "forward_failed", `TangSengDaoDao answered ${status || "nothing"}`);
  }
  return c.json({ ok: true }, 200);
});

wukongimRoutes.all("*", (c) => notFound(c));

const tooLarge = (c: C) => fail(c, 413, "too_large", `body over ${WK_LIMITS.maxWebhookBytes} bytes`);

async function forward(base: string, event: string, body: string, contentType: string | undefined): Promise<number> {
  try {
    const res = await fetch(`${base.replace(/\/+$/, "")}/v1/webhook?event=${encodeURIComponent(event)}`, {
      method: "POST",
      headers: { "content-type": contentType ?? "application/json" },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(WK_LIMITS.forwardTimeoutMs),
    });
    await res.body?.cancel();
    return res.status;
  } catch (e) {
    console.warn("wukongim: forwarding failed", (e as Error).message);
    return 0;
  }
}

/**
 * Which session a webhook message belongs to. Person chat (type 1): `channel_id` is the other party as
 * seen from the sender, so a user → bot message has `channel_id` = bot and `from_uid` = user, and the
 * session's channel is the user's uid. Groups: the channel itself, but only messages addressed to the
 * bot (a mention, a code reply, a LineUp frame) — the webhook carries every message of the server.
 */
export function sessionChannelOf(m: WkMessage, payload: Record<string, unknown>, botUid: string): ImChannel | undefined {
  if (m.header?.sync_once === 1) return undefined; // cmd messages
  if (m.from_uid === "" || m.from_uid === botUid) return undefined; // the system uid, our own echoes
  if (m.channel_type === 1) return m.channel_id === botUid ? { channel_id: m.from_uid, channel_type: 1 } : undefined;
  if (payload.type === LINEUP_TYPE) return { channel_id: m.channel_id, channel_type: m.channel_type };
  const men = mentions(payload);
  const addressed =
    men.all ||
    men.uids.includes(botUid) ||
    (payload.type === TEXT_TYPE && typeof payload.content === "string" && parseCodeReply(payload.content) !== undefined);
  return addressed ? { channel_id: m.channel_id, channel_type: m.channel_type } : undefined;
}

async function dispatch(env: Env, ev: WebhookEvent): Promise<void> {
  const bot = env.WUKONGIM_BOT_UID;
  if (!bot) return;
  const groups = new Map<string, { channel: ImChannel; input: ImInbound }>();
  const keyOf = (ch: ImChannel) => `${ch.channel_type}:${ch.channel_id}`;
  if (ev.event === "msg.notify") {
    for (const m of ev.messages) {
      const payload = decodePayload(m.payload);
      if (!payload) continue;
      const channel = sessionChannelOf(m, payload, bot);
      if (!channel) continue;
      const k = keyOf(channel);
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { channel, input: { kind: "messages", messages: [] } }));
      if (g.input.kind === "messages") {
        const msg: ImMessage = { id: m.message_idstr, from_uid: m.from_uid, payload };
        if (m.client_msg_no !== undefined) msg.client_msg_no = m.client_msg_no;
        g.input.messages.push(msg);
      }
    }
  } else if (ev.event === "user.onlinestatus") {
    // The last line of a uid wins (lines are in order); the user's person-chat session gets `im.online`.
    for (const s of ev.statuses) {
      if (s.uid === bot || s.uid === "") continue;
      const channel = { channel_id: s.uid, channel_type: 1 };
      groups.set(keyOf(channel), { channel, input: { kind: "presence", online: s.totalOnline > 0 } });
    }
  }
  // msg.offline repeats a msg.notify message for offline recipients (the never-connected bot gets one for
  // everything sent to it): the message itself is handled from msg.notify, so nothing to do here.
  if (groups.size === 0) return;
  const { imSessionId } = await import("../host.js");
  const list = [...groups.values()];
  for (let i = 0; i < list.length; i += 50) {
    await Promise.allSettled(
      list.slice(i, i + 50).map(async ({ channel, input }) => {
        const sid = await imSessionId(env, channel);
        await env.SESSIONS.get(env.SESSIONS.idFromName(sid)).wukongim(input);
      }),
    );
  }
}
