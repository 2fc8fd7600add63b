// One Durable Object per session: the hibernation entry points, the alarm and the IM wiring around the
// shared session engine (shared/session/engine.ts), whose ports are implemented here with hibernatable sockets
// (identity in tags and attachments), `transactionSync` and the one alarm. Memory is only a cache.
import { DurableObject } from "cloudflare:workers";
import { parseConfig } from "../shared/edge/config.js";
import { SessionEngine, type HistoryPage, type HttpCallAnswer, type HttpCallBody, type SessionMeta, type Target } from "../shared/session/engine.js";
import { Reporter, summarize } from "../shared/session/report.js";
import { answerFromPush } from "../shared/session/push-answer.js";
import type { PushAnswerInput, SessionPushAnswer } from "../shared/contract/push.js";
import { fromPlain, LIMITS, type Role, type SessionStatus } from "../shared/contract/protocol.js";
import type { Peer } from "../shared/session/router.js";
import { closeQuietly, sendIfOpen } from "../shared/session/sockets.js";
import { randomId } from "../shared/edge/tokens.js";
import type { Env } from "./env.js";
import { SqlStore } from "./sql-store.js";
import { WuKongImBridge, type ImInbound } from "./wukongim/bridge.js";

export type { HttpCallAnswer, SessionMeta };
const tagOf = (to: Target) => ("conn" in to ? `conn:${to.conn}` : to.key);

export class Session extends DurableObject<Env> {
  private readonly store: SqlStore;
  readonly engine: SessionEngine;
  private alarmAt: number | null | undefined;
  private wk: WuKongImBridge | undefined;
  private reporter: Reporter | undefined;
  /** Each socket's identity, deserialized once per wake and again only after a connect, close or revoke. */
  private socks: { ws: WebSocket; peer: Peer | null }[] | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SqlStore(ctx.storage.sql);
    // Heartbeats are answered by the runtime without waking the object (hibernation rule).
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    const cfg = parseConfig(env as unknown as Record<string, string | undefined>);
    this.engine = new SessionEngine(
      this.store,
      {
        sockets: {
          // Live connections from socket attachments: they survive hibernation, memory does not.
          peers: () => (this.socks ??= ctx.getWebSockets().map((ws) => ({ ws, peer: ws.deserializeAttachment() as Peer | null }))).flatMap((s) => (s.ws.readyState === WebSocket.OPEN ? [s.peer as Peer] : [])),
          send: (to, data) => ctx.getWebSockets(tagOf(to)).forEach((ws) => sendIfOpen(ws, data)),
          close: (to, code, reason) => ctx.getWebSockets(tagOf(to)).forEach((ws) => closeQuietly(ws, code, reason)),
        },
        txn: (fn) => {
          try {
            return ctx.storage.transactionSync(fn);
          } catch (e) {
            this.store.forget(); // the usage it counted was rolled back with the writes
            throw e;
          }
        },
        schedule: () => this.syncAlarm(),
        sleep: (ms) => scheduler.wait(ms),
      },
      {
        // A bad override never reaches here: the edge refuses every request until it is fixed.
        rate: cfg.ok ? cfg.config.rate : { perS: LIMITS.rateLimitPerS, burst: LIMITS.rateLimitBurst },
        newId: () => randomId(12),
        bridge: (m) => this.im(m),
        changed: () => this.report(),
      },
    );
  }

  /** An IM-bound session's conversation is an always-present virtual app peer (worker/wukongim/bridge.ts). */
  private im(m: SessionMeta | undefined): WuKongImBridge | undefined {
    if (!m?.im) return undefined;
    return (this.wk ??= new WuKongImBridge(this.ctx.storage.sql, this.store, this.env, m.im, {
      route: (peer, frame) => void this.engine.route(peer, fromPlain(frame)),
      presence: () => this.engine.announce(),
    }));
  }

  private inbox(id: string) {
    return this.env.INBOXES.get(this.env.INBOXES.idFromName(id));
  }

  /** An inbox session tells its inbox what changed (online, waiting calls): a send after the work, never awaited. */
  private report(): void {
    const m = this.engine.meta();
    if (!m?.inbox) return;
    const { inbox, session_id, epoch } = m;
    this.reporter ??= new Reporter((r) => this.ctx.waitUntil(this.inbox(inbox).report(session_id, epoch, r).catch(() => undefined)));
    this.reporter.maybe(summarize(this.store, this.engine.ctx().peers, Date.now(), m.sealed === true));
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

  // ---------------------------------------------------------------- RPC from the edge (worker/host.ts)

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
    if (!this.engine.current(epoch)) return null;
    const s = this.engine.status();
    return s && (this.im(this.engine.meta())?.status(s) ?? s);
  }

  async history(epoch: number, before: number | undefined, limit: number): Promise<HistoryPage | null> {
    return this.engine.current(epoch) ? this.engine.history(before, limit) : null;
  }

  /** Ends this incarnation: `DELETE /api/sessions/:sid`, expiry, and its machine's revocation (`reason`). */
  async destroy(epoch: number, reason = "session deleted"): Promise<boolean> {
    const m = this.engine.meta();
    if (!m || m.epoch !== epoch) return false;
    // Awaited: the reset that follows a delete would cancel a send left in the background.
    if (m.inbox) await this.inbox(m.inbox).report(m.session_id, m.epoch, { agent_online: false, pending: 0, last_activity: Date.now(), waiting: [], ended: true }).catch(() => undefined);
    this.reporter = undefined;
    this.engine.end(reason);
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

  async httpCall(epoch: number, body: HttpCallBody, waitS: number): Promise<HttpCallAnswer> {
    return this.engine.current(epoch) ? this.engine.httpCall(body, waitS) : { status: 404 };
  }

  async httpResult(epoch: number, callId: string, waitS: number): Promise<HttpCallAnswer> {
    return this.engine.current(epoch) ? this.engine.httpResult(callId, waitS) : { status: 404 };
  }

  // ---------------------------------------------------------------- WebSockets

  async fetch(req: Request): Promise<Response> {
    if (!this.engine.current(Number(req.headers.get("x-lineup-epoch")))) return json(404, "session_not_found", "this session has expired or was deleted");
    const name = req.headers.get("x-lineup-name");
    const a = this.engine.admit(req.headers.get("x-lineup-role") as Role, req.headers.get("x-lineup-client"), {
      internal: req.headers.get("x-lineup-internal") === "1",
      ...(name !== null ? { name: decodeURIComponent(name), cred: req.headers.get("x-lineup-client") ?? undefined } : {}),
    });
    if (!a.ok) return json(a.status, a.code, a.message);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    // Identity is written at accept: tags route by client and connection, the attachment names the peer.
    this.ctx.acceptWebSocket(server, [`${a.peer.role}:${a.peer.clientId}`, `conn:${a.peer.conn}`, `role:${a.peer.role}`]);
    server.serializeAttachment(a.peer);
    this.socks = undefined;
    await this.engine.connected(a.peer);
    const headers = new Headers();
    if (req.headers.get("x-lineup-subprotocol") === "1") headers.set("sec-websocket-protocol", "lineup.v1");
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    // A revoked socket (identity wiped in dropClient) says nothing more, even while its TCP is still up.
    const peer = ws.deserializeAttachment() as Peer | null;
    if (peer) await this.engine.frame(peer, raw);
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    // Answer the close handshake (a dead socket's 1005/1006 gets no frame: closeQuietly skips them).
    closeQuietly(ws, code, "bye");
    this.socks = undefined;
    this.engine.closed(ws.deserializeAttachment() as Peer | null);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    this.socks = undefined;
    this.engine.closed(ws.deserializeAttachment() as Peer | null);
  }

  async alarm(): Promise<void> {
    // Alarms are rare: re-read alarm time, meta and the store's counts from storage, the truth, rather than trust the cache.
    this.alarmAt = undefined;
    this.store.forget();
    this.engine.reload();
    const m = this.engine.meta();
    if (!m) return;
    if (m.expires_at <= Date.now()) {
      await this.destroy(m.epoch);
      return;
    }
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
    for (const ws of this.ctx.getWebSockets(key)) {
      sendIfOpen(ws, JSON.stringify({ type: "error", code: "revoked", message: reason }));
      this.engine.closed(ws.deserializeAttachment() as Peer | null);
      ws.serializeAttachment(null);
      this.socks = undefined;
      closeQuietly(ws, code, reason);
    }
    this.engine.forget(key);
  }

  /** An answer tapped on a notification, as that device (the inbox checked its token): shared/session/push-answer.ts. */
  async pushAnswer(epoch: number, device: { id: string; name: string }, callId: string, answer: PushAnswerInput): Promise<SessionPushAnswer> {
    if (!this.engine.current(epoch)) return { status: "closed", outcome: "ended" };
    const r = await answerFromPush(this.engine, this.store, device, callId, answer);
    await this.syncAlarm();
    return r;
  }

  /** The inbox moved to a new epoch (docs/e2e.md): from now on this sealed session refuses older envelopes. */
  async setE2eEpoch(epoch: number): Promise<boolean> {
    return this.engine.setE2eEpoch(epoch);
  }

  /** WuKongIM webhook work for this session (worker/wukongim/routes.ts); ignored unless IM-bound and live. */
  async wukongim(input: ImInbound): Promise<void> {
    const b = this.im(this.engine.live());
    if (!b) return;
    b.inbound(input);
    await this.syncAlarm();
  }
}

const json = (status: number, code: string, message: string): Response => Response.json({ error: { code, message } }, { status });
