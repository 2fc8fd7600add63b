// One Durable Object per session: the hibernation entry points, the alarm and the IM wiring around the shared
// session host (shared/session/host.ts), whose ports are implemented here with hibernatable sockets (identity in
// tags and attachments), `transactionSync` and the one alarm. Memory is only a cache.
import { DurableObject } from "cloudflare:workers";
import { parseConfig } from "../shared/edge/config.js";
import type { HistoryPage, HttpCallAnswer, HttpCancelAnswer, SessionEngine, SessionMeta } from "../shared/session/engine.js";
import { SessionHost, type HttpOp } from "../shared/session/host.js";
import { identityOf } from "../shared/session/identity.js";
import type { PushAnswerInput, SessionPushAnswer } from "../shared/contract/push.js";
import { fromPlain, httpError, LIMITS, SUBPROTOCOL, type SessionStatus } from "../shared/contract/protocol.js";
import type { Peer } from "../shared/session/router.js";
import { closeQuietly } from "../shared/session/sockets.js";
import { randomId } from "../shared/edge/tokens.js";
import type { Env } from "./env.js";
import { ObjectSockets, objectPorts } from "./session-ports.js";
import { SqlStore } from "./sql-store.js";
import { WuKongImBridge, type ImInbound } from "./wukongim/bridge.js";

export class Session extends DurableObject<Env> {
  private readonly store: SqlStore;
  private readonly sockets: ObjectSockets;
  private readonly host: SessionHost;
  readonly engine: SessionEngine;
  private alarmAt: number | null | undefined;
  private wk: WuKongImBridge | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SqlStore(ctx.storage.sql);
    this.sockets = new ObjectSockets(ctx);
    // Heartbeats are answered by the runtime without waking the object (hibernation rule).
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    // A bad override never reaches here: the edge refuses every request until it is fixed.
    const cfg = parseConfig({ RATE_LIMIT_PER_S: env.RATE_LIMIT_PER_S, RATE_LIMIT_BURST: env.RATE_LIMIT_BURST });
    const rate = cfg.ok ? cfg.config.rate : { perS: LIMITS.rateLimitPerS, burst: LIMITS.rateLimitBurst };
    const ports = objectPorts(ctx, env, this.store, this.sockets, () => this.syncAlarm());
    this.host = new SessionHost(this.store, ports, { rate, newId: () => randomId(12), bridge: (m) => this.im(m) });
    this.engine = this.host.engine;
  }

  /** An IM-bound session's conversation is an always-present virtual app peer (worker/wukongim/bridge.ts). */
  private im(m: SessionMeta | undefined): WuKongImBridge | undefined {
    if (!m?.im) return undefined;
    return (this.wk ??= new WuKongImBridge(this.ctx.storage.sql, this.store, this.env, m.im, {
      route: (peer, frame) => void this.engine.route(peer, fromPlain(frame)),
      presence: () => this.engine.announce(),
    }));
  }

  /** One alarm, always at the earliest due time: deadlines, result expiry, IM retries, session expiry. */
  private async syncAlarm(): Promise<void> {
    const m = this.engine.meta();
    if (!m) return;
    const due = [this.engine.nextDue(), this.im(m)?.nextDue()].filter((t) => t !== undefined);
    // An outbox row made due "now" (0) must not make setAlarm throw: anything past fires at once.
    const next = Math.max(Date.now(), Math.min(...due));
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    // Only ever earlier: an alarm left early (a call answered) finds nothing due and re-arms; no write per call.
    if (this.alarmAt !== null && this.alarmAt > Date.now() && this.alarmAt <= next) return;
    if (this.alarmAt !== next) {
      await this.ctx.storage.setAlarm(next);
      this.alarmAt = next;
    }
  }

  // RPC from the edge (worker/host.ts) and the inbox (worker/inbox.ts); the epoch guard is the host's.
  async init(meta: SessionMeta): Promise<SessionMeta | "exists"> {
    // An expired session whose alarm has not run yet is wiped before its id is used again.
    if (this.engine.meta() && !this.engine.live()) await this.destroy(this.engine.meta()!.epoch);
    const made = this.engine.init(meta);
    if (made === "exists") return made;
    this.im(made)?.init();
    await this.syncAlarm();
    return made;
  }

  async status(epoch: number): Promise<SessionStatus | null> {
    const s = this.host.status(epoch);
    return s && (this.im(this.engine.meta())?.status(s) ?? s);
  }

  async history(epoch: number, before: number | undefined, limit: number): Promise<HistoryPage | null> {
    return this.host.history(epoch, before, limit);
  }

  /** Ends this incarnation: `DELETE /api/sessions/:sid`, expiry, and its machine's revocation (`reason`). */
  async destroy(epoch: number, reason = "session deleted"): Promise<boolean> {
    if (this.engine.meta()?.epoch !== epoch) return false;
    // Its last report is awaited: the reset that follows a delete would cancel a send left in the background.
    await this.host.end(reason);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    // deleteAll() drops the SQL tables as well; later requests (404s, late socket closes) still query them.
    this.store.migrate();
    this.wk = undefined; // its tables went with deleteAll(); a new bridge recreates them
    this.alarmAt = null;
    return true;
  }

  /** Resets the object right after destroy(): workerd holds a socket closed from another request's context half-open
   * until the object hibernates (~10 s) — a client saw its 4004 close at once, its close event 10 s later. */
  async reset(): Promise<void> {
    this.ctx.abort("session deleted");
  }

  async http(epoch: number, op: HttpOp): Promise<HttpCallAnswer | HttpCancelAnswer> {
    return this.host.http(epoch, op);
  }

  // The hibernation entry points.
  async fetch(req: Request): Promise<Response> {
    const id = identityOf(req.headers);
    const a = this.host.admit(id);
    if (!a.ok) return Response.json(httpError(a.code, a.message), { status: a.status });
    const { 0: client, 1: server } = new WebSocketPair();
    this.sockets.accept(server, a.peer);
    await this.engine.connected(a.peer);
    // Answer only a subprotocol the client offered: answering one it did not offer fails the handshake.
    return new Response(null, { status: 101, webSocket: client, headers: id?.subprotocol ? { "sec-websocket-protocol": SUBPROTOCOL } : {} });
  }

  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    // A revoked socket (identity wiped in dropClient) says nothing more, even while its TCP is still up.
    const peer = this.sockets.peerOf(ws);
    if (peer) await this.engine.frame(peer, raw);
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    // Answer the close handshake (a dead socket's 1005/1006 gets no frame: closeQuietly skips them).
    closeQuietly(ws, code, "bye");
    await this.webSocketError(ws);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    this.sockets.changed();
    this.engine.closed(ws.deserializeAttachment() as Peer | null);
  }

  async alarm(): Promise<void> {
    // Alarms are rare: re-read alarm time, meta and the store's counts from storage, the truth, rather than trust the cache.
    this.alarmAt = undefined;
    this.store.forget();
    this.engine.reload();
    const m = this.engine.meta();
    if (!m) return;
    if (m.expires_at <= Date.now()) return void (await this.destroy(m.epoch));
    // IM outbox first: an undelivered call past its deadline ends as im_undeliverable, not timeout;
    // its sends (slow I/O) come after the router's tick so deadlines never wait on WuKongIM.
    const im = this.im(m);
    im?.expire();
    await this.engine.tick();
    await im?.pump();
    await this.syncAlarm();
  }

  /** A revoked device's connections (worker/inbox.ts): told why, then closed with a terminal code. */
  async dropClient(key: string, code: number, reason: string): Promise<void> {
    this.host.revoke(key, code, reason);
  }

  /** An answer tapped on a notification, as that device (the inbox checked its token); routing re-arms the alarm. */
  async pushAnswer(epoch: number, device: { id: string; name: string }, callId: string, answer: PushAnswerInput): Promise<SessionPushAnswer> {
    return this.host.pushAnswer(epoch, device, callId, answer);
  }

  /** The inbox moved to a new epoch (docs/e2e.md): from now on this sealed session refuses older envelopes. */
  async setE2eEpoch(epoch: number): Promise<boolean> {
    return this.host.setE2eEpoch(epoch);
  }

  /** WuKongIM webhook work for this session (worker/wukongim/routes.ts); ignored unless IM-bound and live. */
  async wukongim(input: ImInbound): Promise<void> {
    this.im(this.engine.live())?.inbound(input);
    await this.syncAlarm();
  }
}
