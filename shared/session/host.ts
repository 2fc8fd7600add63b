// The one session host both servers run around the engine (shared/session/engine.ts): the epoch guard on every
// request, admission and its errors, the inbox report, a revoked client's sockets, an answer from a
// notification, and the end of the session. The Durable Object (worker/session.ts) adds hibernation, the alarm
// and the IM bridge; the LAN server (adapter/lan/server.ts) its socket map and one timer. Neither repeats these.
import { CLOSE, type SessionStatus } from "../contract/protocol.js";
import type { SessionReport } from "../contract/inbox.js";
import type { PushAnswerInput, SessionPushAnswer } from "../contract/push.js";
import {
  SessionEngine,
  type EngineOptions,
  type EnginePorts,
  type HistoryPage,
  type HttpCallAnswer,
  type HttpCallBody,
  type HttpCancelAnswer,
  type SessionMeta,
  type SocketPort,
} from "./engine.js";
import type { SocketIdentity } from "./identity.js";
import { answerFromPush } from "./push-answer.js";
import { agentOnline, glance, summarize } from "./report.js";
import { ReportQueue, type Glance } from "./report-queue.js";
import { keyOf, type Peer } from "./router.js";
import type { Store } from "./store.js";

export interface HostSocketPort extends SocketPort {
  /** Stops routing a connection's frames at once (a revoked socket says nothing more while its TCP is still up),
   * then closes it with `code`. */
  unroute(conn: string, code: number, reason: string): void;
}

export interface HostPorts extends EnginePorts {
  sockets: HostSocketPort;
  /** Tells the session's inbox what changed (docs/inbox.md); routing never waits for it. */
  report(inbox: string, sessionId: string, epoch: number, r: SessionReport): void | Promise<void>;
}

export type HostOptions = Omit<EngineOptions, "changed" | "due">;

/** One request of the HTTP call API: start a call, wait for its result, or cancel it. */
export type HttpOp =
  | { kind: "call"; body: HttpCallBody; waitS: number }
  | { kind: "result"; callId: string; waitS: number }
  | { kind: "cancel"; callId: string };

/** The edge's three HTTP call methods (shared/edge/host.ts EdgeSession) over one `http` entry, as both hosts expose it. */
export function httpApi(http: (epoch: number, op: HttpOp) => Promise<HttpCallAnswer | HttpCancelAnswer>) {
  return {
    httpCall: async (epoch: number, body: HttpCallBody, waitS: number) => (await http(epoch, { kind: "call", body, waitS })) as HttpCallAnswer,
    httpResult: async (epoch: number, callId: string, waitS: number) => (await http(epoch, { kind: "result", callId, waitS })) as HttpCallAnswer,
    httpCancel: async (epoch: number, callId: string) => (await http(epoch, { kind: "cancel", callId })) as HttpCancelAnswer,
  };
}

/** A connection the session takes (its peer), or why not, as the HTTP status and error body the edge answers. */
export type Admitted = { ok: true; peer: Peer } | { ok: false; status: 400 | 404 | 429; code: string; message: string };

const NOT_FOUND = { ok: false, status: 404, code: "session_not_found", message: "this session has expired or was deleted" } as const;

export class SessionHost {
  readonly engine: SessionEngine;
  private reports: ReportQueue | undefined;
  /** The last glance and what it was read at (the store's open-call version, presence): frames that change
   * neither (an ack, a hello) read no calls. */
  private seen: { version: number; human: number | undefined; online: boolean; g: Glance } | undefined;

  constructor(
    readonly store: Store,
    private readonly ports: HostPorts,
    opts: HostOptions,
  ) {
    this.engine = new SessionEngine(store, ports, { ...opts, changed: () => this.report(), due: () => this.reports?.due() });
  }

  // ---------------------------------------------------------------- requests of one incarnation (`epoch`)

  status(epoch: number): SessionStatus | null {
    return this.engine.current(epoch) ? this.engine.status() : null;
  }

  history(epoch: number, before: number | undefined, limit: number): HistoryPage | null {
    return this.engine.current(epoch) ? this.engine.history(before, limit) : null;
  }

  /** The HTTP call API (docs/protocol.md §7) of this incarnation: one entry for the object's RPC. */
  async http(epoch: number, op: HttpOp): Promise<HttpCallAnswer | HttpCancelAnswer> {
    const live = this.engine.current(epoch);
    if (op.kind === "cancel") return live ? this.engine.httpCancel(op.callId) : null;
    if (!live) return { status: 404 };
    return op.kind === "call" ? this.engine.httpCall(op.body, op.waitS) : this.engine.httpResult(op.callId, op.waitS);
  }

  /** The inbox moved to a new e2e epoch (docs/e2e.md): a sealed session refuses older envelopes from now on. */
  setE2eEpoch(epoch: number): boolean {
    return this.engine.setE2eEpoch(epoch);
  }

  /** Who a new WebSocket is: refused when its token's incarnation is gone, or by the engine's client-id rules. */
  admit(id: SocketIdentity | undefined): Admitted {
    if (!id || !this.engine.current(id.epoch)) return NOT_FOUND;
    return this.engine.admit(id.role, id.clientId, {
      internal: id.internal === true,
      ...(id.registerFirst ? { registerFirst: true } : {}),
      ...(id.name !== undefined && id.clientId ? { name: id.name, cred: id.clientId } : {}),
    });
  }

  /** An answer tapped on a notification, as that device (the inbox checked its token): shared/session/push-answer.ts. */
  async pushAnswer(epoch: number, device: { id: string; name: string }, callId: string, answer: PushAnswerInput): Promise<SessionPushAnswer> {
    if (!this.engine.current(epoch)) return { status: "closed", outcome: "ended" };
    return answerFromPush(this.engine, this.store, device, callId, answer);
  }

  /** A revoked client (docs/inbox.md "Revocation"): each connection is told why, unrouted and closed with a
   * terminal code; then its tools leave the catalog. */
  revoke(key: string, code: number, reason: string): void {
    for (const p of this.ports.sockets.peers()) {
      if (keyOf(p) !== key) continue;
      this.ports.sockets.send({ conn: p.conn }, JSON.stringify({ type: "error", code: "revoked", message: reason }));
      this.engine.closed(p);
      this.ports.sockets.unroute(p.conn, code, reason);
    }
    this.engine.forget(key);
  }

  // ---------------------------------------------------------------- the inbox report and the end

  /** An inbox session tells its inbox what changed (online, waiting calls): only changes go out, when
   * shared/session/report-queue.ts says so. */
  report(): void {
    const m = this.engine.meta();
    if (!m?.inbox) return;
    const { inbox, session_id, epoch } = m;
    this.reports ??= new ReportQueue({
      glance: () => this.glance(),
      summarize: () => summarize(this.store, this.engine.ctx().peers, Date.now(), m.sealed === true),
      send: async (r) => this.ports.report(inbox, session_id, epoch, r),
      schedule: () => void Promise.resolve(this.ports.schedule()).catch(() => undefined),
    });
    // Only calls of automatic tools changed since the last glance, and a report is held back already: its time
    // (the alarm, or the return of the one in flight) reads them. Under load this skips most frames' glance. Not
    // when no call is open: the state may be back to what the inbox has, and the held report is then dropped.
    if (this.reports.holding() && this.onlyAutomatic() && this.store.countOpen() > 0) return;
    this.reports.changed();
  }

  /** Whether nothing but calls of automatic tools changed since the last glance (store.humanVersion). */
  private onlyAutomatic(): boolean {
    const human = this.store.humanVersion?.();
    return human !== undefined && this.seen?.human === human && this.seen.online === agentOnline(this.engine.ctx().peers);
  }

  private glance(): Glance {
    const peers = this.engine.ctx().peers;
    const online = agentOnline(peers);
    const version = this.store.openVersion?.();
    if (version !== undefined && this.seen?.version === version && this.seen.online === online) return this.seen.g;
    const g = glance(this.store, peers);
    this.seen = version === undefined ? undefined : { version, human: this.store.humanVersion?.(), online, g };
    return g;
  }

  /**
   * Ends this incarnation (deleted, expired, its machine revoked: 4004 and a last report to the inbox; the server
   * stopping: 1001 and none). Sockets close and waiters wake; the report is sent before and awaited after.
   */
  async end(reason: string, code: number = CLOSE.sessionEnded): Promise<void> {
    const m: SessionMeta | undefined = this.engine.meta();
    const sent =
      code === CLOSE.sessionEnded && m?.inbox
        ? this.ports.report(m.inbox, m.session_id, m.epoch, { agent_online: false, pending: 0, last_activity: Date.now(), waiting: [], ended: true })
        : undefined;
    this.reports?.stop();
    this.reports = undefined;
    this.seen = undefined;
    this.engine.end(reason, code);
    await sent;
  }
}
