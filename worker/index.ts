// The Worker: HTTP routing in Hono, auth before any Durable Object is touched, then the raw request
// handed to the session's object (Hono's own upgradeWebSocket is not hibernatable).
import { Hono, type Context } from "hono";
import {
  CreateSessionBody,
  describeIssues,
  HttpCallBody,
  jsonDepth,
  LIMITS,
  PROTOCOL,
  SESSION_ID_RE,
  type Role,
  type SessionCreated,
} from "../shared/protocol.js";
import { DEV_RELAY_KEY } from "../shared/defaults.js";
import { randomId, safeEqual, signToken, tokenFrom, verifyToken } from "../shared/tokens.js";
import type { Env } from "./env.js";
import { wukongimRoutes } from "./wukongim/routes.js";

import type { HttpCallAnswer } from "./session.js";

export { Session } from "./session.js";

type C = Context<{ Bindings: Env }>;

const app = new Hono<{ Bindings: Env }>();

const fail = (c: C, status: 400 | 401 | 403 | 404 | 409 | 413 | 426 | 429 | 503, code: string, message: string) =>
  c.json({ error: { code, message } }, status);

const isLocal = (url: string) => ["localhost", "127.0.0.1", "[::1]", "::1"].includes(new URL(url).hostname);

/** RELAY_KEY, or the documented dev default — only for requests to localhost, never in production. */
export function relayKey(env: Env, url: string): string | undefined {
  if (env.RELAY_KEY) return env.RELAY_KEY === DEV_RELAY_KEY && !isLocal(url) ? undefined : env.RELAY_KEY;
  return isLocal(url) ? DEV_RELAY_KEY : undefined;
}
const tokenSecret = (env: Env, url: string) => env.TOKEN_SECRET || relayKey(env, url);

// Browsers always send Origin on WebSocket and cross-site requests: only our own origin and the
// configured ones may act with a token (this closes cross-site WebSocket hijacking).
app.use("/api/*", async (c, next) => {
  const origin = c.req.header("origin");
  if (origin) {
    const own = new URL(c.req.url).origin;
    const allowed = [own, ...(c.env.PUBLIC_URL ? [new URL(c.env.PUBLIC_URL).origin] : []), ...(c.env.ALLOWED_ORIGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean)];
    if (!allowed.includes(origin)) return fail(c, 403, "origin_not_allowed", "this origin may not use the relay (see ALLOWED_ORIGINS)");
    if (origin !== own) {
      c.header("access-control-allow-origin", origin);
      c.header("vary", "origin");
      if (c.req.method === "OPTIONS") {
        c.header("access-control-allow-methods", "GET, POST, DELETE, OPTIONS");
        c.header("access-control-allow-headers", "authorization, content-type");
        c.header("access-control-max-age", "600");
        return c.body(null, 204);
      }
    }
  }
  await next();
});

app.get("/healthz", (c) => c.json({ ok: true, protocol: PROTOCOL }));

/** The body as text, or undefined once it passes `max` bytes — counted while streaming, so a chunked
 * body without content-length is never buffered whole (and bytes, not UTF-16 units, are counted). */
async function readCapped(req: Request, max: number): Promise<string | undefined> {
  if (Number(req.headers.get("content-length") ?? "0") > max) return undefined;
  if (!req.body) return "";
  const reader = req.body.getReader();
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

/** Reads a JSON body with the size limit; `undefined` for an empty body. */
async function readJson(c: C): Promise<{ ok: true; value: unknown } | { ok: false; res: Response }> {
  const text = await readCapped(c.req.raw, LIMITS.maxHttpBodyBytes);
  if (text === undefined) return { ok: false, res: fail(c, 413, "too_large", `body over ${LIMITS.maxHttpBodyBytes} bytes`) };
  if (text.trim() === "") return { ok: true, value: undefined };
  // The same depth cap as frames: deeper JSON overflows the stack of recursive validation (found by the fuzzer).
  if (jsonDepth(text) > LIMITS.maxJsonDepth) return { ok: false, res: fail(c, 400, "bad_request", `JSON nests deeper than ${LIMITS.maxJsonDepth} levels`) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, res: fail(c, 400, "bad_json", "the body is not valid JSON") };
  }
}

// A brake on guessing RELAY_KEY: after AUTH_FAILURES_PER_MIN wrong keys from one address in a minute,
// that address gets 429 without the key being compared. Memory of this isolate only (a brake, not a
// quota); the key holder's own session creation is never limited.
const AUTH_FAILURES_PER_MIN = 60;
const authFailures = new Map<string, { n: number; since: number }>();
const clientAddr = (c: C) => c.req.header("cf-connecting-ip") ?? "unknown";
function authBlocked(addr: string, now: number): boolean {
  const f = authFailures.get(addr);
  return f !== undefined && now - f.since < 60_000 && f.n >= AUTH_FAILURES_PER_MIN;
}
function authFailed(addr: string, now: number): void {
  const f = authFailures.get(addr);
  if (f && now - f.since < 60_000) f.n++;
  else {
    if (authFailures.size >= 10_000) authFailures.clear();
    authFailures.set(addr, { n: 1, since: now });
  }
}

app.post("/api/sessions", async (c) => {
  const key = relayKey(c.env, c.req.url);
  if (!key) return fail(c, 503, "not_configured", "RELAY_KEY is not set: run `wrangler secret put RELAY_KEY`");
  const addr = clientAddr(c);
  if (authBlocked(addr, Date.now())) {
    c.header("retry-after", "60");
    return fail(c, 429, "rate_limited", `more than ${AUTH_FAILURES_PER_MIN} wrong keys in a minute from this address; wait a minute`);
  }
  const given = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
  if (!(await safeEqual(given, key))) {
    authFailed(addr, Date.now());
    return fail(c, 401, "unauthorized", "creating a session needs Authorization: Bearer <RELAY_KEY>");
  }
  const body = await readJson(c);
  if (!body.ok) return body.res;
  const parsed = CreateSessionBody.safeParse(body.value ?? {});
  if (!parsed.success) return fail(c, 400, "bad_request", describeIssues(parsed.error));
  if (parsed.data.im && !(c.env.WUKONGIM_API_URL && c.env.WUKONGIM_BOT_UID)) {
    return fail(c, 503, "not_configured", "IM-bound sessions need WUKONGIM_API_URL and WUKONGIM_BOT_UID (docs/wukongim.md)");
  }
  const ttl = parsed.data.ttl_s ?? LIMITS.defaultSessionTtlS;
  const expires_at = Date.now() + ttl * 1000;
  const sessionId = parsed.data.im ? await imSessionId(c.env, c.req.url, parsed.data.im) : randomId(16);
  const stub = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sessionId));
  const meta = await stub.init({ session_id: sessionId, expires_at, ...(parsed.data.label !== undefined ? { label: parsed.data.label } : {}), ...(parsed.data.im ? { im: parsed.data.im } : {}) });
  return c.json(await sessionObject(c, sessionId, meta.expires_at), 201);
});

export async function imSessionId(env: Env, url: string, im: { channel_id: string; channel_type: number }): Promise<string> {
  // One IM conversation has one session: its id is derived from the channel, so no directory is needed.
  const { hmac } = await import("../shared/tokens.js");
  return `im_${(await hmac(tokenSecret(env, url) ?? "", `im:${im.channel_type}:${im.channel_id}`)).slice(0, 24)}`;
}

async function sessionObject(c: C, sid: string, expires_at: number): Promise<SessionCreated> {
  const secret = tokenSecret(c.env, c.req.url)!;
  const base = c.env.PUBLIC_URL ? new URL(c.env.PUBLIC_URL).origin : new URL(c.req.url).origin;
  const [agent_token, app_token] = await Promise.all([signToken(secret, sid, "agent", expires_at), signToken(secret, sid, "app", expires_at)]);
  return {
    session_id: sid,
    agent_token,
    app_token,
    ws_url: `${base.replace(/^http/, "ws")}/api/sessions/${sid}/ws`,
    // The app token rides in the fragment: browsers never send it to a server, so it never hits a log.
    app_url: `${base}/#s=${encodeURIComponent(sid)}&t=${encodeURIComponent(app_token)}`,
    expires_at,
  };
}

type Authed = { sid: string; role: Role; viaSubprotocol: boolean };

/** 401 for a missing, forged or other-session token; 403 for the wrong role; 404 once it expired. */
async function authorize(c: C, roles: readonly Role[], upgrade = false): Promise<Authed | Response> {
  const sid = c.req.param("sid") ?? "";
  const url = new URL(c.req.url);
  const { token, viaSubprotocol } = tokenFrom(c.req.raw.headers, url);
  const secret = tokenSecret(c.env, c.req.url);
  if (!secret) return fail(c, 503, "not_configured", "RELAY_KEY is not set: run `wrangler secret put RELAY_KEY`");
  if (!token) return fail(c, 401, "unauthorized", "a session token is required");
  const t = await verifyToken(secret, token);
  if (!t.ok || !SESSION_ID_RE.test(sid) || t.sessionId !== sid) return fail(c, 401, "unauthorized", "the token is not valid for this session");
  if (!roles.includes(t.role)) return fail(c, 403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
  // 426 before 404: a deleted session's 404 comes from the object, after the Worker's upgrade check.
  if (upgrade && c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
  if (t.expired) return fail(c, 404, "session_not_found", "this session has expired");
  return { sid, role: t.role, viaSubprotocol };
}

const stubOf = (c: C, sid: string) => c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));

app.get("/api/sessions/:sid", async (c) => {
  const a = await authorize(c, ["agent", "app"]);
  if (a instanceof Response) return a;
  const s = await stubOf(c, a.sid).status();
  return s ? c.json(s) : fail(c, 404, "session_not_found", "this session has expired or was deleted");
});

app.delete("/api/sessions/:sid", async (c) => {
  const a = await authorize(c, ["agent"]);
  if (a instanceof Response) return a;
  const stub = stubOf(c, a.sid);
  if (!(await stub.destroy())) return fail(c, 404, "session_not_found", "this session has expired or was deleted");
  await stub.reset().catch(() => undefined); // abort() rejects this call by design (see Session.reset)
  return c.body(null, 204);
});

app.get("/api/sessions/:sid/ws", async (c) => {
  const a = await authorize(c, ["agent", "app"], true);
  if (a instanceof Response) return a;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
  const headers = new Headers(c.req.raw.headers);
  headers.set("x-lineup-role", a.role);
  headers.delete("x-lineup-subprotocol");
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
  // Answer only a subprotocol the client offered: answering one it did not offer fails the handshake.
  if (offered.includes("lineup.v1")) headers.set("x-lineup-subprotocol", "1");
  return stubOf(c, a.sid).fetch(new Request(c.req.raw, { headers }));
});

const waitOf = (c: C) => {
  const w = c.req.query("wait");
  const n = w === undefined ? LIMITS.defaultHttpWaitS : Number(w);
  return Number.isFinite(n) ? Math.min(LIMITS.maxHttpWaitS, Math.max(0, n)) : LIMITS.defaultHttpWaitS;
};

app.post("/api/sessions/:sid/calls", async (c) => {
  const a = await authorize(c, ["agent"]);
  if (a instanceof Response) return a;
  const body = await readJson(c);
  if (!body.ok) return body.res;
  const parsed = HttpCallBody.safeParse(body.value ?? {});
  if (!parsed.success) return fail(c, 400, "bad_frame", describeIssues(parsed.error));
  const { type: _t, ...call } = parsed.data;
  const r = (await stubOf(c, a.sid).httpCall(stripUndefined(call), waitOf(c))) as HttpCallAnswer;
  if (r.status === 200) return c.json(r.result, 200);
  if (r.status === 202) return c.json({ call_id: r.call_id, status: "pending" }, 202);
  if (r.status === 409) return fail(c, 409, "duplicate_call", `call_id "${r.call_id}" is already open`);
  return fail(c, 404, "session_not_found", "this session has expired or was deleted");
});

app.get("/api/sessions/:sid/calls/:call_id", async (c) => {
  const a = await authorize(c, ["agent"]);
  if (a instanceof Response) return a;
  const r = (await stubOf(c, a.sid).httpResult(c.req.param("call_id"), waitOf(c))) as HttpCallAnswer;
  if (r.status === 200) return c.json(r.result, 200);
  if (r.status === 202) return c.json({ call_id: r.call_id, status: "pending" }, 202);
  return fail(c, 404, "unknown_call", "no such call, or its result expired or was already fetched");
});

app.route("/webhooks/wukongim", wukongimRoutes);

app.all("/api/*", (c) => fail(c, 404, "not_found", "no such endpoint"));
app.all("/webhooks/*", (c) => fail(c, 404, "not_found", "no such endpoint"));

// Everything else is the PWA, from Workers static assets (SPA fallback is configured in wrangler.toml).
app.all("*", (c) => (c.env.ASSETS ? c.env.ASSETS.fetch(c.req.raw) : c.text("LineUp relay: the PWA is not built (npm run build)", 404)));

app.onError((e, c) => {
  console.error("worker: unhandled", e.name, e.message);
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
});

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export default app satisfies ExportedHandler<Env>;
