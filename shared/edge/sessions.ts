// The session endpoints of the shared edge (spec/lineup-relay-v1.md): create, list (LAN), status, history, delete, the
// WebSocket, and HTTP calls (with their cancel). Middleware has checked the key or the token before a handler runs (shared/edge/credential.ts);
// the session's object answers only the 404s it alone knows.
import { SUBPROTOCOL } from "../contract/limits.js";
import { Hono, type Context } from "hono";
import { DEVICE_ID_PREFIX } from "../contract/inbox.js";
import { CreateSessionBody, HttpCallBody, LIMITS } from "../contract/protocol.js";
import type { HttpCallAnswer, HttpCallBody as EngineCallBody, SessionMeta } from "../session/engine.js";
import { plainName } from "../text/cut.js";
import { KEY_BRAKE, relayKey, relayKeyRefusal, sessionObject, sessionToken } from "./credential.js";
import type { HostVars, SocketAuth } from "./host.js";
import { body, fail } from "./http.js";
import { randomId } from "./tokens.js";

const gone = (c: Context) => fail(c, 404, "session_not_found", "this session has expired or was deleted");

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
  if (r.status === 400)
    return fail(c, 400, "bad_frame", "this session is sealed (end-to-end encrypted): calls must come sealed over its WebSocket, not over HTTP");
  return goneCode === "unknown_call" ? fail(c, 404, "unknown_call", "no such call, or its result expired or was already fetched") : gone(c);
};

const NEED = "creating a session";

export const sessionRoutes = new Hono<HostVars>();

// LAN mode only: the key's holder joins the sessions it created (the app's "Direct LAN agent" form) instead
// of making an empty one. App tokens only — the agent's token stays with the agent.
sessionRoutes.get("/api/sessions", async (c) => {
  const h = c.var.host;
  if (!h.keySessions) return fail(c, 404, "not_found", "no such endpoint");
  const refused = await relayKeyRefusal(c, h, NEED, KEY_BRAKE(h));
  if (refused) return refused;
  const sessions = await Promise.all(
    (await h.keySessions()).map(async (m) => {
      const { agent_token: _a, ws_url: _w, ...s } = await sessionObject(c, h, m);
      return { ...s, ...(m.label !== undefined ? { label: m.label } : {}) };
    }),
  );
  return c.json({ sessions });
});

sessionRoutes.post("/api/sessions", relayKey(NEED, KEY_BRAKE), ...body(CreateSessionBody), async (c) => {
  const h = c.var.host;
  const now = Date.now();
  const b = c.req.valid("json");
  const { im, ttl_s } = b;
  const label = b.label === undefined ? undefined : plainName(b.label);
  if (im && "status" in h.im) return fail(c, h.im.status, h.im.status === 503 ? "not_configured" : "bad_request", h.im.message);
  const sid = im && "sessionId" in h.im ? await h.im.sessionId(im) : randomId(16);
  const meta: SessionMeta = {
    session_id: sid,
    expires_at: now + (ttl_s ?? LIMITS.defaultSessionTtlS) * 1000,
    epoch: now,
    ...(label !== undefined ? { label } : {}),
    ...(im ? { im } : {}),
  };
  const made = await h.session(sid).init(meta);
  // RELAY_KEY creates; it never enters: a conversation's session is handed out once, to its creator.
  if (made === "exists")
    return fail(c, 409, "im_bound", "this IM conversation already has a session; its creator holds the tokens (DELETE it with its agent token to start over)");
  return c.json(await sessionObject(c, h, made), 201);
});

sessionRoutes.get("/api/sessions/:sid", sessionToken(["agent", "app"]), async (c) => {
  const a = c.var.authed;
  const s = await c.var.host.session(a.sid).status(a.epoch);
  return s ? c.json(s) : gone(c);
});

// The kept history page by page (the status holds the last 200 entries at once; this reads any of them
// in small answers): `?before=<seq>&limit=<1..100>`, newest page first.
sessionRoutes.get("/api/sessions/:sid/messages", sessionToken(["agent", "app"]), async (c) => {
  const a = c.var.authed;
  const before = c.req.query("before");
  const limit = Number(c.req.query("limit") ?? 50);
  if ((before !== undefined && !/^\d{1,15}$/.test(before)) || !Number.isFinite(limit))
    return fail(c, 400, "bad_request", "before must be a message seq and limit a number (1-100)");
  const page = await c.var.host.session(a.sid).history(a.epoch, before === undefined ? undefined : Number(before), limit);
  return page ? c.json(page) : gone(c);
});

sessionRoutes.delete("/api/sessions/:sid", sessionToken(["agent"]), async (c) => {
  const a = c.var.authed;
  if (!(await c.var.host.session(a.sid).destroy(a.epoch))) return gone(c);
  return c.body(null, 204);
});

sessionRoutes.get("/api/sessions/:sid/ws", sessionToken(["agent", "app"], true), async (c) => {
  const a = c.var.authed;
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
  // A device connects as itself, and nobody else may: `dv_` ids belong to device credentials.
  const asked = c.req.query("client_id") ?? null;
  if (a.device && asked !== null && asked !== a.device.id) return fail(c, 403, "client_id_bound", `this device connects as its own id ${a.device.id}`);
  if (!a.device && asked?.startsWith(DEVICE_ID_PREFIX))
    return fail(c, 403, "client_id_reserved", `client ids starting with ${DEVICE_ID_PREFIX} belong to paired devices`);
  const auth: SocketAuth = { role: a.role, epoch: a.epoch, clientId: a.device?.id ?? asked, subprotocol: offered.includes(SUBPROTOCOL) };
  if (a.device) auth.name = a.device.name;
  const register = c.req.query("register");
  if (register !== undefined && register !== "first") return fail(c, 400, "bad_request", 'register must be "first" (or left out)');
  if (register === "first") auth.registerFirst = true;
  // Answer only a subprotocol the client offered: answering one it did not offer fails the handshake.
  return c.var.host.session(a.sid).connect(c.req.raw, auth);
});

sessionRoutes.post("/api/sessions/:sid/calls", sessionToken(["agent"]), ...body(HttpCallBody, { code: "bad_frame" }), async (c) => {
  const a = c.var.authed;
  const { type: _t, ...call } = c.req.valid("json");
  const clean = Object.fromEntries(Object.entries(call).filter(([, v]) => v !== undefined)) as EngineCallBody;
  return answer(c, await c.var.host.session(a.sid).httpCall(a.epoch, clean, waitOf(c)), "session_not_found");
});

sessionRoutes.get("/api/sessions/:sid/calls/:call_id", sessionToken(["agent"]), async (c) => {
  const a = c.var.authed;
  return answer(c, await c.var.host.session(a.sid).httpResult(a.epoch, c.req.param("call_id"), waitOf(c)), "unknown_call");
});

// The HTTP caller stops waiting (docs/protocol.md §7): its open call is withdrawn from every holder at once.
sessionRoutes.delete("/api/sessions/:sid/calls/:call_id", sessionToken(["agent"]), async (c) => {
  const a = c.var.authed;
  const callId = c.req.param("call_id");
  const r = await c.var.host.session(a.sid).httpCancel(a.epoch, callId);
  if (r === "cancelled") return c.json({ call_id: callId, status: "cancelled" }, 200);
  if (r === "rate_limited") return fail(c, 429, "rate_limited", "this token is over its rate of frames and HTTP calls; slow down");
  if (r === "unknown_call") return fail(c, 404, "unknown_call", "no open HTTP call by that id (unknown, another caller's, already ended or cancelled)");
  return gone(c);
});
