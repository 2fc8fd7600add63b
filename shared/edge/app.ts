// The one edge of both servers: the Worker (worker/index.ts) and the direct LAN server
// (adapter/lan/server.ts) serve this same Hono app. It checks Origin, keys and tokens, reads bodies with
// their caps, and hands each request to the session — all before the session's object is touched, save the
// 404s only the session knows. What differs between the servers is behind `EdgeHost`.
import { Hono, type Context } from "hono";
import { AuthBrake } from "./auth-brake.js";
import { checkCredential, inboxRoutes, ownerRevoked } from "./inbox.js";
import type { InboxService } from "../inbox/service.js";
import type { EdgePush } from "./push.js";
import { DEVICE_ID_PREFIX } from "../contract/inbox.js";
import type { HistoryPage, HttpCallAnswer, HttpCallBody as EngineCallBody, SessionMeta } from "../session/engine.js";
import { CreateSessionBody, describeIssues, HttpCallBody, jsonDepth, LIMITS, PROTOCOL, SESSION_ID_RE, type Role, type SessionCreated, type SessionStatus } from "../contract/protocol.js";
import { randomId, safeEqual, signToken, tokenFrom, verifyToken } from "./tokens.js";
import { plainName } from "../text/cut.js";

/** How the edge hands a checked WebSocket upgrade to a session. */
export interface SocketAuth {
  role: Role;
  epoch: number;
  /** The `client_id` query parameter as given (checked by the session). */
  clientId: string | null;
  /** Answer the `lineup.v1` subprotocol (only when the client offered it). */
  subprotocol: boolean;
  /** The relay's own caller (remote MCP): may use a reserved `~` client id, several connections side by side.
   * Never set from a client's request. */
  internal?: boolean;
  /** A paired device's name (its connections use the device id as client id). */
  name?: string;
}

/** One session as the edge sees it (a Durable Object stub, or an in-memory engine). */
export interface EdgeSession {
  init(meta: SessionMeta): Promise<SessionMeta | "exists">;
  status(epoch: number): Promise<SessionStatus | null>;
  history(epoch: number, before: number | undefined, limit: number): Promise<HistoryPage | null>;
  destroy(epoch: number): Promise<boolean>;
  httpCall(epoch: number, body: EngineCallBody, waitS: number): Promise<HttpCallAnswer>;
  httpResult(epoch: number, callId: string, waitS: number): Promise<HttpCallAnswer>;
  connect(req: Request, auth: SocketAuth): Promise<Response>;
  /** A sealed session learns the inbox's new epoch (docs/e2e.md); only ever forward. */
  setE2eEpoch(epoch: number): Promise<boolean>;
}

export interface EdgeHost {
  /** The key that creates sessions (RELAY_KEY; the LAN server's pre-shared token), if configured. */
  relayKey: string | undefined;
  /** Why there is no key, for the 503. */
  unconfigured: string;
  /** A configuration error (e.g. a typo in a limit), answered as 503 to every request. */
  configError: string | undefined;
  /** The secret that signs session tokens: never the relay key. */
  tokenSecret(): Promise<string>;
  /** Browser origins allowed besides the request's own. */
  origins: readonly string[];
  /** Base of the links handed out, when it is not the request's origin. */
  publicBase: string | undefined;
  /** The caller's address, for the auth brake. */
  clientAddr: string;
  brake: AuthBrake;
  session(sid: string): EdgeSession;
  /** Where IM-bound sessions live, or why this server has none. */
  im: { sessionId(ch: { channel_id: string; channel_type: number }): Promise<string> } | { status: 400 | 503; message: string };
  /** Everything that is not the API: the PWA. */
  assets(req: Request): Promise<Response>;
  /** The `Host` values this server answers (DNS rebinding); undefined: any (the Worker's hosts are Cloudflare's). */
  hostAllowed?(host: string): boolean;
  /** Inboxes (docs/inbox.md); a server without them answers their endpoints 404. `connect`: a checked device's inbox socket
   * (the edge has answered 426 to a plain GET already). */
  inboxes?: { inbox(id: string): InboxService; connect(inbox: string, req: Request, deviceId: string, subprotocol: boolean): Promise<Response> };
  /** Web Push (docs/push.md, shared/edge/push.ts); a server without it answers its endpoints 404. */
  push?: EdgePush;
  /** Live sessions the key created, outside any inbox, newest first: the LAN server lists them so the app's
   * "Direct LAN agent" form joins the session `lineup serve` made. The Worker has none: RELAY_KEY only creates. */
  keySessions?(): Promise<SessionMeta[]>;
}

export type EdgeEnv<B> = { Bindings: B };
type Status = 400 | 401 | 403 | 404 | 409 | 413 | 426 | 429 | 503;

export function fail(c: Context, status: Status, code: string, message: string): Response {
  return c.json({ error: { code, message } }, status);
}

/**
 * A request's or fetched response's body as text, or undefined once it passes `max` bytes — counted while streaming, so a chunked
 * body without content-length is never buffered whole (and bytes, not UTF-16 units, are counted).
 */
export async function readCapped(msg: Request | Response, max: number): Promise<string | undefined> {
  if (Number(msg.headers.get("content-length") ?? "0") > max) {
    // A fetched response we drop is cancelled to free its connection; a request's unread body is left to the
    // runtime — cancelling it makes workerd reset the client's connection before the 413 is sent.
    if (msg instanceof Response) await msg.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!msg.body) return "";
  const reader = msg.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const ch of chunks) {
    all.set(ch, at);
    at += ch.byteLength;
  }
  return new TextDecoder().decode(all);
}

/** A JSON body with the size and depth limits; `value` is undefined for an empty body. */
export async function readJson(c: Context, max: number = LIMITS.maxHttpBodyBytes): Promise<{ ok: true; value: unknown } | { ok: false; res: Response }> {
  const text = await readCapped(c.req.raw, max);
  if (text === undefined) return { ok: false, res: fail(c, 413, "too_large", `body over ${max} bytes`) };
  if (text.trim() === "") return { ok: true, value: undefined };
  // The same depth cap as frames: deeper JSON overflows the stack of recursive validation (found by the fuzzer).
  if (jsonDepth(text) > LIMITS.maxJsonDepth) return { ok: false, res: fail(c, 400, "bad_request", `JSON nests deeper than ${LIMITS.maxJsonDepth} levels`) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, res: fail(c, 400, "bad_json", "the body is not valid JSON") };
  }
}

export type Authed = { sid: string; role: Role; epoch: number; viaSubprotocol: boolean; device?: { id: string; name: string } };

/** Refusal order: 401 (missing, forged, other session) → 403 role → 426 no upgrade → 404 expired. */
export async function authorize(c: Context, host: EdgeHost, roles: readonly Role[], upgrade = false): Promise<Authed | Response> {
  const sid = c.req.param("sid") ?? "";
  const { token, viaSubprotocol } = tokenFrom(c.req.raw.headers, new URL(c.req.url));
  if (!token) return fail(c, 401, "unauthorized", "a session token is required");
  // A paired device's credential stands for an app token in every session of its inbox (docs/inbox.md).
  if (token.startsWith("lud1.") || token.startsWith("lum1.")) {
    const who = await checkCredential(host, token, sid);
    if (!who || who.kind !== "device" || !who.session) return fail(c, 401, "unauthorized", "the credential is not valid for this session (revoked, or not of its inbox)");
    if (!roles.includes("app")) return fail(c, 403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
    if (upgrade && c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
    return { sid, role: "app", epoch: who.session.epoch, viaSubprotocol, device: { id: who.id, name: who.name } };
  }
  const t = await verifyToken(await host.tokenSecret(), token);
  if (!t.ok || !SESSION_ID_RE.test(sid) || t.sessionId !== sid) return fail(c, 401, "unauthorized", "the token is not valid for this session");
  if (!roles.includes(t.role)) return fail(c, 403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
  // 426 before 404: a deleted session's 404 comes from the session, after the edge's upgrade check.
  if (upgrade && c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
  if (t.expired) return fail(c, 404, "session_not_found", "this session has expired");
  // Its machine revoked: the session is ending (docs/inbox.md "Revocation"), refused before its object hears of it.
  if (await ownerRevoked(host, t.owner)) return fail(c, 404, "session_not_found", "this session ended: the agent machine that created it was revoked");
  return { sid, role: t.role, epoch: t.epoch, viaSubprotocol };
}

export async function sessionObject(c: Context, h: EdgeHost, m: SessionMeta): Promise<SessionCreated> {
const secret = await h.tokenSecret();
const base = h.publicBase ?? new URL(c.req.url).origin;
const owner = m.inbox !== undefined && m.machine !== undefined ? { inbox: m.inbox, machine: m.machine } : undefined;
const [agent_token, app_token] = await Promise.all([signToken(secret, m.session_id, "agent", m.expires_at, m.epoch, owner), signToken(secret, m.session_id, "app", m.expires_at, m.epoch, owner)]);
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

const gone = (c: Context) => fail(c, 404, "session_not_found", "this session has expired or was deleted");

export function createEdge<B extends object>(hostOf: (c: Context<EdgeEnv<B>>) => EdgeHost, mount?: (app: Hono<EdgeEnv<B>>) => void): Hono<EdgeEnv<B>> {
  const app = new Hono<EdgeEnv<B>>();
  // One host per request, made once (the Worker's depends on bindings, the LAN server's on the socket).
  const hosts = new WeakMap<Request, EdgeHost>();
  const host = (c: Context<EdgeEnv<B>>): EdgeHost => {
    let h = hosts.get(c.req.raw);
    if (!h) hosts.set(c.req.raw, (h = hostOf(c)));
    return h;
  };

  app.use("*", async (c, next) => {
    const h = host(c);
    if (h.configError) return fail(c, 503, "bad_config", h.configError);
    // A page on evil.example whose name was rebound to our address sends `Host: evil.example`: its
    // requests are same-origin to the browser, so only the Host check can refuse them.
    if (h.hostAllowed && !h.hostAllowed((c.req.header("host") ?? "").toLowerCase())) return fail(c, 403, "host_not_allowed", "this server answers only its own addresses and names (DNS rebinding); see --allow-host");
    await next();
  });

  // Browsers always send Origin on WebSocket and cross-site requests: only our own origin and the
  // configured ones may act with a token (this closes cross-site WebSocket hijacking).
  app.use("/api/*", async (c, next) => {
    const origin = c.req.header("origin");
    if (origin) {
      const own = new URL(c.req.url).origin;
      if (origin !== own && !host(c).origins.includes(origin)) return fail(c, 403, "origin_not_allowed", "this origin may not use the relay (see ALLOWED_ORIGINS)");
      if (origin !== own) {
        c.header("access-control-allow-origin", origin);
        c.header("vary", "origin");
        if (c.req.method === "OPTIONS") {
          c.header("access-control-allow-methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS");
          c.header("access-control-allow-headers", "authorization, content-type");
          c.header("access-control-max-age", "600");
          return c.body(null, 204);
        }
      }
    }
    await next();
  });

  app.get("/healthz", (c) => c.json({ ok: true, protocol: PROTOCOL }));

  /** The relay key as a Bearer header, behind the brake; a refusal, or undefined when it is right. */
  const keyRefusal = async (c: Context<EdgeEnv<B>>, h: EdgeHost, now: number): Promise<Response | undefined> => {
    if (!h.relayKey) return fail(c, 503, "not_configured", h.unconfigured);
    if (h.brake.blocked(h.clientAddr, now)) {
      c.header("retry-after", "60");
      return fail(c, 429, "rate_limited", `more than ${h.brake.perMin} wrong keys in a minute from this address; wait a minute`);
    }
    const given = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    if (!(await safeEqual(given, h.relayKey))) {
      h.brake.failed(h.clientAddr, now);
      return fail(c, 401, "unauthorized", "creating a session needs Authorization: Bearer <RELAY_KEY>");
    }
    return undefined;
  };

  // LAN mode only: the key's holder joins the sessions it created (the app's "Direct LAN agent" form) instead
  // of making an empty one. App tokens only — the agent's token stays with the agent.
  app.get("/api/sessions", async (c) => {
    const h = host(c);
    if (!h.keySessions) return fail(c, 404, "not_found", "no such endpoint");
    const refused = await keyRefusal(c, h, Date.now());
    if (refused) return refused;
    const sessions = await Promise.all(
      (await h.keySessions()).map(async (m) => {
        const { agent_token: _a, ws_url: _w, ...s } = await sessionObject(c, h, m);
        return { ...s, ...(m.label !== undefined ? { label: m.label } : {}) };
      }),
    );
    return c.json({ sessions });
  });

  app.post("/api/sessions", async (c) => {
    const h = host(c);
    const now = Date.now();
    const refused = await keyRefusal(c, h, now);
    if (refused) return refused;
    const body = await readJson(c);
    if (!body.ok) return body.res;
    const parsed = CreateSessionBody.safeParse(body.value ?? {});
    if (!parsed.success) return fail(c, 400, "bad_request", describeIssues(parsed.error));
    const { im, ttl_s } = parsed.data;
    const label = parsed.data.label === undefined ? undefined : plainName(parsed.data.label);
    if (im && "status" in h.im) return fail(c, h.im.status, h.im.status === 503 ? "not_configured" : "bad_request", h.im.message);
    const sid = im && "sessionId" in h.im ? await h.im.sessionId(im) : randomId(16);
    const meta: SessionMeta = { session_id: sid, expires_at: now + (ttl_s ?? LIMITS.defaultSessionTtlS) * 1000, epoch: now, ...(label !== undefined ? { label } : {}), ...(im ? { im } : {}) };
    const made = await h.session(sid).init(meta);
    // RELAY_KEY creates; it never enters: a conversation's session is handed out once, to its creator.
    if (made === "exists") return fail(c, 409, "im_bound", "this IM conversation already has a session; its creator holds the tokens (DELETE it with its agent token to start over)");
    return c.json(await sessionObject(c, h, made), 201);
  });

  app.get("/api/sessions/:sid", async (c) => {
    const a = await authorize(c, host(c), ["agent", "app"]);
    if (a instanceof Response) return a;
    const s = await host(c).session(a.sid).status(a.epoch);
    return s ? c.json(s) : gone(c);
  });

  // The kept history page by page (the status holds the last 200 entries at once; this reads any of them
  // in small answers): `?before=<seq>&limit=<1..100>`, newest page first.
  app.get("/api/sessions/:sid/messages", async (c) => {
    const a = await authorize(c, host(c), ["agent", "app"]);
    if (a instanceof Response) return a;
    const before = c.req.query("before");
    const limit = Number(c.req.query("limit") ?? 50);
    if ((before !== undefined && !/^\d{1,15}$/.test(before)) || !Number.isFinite(limit)) return fail(c, 400, "bad_request", "before must be a message seq and limit a number (1-100)");
    const page = await host(c).session(a.sid).history(a.epoch, before === undefined ? undefined : Number(before), limit);
    return page ? c.json(page) : gone(c);
  });

  app.delete("/api/sessions/:sid", async (c) => {
    const a = await authorize(c, host(c), ["agent"]);
    if (a instanceof Response) return a;
    if (!(await host(c).session(a.sid).destroy(a.epoch))) return gone(c);
    return c.body(null, 204);
  });

  app.get("/api/sessions/:sid/ws", async (c) => {
    const a = await authorize(c, host(c), ["agent", "app"], true);
    if (a instanceof Response) return a;
    const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
    // A device connects as itself, and nobody else may: `dv_` ids belong to device credentials.
    const asked = c.req.query("client_id") ?? null;
    if (a.device && asked !== null && asked !== a.device.id) return fail(c, 403, "client_id_bound", `this device connects as its own id ${a.device.id}`);
    if (!a.device && asked?.startsWith(DEVICE_ID_PREFIX)) return fail(c, 403, "client_id_reserved", `client ids starting with ${DEVICE_ID_PREFIX} belong to paired devices`);
    const auth: SocketAuth = { role: a.role, epoch: a.epoch, clientId: a.device?.id ?? asked, subprotocol: offered.includes("lineup.v1") };
    if (a.device) auth.name = a.device.name;
    // Answer only a subprotocol the client offered: answering one it did not offer fails the handshake.
    return host(c).session(a.sid).connect(c.req.raw, auth);
  });

  const waitOf = (c: Context) => {
    const w = c.req.query("wait");
    const n = w === undefined ? LIMITS.defaultHttpWaitS : Number(w);
    return Number.isFinite(n) ? Math.min(LIMITS.maxHttpWaitS, Math.max(0, n)) : LIMITS.defaultHttpWaitS;
  };
  const answer = (c: Context, r: HttpCallAnswer, goneCode: "session_not_found" | "unknown_call") => {
    if (r.status === 200) return c.json(r.result, 200);
    if (r.status === 202) return c.json({ call_id: r.call_id, status: "pending" }, 202);
    if (r.status === 409) return fail(c, 409, "duplicate_call", `call_id "${r.call_id}" is already open`);
    if (r.status === 429) return fail(c, 429, "rate_limited", "this token is over its rate of frames and HTTP calls; slow down");
    // docs/e2e.md: an HTTP caller holds no key, and a sealed session refuses plaintext arguments.
    if (r.status === 400) return fail(c, 400, "bad_frame", "this session is sealed (end-to-end encrypted): calls must come sealed over its WebSocket, not over HTTP");
    return goneCode === "unknown_call" ? fail(c, 404, "unknown_call", "no such call, or its result expired or was already fetched") : gone(c);
  };

  app.post("/api/sessions/:sid/calls", async (c) => {
    const a = await authorize(c, host(c), ["agent"]);
    if (a instanceof Response) return a;
    const body = await readJson(c);
    if (!body.ok) return body.res;
    const parsed = HttpCallBody.safeParse(body.value ?? {});
    if (!parsed.success) return fail(c, 400, "bad_frame", describeIssues(parsed.error));
    const { type: _t, ...call } = parsed.data;
    const clean = Object.fromEntries(Object.entries(call).filter(([, v]) => v !== undefined)) as EngineCallBody;
    return answer(c, await host(c).session(a.sid).httpCall(a.epoch, clean, waitOf(c)), "session_not_found");
  });

  app.get("/api/sessions/:sid/calls/:call_id", async (c) => {
    const a = await authorize(c, host(c), ["agent"]);
    if (a instanceof Response) return a;
    return answer(c, await host(c).session(a.sid).httpResult(a.epoch, c.req.param("call_id"), waitOf(c)), "unknown_call");
  });

  inboxRoutes(app, host);
  mount?.(app);

  app.all("/api/*", (c) => fail(c, 404, "not_found", "no such endpoint"));
  app.all("/webhooks/*", (c) => fail(c, 404, "not_found", "no such endpoint"));
  app.all("*", (c) => host(c).assets(c.req.raw));

  app.onError((e, c) => {
    console.error("edge: unhandled", e.name, e.message);
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  return app;
}

export { AuthBrake };
