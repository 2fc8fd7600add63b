// The small storage interface the routing core runs on. Synchronous on purpose: Durable Object SQLite
// (`ctx.storage.sql`) is synchronous, and so is the in-memory store of the adapter's LAN mode.
import { LIMITS, utf8Length, type KeptMessage, type Role, type KeptToolDef } from "../contract/protocol.js";
import { AUTOMATIC_TOOLS } from "../contract/push.js";

/** A type, not an interface: as a row it must fit SqlStorage's `Record<string, SqlStorageValue>` (worker/sql-store.ts). */
export type CallRow = {
  call_id: string;
  /** `role:client_id` of the caller — results route to it, not to a socket. */
  caller: string;
  caller_role: Role;
  name: string;
  action: string | null;
  /** JSON of the call's `arguments` while it is open; empty once it is done or when it was refused (only
   * the fingerprint is needed then, for the repeat rule). */
  args: string;
  /** `timeout_s` as the caller sent it (echoed), or null. */
  timeout_s: number | null;
  deadline: number;
  /** Instance-bound calls go to this provider key only. */
  target: string | null;
  status: "open" | "done";
  /** 1 once the tool's definition was known and the call passed action/argument checks. */
  checked: 0 | 1;
  /** JSON of the `tool.result` frame kept for the caller until acked. */
  result: string | null;
  keep_until: number | null;
  created_at: number;
  /** A hash of the canonical JSON of what makes two calls identical (name, action, arguments, timeout). */
  fingerprint: string;
  /** UTF-8 bytes this row keeps (arguments, then the result): its share of the session's budget. */
  bytes: number;
  /** JSON of the `Delivery[]` of an open call: which connections got it (who may answer, who gets the
   * cancel). In the call's own row, so a call is one insert and its result one update; `[]` once done. */
  deliv: string;
};

export interface Delivery {
  key: string;
  conn: string;
}

/** The deliveries of a call row read in the current transaction. */
export function deliveriesOf(c: CallRow): Delivery[] {
  return c.deliv === "" || c.deliv === "[]" ? [] : (JSON.parse(c.deliv) as Delivery[]);
}

export interface Registration {
  key: string;
  tools: KeptToolDef[];
  /** UTF-8 bytes of `tools` as JSON. */
  bytes: number;
}

/** A history entry as stored, for the history budget. */
export interface StoredMessage {
  seq: number;
  bytes: number;
  frame: KeptMessage;
}

export interface Store {
  meta(key: string): string | undefined;
  setMeta(key: string, value: string | undefined): void;

  /** UTF-8 bytes of everything kept: calls, results, history, registrations. */
  usage(): number;

  getCall(callId: string): CallRow | undefined;
  /** false when the call_id is taken (nothing written): the duplicate-call rule reads only then. The row
   * carries its first deliveries (`deliv`). */
  insertCall(row: CallRow): boolean;
  /** open → done, keeping `result` and dropping the arguments and deliveries; false when the call was not open
   * (idempotent transition). `oldBytes`: the row's `bytes` as read earlier in the same transaction (so the
   * store need not read it again for the budget). */
  finishCall(callId: string, result: string, keepUntil: number, oldBytes: number): boolean;
  /** A sealed call re-sealed after a re-key (docs/e2e.md): new envelopes and fingerprint; false unless open. */
  resealCall(callId: string, args: string, fingerprint: string, oldBytes: number): boolean;
  /** Deletes the call if it is open; false when it was not. */
  dropOpenCall(callId: string): boolean;
  setChecked(callId: string, target: string | null): void;
  deleteCall(callId: string): void;
  /** The ack: deletes the call if it is done and `caller`'s; false (nothing changed) otherwise. */
  ackCall(callId: string, caller: string): boolean;
  countOpen(): number;
  /** A number that changes whenever an open call comes, goes or is re-sealed (memory only: it may also change
   * for writes rolled back). Lets the inbox report skip reading the calls after frames that changed none. */
  openVersion?(): number;
  /** Like openVersion, but left alone by writes that concern only calls of the app's automatic tools
   * (`calculator`, `canvas`: shared/contract/push.ts AUTOMATIC_TOOLS) — may also change when unsure. The inbox
   * report, holding such a change back anyway, skips even its glance then (shared/session/host.ts). */
  humanVersion?(): number;
  /** Open calls, oldest first. */
  openCalls(): CallRow[];
  /** The agent's open calls, oldest first: the first `limit` as id, tool and fingerprint, and how many there are
   * (the inbox report's glance, shared/session/report.ts: read after every change, so no argument is read). */
  agentOpen(limit: number): { listed: { id: string; name: string; fp: string }[]; pending: number };
  /** Done calls whose result the caller has not acked. */
  keptResults(caller: string): CallRow[];
  /** Open calls whose deadline has passed, earliest first, at most `limit`. */
  dueCalls(now: number, limit: number): CallRow[];
  /** Forgets at most `limit` kept results past their retention; returns how many. */
  purgeResults(now: number, limit: number): number;
  /** Earliest open deadline, result expiry or registration idle expiry. */
  nextDue(): number | undefined;

  /** `row` (an open call as read in this transaction) was delivered to `conn` too; once per connection. */
  addDelivery(row: CallRow, key: string, conn: string): void;

  /** Registrations of one side, oldest first (a later one wins a name clash). */
  registrations(role: Role): Registration[];
  registration(key: string): Registration | undefined;
  register(key: string, role: Role, tools: KeptToolDef[], now: number): void;
  /** The client `key` was seen (connected or disconnected) at `now`: its registration is not idle. */
  touch(key: string, now: number): void;
  /** Keys whose registration was last seen before `before`, at most `limit`. */
  idleRegistrations(before: number, limit: number): string[];
  dropRegistration(key: string): void;

  instance(tool: string, id: string): string | undefined;
  bind(tool: string, id: string, key: string): void;
  unbind(tool: string, id: string): void;

  /** Appends to the bounded history and returns the message's sequence number. */
  addMessage(m: Omit<KeptMessage, "seq">, fromKey: string): number;
  hasMessage(fromKey: string, id: string): boolean;
  /** The newest `limit` messages after `afterSeq`, oldest first. */
  messages(afterSeq: number, limit: number): KeptMessage[];
  /** The newest `limit` messages before `beforeSeq`, oldest first (history pages). */
  messagesBefore(beforeSeq: number, limit: number): KeptMessage[];
  historyBytes(): number;
  /** The oldest entries of at least `minBytes`, oldest first (placeholders replace them first). */
  largeMessages(minBytes: number, limit: number): StoredMessage[];
  replaceMessage(seq: number, frame: KeptMessage): void;
  lastSeq(): number;
  cursor(key: string): number | undefined;
  setCursor(key: string, seq: number): void;

  /** Erases everything (session deleted or expired). */
  clear(): void;
}

/**
 * The in-memory store of the adapter's direct LAN mode (and the router's unit tests). `txn(fn)` makes a
 * frame atomic as SQLite's transaction does in the Durable Object: every write records its undo, and a
 * throw inside `fn` replays the undos backwards, so a handler failing half-way leaves nothing behind.
 */
export class MemoryStore implements Store {
  private metaMap = new Map<string, string>();
  private calls = new Map<string, CallRow>();
  private regs = new Map<string, { role: Role; tools: KeptToolDef[]; seq: number; bytes: number; seenAt: number }>();
  private regSeq = 0;
  private inst = new Map<string, string>();
  private msgs: (KeptMessage & { fromKey: string; bytes: number })[] = [];
  private seq = 0;
  private cursors = new Map<string, number>();
  private journal: (() => void)[] | undefined;
  /** openVersion(): bumped by every write of a call that may add, end or re-seal an open one. */
  private version = 0;

  txn<T>(fn: () => T): T {
    if (this.journal) return fn(); // nested: the outer transaction owns the undo log
    const journal: (() => void)[] = [];
    this.journal = journal;
    try {
      return fn();
    } catch (e) {
      for (let i = journal.length - 1; i >= 0; i--) journal[i]!();
      throw e;
    } finally {
      this.journal = undefined;
    }
  }

  /** Map writes go through here so that they can be undone. Rows are replaced, never mutated in place. */
  private put<K, V>(m: Map<K, V>, k: K, v: V): void {
    if (this.journal) {
      const had = m.has(k);
      const old = m.get(k);
      this.journal.push(() => (had ? m.set(k, old as V) : m.delete(k)));
    }
    m.set(k, v);
  }
  private del<K, V>(m: Map<K, V>, k: K): void {
    if (!m.has(k)) return;
    if (this.journal) {
      const old = m.get(k) as V;
      this.journal.push(() => m.set(k, old));
    }
    m.delete(k);
  }
  private undoable(undo: () => void): void {
    this.journal?.push(undo);
  }

  usage() {
    let n = 0;
    for (const c of this.calls.values()) n += c.bytes;
    for (const r of this.regs.values()) n += r.bytes;
    return n + this.historyBytes();
  }
  meta(key: string) {
    return this.metaMap.get(key);
  }
  setMeta(key: string, value: string | undefined) {
    if (value === undefined) this.del(this.metaMap, key);
    else this.put(this.metaMap, key, value);
  }
  getCall(id: string) {
    const c = this.calls.get(id);
    return c ? { ...c } : undefined;
  }
  insertCall(row: CallRow) {
    this.version++;
    this.humanChanged(row.name);
    if (this.calls.has(row.call_id)) return false;
    this.put(this.calls, row.call_id, { ...row });
    return true;
  }
  finishCall(id: string, result: string, keepUntil: number, _oldBytes: number) {
    this.version++;
    const c = this.calls.get(id);
    this.humanChanged(c?.name);
    if (!c || c.status !== "open") return false;
    this.put(this.calls, id, { ...c, status: "done", result, keep_until: keepUntil, args: "", bytes: utf8Length(result), deliv: "[]" });
    return true;
  }
  resealCall(id: string, args: string, fingerprint: string, _oldBytes: number) {
    this.version++;
    this.human++;
    const c = this.calls.get(id);
    if (!c || c.status !== "open") return false;
    this.put(this.calls, id, { ...c, args, fingerprint, bytes: utf8Length(args) });
    return true;
  }
  dropOpenCall(id: string) {
    this.version++;
    const c = this.calls.get(id);
    this.humanChanged(c?.name);
    if (!c || c.status !== "open") return false;
    this.del(this.calls, id);
    return true;
  }
  setChecked(id: string, target: string | null) {
    const c = this.calls.get(id);
    if (c) this.put(this.calls, id, { ...c, checked: 1, target });
  }
  deleteCall(id: string) {
    this.version++;
    this.humanChanged(this.calls.get(id)?.name);
    this.del(this.calls, id);
  }
  ackCall(id: string, caller: string) {
    const c = this.calls.get(id);
    if (!c || c.status !== "done" || c.caller !== caller) return false;
    this.deleteCall(id);
    return true;
  }
  openVersion() {
    return this.version;
  }
  humanVersion() {
    return this.human;
  }
  private human = 0;
  private humanChanged(name: string | undefined): void {
    if (name === undefined || !AUTOMATIC_TOOLS.has(name)) this.human++;
  }
  countOpen() {
    let n = 0;
    for (const c of this.calls.values()) if (c.status === "open") n++;
    return n;
  }
  openCalls() {
    return [...this.calls.values()].filter((c) => c.status === "open").map((c) => ({ ...c }));
  }
  agentOpen(limit: number) {
    const open = [...this.calls.values()].filter((c) => c.status === "open" && c.caller_role === "agent").sort((x, y) => x.created_at - y.created_at);
    return { listed: open.slice(0, limit).map((c) => ({ id: c.call_id, name: c.name, fp: c.fingerprint })), pending: open.length };
  }
  keptResults(caller: string) {
    return [...this.calls.values()].filter((c) => c.status === "done" && c.caller === caller).map((c) => ({ ...c }));
  }
  dueCalls(now: number, limit: number) {
    return [...this.calls.values()]
      .filter((c) => c.status === "open" && c.deadline <= now)
      .sort((a, b) => a.deadline - b.deadline)
      .slice(0, limit)
      .map((c) => ({ ...c }));
  }
  purgeResults(now: number, limit: number) {
    let n = 0;
    for (const [id, c] of [...this.calls]) {
      if (n >= limit) break;
      if (c.status === "done" && c.keep_until !== null && c.keep_until <= now) {
        this.deleteCall(id);
        n++;
      }
    }
    return n;
  }
  nextDue() {
    let t: number | undefined;
    for (const c of this.calls.values()) {
      const due = c.status === "open" ? c.deadline : c.keep_until;
      if (due !== null && (t === undefined || due < t)) t = due;
    }
    for (const r of this.regs.values()) {
      const due = r.seenAt + LIMITS.registrationIdleMs;
      if (t === undefined || due < t) t = due;
    }
    return t;
  }
  addDelivery(row: CallRow, key: string, conn: string) {
    const c = this.calls.get(row.call_id);
    if (!c || c.status !== "open") return;
    const list = deliveriesOf(c);
    if (list.some((d) => d.conn === conn)) return;
    row.deliv = JSON.stringify([...list, { key, conn }]);
    this.put(this.calls, c.call_id, { ...c, deliv: row.deliv });
  }
  registrations(role: Role) {
    return [...this.regs.entries()]
      .filter(([, r]) => r.role === role)
      .sort((a, b) => a[1].seq - b[1].seq)
      .map(([key, r]) => ({ key, tools: r.tools, bytes: r.bytes }));
  }
  registration(key: string) {
    const r = this.regs.get(key);
    return r && { key, tools: r.tools, bytes: r.bytes };
  }
  register(key: string, role: Role, tools: KeptToolDef[], now: number) {
    const prevSeq = this.regSeq;
    this.undoable(() => (this.regSeq = prevSeq));
    this.put(this.regs, key, { role, tools, seq: ++this.regSeq, bytes: utf8Length(JSON.stringify(tools)), seenAt: now });
  }
  touch(key: string, now: number) {
    const r = this.regs.get(key);
    if (r) this.put(this.regs, key, { ...r, seenAt: now });
  }
  idleRegistrations(before: number, limit: number) {
    return [...this.regs.entries()]
      .filter(([, r]) => r.seenAt < before)
      .slice(0, limit)
      .map(([k]) => k);
  }
  dropRegistration(key: string) {
    this.del(this.regs, key);
  }
  instance(tool: string, id: string) {
    return this.inst.get(`${tool}\u0000${id}`);
  }
  bind(tool: string, id: string, key: string) {
    this.put(this.inst, `${tool}\u0000${id}`, key);
  }
  unbind(tool: string, id: string) {
    this.del(this.inst, `${tool}\u0000${id}`);
  }
  addMessage(m: Omit<KeptMessage, "seq">, fromKey: string) {
    const [prevMsgs, prevSeq] = [this.msgs, this.seq];
    this.undoable(() => {
      this.msgs = prevMsgs;
      this.seq = prevSeq;
    });
    const seq = ++this.seq;
    const frame: KeptMessage = { ...m, seq };
    this.msgs = [...this.msgs, { ...frame, fromKey, bytes: utf8Length(JSON.stringify(frame)) }].slice(-LIMITS.historySize);
    return seq;
  }
  hasMessage(fromKey: string, id: string) {
    return this.msgs.some((m) => m.fromKey === fromKey && m.id === id);
  }
  messages(afterSeq: number, limit: number) {
    return this.msgs
      .filter((m) => (m.seq ?? 0) > afterSeq)
      .slice(-limit)
      .map(({ fromKey: _k, bytes: _b, ...m }) => m);
  }
  messagesBefore(beforeSeq: number, limit: number) {
    return this.msgs
      .filter((m) => (m.seq ?? 0) < beforeSeq)
      .slice(-limit)
      .map(({ fromKey: _k, bytes: _b, ...m }) => m);
  }
  historyBytes() {
    let n = 0;
    for (const m of this.msgs) n += m.bytes;
    return n;
  }
  largeMessages(minBytes: number, limit: number) {
    return this.msgs
      .filter((m) => m.bytes >= minBytes)
      .slice(0, limit)
      .map(({ fromKey: _k, bytes, ...frame }) => ({ seq: frame.seq ?? 0, bytes, frame }));
  }
  replaceMessage(seq: number, frame: KeptMessage) {
    const prev = this.msgs;
    this.undoable(() => (this.msgs = prev));
    this.msgs = prev.map((m) => (m.seq === seq ? { ...frame, seq, fromKey: m.fromKey, bytes: utf8Length(JSON.stringify({ ...frame, seq })) } : m));
  }
  lastSeq() {
    return this.seq;
  }
  cursor(key: string) {
    return this.cursors.get(key);
  }
  setCursor(key: string, seq: number) {
    this.put(this.cursors, key, seq);
  }
  clear() {
    const saved = [this.metaMap, this.calls, this.regs, this.inst, this.msgs, this.cursors] as const;
    this.undoable(() => {
      [this.metaMap, this.calls, this.regs, this.inst, this.msgs, this.cursors] = saved;
    });
    this.metaMap = new Map();
    this.calls = new Map();
    this.regs = new Map();
    this.inst = new Map();
    this.msgs = [];
    this.cursors = new Map();
  }
}
