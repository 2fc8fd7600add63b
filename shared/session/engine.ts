// The session engine both servers run: admitting a connection (client-id rules, replacement), each frame
// (heartbeat, rate limit, decode, route in one transaction, flush, the 1011 path), closes, HTTP calls with
// their waiters, deadline ticks. The Durable Object and the LAN server only supply the ports below: their
// sockets, a transaction, a timer and a sleep. SQLite (or the memory store) is the truth; this object is a
// cache that a hibernation may drop between any two events.
import {
  CLIENT_ID_RE,
  CLOSE,
  decodeInbound,
  HTTP_CLIENT_ID,
  INTERNAL_CLIENT_RE,
  LIMITS,
  type InFrame,
  type InFrameType,
  type KeptMessage,
  type MessageOut,
  type OutFrame,
  type RelayFrame,
  type Role,
  type SessionStatus,
  type ToolResultOut,
} from "../contract/protocol.js";
import { TokenBucket } from "./rate-limit.js";
import { HTTP_PEER, keyOf, Router, type Ctx, type Out, type Peer } from "./router.js";
import type { Store } from "./store.js";

/** What a session is, in its store under meta key "session". */
export interface SessionMeta {
  session_id: string;
  expires_at: number;
  /** This incarnation's creation time. Tokens carry it: a deleted and re-created session (IM-bound ids
   * are derived from the channel) refuses the tokens of the one before. */
  epoch: number;
  label?: string;
  /** Set for sessions bound to a WuKongIM conversation. */
  im?: { channel_id: string; channel_type: number; owner_uid?: string };
  /** The inbox this session is attached to (docs/inbox.md): it is told when the session changes. */
  inbox?: string;
  /** The inbox machine that created it: its tokens name it, and revoking it ends the session. */
  machine?: string;
  /** A sealed session (docs/e2e.md): set at creation, never changed. */
  sealed?: true;
  /** A sealed session's inbox epoch as last told by the inbox: envelopes below it are refused. */
  e2e_epoch?: number;
}

export type Target = { key: string } | { conn: string };

export interface SocketPort {
  /** The identity of every open connection (from socket attachments or the server's own map). */
  peers(): Peer[];
  send(to: Target, data: string): void;
  close(to: Target, code: number, reason: string): void;
}

export interface EnginePorts {
  sockets: SocketPort;
  /** Runs `fn` atomically: when it throws, none of its writes remain. */
  txn<T>(fn: () => T): T;
  /** Runs `fn`, which writes at most one statement (SQLite makes one statement atomic), without txn's savepoint;
   * a second write throws before it runs. Optional: without it such frames go through txn too. */
  once?<T>(fn: () => T): T;
  /** Re-arms the one alarm (or timer) at the earliest due time after state changed. */
  schedule(): void | Promise<void>;
  /** Resolves after `ms`: the bound of an HTTP long-poll. */
  sleep(ms: number): Promise<void>;
}

/** A peer that is not a socket (the WuKongIM conversation): always present, fed frames addressed to it. */
export interface Bridge {
  peers(): Peer[];
  /** True when the frame was for the bridge (it then goes to no socket). */
  accept(out: Out): boolean;
  /** Adds the bridge's facts to frames going to sockets (e.g. `im.online` on presence). */
  decorate(frame: OutFrame): void;
  /** Bytes the bridge keeps (its outbox), counted in the session's budget. */
  bytes?(): number;
}

export interface EngineOptions {
  rate: { perS: number; burst: number };
  newId(): string;
  bridge?(meta: SessionMeta): Bridge | undefined;
  /** After any work that may have changed calls or presence (the inbox report, shared/session/report.ts). */
  changed?(): void;
  /** A later time the host has work due at (an inbox report owed): the alarm covers it too. */
  due?(): number | undefined;
}

export type HttpCallAnswer = { status: 200; result: ToolResultOut } | { status: 202; call_id: string } | { status: 400 | 404 | 409 | 429; call_id?: string };

export type HttpCallBody = Parameters<Router["httpCall"]>[0];

/** `DELETE /api/sessions/:sid/calls/:call_id`: withdrawn; no open call of the HTTP caller by that id; over the rate;
 * the session is gone (null). */
export type HttpCancelAnswer = "cancelled" | "unknown_call" | "rate_limited" | null;

/** `GET /api/sessions/:sid/messages`: `before` is the cursor for the next (older) page, null at the start. */
export interface HistoryPage {
  messages: KeptMessage[];
  before: number | null;
}

export type Admission = { ok: true; peer: Peer } | { ok: false; status: 400 | 429; code: "bad_client_id" | "too_many_connections"; message: string };

const HTTP_KEY = `agent:${HTTP_CLIENT_ID}`;
/** Frames whose handler writes at most one statement on every path, as its last step (a new call is one insert,
 * refused or not, and what follows only builds frames from values in hand; an ack is one delete): routed without a
 * savepoint (issue 33). The store throws before a second write (worker/sql-store.ts `once`), and
 * test/unit/router-one-write.test.ts routes the router's unit suites that way. Not tool.result: closing the call is
 * followed by the catalog read and an app tool's instance binding, and a failure there must leave the call open
 * (test/workerd/contract-frames.test.ts, "atomic frames"). */
export const ONE_WRITE: ReadonlySet<InFrameType> = new Set(["tool.call", "tool.ack"]);

export class SessionEngine {
  /** Per-connection rate buckets. Memory only: a hibernated connection is idle, losing its bucket is harmless. */
  readonly buckets = new Map<string, TokenBucket>();
  /** Per-credential buckets across all its connections and its HTTP calls (a token opening 64 sockets
   * gets twice one socket's rate, not 64 times). */
  readonly tokenBuckets = new Map<string, TokenBucket>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private metaCache: SessionMeta | null | undefined;
  private routerCache: Router | undefined;

  constructor(
    readonly store: Store,
    private readonly ports: EnginePorts,
    private readonly opts: EngineOptions,
  ) {}

  // ---------------------------------------------------------------- the session itself

  /** The meta row, read once per wake: it only changes in init() and end(). */
  meta(): SessionMeta | undefined {
    if (this.metaCache === undefined) {
      const m = this.store.meta("session");
      this.metaCache = m ? (JSON.parse(m) as SessionMeta) : null;
    }
    return this.metaCache ?? undefined;
  }

  /** Forget the cached meta (the alarm re-reads the truth). */
  reload(): void {
    this.metaCache = undefined;
    this.routerCache = undefined;
  }

  live(now = Date.now()): SessionMeta | undefined {
    const m = this.meta();
    return m && m.expires_at > now ? m : undefined;
  }

  /** The live session a token of `epoch` belongs to; undefined when it expired, ended or was re-created. */
  current(epoch: number): SessionMeta | undefined {
    const m = this.live();
    return m && m.epoch === epoch ? m : undefined;
  }

  /** Creates the session; refuses when a live one exists (a derived id must not hand out its tokens again). */
  init(meta: SessionMeta): SessionMeta | "exists" {
    if (this.live()) return "exists";
    this.store.setMeta("session", JSON.stringify(meta));
    this.metaCache = meta;
    this.routerCache = undefined;
    return meta;
  }

  /** The session ended (deleted or expired: 4004; the server stopping: 1001): sockets close, waiters wake. */
  end(reason: string, code: number = CLOSE.sessionEnded): void {
    for (const p of this.ports.sockets.peers()) this.ports.sockets.close({ conn: p.conn }, code, reason);
    this.metaCache = null;
    this.routerCache = undefined;
    this.buckets.clear();
    for (const w of [...this.waiters.values()]) w.forEach((wake) => wake());
  }

  router(): Router {
    const m = this.meta();
    if (!m) throw new Error("engine: no session");
    return (this.routerCache ??= new Router(this.store, m.session_id, this.opts.newId, {
      extraUsage: () => this.bridge()?.bytes?.() ?? 0,
      ...(m.sealed ? { sealedEpoch: () => this.meta()?.e2e_epoch ?? 1 } : {}),
      ...(m.inbox !== undefined ? { inbox: true } : {}),
    }));
  }

  /** The inbox moved to `epoch` (docs/e2e.md): older envelopes are refused from now on. Only ever forward. */
  setE2eEpoch(epoch: number): boolean {
    const m = this.live();
    if (!m?.sealed || !(epoch > (m.e2e_epoch ?? 0))) return false;
    const next: SessionMeta = { ...m, e2e_epoch: epoch };
    this.store.setMeta("session", JSON.stringify(next));
    this.metaCache = next;
    return true;
  }

  private bridge(): Bridge | undefined {
    const m = this.meta();
    return m && this.opts.bridge?.(m);
  }

  ctx(exceptConn?: string): Ctx {
    const peers = this.ports.sockets.peers().filter((p) => p.conn !== exceptConn);
    const extra = this.bridge()?.peers() ?? [];
    return { now: Date.now(), peers: extra.length ? [...peers, ...extra] : peers };
  }

  flush(outs: Out[]): void {
    const bridge = outs.length ? this.bridge() : undefined;
    for (const o of outs) {
      if (bridge?.accept(o)) continue;
      bridge?.decorate(o.frame);
      if (o.to === HTTP_KEY) {
        this.waiters.get((o.frame as { call_id?: string }).call_id ?? "")?.forEach((wake) => wake());
        continue;
      }
      this.ports.sockets.send(o.conn ? { conn: o.conn } : { key: o.to }, JSON.stringify(o.frame));
    }
  }

  /** Routes a frame from a non-socket peer (the IM bridge, a push answer: plain or sealed) under the same
   * rules, in one transaction, and re-arms the alarm itself. */
  async route(peer: Peer, frame: InFrame): Promise<void> {
    this.flush(this.ports.txn(() => this.router().handle(peer, frame, this.ctx())));
    this.opts.changed?.();
    await this.ports.schedule();
  }

  /** Presence to everyone (a bridge's online state changed). */
  announce(): void {
    this.flush(this.router().presence(this.ctx()));
  }

  // ---------------------------------------------------------------- connections

  /**
   * Who a new connection is. `client_id` is the client's word for its identity (1–64 of [A-Za-z0-9_-]);
   * ids starting with `~` are reserved for the relay's own callers and only `internal` admissions get them.
   */
  admit(role: Role, asked: string | null, opts: { internal?: boolean; cred?: string; name?: string; registerFirst?: boolean } = {}): Admission {
    const internal = opts.internal === true && asked !== null && INTERNAL_CLIENT_RE.test(asked);
    if (!(asked === null || CLIENT_ID_RE.test(asked) || internal))
      return { ok: false, status: 400, code: "bad_client_id", message: "client_id must be 1-64 characters of [A-Za-z0-9_-]" };
    // The relay's own callers are not counted: they are bounded by the requests that hold them.
    const open = this.ports.sockets.peers().filter((p) => !p.clientId.startsWith("~")).length;
    if (!internal && open >= LIMITS.maxConnections)
      return { ok: false, status: 429, code: "too_many_connections", message: `the session has ${LIMITS.maxConnections} connections already` };
    const peer: Peer = { role, clientId: asked ?? this.opts.newId().slice(0, 12), conn: this.opts.newId(), cred: opts.cred ?? role };
    if (opts.name !== undefined) peer.name = opts.name;
    if (opts.registerFirst) peer.registerFirst = true;
    return { ok: true, peer };
  }

  /**
   * A signal between two requests of the relay's own (worker/mcp/cancel.ts): a `~s.<r>` connection closes
   * every `~w.<r>.<n>` watcher with 4409, whether the watcher connected before it or while it is held.
   * Watchers sit side by side, so two waiters with the same rendezvous never signal each other (ordinary ids
   * replaced each other, and a second waiter read that as a cancel). True when `peer` is a watcher whose
   * signal is already held: it is closed right after its hello.
   */
  private rendezvous(peer: Peer): boolean {
    const m = /^~([ws])\.([A-Za-z0-9_-]+)(\.|$)/.exec(peer.clientId);
    if (!m) return false;
    const [, kind, r] = m;
    const others = this.ports.sockets.peers().filter((p) => p.conn !== peer.conn && p.role === peer.role);
    if (kind === "s") {
      for (const p of others) if (p.clientId.startsWith(`~w.${r}.`)) this.ports.sockets.close({ conn: p.conn }, CLOSE.replaced, "signalled");
      return false;
    }
    return others.some((p) => p.clientId === `~s.${r}`);
  }

  /** One frame or HTTP call of credential `cred`: false when over its rate. */
  private tokenAllows(cred: string): boolean {
    let b = this.tokenBuckets.get(cred);
    const f = LIMITS.tokenRateFactor;
    if (!b) this.tokenBuckets.set(cred, (b = new TokenBucket(this.opts.rate.perS * f, this.opts.rate.burst * f)));
    return b.take(Date.now());
  }

  /** After the socket was accepted with `peer` as its identity: replace older connections, then hello. */
  async connected(peer: Peer): Promise<void> {
    if (!this.live()) return this.ports.sockets.close({ conn: peer.conn }, CLOSE.sessionEnded, "session ended");
    // Route by client id, not by socket: a newer connection of the same client replaces the old one.
    // The relay's own callers (`~…`) hold one connection per request, side by side.
    if (!peer.clientId.startsWith("~")) {
      const key = keyOf(peer);
      for (const p of this.ports.sockets.peers()) {
        if (p.conn !== peer.conn && keyOf(p) === key) this.ports.sockets.close({ conn: p.conn }, CLOSE.replaced, "replaced by a newer connection");
      }
    }
    const signalled = peer.clientId.startsWith("~") && this.rendezvous(peer);
    // Connect writes deliveries and cursors: one transaction, like a frame, and the same 1011 path.
    await this.guarded(peer, () => this.router().connect(peer, this.ctx()));
    // After its hello: the watcher opened normally, and reads the close as the signal.
    if (signalled) this.ports.sockets.close({ conn: peer.conn }, CLOSE.replaced, "signalled");
  }

  /** Routes in one transaction, flushes, re-arms the alarm; a failure gets one error frame, then 1011.
   * `once`: the work writes at most one statement (ONE_WRITE), so it needs no savepoint. */
  private async guarded(peer: Peer, work: () => Out[], once = false): Promise<void> {
    try {
      this.flush(once && this.ports.once ? this.ports.once(work) : this.ports.txn(work));
      this.opts.changed?.(); // first: a report it defers is due at a time the alarm must cover
      await this.ports.schedule();
    } catch (e) {
      console.error("session: handler failed", (e as Error).name, (e as Error).message);
      this.ports.sockets.send({ conn: peer.conn }, JSON.stringify({ type: "error", code: "internal", message: "internal error; reconnect" }));
      this.ports.sockets.close({ conn: peer.conn }, CLOSE.internal, "internal error");
    }
  }

  async frame(peer: Peer, raw: string | ArrayBuffer | ArrayBufferView): Promise<void> {
    const reply = (f: object) => this.ports.sockets.send({ conn: peer.conn }, JSON.stringify(f));
    // The Worker's runtime answers heartbeats without waking the object; a server without that does it here.
    if (raw === "ping") return this.ports.sockets.send({ conn: peer.conn }, "pong");
    // The rate limit comes first, before any storage read: a flood costs as little as possible.
    let bucket = this.buckets.get(peer.conn);
    if (!bucket) this.buckets.set(peer.conn, (bucket = new TokenBucket(this.opts.rate.perS, this.opts.rate.burst)));
    if (!bucket.take(Date.now()))
      return reply({ type: "error", code: "rate_limited", message: `more than ${this.opts.rate.perS} frames/s on this connection; slow down` });
    if (!this.tokenAllows(peer.cred ?? peer.role))
      return reply({
        type: "error",
        code: "rate_limited",
        message: `more than ${this.opts.rate.perS * LIMITS.tokenRateFactor} frames/s from this token across its connections; slow down`,
      });
    if (!this.live()) return this.ports.sockets.close({ conn: peer.conn }, CLOSE.sessionEnded, "session ended");
    // The contract's 1 MiB is enforced here: both servers hand over frames far above it.
    // A sealed session decodes its own shapes (docs/e2e.md); a plaintext one pays one flag test.
    const d = decodeInbound(raw, this.meta()?.sealed === true);
    if (!d.ok) return reply(d.error);
    // One transaction per frame: a handler that throws half-way leaves no partial state behind.
    await this.guarded(peer, () => this.router().handle(peer, d.frame, this.ctx()), ONE_WRITE.has(d.frame.type));
  }

  closed(peer: Peer | null): void {
    if (!peer) return;
    this.buckets.delete(peer.conn);
    if (!this.live()) return;
    // Rolled back and logged on failure: this runs in a socket's close event, where a throw would end the
    // LAN server's process (and the object's handler) for a fact that only refreshes presence.
    try {
      this.flush(this.ports.txn(() => this.router().disconnect(peer, this.ctx(peer.conn))));
      this.opts.changed?.();
    } catch (e) {
      console.error("session: disconnect failed", (e as Error).name, (e as Error).message);
    }
  }

  /** A revoked client (every socket of it already closed): its registration goes, and the other side
   * gets the new catalog. */
  forget(key: string): void {
    if (!this.live()) return;
    this.flush(this.ports.txn(() => this.router().forget(key, this.ctx())));
    this.opts.changed?.();
  }

  // ---------------------------------------------------------------- time

  /** Deadlines and result expiry. Idempotent: an early or repeated tick changes nothing. */
  async tick(): Promise<void> {
    if (!this.live()) return;
    this.flush(this.ports.txn(() => this.router().tick(this.ctx())));
    this.opts.changed?.(); // first: a report it defers is due at a time the alarm must cover
    await this.ports.schedule();
  }

  nextDue(): number | undefined {
    const m = this.meta();
    if (!m) return undefined;
    const due = Math.min(this.store.nextDue() ?? Infinity, this.opts.due?.() ?? Infinity);
    return Math.min(due, m.expires_at);
  }

  status(): SessionStatus | null {
    const m = this.live();
    if (!m) return null;
    const extra = m.label === undefined ? { expires_at: m.expires_at } : { expires_at: m.expires_at, label: m.label };
    return this.router().status(this.ctx(), extra);
  }

  /** A page of the kept history, newest last, older than `before` (each entry with its `seq`, the cursor). */
  history(before: number | undefined, limit: number): HistoryPage | null {
    if (!this.live()) return null;
    const n = Math.max(1, Math.min(LIMITS.maxHistoryPage, Math.floor(limit)));
    const messages = this.store.messagesBefore(before ?? Number.MAX_SAFE_INTEGER, n);
    const first = messages[0]?.seq;
    const more = first !== undefined && this.store.messagesBefore(first, 1).length > 0;
    return { messages, before: more ? first! : null };
  }

  // ---------------------------------------------------------------- HTTP calls (§7)

  async httpCall(body: HttpCallBody, waitS: number, cred = "agent"): Promise<HttpCallAnswer> {
    if (!this.live()) return { status: 404 };
    // A sealed session refuses plaintext arguments, and the HTTP caller holds no key (docs/e2e.md).
    if (this.meta()?.sealed) return { status: 400 };
    // HTTP calls count against their token's rate like its frames do.
    if (!this.tokenAllows(cred)) return { status: 429 };
    const { call_id, conflict, out } = this.ports.txn(() => this.router().httpCall(body, this.ctx()));
    if (conflict) return { status: 409, call_id };
    this.flush(out);
    this.opts.changed?.(); // first: a report it defers is due at a time the alarm must cover
    await this.ports.schedule();
    return this.httpResult(call_id, waitS);
  }

  /** The HTTP caller withdraws its open call (an agent that stopped waiting): the socket caller's own cancel
   * transition (tool.cancel reason "cancelled" to every holder), no second path. Long-polls on it wake (404). */
  async httpCancel(callId: string, cred = "agent"): Promise<HttpCancelAnswer> {
    if (!this.live()) return null;
    if (!this.tokenAllows(cred)) return "rate_limited";
    const out = this.ports.txn(() => this.router().handle(HTTP_PEER, { type: "tool.cancel", call_id: callId }, this.ctx()));
    // The router refuses with an error frame to the caller: nothing changed, and no waiter is woken by it.
    if (out.some((o) => o.to === HTTP_KEY && o.frame.type === "error")) return "unknown_call";
    this.flush(out);
    this.waiters.get(callId)?.forEach((wake) => wake());
    this.opts.changed?.(); // first: a report it defers is due at a time the alarm must cover
    await this.ports.schedule();
    return "cancelled";
  }

  async httpResult(callId: string, waitS: number): Promise<HttpCallAnswer> {
    if (!this.live()) return { status: 404 };
    const take = () => this.ports.txn(() => this.router().takeHttpResult(callId));
    let r = take();
    if (r === "pending" && waitS > 0) {
      // A bounded long-poll; the call itself stays durable and can be fetched again.
      await new Promise<void>((resolve) => {
        const set = this.waiters.get(callId) ?? new Set();
        const done = () => {
          set.delete(done);
          if (set.size === 0) this.waiters.delete(callId);
          resolve();
        };
        set.add(done);
        this.waiters.set(callId, set);
        void this.ports.sleep(waitS * 1000).then(done);
      });
      if (!this.live()) return { status: 404 };
      r = take();
      await this.ports.schedule();
    }
    if (r === undefined) return { status: 404 };
    if (r === "pending") return { status: 202, call_id: callId };
    return { status: 200, result: r };
  }
}
