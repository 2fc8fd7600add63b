// The session host's ports in a Durable Object (shared/session/host.ts): hibernatable sockets whose identity
// lives in tags and attachments (memory is only a cache of it), `transactionSync`, and the inbox report.
import type { Target } from "../shared/session/engine.js";
import type { HostPorts, HostSocketPort } from "../shared/session/host.js";
import { keyOf, type Peer } from "../shared/session/router.js";
import { closeQuietly, sendIfOpen } from "../shared/session/sockets.js";
import type { Env } from "./env.js";
import type { Inbox } from "./inbox.js";
import type { SqlStore } from "./sql-store.js";

const tagOf = (to: Target) => ("conn" in to ? `conn:${to.conn}` : to.key);

/** The object's sockets: identity written at accept (tags route by client and connection, the attachment names the peer). */
export class ObjectSockets implements HostSocketPort {
  /** Each socket's identity, deserialized once per wake and again only after a connect, close or revoke. */
  private socks: { ws: WebSocket; peer: Peer | null }[] | undefined;
  /** peers() as read this turn. */
  private live: Peer[] | undefined;

  constructor(private readonly ctx: DurableObjectState) {}

  /** A socket was accepted, closed or unrouted: read the attachments again. */
  changed(): void {
    this.socks = undefined;
    this.live = undefined;
  }

  accept(ws: WebSocket, peer: Peer): void {
    this.ctx.acceptWebSocket(ws, [`${peer.role}:${peer.clientId}`, `conn:${peer.conn}`, `role:${peer.role}`]);
    ws.serializeAttachment(peer);
    this.changed();
  }

  private all(): { ws: WebSocket; peer: Peer | null }[] {
    return (this.socks ??= this.ctx.getWebSockets().map((ws) => ({ ws, peer: ws.deserializeAttachment() as Peer | null })));
  }

  /** Live connections from socket attachments: they survive hibernation, memory does not. Read once per turn:
   * a frame's routing and its inbox report both ask (issue 33), and nothing but this object's own closes, which
   * drop the list, changes a socket's state before the next event. */
  peers(): Peer[] {
    if (this.live) return this.live;
    const live = this.all().flatMap((s) => (s.peer && s.ws.readyState === WebSocket.OPEN ? [s.peer] : []));
    this.live = live;
    queueMicrotask(() => {
      if (this.live === live) this.live = undefined;
    });
    return live;
  }

  /** A socket's identity as last read from its attachment (null: unrouted); read per frame before issue 33. */
  peerOf(ws: WebSocket): Peer | null {
    const s = this.all().find((x) => x.ws === ws);
    return s ? s.peer : (ws.deserializeAttachment() as Peer | null);
  }

  /** To the routed sockets the target names (an unrouted one gets nothing more): looked up in the cache that
   * peers() reads, not with getWebSockets(tag) per frame (issue 33). */
  send(to: Target, data: string): void {
    for (const s of this.all()) {
      if (s.peer && ("conn" in to ? s.peer.conn === to.conn : keyOf(s.peer) === to.key)) sendIfOpen(s.ws, data);
    }
  }

  close(to: Target, code: number, reason: string): void {
    for (const ws of this.ctx.getWebSockets(tagOf(to))) closeQuietly(ws, code, reason);
    this.live = undefined;
  }

  /** A revoked socket's identity is wiped (its later frames find no peer: Session.webSocketMessage), then it closes. */
  unroute(conn: string, code: number, reason: string): void {
    for (const ws of this.ctx.getWebSockets(`conn:${conn}`)) {
      ws.serializeAttachment(null);
      this.changed();
      closeQuietly(ws, code, reason);
    }
  }
}

/** A failed frame's writes were rolled back (or stopped before a second one): the store's counts forget it. */
function forgetOnThrow<T>(store: SqlStore, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    store.forget();
    throw e;
  }
}

export function objectPorts(ctx: DurableObjectState, env: Env, store: SqlStore, sockets: ObjectSockets, schedule: () => Promise<void>): HostPorts {
  /** A session reports to one inbox (its meta's, set at creation). */
  let inboxStub: DurableObjectStub<Inbox> | undefined;
  return {
    sockets,
    txn: (fn) => forgetOnThrow(store, () => ctx.storage.transactionSync(fn)),
    once: (fn) => forgetOnThrow(store, () => store.once(fn)),
    schedule,
    sleep: (ms) => scheduler.wait(ms),
    // A send after the work, never awaited by routing; the session's end awaits its last one. The stub is kept
    // (one id derivation per wake, not per report) and made again after a failure, which may break a stub.
    report: (inbox, sid, epoch, r) => {
      const stub = (inboxStub ??= env.INBOXES.get(env.INBOXES.idFromName(inbox)));
      const sent = stub.report(sid, epoch, r).catch(() => {
        inboxStub = undefined;
      });
      ctx.waitUntil(sent);
      return sent;
    },
  };
}
