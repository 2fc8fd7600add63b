// Direct LAN mode: the relay contract served from the agent's own machine, no cloud. The SAME routing
// core (shared/router.ts) runs over the in-memory store, with one timer at `nextDue()` instead of the
// Durable Object alarm; the HTTP surface mirrors worker/index.ts (paths, status codes, error bodies), and
// the pre-shared token plays the role of RELAY_KEY and of the token-signing secret.
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { WebSocketServer, WebSocket } from "ws";
import {
  CLOSE,
  CLIENT_ID_RE,
  CreateSessionBody,
  decodeFrame,
  describeIssues,
  HttpCallBody,
  HTTP_CLIENT_ID,
  jsonDepth,
  LIMITS,
  PROTOCOL,
  SESSION_ID_RE,
  SUBPROTOCOL,
  type Role,
  type SessionCreated,
  type ToolResultOut,
} from "../shared/protocol.js";
import { keyOf, Router, type Ctx, type Out, type Peer } from "../shared/router.js";
import { TokenBucket } from "../shared/rate-limit.js";
import { MemoryStore } from "../shared/store.js";
import { randomId, safeEqual, signToken, tokenFrom, verifyToken } from "../shared/tokens.js";

export interface LanServerOptions {
  port: number;
  /** Bind address (default "0.0.0.0": every interface, so phones on the LAN reach it). */
  host?: string;
  /** The pre-shared token: creates sessions (as RELAY_KEY) and signs session tokens. */
  token: string;
  /** The built PWA (default <package>/dist/web). */
  webDir?: string;
  /** Per-connection rate limit (frames/s and burst); defaults are the relay's. */
  rateLimitPerS?: number;
  rateLimitBurst?: number;
}

export interface LanServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface Conn {
  peer: Peer;
  ws: WebSocket;
  bucket: TokenBucket;
}

interface LanSession {
  id: string;
  expiresAt: number;
  label?: string;
  router: Router;
  conns: Map<string, Conn>;
  waiters: Map<string, Set<() => void>>;
}

const HTTP_KEY = `agent:${HTTP_CLIENT_ID}`;
const DEFAULT_WEB = fileURLToPath(new URL("../dist/web", import.meta.url));
const MAX_TIMER_MS = 60 * 60 * 1000;
const AUTH_FAILURES_PER_MIN = 60;

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 426: "Upgrade Required", 429: "Too Many Requests", 503: "Service Unavailable" };

class HttpFail {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
  ) {}
  body(): string {
    return JSON.stringify({ error: { code: this.code, message: this.message } });
  }
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

export async function startLanServer(o: LanServerOptions): Promise<LanServer> {
  if (!o.token || o.token.length < 16) throw new Error("the LAN server needs a pre-shared token of at least 16 characters");
  const secret = o.token;
  const webDir = resolve(o.webDir ?? DEFAULT_WEB);
  const perS = o.rateLimitPerS ?? LIMITS.rateLimitPerS;
  const burst = o.rateLimitBurst ?? LIMITS.rateLimitBurst;
  const sessions = new Map<string, LanSession>();
  let timer: ReturnType<typeof setTimeout> | undefined;

  // ---------------------------------------------------------------- routing core glue

  const ctxOf = (s: LanSession, except?: Conn): Ctx => ({
    now: Date.now(),
    peers: [...s.conns.values()].filter((c) => c !== except && c.ws.readyState === WebSocket.OPEN).map((c) => c.peer),
  });

  function flush(s: LanSession, outs: Out[]): void {
    for (const out of outs) {
      if (out.to === HTTP_KEY) {
        s.waiters.get((out.frame as { call_id?: string }).call_id ?? "")?.forEach((wake) => wake());
        continue;
      }
      const data = JSON.stringify(out.frame);
      for (const c of s.conns.values()) {
        if (out.conn ? c.peer.conn !== out.conn : keyOf(c.peer) !== out.to) continue;
        if (c.ws.readyState === WebSocket.OPEN) c.ws.send(data);
      }
    }
  }

  /** One timer for every session: the earliest call deadline, result expiry or session expiry. */
  function schedule(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    let next = Infinity;
    for (const s of sessions.values()) next = Math.min(next, s.router.nextDue() ?? Infinity, s.expiresAt);
    if (next === Infinity) return;
    timer = setTimeout(tick, Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())));
    timer.unref();
  }

  function tick(): void {
    const now = Date.now();
    for (const s of [...sessions.values()]) {
      if (s.expiresAt <= now) destroy(s);
      else flush(s, s.router.tick(ctxOf(s)));
    }
    schedule();
  }

  function destroy(s: LanSession): void {
    sessions.delete(s.id);
    for (const c of s.conns.values()) c.ws.close(CLOSE.sessionEnded, "session deleted");
    s.conns.clear();
    for (const w of s.waiters.values()) w.forEach((wake) => wake());
  }

  // ---------------------------------------------------------------- auth (mirrors worker/index.ts)

  function headersOf(req: IncomingMessage): Headers {
    const h = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
    return h;
  }

  function originFail(req: IncomingMessage): HttpFail | undefined {
    const origin = req.headers.origin;
    if (!origin) return undefined;
    // Browsers send Origin on WebSocket and cross-site requests: only this server's own origin may act.
    if (origin !== `http://${req.headers.host ?? ""}`) return new HttpFail(403, "origin_not_allowed", "this origin may not use the relay (see ALLOWED_ORIGINS)");
    return undefined;
  }

  async function authorize(req: IncomingMessage, url: URL, sid: string, roles: readonly Role[]): Promise<{ s: LanSession; role: Role; viaSubprotocol: boolean }> {
    const { token, viaSubprotocol } = tokenFrom(headersOf(req), url);
    if (!token) throw new HttpFail(401, "unauthorized", "a session token is required");
    const t = await verifyToken(secret, token);
    if (!t.ok || !SESSION_ID_RE.test(sid) || t.sessionId !== sid) throw new HttpFail(401, "unauthorized", "the token is not valid for this session");
    if (!roles.includes(t.role)) throw new HttpFail(403, "forbidden", `this endpoint needs a ${roles.join(" or ")} token`);
    if (t.expired) throw new HttpFail(404, "session_not_found", "this session has expired");
    const s = sessions.get(sid);
    if (!s || s.expiresAt <= Date.now()) throw new HttpFail(404, "session_not_found", "this session has expired or was deleted");
    return { s, role: t.role, viaSubprotocol };
  }

  // ---------------------------------------------------------------- HTTP

  function send(res: ServerResponse, status: number, body?: unknown): void {
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) }).end(text);
  }

  async function readJson(req: IncomingMessage): Promise<unknown> {
    const len = Number(req.headers["content-length"] ?? "0");
    if (len > LIMITS.maxHttpBodyBytes) throw new HttpFail(413, "too_large", `body over ${LIMITS.maxHttpBodyBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > LIMITS.maxHttpBodyBytes) throw new HttpFail(413, "too_large", `body over ${LIMITS.maxHttpBodyBytes} bytes`);
      chunks.push(c);
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (text.trim() === "") return undefined;
    // The same depth cap as the Worker: deeper JSON overflows recursive validation.
    if (jsonDepth(text) > LIMITS.maxJsonDepth) throw new HttpFail(400, "bad_request", `JSON nests deeper than ${LIMITS.maxJsonDepth} levels`);
    try {
      return JSON.parse(text);
    } catch {
      throw new HttpFail(400, "bad_json", "the body is not valid JSON");
    }
  }

  const waitOf = (url: URL) => {
    const w = url.searchParams.get("wait");
    const n = w === null ? LIMITS.defaultHttpWaitS : Number(w);
    return Number.isFinite(n) ? Math.min(LIMITS.maxHttpWaitS, Math.max(0, n)) : LIMITS.defaultHttpWaitS;
  };

  async function httpResult(s: LanSession, callId: string, waitS: number): Promise<ToolResultOut | "pending" | undefined> {
    let r = s.router.takeHttpResult(callId);
    if (r === "pending" && waitS > 0) {
      await new Promise<void>((done) => {
        const set = s.waiters.get(callId) ?? new Set();
        const wake = () => {
          clearTimeout(t);
          set.delete(wake);
          if (set.size === 0) s.waiters.delete(callId);
          done();
        };
        const t = setTimeout(wake, waitS * 1000);
        set.add(wake);
        s.waiters.set(callId, set);
      });
      if (!sessions.has(s.id)) return undefined;
      r = s.router.takeHttpResult(callId);
      schedule();
    }
    return r;
  }

  // The Worker's brake on guessing RELAY_KEY, here for the pre-shared token: after 60 wrong tokens from one
  // address within a minute, that address gets 429 without the token being compared.
  const authFailures = new Map<string, { n: number; since: number }>();
  async function createSession(req: IncomingMessage): Promise<SessionCreated> {
    const addr = req.socket.remoteAddress ?? "unknown";
    const now = Date.now();
    const f = authFailures.get(addr);
    if (f && now - f.since < 60_000 && f.n >= AUTH_FAILURES_PER_MIN) {
      throw new HttpFail(429, "rate_limited", `more than ${AUTH_FAILURES_PER_MIN} wrong keys in a minute from this address; wait a minute`);
    }
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim() ?? "";
    if (!(await safeEqual(given, secret))) {
      if (f && now - f.since < 60_000) f.n++;
      else {
        if (authFailures.size >= 10_000) authFailures.clear();
        authFailures.set(addr, { n: 1, since: now });
      }
      throw new HttpFail(401, "unauthorized", "creating a session needs Authorization: Bearer <RELAY_KEY> (in LAN mode: the pre-shared token)");
    }
    const body = await readJson(req);
    const parsed = CreateSessionBody.safeParse(body ?? {});
    if (!parsed.success) throw new HttpFail(400, "bad_request", describeIssues(parsed.error));
    if (parsed.data.im) throw new HttpFail(400, "bad_request", "im: the WuKongIM bridge is not available in direct LAN mode");
    const expiresAt = Date.now() + (parsed.data.ttl_s ?? LIMITS.defaultSessionTtlS) * 1000;
    const id = randomId(16);
    const s: LanSession = { id, expiresAt, router: new Router(new MemoryStore(), id, () => randomId(12)), conns: new Map(), waiters: new Map() };
    if (parsed.data.label !== undefined) s.label = parsed.data.label;
    sessions.set(id, s);
    schedule();
    const base = `http://${req.headers.host ?? `127.0.0.1:${port}`}`;
    const [agent_token, app_token] = await Promise.all([signToken(secret, id, "agent", expiresAt), signToken(secret, id, "app", expiresAt)]);
    return {
      session_id: id,
      agent_token,
      app_token,
      ws_url: `${base.replace(/^http/, "ws")}/api/sessions/${id}/ws`,
      app_url: `${base}/#s=${encodeURIComponent(id)}&t=${encodeURIComponent(app_token)}`,
      expires_at: expiresAt,
    };
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const bad = originFail(req);
    if (bad) throw bad;
    const parts = url.pathname.split("/").filter(Boolean); // ["api", "sessions", sid, ...]
    const m = req.method ?? "GET";
    if (parts[1] !== "sessions") throw new HttpFail(404, "not_found", "no such endpoint");
    if (parts.length === 2 && m === "POST") return send(res, 201, await createSession(req));
    const sid = decodeURIComponent(parts[2] ?? "");
    if (parts.length === 3 && m === "GET") {
      const { s } = await authorize(req, url, sid, ["agent", "app"]);
      const extra = s.label === undefined ? { expires_at: s.expiresAt } : { expires_at: s.expiresAt, label: s.label };
      return send(res, 200, s.router.status(ctxOf(s), extra));
    }
    if (parts.length === 3 && m === "DELETE") {
      const { s } = await authorize(req, url, sid, ["agent"]);
      destroy(s);
      schedule();
      return send(res, 204);
    }
    if (parts.length === 4 && parts[3] === "ws" && m === "GET") {
      await authorize(req, url, sid, ["agent", "app"]);
      throw new HttpFail(426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
    }
    if (parts.length === 4 && parts[3] === "calls" && m === "POST") {
      const { s } = await authorize(req, url, sid, ["agent"]);
      const parsed = HttpCallBody.safeParse((await readJson(req)) ?? {});
      if (!parsed.success) throw new HttpFail(400, "bad_frame", describeIssues(parsed.error));
      const { type: _t, ...call } = parsed.data;
      const body = Object.fromEntries(Object.entries(call).filter(([, v]) => v !== undefined)) as Parameters<Router["httpCall"]>[0];
      const r = s.router.httpCall(body, ctxOf(s));
      if (r.conflict) throw new HttpFail(409, "duplicate_call", `call_id "${r.call_id}" is already open`);
      flush(s, r.out);
      schedule();
      return answerCall(res, s, r.call_id, waitOf(url), "session_not_found");
    }
    if (parts.length === 5 && parts[3] === "calls" && m === "GET") {
      const { s } = await authorize(req, url, sid, ["agent"]);
      return answerCall(res, s, decodeURIComponent(parts[4]!), waitOf(url), "unknown_call");
    }
    throw new HttpFail(404, "not_found", "no such endpoint");
  }

  async function answerCall(res: ServerResponse, s: LanSession, callId: string, waitS: number, goneCode: string): Promise<void> {
    const r = await httpResult(s, callId, waitS);
    if (r === undefined) {
      const msg = goneCode === "unknown_call" ? "no such call, or its result expired or was already fetched" : "this session has expired or was deleted";
      throw new HttpFail(404, goneCode, msg);
    }
    if (r === "pending") return send(res, 202, { call_id: callId, status: "pending" });
    send(res, 200, r);
  }

  function serveStatic(req: IncomingMessage, res: ServerResponse, url: URL): void {
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, { error: { code: "method_not_allowed", message: "GET only" } });
    const index = join(webDir, "index.html");
    if (!existsSync(index)) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("LineUp LAN server: the PWA is not built (npm run build)");
      return;
    }
    let rel: string;
    try {
      rel = normalize(decodeURIComponent(url.pathname));
    } catch {
      rel = "/";
    }
    let file = join(webDir, rel);
    if (!file.startsWith(webDir + sep) || !existsSync(file) || !statSync(file).isFile()) file = index; // SPA fallback
    const type = CONTENT_TYPES[extname(file)] ?? "application/octet-stream";
    const headers: Record<string, string | number> = { "content-type": type, "content-length": statSync(file).size };
    headers["cache-control"] = file === index ? "no-cache" : "public, max-age=3600";
    res.writeHead(200, headers);
    if (req.method === "HEAD") return void res.end();
    createReadStream(file).pipe(res);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
    const handle = async () => {
      if (url.pathname === "/healthz") return send(res, 200, { ok: true, protocol: PROTOCOL });
      if (url.pathname.startsWith("/api/")) return api(req, res, url);
      if (url.pathname.startsWith("/webhooks/")) throw new HttpFail(404, "not_found", "no such endpoint");
      serveStatic(req, res, url);
    };
    handle().catch((e: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (e instanceof HttpFail) {
        if (e.status === 429) res.setHeader("retry-after", "60");
        return send(res, e.status, JSON.parse(e.body()));
      }
      send(res, 500, { error: { code: "internal", message: "internal error" } });
    });
  });

  // ---------------------------------------------------------------- WebSockets

  // maxPayload above the contract's 1 MiB so the limit is answered with a `too_large` error frame and the
  // connection stays usable, exactly as the Worker does.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * LIMITS.maxFrameBytes,
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });

  function refuse(socket: Duplex, f: HttpFail): void {
    const body = f.body();
    socket.end(
      `HTTP/1.1 ${f.status} ${STATUS_TEXT[f.status] ?? "Error"}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
    const m = /^\/api\/sessions\/([^/]+)\/ws$/.exec(url.pathname);
    const go = async () => {
      const bad = originFail(req);
      if (bad) throw bad;
      if (!m) throw new HttpFail(404, "not_found", "no such endpoint");
      const { s, role } = await authorize(req, url, decodeURIComponent(m[1]!), ["agent", "app"]);
      const asked = url.searchParams.get("client_id");
      if (asked !== null && !CLIENT_ID_RE.test(asked)) throw new HttpFail(400, "bad_client_id", "client_id must be 1-64 characters of [A-Za-z0-9_-]");
      wss.handleUpgrade(req, socket, head, (ws) => accept(s, ws, { role, clientId: asked ?? randomId(9), conn: randomId(9) }));
    };
    go().catch((e: unknown) => refuse(socket, e instanceof HttpFail ? e : new HttpFail(400, "bad_request", "bad upgrade request")));
  });

  function accept(s: LanSession, ws: WebSocket, peer: Peer): void {
    if (!sessions.has(s.id)) return ws.close(CLOSE.sessionEnded, "session ended");
    const key = keyOf(peer);
    // Route by client id, not by socket: a newer connection of the same client replaces the old one.
    for (const [id, c] of s.conns) {
      if (keyOf(c.peer) !== key) continue;
      s.conns.delete(id);
      c.ws.close(CLOSE.replaced, "replaced by a newer connection");
    }
    const conn: Conn = { peer, ws, bucket: new TokenBucket(perS, burst) };
    s.conns.set(peer.conn, conn);
    ws.on("message", (data: Buffer, isBinary: boolean) => onMessage(s, conn, data, isBinary));
    ws.on("close", () => {
      if (s.conns.get(peer.conn) !== conn) return;
      s.conns.delete(peer.conn);
      if (sessions.has(s.id)) flush(s, s.router.disconnect(peer, ctxOf(s)));
    });
    ws.on("error", () => ws.terminate());
    flush(s, s.router.connect(peer, ctxOf(s)));
    schedule();
  }

  function onMessage(s: LanSession, c: Conn, data: Buffer, isBinary: boolean): void {
    const send1 = (f: object) => c.ws.readyState === WebSocket.OPEN && c.ws.send(JSON.stringify(f));
    if (!isBinary && data.length === 4 && data.toString() === "ping") {
      c.ws.send("pong"); // the Worker's runtime auto-response, here by hand
      return;
    }
    if (!sessions.has(s.id)) return c.ws.close(CLOSE.sessionEnded, "session ended");
    if (!c.bucket.take(Date.now())) {
      send1({ type: "error", code: "rate_limited", message: `more than ${perS} frames/s on this connection; slow down` });
      return;
    }
    const d = decodeFrame(isBinary ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : data.toString("utf8"));
    if (!d.ok) {
      send1(d.error);
      return;
    }
    try {
      flush(s, s.router.handle(c.peer, d.frame, ctxOf(s)));
      schedule();
    } catch (e) {
      console.error("lan-server: frame handler failed", (e as Error).name, (e as Error).message);
      send1({ type: "error", code: "internal", message: "internal error; reconnect" });
      c.ws.close(CLOSE.internal, "internal error");
    }
  }

  // ---------------------------------------------------------------- listen

  const host = o.host ?? "0.0.0.0";
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(o.port, host, () => {
      server.off("error", fail);
      ok();
    });
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : o.port;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    async close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      // 1001 "going away" is not terminal: agents reconnect when the server is back.
      for (const s of sessions.values()) {
        for (const c of s.conns.values()) c.ws.close(1001, "server stopping");
        for (const w of s.waiters.values()) w.forEach((wake) => wake());
      }
      sessions.clear();
      wss.close();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
    },
  };
}
