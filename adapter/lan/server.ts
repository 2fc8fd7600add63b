// Direct LAN mode: the relay contract served from the agent's own machine, no cloud. This file is only
// Node I/O around the shared parts: the same Hono edge as the Worker (shared/edge/app.ts) and the same session
// engine (shared/session/engine.ts) over the in-memory store, whose transactions make each frame atomic as SQLite
// does in the Durable Object; one timer at the earliest due time stands in for the alarm. The pre-shared
// token plays RELAY_KEY: it creates sessions. Session tokens are signed with a secret of this process.
import { allowedHosts, staticFile, type LanUpgrade } from "./static.js";
import { LanInboxes } from "./inbox.js";
import { isLoopback, type Resolve } from "./push-send.js";
import { createServer, STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getRequestListener } from "@hono/node-server";
import { WebSocketServer, type WebSocket } from "ws";
import { AuthBrake, createEdge, type EdgeHost, type EdgeSession } from "../../shared/edge/app.js";
import type { SessionEngine, SessionMeta } from "../../shared/session/engine.js";
import { httpApi, SessionHost } from "../../shared/session/host.js";
import { CLOSE, LIMITS, SUBPROTOCOL, httpError } from "../../shared/contract/protocol.js";
import type { SocketIdentity } from "../../shared/session/identity.js";
import { keyOf, type Peer } from "../../shared/session/router.js";
import { closeQuietly, sendIfOpen } from "../../shared/session/sockets.js";
import { MemoryStore } from "../../shared/session/store.js";
import { randomId } from "../../shared/edge/tokens.js";

export interface LanServerOptions {
  port: number;
  /** Bind address (default "0.0.0.0": every interface, so phones on the LAN reach it). */
  host?: string;
  /** The pre-shared token: creates sessions (as RELAY_KEY does on the Worker). */
  token: string;
  /** The built PWA (default <package>/dist/web). */
  webDir?: string;
  /** Per-connection rate limit (frames/s and burst); defaults are the relay's. */
  rateLimitPerS?: number;
  rateLimitBurst?: number;
  /** Signs session tokens (default: a random secret of this process, so tokens die with it). */
  tokenSecret?: string;
  /** More `Host` names to answer (e.g. a reverse proxy's); its own addresses and names always are. */
  allowHosts?: string[];
  /**
   * Test-only: accept http://127.0.0.1|localhost|[::1] push endpoints (a fake push service on this machine),
   * and only from requests whose socket peer is loopback. `lineup serve` never sets it (docs/push.md).
   */
  allowLocalPush?: boolean;
  /** Test seam: resolves push services' names (default: the system resolver, `dns.lookup`). */
  resolvePush?: Resolve;
  /** Test seam: wraps each session's store (e.g. to make a write fail half-way through a frame). */
  wrapStore?: (s: MemoryStore) => MemoryStore;
}

export interface LanServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

type LanEnv = { incoming?: IncomingMessage; upgrade?: LanUpgrade };

const DEFAULT_WEB = fileURLToPath(new URL("../../dist/web", import.meta.url));
const MAX_TIMER_MS = 60 * 60 * 1000;

const positive = (name: string, v: number | undefined, fallback: number) => {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number (got ${v})`);
  return v;
};

export async function startLanServer(o: LanServerOptions): Promise<LanServer> {
  if (!o.token || o.token.length < 16) throw new Error("the LAN server needs a pre-shared token of at least 16 characters");
  const rate = {
    perS: positive("rateLimitPerS", o.rateLimitPerS, LIMITS.rateLimitPerS),
    burst: positive("rateLimitBurst", o.rateLimitBurst, LIMITS.rateLimitBurst),
  };
  const webDir = resolve(o.webDir ?? DEFAULT_WEB);
  const secret = o.tokenSecret ?? randomId(32);
  if (secret === o.token) throw new Error("the token-signing secret must differ from the pre-shared token");
  const brake = new AuthBrake();
  const sessions = new Map<string, LanSession>();
  const wss = new WebSocketServer({
    noServer: true,
    // Above the contract's 1 MiB so the limit is answered with a `too_large` error frame and the
    // connection stays usable, exactly as the Worker does.
    maxPayload: 16 * LIMITS.maxFrameBytes,
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** One timer for every session: the earliest call deadline, result expiry or session expiry. */
  function schedule(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    let next = Infinity;
    for (const s of sessions.values()) next = Math.min(next, s.engine.nextDue() ?? Infinity);
    if (next === Infinity) return;
    timer = setTimeout(tick, Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())));
    timer.unref();
  }

  function tick(): void {
    const now = Date.now();
    for (const s of [...sessions.values()]) {
      if (s.engine.live(now)) void s.engine.tick();
      else s.end("session ended");
    }
    schedule();
  }

  class LanSession {
    readonly conns = new Map<string, { peer: Peer; ws: WebSocket }>();
    readonly host: SessionHost;
    readonly engine: SessionEngine;

    constructor(readonly id: string) {
      const store = o.wrapStore ? o.wrapStore(new MemoryStore()) : new MemoryStore();
      const pick = (to: { key: string } | { conn: string }) =>
        [...this.conns.values()].filter((c) => ("conn" in to ? c.peer.conn === to.conn : keyOf(c.peer) === to.key)).map((c) => c.ws);
      this.host = new SessionHost(
        store,
        {
          sockets: {
            peers: () => [...this.conns.values()].filter((c) => c.ws.readyState === c.ws.OPEN).map((c) => c.peer),
            send: (to, data) => pick(to).forEach((ws) => sendIfOpen(ws, data)),
            close: (to, code, reason) => pick(to).forEach((ws) => closeQuietly(ws, code, reason)),
            // Unrouted at once, as the Worker wipes the attachment: ws keeps delivering a socket's frames until
            // its TCP ends, and a client that ignores the close must not answer calls meanwhile.
            unroute: (conn, code, reason) => {
              const c = this.conns.get(conn);
              if (!c) return;
              this.conns.delete(conn);
              closeQuietly(c.ws, code, reason);
              setTimeout(() => c.ws.terminate(), 2000).unref();
            },
          },
          txn: (fn) => store.txn(fn),
          schedule,
          sleep: (ms) => new Promise((r) => setTimeout(r, ms).unref()),
          report: (inbox, sid, epoch, r) => inboxes.report(inbox, sid, epoch, r),
        },
        { rate, newId: () => randomId(12) },
      );
      this.engine = this.host.engine;
    }

    end(reason: string, code: number = CLOSE.sessionEnded): void {
      sessions.delete(this.id);
      void this.host.end(reason, code);
    }

    async init(meta: SessionMeta) {
      const made = this.engine.init(meta);
      if (made !== "exists") sessions.set(this.id, this);
      schedule();
      return made;
    }
    async destroy(epoch: number, reason = "session deleted") {
      if (!this.engine.current(epoch)) return false;
      this.end(reason);
      schedule();
      return true;
    }

    async connect(a: SocketIdentity, up: LanUpgrade | undefined): Promise<Response> {
      if (!up) return Response.json(httpError("upgrade_required", "this endpoint takes a WebSocket upgrade"), { status: 426 });
      const adm = this.host.admit(a);
      if (!adm.ok) return Response.json(httpError(adm.code, adm.message), { status: adm.status });
      const peer = adm.peer;
      up.done = true;
      wss.handleUpgrade(up.req, up.socket, up.head, (ws) => {
        this.conns.set(peer.conn, { peer, ws });
        ws.on("message", (data: Buffer, isBinary: boolean) => {
          // A revoked socket (unrouted by the host's revoke) says nothing more, even while its TCP is still up.
          if (!this.conns.has(peer.conn)) return;
          void this.engine.frame(peer, isBinary ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : data.toString("utf8"));
        });
        ws.on("close", () => {
          if (!this.conns.delete(peer.conn)) return;
          this.engine.closed(peer);
        });
        ws.on("error", () => ws.terminate());
        void this.engine.connected(peer);
      });
      return new Response(null, { status: 204 });
    }
  }

  const inboxes = new LanInboxes(
    wss,
    (sid, key, code, reason) => sessions.get(sid)?.host.revoke(key, code, reason),
    // An answer from a notification (shared/session/host.ts), as the Worker's session object routes it.
    async (sid, epoch, device, callId, action) =>
      (await sessions.get(sid)?.host.pushAnswer(epoch, device, callId, action)) ?? { status: "closed", outcome: "ended" },
    (sid, epoch) => void sessions.get(sid)?.host.setE2eEpoch(epoch),
    o.resolvePush,
    // A revoked machine's session ends as DELETE ends it (docs/inbox.md "Revocation").
    async (sid, epoch, reason) => (await sessions.get(sid)?.destroy(epoch, reason)) ?? false,
  );
  let port = o.port;
  const hostAllowed = allowedHosts(() => port, o.host ?? "0.0.0.0", o.allowHosts ?? []);
  const app = createEdge<LanEnv>(
    (c): EdgeHost => ({
      hostAllowed,
      relayKey: o.token,
      unconfigured: "",
      configError: undefined,
      tokenSecret: async () => secret,
      origins: [],
      publicBase: undefined,
      clientAddr: c.env.incoming?.socket.remoteAddress ?? "unknown",
      brake,
      session: (sid): EdgeSession => {
        const s = sessions.get(sid) ?? new LanSession(sid);
        return {
          init: (m) => s.init(m),
          status: async (e) => s.host.status(e),
          history: async (e, before, limit) => s.host.history(e, before, limit),
          destroy: (e) => s.destroy(e),
          ...httpApi((e, op) => s.host.http(e, op)),
          setE2eEpoch: async (e) => s.host.setE2eEpoch(e),
          connect: (_req, a) => s.connect(a, c.env.upgrade),
        };
      },
      im: { status: 400, message: "im: the WuKongIM bridge is not available in direct LAN mode" },
      inboxes: inboxes.edge(c.env.upgrade),
      // Web Push (docs/push.md, "LAN mode"): the page needs a secure context — https (a proxy) or localhost.
      // A local fake push service: only when the test-only option says so, and judged by the socket's peer —
      // the Host header is the client's to write.
      push: {
        publicKey: async () => (await inboxes.vapidKeys()).publicKey,
        allowLocalHttp: o.allowLocalPush === true && isLoopback(c.env.incoming?.socket.remoteAddress ?? ""),
      },
      // The pre-shared token's sessions (not an inbox's), so the app's LAN form joins the one the agent uses.
      keySessions: async () =>
        [...sessions.values()]
          .map((s) => s.engine.meta())
          .filter((m): m is SessionMeta => !!m && !m.inbox && m.expires_at > Date.now())
          .sort((a, b) => b.epoch - a.epoch),
      assets: (req) => staticFile(webDir, req),
    }),
  );

  const listener = getRequestListener((req, env) => app.fetch(req, { incoming: env.incoming as IncomingMessage }));
  const server = createServer((req, res) => void listener(req, res));
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const up: LanUpgrade = { req, socket, head, done: false };
    const answer = async () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
      const res = await app.fetch(new Request(new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`), { headers }), {
        incoming: req,
        upgrade: up,
      });
      if (up.done) return;
      // A refusal before the upgrade: the edge's status and JSON body, as the Worker answers them.
      const body = await res.text();
      socket.end(
        `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}\r\ncontent-type: ${res.headers.get("content-type") ?? "application/json"}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    answer().catch(() => socket.destroy());
  });

  const host = o.host ?? "0.0.0.0";
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(o.port, host, () => {
      server.off("error", fail);
      ok();
    });
  });
  const addr = server.address();
  port = typeof addr === "object" && addr ? addr.port : o.port;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    async close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      // 1001 "going away" is not terminal: agents reconnect when the server is back.
      for (const s of [...sessions.values()]) s.end("server stopping", CLOSE.goingAway);
      inboxes.closeAll();
      wss.close();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
    },
  };
}
