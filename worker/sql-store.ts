// The routing core's Store on Durable Object SQLite. SQLite is the truth; nothing here is cached in
// memory, because hibernation and eviction wipe memory between any two frames.
import { LIMITS, type MessageOut, type Role, type ToolDef } from "../shared/protocol.js";
import type { CallRow, Delivery, Registration, Store } from "../shared/store.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  call_id TEXT PRIMARY KEY, caller TEXT NOT NULL, caller_role TEXT NOT NULL, name TEXT NOT NULL,
  action TEXT, args TEXT NOT NULL, timeout_s REAL, deadline INTEGER NOT NULL, target TEXT,
  status TEXT NOT NULL, checked INTEGER NOT NULL, result TEXT, keep_until INTEGER,
  created_at INTEGER NOT NULL, fingerprint TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calls_due ON calls (status, deadline);
CREATE INDEX IF NOT EXISTS calls_caller ON calls (caller, status);
CREATE TABLE IF NOT EXISTS deliveries (call_id TEXT NOT NULL, key TEXT NOT NULL, conn TEXT NOT NULL, PRIMARY KEY (call_id, conn));
CREATE TABLE IF NOT EXISTS registrations (key TEXT PRIMARY KEY, role TEXT NOT NULL, tools TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS instances (tool TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (tool, id));
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, from_key TEXT NOT NULL, frame TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_id ON messages (from_key, id);
CREATE TABLE IF NOT EXISTS cursors (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
`;

type Row = Record<string, SqlStorageValue>;

export class SqlStore implements Store {
  constructor(private readonly sql: SqlStorage) {
    this.migrate();
  }

  /** Creates the tables. Run again after `storage.deleteAll()`, which drops every SQL table too. */
  migrate(): void {
    this.sql.exec(SCHEMA);
  }

  private all<T>(q: string, ...p: SqlStorageValue[]): T[] {
    return this.sql.exec(q, ...p).toArray() as unknown as T[];
  }
  private one<T>(q: string, ...p: SqlStorageValue[]): T | undefined {
    return this.all<T>(q, ...p)[0];
  }
  private run(q: string, ...p: SqlStorageValue[]): number {
    return this.sql.exec(q, ...p).rowsWritten;
  }

  meta(k: string) {
    return this.one<{ v: string }>("SELECT v FROM meta WHERE k = ?", k)?.v;
  }
  setMeta(k: string, v: string | undefined) {
    if (v === undefined) this.run("DELETE FROM meta WHERE k = ?", k);
    else this.run("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", k, v);
  }

  getCall(id: string) {
    return this.one<CallRow>("SELECT * FROM calls WHERE call_id = ?", id);
  }
  insertCall(c: CallRow) {
    this.run(
      `INSERT INTO calls (call_id, caller, caller_role, name, action, args, timeout_s, deadline, target, status, checked, result, keep_until, created_at, fingerprint)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      c.call_id, c.caller, c.caller_role, c.name, c.action, c.args, c.timeout_s, c.deadline, c.target, c.status, c.checked, c.result, c.keep_until, c.created_at, c.fingerprint,
    );
  }
  finishCall(id: string, result: string, keepUntil: number) {
    // The idempotent transition: only the first writer moves a call out of 'open'.
    return this.run("UPDATE calls SET status = 'done', result = ?, keep_until = ? WHERE call_id = ? AND status = 'open'", result, keepUntil, id) > 0;
  }
  dropOpenCall(id: string) {
    return this.run("DELETE FROM calls WHERE call_id = ? AND status = 'open'", id) > 0;
  }
  setChecked(id: string, target: string | null) {
    this.run("UPDATE calls SET checked = 1, target = ? WHERE call_id = ?", target, id);
  }
  deleteCall(id: string) {
    this.run("DELETE FROM calls WHERE call_id = ?", id);
    this.run("DELETE FROM deliveries WHERE call_id = ?", id);
  }
  countOpen() {
    return this.one<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE status = 'open'")?.n ?? 0;
  }
  openCalls() {
    return this.all<CallRow>("SELECT * FROM calls WHERE status = 'open' ORDER BY created_at, rowid");
  }
  keptResults(caller: string) {
    return this.all<CallRow>("SELECT * FROM calls WHERE caller = ? AND status = 'done' ORDER BY keep_until, rowid", caller);
  }
  dueCalls(now: number) {
    return this.all<CallRow>("SELECT * FROM calls WHERE status = 'open' AND deadline <= ? ORDER BY deadline", now);
  }
  purgeResults(now: number) {
    const ids = this.all<{ call_id: string }>("SELECT call_id FROM calls WHERE status = 'done' AND keep_until <= ?", now);
    for (const { call_id } of ids) this.deleteCall(call_id);
    return ids.length;
  }
  nextDue() {
    const r = this.one<{ t: number | null }>(
      "SELECT MIN(t) AS t FROM (SELECT MIN(deadline) AS t FROM calls WHERE status = 'open' UNION ALL SELECT MIN(keep_until) FROM calls WHERE status = 'done')",
    );
    return r?.t ?? undefined;
  }

  addDelivery(id: string, key: string, conn: string) {
    this.run("INSERT OR IGNORE INTO deliveries (call_id, key, conn) VALUES (?, ?, ?)", id, key, conn);
  }
  deliveries(id: string) {
    return this.all<Delivery>("SELECT key, conn FROM deliveries WHERE call_id = ?", id);
  }
  delivered(id: string, conn: string) {
    return this.one("SELECT 1 AS x FROM deliveries WHERE call_id = ? AND conn = ?", id, conn) !== undefined;
  }
  clearDeliveries(id: string) {
    this.run("DELETE FROM deliveries WHERE call_id = ?", id);
  }

  registrations(role: Role): Registration[] {
    return this.all<{ key: string; tools: string }>("SELECT key, tools FROM registrations WHERE role = ? ORDER BY seq", role).map((r) => ({
      key: r.key,
      tools: JSON.parse(r.tools) as ToolDef[],
    }));
  }
  register(key: string, role: Role, tools: ToolDef[]) {
    const seq = (this.one<{ s: number | null }>("SELECT MAX(seq) AS s FROM registrations")?.s ?? 0) + 1;
    this.run(
      "INSERT INTO registrations (key, role, tools, seq) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET role = excluded.role, tools = excluded.tools, seq = excluded.seq",
      key, role, JSON.stringify(tools), seq,
    );
  }

  instance(tool: string, id: string) {
    return this.one<{ key: string }>("SELECT key FROM instances WHERE tool = ? AND id = ?", tool, id)?.key;
  }
  bind(tool: string, id: string, key: string) {
    this.run("INSERT INTO instances (tool, id, key) VALUES (?, ?, ?) ON CONFLICT (tool, id) DO UPDATE SET key = excluded.key", tool, id, key);
  }
  unbind(tool: string, id: string) {
    this.run("DELETE FROM instances WHERE tool = ? AND id = ?", tool, id);
  }

  addMessage(m: Omit<MessageOut, "seq">, fromKey: string) {
    const seq = this.lastSeq() + 1;
    this.run("INSERT INTO messages (seq, id, from_key, frame) VALUES (?, ?, ?, ?)", seq, m.id, fromKey, JSON.stringify({ ...m, seq }));
    this.run("DELETE FROM messages WHERE seq <= ?", seq - LIMITS.historySize);
    return seq;
  }
  hasMessage(fromKey: string, id: string) {
    return this.one("SELECT 1 AS x FROM messages WHERE from_key = ? AND id = ?", fromKey, id) !== undefined;
  }
  messages(afterSeq: number, limit: number) {
    return this.all<{ frame: string }>("SELECT frame FROM (SELECT seq, frame FROM messages WHERE seq > ? ORDER BY seq DESC LIMIT ?) ORDER BY seq", afterSeq, limit).map(
      (r) => JSON.parse(r.frame) as MessageOut,
    );
  }
  lastSeq() {
    // History rows are only ever trimmed from the old end, so MAX(seq) never goes back while the session
    // lives (a `msg_seq` meta value was read here too, but nothing ever wrote it).
    return this.one<{ s: number | null }>("SELECT MAX(seq) AS s FROM messages")?.s ?? 0;
  }
  cursor(key: string) {
    return this.one<{ seq: number }>("SELECT seq FROM cursors WHERE key = ?", key)?.seq;
  }
  setCursor(key: string, seq: number) {
    this.run("INSERT INTO cursors (key, seq) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET seq = excluded.seq", key, seq);
  }

  clear() {
    for (const t of ["meta", "calls", "deliveries", "registrations", "instances", "messages", "cursors"]) this.run(`DELETE FROM ${t}`);
  }
}

export type { Row };
