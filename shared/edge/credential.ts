// The edge's credentials, checked once per request by middleware that hands the route what it proved (issue 27 §5):
// the relay key (`relayKeyOf`), a session token (`sessionToken` → `c.var.authed`) and an inbox credential (`holder` →
// `c.var.holder`); and the session object a key or a machine is handed. Secrets are hashed here and only their SHA-256
// travels further; refusals are in the one error envelope (shared/edge/http.ts).
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { parseCredential, type CredentialKind } from "../contract/inbox.js";
import { SESSION_ID_RE, type Role, type SessionCreated } from "../contract/protocol.js";
import type { SessionMeta } from "../session/engine.js";
import { b64url, safeEqual, signToken, tokenFrom, verifyToken, type TokenOwner } from "./tokens.js";
import { fail } from "./http.js";
import type { Authed, EdgeHost, Holder, HostVars } from "./host.js";

export async function sha256(s: string): Promise<string> {
  return b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s))));
}

/** A session token naming a machine that was revoked since (docs/inbox.md "Revocation"). Tokens without
 * an owner (v1 sessions, OAuth's, those issued before owners existed) are not affected. */
export async function ownerRevoked(host: EdgeHost, owner: TokenOwner | undefined): Promise<boolean> {
  if (!owner) return false;
  if (!host.inboxes) return true;
  return !(await host.inboxes.inbox(owner.inbox).machineLive(owner.machine));
}

/** Checks a device or machine credential; with `sid`, also learns that session's epoch if it is the inbox's. */
export async function checkCredential(host: EdgeHost, raw: string, sid?: string): Promise<Holder | undefined> {
  const cred = parseCredential(raw);
  if (!cred || !host.inboxes) return undefined;
  const a = await host.inboxes.inbox(cred.inbox).auth(cred.kind, cred.id, await sha256(cred.secret), sid);
  if (!a.ok) return undefined;
  return { ...cred, name: a.name, ...(a.session ? { session: a.session } : {}) };
}

/**
 * Middleware: the session token of `/api/sessions/:sid/…` in one of `roles` (`upgrade`: a WebSocket upgrade), as
 * `c.var.authed`. Refusal order: 401 (missing, forged, other session) → 403 role → 426 no upgrade → 404 expired.
 */
export const sessionToken = (roles: readonly Role[], upgrade = false) =>
  createMiddleware<HostVars & { Variables: { authed: Authed } }>(async (c, next) => {
    const host = c.var.host;
    const sid = c.req.param("sid") ?? "";
    const { token, viaSubprotocol } = tokenFrom(c.req.raw.headers, new URL(c.req.url));
    if (!token) return fail(c, 401, "unauthorized", "a session token is required");
    // A paired device's credential stands for an app token in every session of its inbox (docs/inbox.md).
    if (token.startsWith("lud1.") || token.startsWith("lum1.")) {
      const who = await checkCredential(host, token, sid);
      if (!who || who.kind !== "device" || !who.session)
        return fail(c, 401, "unauthorized", "the credential is not valid for this session (revoked, or not of its inbox)");
      if (!roles.includes("app")) return fail(c, 403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
      if (upgrade && c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
      c.set("authed", { sid, role: "app", epoch: who.session.epoch, viaSubprotocol, device: { id: who.id, name: who.name } });
      return next();
    }
    const t = await verifyToken(await host.tokenSecret(), token);
    if (!t.ok || !SESSION_ID_RE.test(sid) || t.sessionId !== sid) return fail(c, 401, "unauthorized", "the token is not valid for this session");
    if (!roles.includes(t.role)) return fail(c, 403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
    // 426 before 404: a deleted session's 404 comes from the session, after the edge's upgrade check.
    if (upgrade && c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
    if (t.expired) return fail(c, 404, "session_not_found", "this session has expired");
    // Its machine revoked: the session is ending (docs/inbox.md "Revocation"), refused before its object hears of it.
    if (await ownerRevoked(host, t.owner)) return fail(c, 404, "session_not_found", "this session ended: the agent machine that created it was revoked");
    c.set("authed", { sid, role: t.role, epoch: t.epoch, viaSubprotocol });
    return next();
  });

/** The address brake's 429 (`message` differs by endpoint, as documented), or undefined when the address may try. */
export function braked(c: Context, h: EdgeHost, message: string, retryAfter = true): Response | undefined {
  if (!h.brake.blocked(h.clientAddr, Date.now())) return undefined;
  if (retryAfter) c.header("retry-after", "60");
  return fail(c, 429, "rate_limited", message);
}

/** The relay key as a Bearer header, behind the brake; a refusal (`need` names what it is needed for), or undefined when it is right. */
export async function relayKeyRefusal(c: Context, h: EdgeHost, need: string, brakeMessage: string, retryAfter = true): Promise<Response | undefined> {
  if (!h.relayKey) return fail(c, 503, "not_configured", h.unconfigured);
  const blocked = braked(c, h, brakeMessage, retryAfter);
  if (blocked) return blocked;
  const given = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
  if (!(await safeEqual(given, h.relayKey))) {
    h.brake.failed(h.clientAddr, Date.now());
    return fail(c, 401, "unauthorized", `${need} needs Authorization: Bearer <RELAY_KEY>`);
  }
  return undefined;
}

/** The brake's words on the inbox endpoints, whose guesses may be keys, credentials or codes. */
export const INBOX_BRAKE = (h: EdgeHost) => `more than ${h.brake.perMin} wrong keys, credentials or codes in a minute from this address; wait a minute`;

/** Middleware: the request's inbox credential of one of `kinds`, as `c.var.holder` — refused 404 (no inboxes here), 429, 401 or 403. */
export const holder = (...kinds: CredentialKind[]) =>
  createMiddleware<HostVars & { Variables: { holder: Holder } }>(async (c, next) => {
    const h = c.var.host;
    if (!h.inboxes) return fail(c, 404, "not_found", "this server has no inboxes");
    const blocked = braked(c, h, INBOX_BRAKE(h));
    if (blocked) return blocked;
    const { token } = tokenFrom(c.req.raw.headers, new URL(c.req.url));
    const who = token ? await checkCredential(h, token) : undefined;
    if (!who) {
      if (token) h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 401, "unauthorized", "an inbox credential (device or machine) is required; a revoked one is refused");
    }
    if (!kinds.includes(who.kind)) return fail(c, 403, "forbidden", `this endpoint needs a ${kinds.join(" or ")} credential`);
    c.set("holder", who);
    await next();
  });

/** The tokens and links of a session, as its creator is handed them. */
export async function sessionObject(c: Context, h: EdgeHost, m: SessionMeta): Promise<SessionCreated> {
  const secret = await h.tokenSecret();
  const base = h.publicBase ?? new URL(c.req.url).origin;
  const owner = m.inbox !== undefined && m.machine !== undefined ? { inbox: m.inbox, machine: m.machine } : undefined;
  const [agent_token, app_token] = await Promise.all([
    signToken(secret, m.session_id, "agent", m.expires_at, m.epoch, owner),
    signToken(secret, m.session_id, "app", m.expires_at, m.epoch, owner),
  ]);
  return {
    session_id: m.session_id,
    agent_token,
    app_token,
    ws_url: `${base.replace(/^http/, "ws")}/api/sessions/${m.session_id}/ws`,
    // The app token rides in the fragment: browsers never send it to a server, so it never hits a log.
    app_url: `${base}/#s=${encodeURIComponent(m.session_id)}&t=${encodeURIComponent(app_token)}`,
    expires_at: m.expires_at,
  };
}

/** Middleware: the relay key (`relayKeyRefusal`), after `before` (e.g. a 404 where this server lacks the feature). */
export const relayKey = (
  need: string,
  brakeMessage: (h: EdgeHost) => string,
  opts: { retryAfter?: boolean; before?: (c: Context<HostVars>) => Response | undefined } = {},
) =>
  createMiddleware<HostVars>(async (c, next) => {
    const refused = opts.before?.(c) ?? (await relayKeyRefusal(c, c.var.host, need, brakeMessage(c.var.host), opts.retryAfter));
    if (refused) return refused;
    await next();
  });

/** The brake's words where only the relay key is guessed. */
export const KEY_BRAKE = (h: EdgeHost) => `more than ${h.brake.perMin} wrong keys in a minute from this address; wait a minute`;
