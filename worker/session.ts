// One Durable Object per session: accepts hibernatable WebSockets and drives the pure routing core
// (shared/router.ts) with SQLite. Memory here is only a cache; every rule survives eviction.
import { DurableObject } from "cloudflare:workers";
import {
  CLOSE,
  decodeFrame,
  HTTP_CLIENT_ID,
  LIMITS,
  SESSION_ID_RE,
  type Role,
  type SessionStatus,
  type ToolResultOut,
} from "../shared/protocol.js";
import { keyOf, Router, type Ctx, type Out, type Peer } from "../shared/router.js";
import { randomId } from "../shared/tokens.js";
import type { Env } from "./env.js";
import { SqlStore } from "./sql-store.js";
import { TokenBucket } from "../shared/rate-limit.js";
import { closeQuietly, sendIfOpen } from "./sockets.js";
import { IM_KEY, IM_PEER, WuKongImBridge, type ImInbound } from "./wukongim/bridge.js";

export interface SessionMeta {
  session_id: string;
  expires_at: number;
  label?: string;
  /** Set for sessions bound to a WuKongIM conversation. */
  im?: { channel_id: string; channel_type: number };
}

export type HttpCallAnswer =
  | { status: 200; result: ToolResultOut }
  | { status: 202; call_id: string }
  | { status: 404 | 409; call_id?: string };

const HTTP_KEY = `agent:${HTTP_CLIENT_ID}`;

export class Session extends DurableObject<Env> {
  private readonly store: SqlStore;
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private alarmAt: number | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SqlStore(ctx.storage.sql);
    // Heartbeats are answered by the runtime without waking the object (hibernation rule).
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  // Memory is a cache of SQLite: the meta row only changes in init() and destroy(), so it is read once
  // per wake instead of several times per frame (hibernation clears this field with everything else).
  private metaCache: SessionMeta | null | undefined;
  private meta(): SessionMeta | undefined {
    if (this.metaCache === undefined) {
      const m = this.store.meta("session");
      this.metaCache = m ? (JSON.parse(m) as SessionMeta) : null;
    }
    return this.metaCache ?? undefined;
  }
  private live(): SessionMeta | undefined {
    const m = this.meta();
    return m && m.expires_at > Date.now() ? m : undefined;
  }
  private router(m: SessionMeta): Router {
    return new Router(this.store, m.session_id, () => randomId(12));
  }

  /** Live connections, from socket attachments (they survive hibernation; memory does not). */
  private peers(except?: WebSocket): Peer[] {
    return this.ctx
      .getWebSockets()
      .filter((ws) => ws !== except && ws.readyState === WebSocket.OPEN)
      .map((ws) => ws.deserializeAttachment() as Peer);
  }
  private ctxOf(except?: WebSocket): Ctx {
    // An IM-bound session's conversation is an always-present virtual app peer (worker/wukongim/bridge.ts).
    return { now: Date.now(), peers: this.meta()?.im ? [...this.peers(except), IM_PEER] : this.peers(except) };
  }

  private wk: WuKongImBridge | undefined;
  private im(m: SessionMeta | undefined): WuKongImBridge | undefined {
    if (!m?.im) return undefined;
    return (this.wk ??= new WuKongImBridge(this.ctx.storage.sql, this.store, this.env, m.im, {
      router: () => this.router(this.meta()!),
      ctx: () => this.ctxOf(),
      flush: (outs) => this.flush(outs),
    }));
  }

  private flush(outs: Out[]): void {
    const im = outs.length ? this.im(this.meta()) : undefined;
    for (const o of outs) {
      if (im && o.to === IM_KEY) {
        im.accept(o.frame);
        continue;
      }
      im?.decorate(o.frame);
      if (o.to === HTTP_KEY) {
        const w = this.waiters.get((o.frame as { call_id?: string }).call_id ?? "");
        w?.forEach((wake) => wake());
        continue;
      }
      const data = JSON.stringify(o.frame);
      for (const ws of this.ctx.getWebSockets(o.conn ? `conn:${o.conn}` : o.to)) sendIfOpen(ws, data);
    }
  }

  /** One alarm, always at the earliest due time: deadlines, result expiry, session expiry. */
  private async syncAlarm(): Promise<void> {
    const m = this.meta();
    if (!m) return;
    const due = [this.store.nextDue(), this.im(m)?.nextDue()].filter((t) => t !== undefined);
    const next = Math.min(m.expires_at, ...due);
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt !== next) {
      await this.ctx.storage.setAlarm(next);
      this.alarmAt = next;
    }
  }

  // ---------------------------------------------------------------- RPC from the Worker

  async init(meta: SessionMeta): Promise<SessionMeta> {
    const old = this.meta();
    const merged = old ? { ...old, expires_at: Math.max(old.expires_at, meta.expires_at), label: meta.label ?? old.label } : meta;
    this.store.setMeta("session", JSON.stringify(merged));
    this.metaCache = merged;
    this.im(merged)?.init();
    await this.syncAlarm();
    return merged;
  }

  async status(): Promise<SessionStatus | null> {
    const m = this.live();
    if (!m) return null;
    const extra = m.label === undefined ? { expires_at: m.expires_at } : { expires_at: m.expires_at, label: m.label };
    const s = this.router(m).status(this.ctxOf(), extra);
    return this.im(m)?.status(s) ?? s;
  }

  async destroy(): Promise<boolean> {
    const existed = this.meta() !== undefined;
    for (const ws of this.ctx.getWebSockets()) closeQuietly(ws, CLOSE.sessionEnded, "session deleted");
    this.store.clear();
    this.metaCache = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    // deleteAll() drops the SQL tables as well; later requests (404s, late socket closes) still query them.
    this.store.migrate();
    this.wk = undefined; // its tables went with deleteAll(); a new bridge recreates them
    this.alarmAt = null;
    return existed;
  }

  /** Resets the object right after destroy(). workerd holds a socket closed from another request's
   * context (this RPC, not the socket's own event) half-open until the object hibernates (~10 s), so a
   * client saw its 4004 close frame at once but its close event only 10 s later; a reset ends them now. */
  async reset(): Promise<void> {
    this.ctx.abort("session deleted");
  }

  async httpCall(body: Parameters<Router["httpCall"]>[0], waitS: number): Promise<HttpCallAnswer> {
    const m = this.live();
    if (!m) return { status: 404 };
    const r = this.router(m);
    const { call_id, conflict, out } = this.ctx.storage.transactionSync(() => r.httpCall(body, this.ctxOf()));
    if (conflict) return { status: 409, call_id };
    this.flush(out);
    await this.syncAlarm();
    return this.httpResult(call_id, waitS);
  }

  async httpResult(callId: string, waitS: number): Promise<HttpCallAnswer> {
    const m = this.live();
    if (!m) return { status: 404 };
    let r = this.router(m).takeHttpResult(callId);
    if (r === "pending" && waitS > 0) {
      // A bounded long-poll. The in-flight request already keeps the object awake, so this wait costs
      // no hibernation; the call itself stays durable in SQLite and can be fetched again.
      await new Promise<void>((resolve) => {
        const set = this.waiters.get(callId) ?? new Set();
        const done = () => {
          set.delete(done);
          if (set.size === 0) this.waiters.delete(callId);
          resolve();
        };
        set.add(done);
        this.waiters.set(callId, set);
        void scheduler.wait(waitS * 1000).then(done);
      });
      r = this.router(m).takeHttpResult(callId);
      await this.syncAlarm();
    }
    if (r === undefined) return { status: 404 };
    if (r === "pending") return { status: 202, call_id: callId };
    return { status: 200, result: r };
  }

  // ---------------------------------------------------------------- WebSockets

  async fetch(req: Request): Promise<Response> {
    const m = this.live();
    if (!m) return json(404, "session_not_found", "this session has expired or was deleted");
    const role = req.headers.get("x-lineup-role") as Role;
    const url = new URL(req.url);
    const asked = url.searchParams.get("client_id");
    if (asked !== null && !/^[A-Za-z0-9_-]{1,64}$/.test(asked)) {
      return json(400, "bad_client_id", "client_id must be 1-64 characters of [A-Za-z0-9_-]");
    }
    const peer: Peer = { role, clientId: asked ?? randomId(9), conn: randomId(9) };
    const key = keyOf(peer);
    // Route by client id, not by socket: a newer connection of the same client replaces the old one.
    for (const old of this.ctx.getWebSockets(key)) closeQuietly(old, CLOSE.replaced, "replaced by a newer connection");
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, [key, `conn:${peer.conn}`, `role:${role}`]);
    server.serializeAttachment(peer);
    this.flush(this.router(m).connect(peer, this.ctxOf()));
    await this.syncAlarm();
    const headers = new Headers();
    if (req.headers.get("x-lineup-subprotocol") === "1") headers.set("sec-websocket-protocol", "lineup.v1");
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    const peer = ws.deserializeAttachment() as Peer;
    const send = (f: object) => sendIfOpen(ws, JSON.stringify(f));
    // The rate limit comes first, before any storage read: a flood costs as little as possible.
    let bucket = this.buckets.get(peer.conn);
    if (!bucket) this.buckets.set(peer.conn, (bucket = new TokenBucket(rate(this.env), burst(this.env))));
    if (!bucket.take(Date.now())) {
      send({ type: "error", code: "rate_limited", message: `more than ${rate(this.env)} frames/s on this connection; slow down` });
      return;
    }
    const m = this.live();
    if (!m) return closeQuietly(ws, CLOSE.sessionEnded, "session ended");
    // workerd hands the object frames far above 1 MiB; the contract's limit is enforced here.
    const d = decodeFrame(raw);
    if (!d.ok) {
      send(d.error);
      return;
    }
    try {
      // One SQLite transaction per frame: a handler that throws half-way leaves no partial state behind.
      this.flush(this.ctx.storage.transactionSync(() => this.router(m).handle(peer, d.frame, this.ctxOf())));
      await this.syncAlarm();
    } catch (e) {
      console.error("session: frame handler failed", (e as Error).name, (e as Error).message);
      send({ type: "error", code: "internal", message: "internal error; reconnect" });
      closeQuietly(ws, CLOSE.internal, "internal error");
    }
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    // Answer the close handshake; codes 1005/1006 cannot be sent back (closeQuietly maps them).
    closeQuietly(ws, code, "bye");
    await this.gone(ws);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    await this.gone(ws);
  }

  private async gone(ws: WebSocket): Promise<void> {
    const peer = ws.deserializeAttachment() as Peer | null;
    if (peer) this.buckets.delete(peer.conn);
    const m = this.live();
    if (!m) return;
    this.flush(this.router(m).disconnect(peer as Peer, this.ctxOf(ws)));
  }

  async alarm(): Promise<void> {
    // Alarms are rare: re-read alarm time and meta from storage, the truth, rather than trust the cache.
    this.alarmAt = undefined;
    this.metaCache = undefined;
    const m = this.meta();
    if (!m) return;
    if (m.expires_at <= Date.now()) {
      await this.destroy();
      return;
    }
    // IM outbox first: an undelivered call past its deadline ends as im_undeliverable, not timeout;
    // its sends (slow I/O) come after the router's tick so deadlines never wait on WuKongIM.
    const im = this.im(m);
    im?.expire();
    this.flush(this.ctx.storage.transactionSync(() => this.router(m).tick(this.ctxOf())));
    await im?.pump();
    await this.syncAlarm();
  }

  /** WuKongIM webhook work for this session (worker/wukongim/routes.ts); ignored unless IM-bound and live. */
  async wukongim(input: ImInbound): Promise<void> {
    const b = this.im(this.live());
    if (!b) return;
    b.inbound(input);
    await this.syncAlarm();
  }
}

function rate(env: Env): number {
  return Number(env.RATE_LIMIT_PER_S) > 0 ? Number(env.RATE_LIMIT_PER_S) : LIMITS.rateLimitPerS;
}
function burst(env: Env): number {
  return Number(env.RATE_LIMIT_BURST) > 0 ? Number(env.RATE_LIMIT_BURST) : LIMITS.rateLimitBurst;
}

function json(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

export { SESSION_ID_RE };
