// A session of the pure routing core (shared/session/router.ts) driven by hand, for unit tests: live peers, a
// clock, and every frame the router addressed to each key.
import { fromPlain, fromSealed, parseFrameValue, parseSealedValue, type InFrame, type RelayFrame, type Role } from "../../shared/contract/protocol.js";
import { HTTP_PEER, keyOf, Router, type Out, type Peer } from "../../shared/session/router.js";
import { ONE_WRITE } from "../../shared/session/engine.js";
import { MemoryStore, type Store } from "../../shared/session/store.js";

export type F = RelayFrame & Record<string, unknown>;

/** A session driven by hand: live peers, a clock, and every frame the router addressed to each key. */
export class Harness {
  /**
   * The store each new harness routes over: the in-memory store unless a test file sets another before it runs
   * its tests (test/unit/router-one-write.test.ts: the Durable Object's SQLite store). `once`, when set, is how a
   * frame of a one-write type (shared/session/engine.ts ONE_WRITE) is routed, as the Durable Object does.
   */
  static backend: () => { store: Store; once?: <T>(fn: () => T) => T } = () => ({ store: new MemoryStore() });
  store: Store;
  private readonly once: (<T>(fn: () => T) => T) | undefined;
  now = 1_000_000;
  private ids = 0;
  private conns = 0;
  /** A sealed session's inbox epoch (docs/e2e.md), or undefined for a plaintext session. */
  epoch: number | undefined;
  router: Router;
  constructor(opts: { sealedEpoch?: number } = {}) {
    const b = Harness.backend();
    this.store = b.store;
    this.once = b.once;
    this.epoch = opts.sealedEpoch;
    this.router = new Router(this.store, "sess0001", () => `id${++this.ids}`, opts.sealedEpoch === undefined ? {} : { sealedEpoch: () => this.epoch });
  }
  peers: Peer[] = [];
  inbox = new Map<string, F[]>();

  private ctx() {
    return { now: this.now, peers: this.peers };
  }
  private post(outs: Out[]): Out[] {
    for (const o of outs) {
      if (o.to !== keyOf(HTTP_PEER) && !this.peers.some((p) => keyOf(p) === o.to && (!o.conn || o.conn === p.conn))) continue; // nobody there
      const box = this.inbox.get(o.to) ?? [];
      box.push(o.frame as F);
      this.inbox.set(o.to, box);
    }
    return outs;
  }
  connect(role: Role, clientId: string): Peer {
    const p: Peer = { role, clientId, conn: `c${++this.conns}` };
    this.peers = this.peers.filter((x) => keyOf(x) !== keyOf(p)); // a newer connection replaces the old
    this.peers.push(p);
    this.inbox.set(keyOf(p), []);
    this.post(this.router.connect(p, this.ctx()));
    return p;
  }
  disconnect(p: Peer): void {
    this.peers = this.peers.filter((x) => x.conn !== p.conn);
    this.post(this.router.disconnect(p, this.ctx()));
  }
  send(p: Peer, frame: Record<string, unknown>): Out[] {
    if (this.epoch !== undefined) {
      const s = parseSealedValue(frame);
      if (!s.ok) throw new Error(`test sent a bad sealed frame: ${s.error.message}`);
      return this.post(this.route(p, fromSealed(s.frame)));
    }
    const d = parseFrameValue(frame);
    if (!d.ok) throw new Error(`test sent a bad frame: ${d.error.message}`);
    return this.post(this.route(p, fromPlain(d.frame)));
  }
  private route(p: Peer, f: InFrame): Out[] {
    const go = () => this.router.handle(p, f, this.ctx());
    return this.once && ONE_WRITE.has(f.type) ? this.once(go) : go();
  }
  tick(advanceMs = 0): Out[] {
    this.now += advanceMs;
    return this.post(this.router.tick(this.ctx()));
  }
  /** Takes (and removes) every frame of `p` matching the predicate. */
  take(p: Peer | string, pred: (f: F) => boolean = () => true): F[] {
    const key = typeof p === "string" ? p : keyOf(p);
    const box = this.inbox.get(key) ?? [];
    const hit = box.filter(pred);
    this.inbox.set(
      key,
      box.filter((f) => !pred(f)),
    );
    return hit;
  }
  one(p: Peer | string, pred: (f: F) => boolean): F {
    const hits = this.take(p, pred);
    if (hits.length !== 1) throw new Error(`expected one frame, got ${JSON.stringify(hits)}`);
    return hits[0]!;
  }
}

export const type = (t: string) => (f: F) => f.type === t;
export const result = (id: string) => (f: F) => f.type === "tool.result" && f.call_id === id;
export const call = (id: string) => (f: F) => f.type === "tool.call" && f.call_id === id;
export const cancel = (id: string) => (f: F) => f.type === "tool.cancel" && f.call_id === id;
export const error = (code: string) => (f: F) => f.type === "error" && f.code === code;
