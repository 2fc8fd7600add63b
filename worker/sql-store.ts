// The routing core's Store on Durable Object SQLite. SQLite is the truth; the only things held in memory are
// the session's byte usage, its number of open calls, a lower bound of its earliest due time, the parsed
// registrations, a glance at the agent's open calls (tool and fingerprint, for the inbox report) and the rows of
// the open calls written this wake (a result reads no row back), each read once per wake or written here and kept
// in step with every write, all of which go through this class (a rolled-back transaction, or the alarm, forgets
// them: they are read again).
import { LIMITS, utf8Length, type KeptMessage, type Role, type KeptToolDef } from "../shared/contract/protocol.js";
import { AUTOMATIC_TOOLS } from "../shared/contract/push.js";
import { deliveriesOf, type CallRow, type Registration, type Store, type StoredMessage } from "../shared/session/store.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  call_id TEXT PRIMARY KEY, caller TEXT NOT NULL, caller_role TEXT NOT NULL, name TEXT NOT NULL,
  action TEXT, args TEXT NOT NULL, timeout_s REAL, deadline INTEGER NOT NULL, target TEXT,
  status TEXT NOT NULL, checked INTEGER NOT NULL, result TEXT, keep_until INTEGER,
  created_at INTEGER NOT NULL, fingerprint TEXT NOT NULL, bytes INTEGER NOT NULL DEFAULT 0, deliv TEXT NOT NULL DEFAULT '[]');
DROP INDEX IF EXISTS calls_due;
DROP INDEX IF EXISTS calls_caller;
CREATE INDEX IF NOT EXISTS calls_open ON calls (deadline) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS calls_done ON calls (caller, keep_until) WHERE status = 'done';
CREATE TABLE IF NOT EXISTS registrations (key TEXT PRIMARY KEY, role TEXT NOT NULL, tools TEXT NOT NULL, seq INTEGER NOT NULL,
  bytes INTEGER NOT NULL DEFAULT 0, seen_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS instances (tool TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (tool, id));
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, from_key TEXT NOT NULL, frame TEXT NOT NULL,
  bytes INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS messages_id ON messages (from_key, id);
CREATE TABLE IF NOT EXISTS cursors (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
`;
/** Columns added after round 1: tables of older sessions get them once. */
const ADDED = [
  "ALTER TABLE calls ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE registrations ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE registrations ADD COLUMN seen_at INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE messages ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE calls ADD COLUMN deliv TEXT NOT NULL DEFAULT '[]'",
  // Deliveries had their own table before they moved into the call's row (issue 14: one statement less on
  // a call and on a result): an open call's deliveries move over once.
  `UPDATE calls SET deliv = (SELECT json_group_array(json_object('key', d.key, 'conn', d.conn)) FROM deliveries d WHERE d.call_id = calls.call_id)
   WHERE status = 'open' AND call_id IN (SELECT call_id FROM deliveries)`,
  "DROP TABLE IF EXISTS deliveries",
];

/** What SCHEMA makes, and what it or ADDED drops: a wake that finds all of the first and none of the second runs
 * neither (issue 33: their DDL cost every wake's first call about half a millisecond). */
const MADE = [...SCHEMA.matchAll(/CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)/g)].map((m) => m[1]!);
const GONE = [...`${SCHEMA};${ADDED.join(";")}`.matchAll(/DROP (?:TABLE|INDEX) IF EXISTS (\w+)/g)].map((m) => m[1]!);
const PRESENT = `SELECT name FROM sqlite_master WHERE name IN (${[...MADE, ...GONE].map((n) => `'${n}'`).join(", ")})`;

type Row = Record<string, SqlStorageValue>;

export class SqlStore implements Store {
  private used: number | undefined;
  private open: number | undefined;
  /**
   * nextDue()'s answer (null: nothing due): a lower bound of the earliest due time, kept in step while writes
   * add due times and left as it is when they remove one. The alarm only ever moves earlier (worker/session.ts),
   * so a bound that is too early costs at most one alarm that finds nothing due and re-arms — and saves a
   * MIN query on every result and every ack. The alarm and a rollback forget it.
   */
  private due: number | null | undefined;
  /** openVersion(): bumped whenever an open call comes, goes or is re-sealed; memory only, never reset. */
  private version = 0;
  /** humanVersion(): the same, but not for a call of an automatic tool known to be one (shared/session/store.ts). */
  private human = 0;
  /** Each side's registrations as parsed, per wake: every write to them goes through this class (it drops
   * them); a rollback or the alarm forgets them, and a new wake starts without. */
  private readonly regs = new Map<Role, Registration[]>();
  /** The agent's open calls as agentOpen() glances at them (tool, fingerprint, age, insertion order), read once
   * per wake and kept in step by every write of a call: the inbox report glances after every change, and a query
   * per change was 40 % of an inbox session's CPU under load (issue 33). A rollback or the alarm forgets it. */
  private agent: Map<string, { name: string; fp: string; at: number; seq: number }> | undefined;
  private agentSeq = 0;
  /** Open calls' rows as this store wrote them, this wake: a result finds its call without a SELECT (issue 33: the
   * read was a quarter of a result's statements). Every write of a call goes through this class and keeps it in
   * step; rows read from SQLite are not added; a rollback or the alarm forgets it. At most LIMITS.maxOpenCalls. */
  private readonly rows = new Map<string, CallRow>();

  constructor(private readonly sql: SqlStorage) {
    this.migrate();
  }

  /** Creates the tables. Run again after `storage.deleteAll()`, which drops every SQL table too. A schema this code
   * made already (its partial indexes exist only where this code's migrate ran to its end) is left alone. */
  migrate(): void {
    const names = new Set(
      this.sql
        .exec<{ name: string }>(PRESENT)
        .toArray()
        .map((r) => r.name),
    );
    if (MADE.every((n) => names.has(n)) && !GONE.some((n) => names.has(n))) return this.forget();
    this.sql.exec(SCHEMA);
    try {
      // Probing writes nothing, so a deleted session's storage stays empty.
      this.sql.exec("SELECT c.bytes, c.deliv, r.bytes, r.seen_at, m.bytes FROM calls c, registrations r, messages m LIMIT 0");
    } catch {
      for (const q of ADDED) {
        try {
          this.sql.exec(q);
        } catch {
          /* that column is there already */
        }
      }
    }
    this.forget();
  }

  /** After a rolled-back transaction the in-memory counts may count writes that never happened. */
  forget(): void {
    this.used = undefined;
    this.open = undefined;
    this.due = undefined;
    this.regs.clear();
    this.agent = undefined;
    this.rows.clear();
  }
  private dueAdded(t: number | null): void {
    if (t !== null && this.due !== undefined) this.due = this.due === null ? t : Math.min(this.due, t);
  }
  /** An open call came (1) or went (-1); `name`: its tool, when known (unknown counts as a human's). */
  private opened(n: number, name?: string): void {
    this.version++;
    if (name === undefined || !AUTOMATIC_TOOLS.has(name)) this.human++;
    if (this.open !== undefined) this.open += n;
  }

  /** Writes so far in a `once` run (-1: not in one). */
  private writes = -1;

  /** Runs `fn`, which may write one statement, without a savepoint: SQLite makes one statement atomic. A second
   * write throws before it runs (the first stays), so a handler that grew a second write fails its tests loudly
   * rather than losing atomicity quietly (shared/session/engine.ts ONE_WRITE). */
  once<T>(fn: () => T): T {
    this.writes = 0;
    try {
      return fn();
    } finally {
      this.writes = -1;
    }
  }

  /** Inside `once`, counts a statement that is not a read, and refuses the second before it runs. */
  private counted(q: string): void {
    if (this.writes >= 0 && !q.startsWith("SELECT") && this.writes++ > 0) throw new Error(`store: a second write in a one-write frame: ${q.slice(0, 40)}`);
  }

  private all<T extends Record<string, SqlStorageValue>>(q: string, ...p: SqlStorageValue[]): T[] {
    this.counted(q);
    return this.sql.exec<T>(q, ...p).toArray();
  }
  private one<T extends Record<string, SqlStorageValue>>(q: string, ...p: SqlStorageValue[]): T | undefined {
    return this.all<T>(q, ...p)[0];
  }
  private run(q: string, ...p: SqlStorageValue[]): number {
    this.counted(q);
    return this.sql.exec(q, ...p).rowsWritten;
  }
  private add(bytes: number): void {
    if (this.used !== undefined) this.used += bytes;
  }
  /** Runs a DELETE … RETURNING bytes and takes what it freed off the usage; returns the rows deleted. */
  private free(q: string, ...p: SqlStorageValue[]): number {
    const rows = this.all<{ bytes: number }>(q, ...p);
    for (const r of rows) this.add(-r.bytes);
    return rows.length;
  }

  usage() {
    this.used ??=
      this.one<{ n: number }>(
        "SELECT (SELECT COALESCE(SUM(bytes), 0) FROM calls) + (SELECT COALESCE(SUM(bytes), 0) FROM messages) + (SELECT COALESCE(SUM(bytes), 0) FROM registrations) AS n",
      )?.n ?? 0;
    return this.used;
  }

  meta(k: string) {
    return this.one<{ v: string }>("SELECT v FROM meta WHERE k = ?", k)?.v;
  }
  setMeta(k: string, v: string | undefined) {
    if (v === undefined) this.run("DELETE FROM meta WHERE k = ?", k);
    else this.run("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", k, v);
  }

  getCall(id: string) {
    // A copy: callers may change the row they hold (addDelivery does) without writing it.
    const kept = this.rows.get(id);
    return kept ? { ...kept } : this.one<CallRow>("SELECT * FROM calls WHERE call_id = ?", id);
  }
  insertCall(c: CallRow) {
    const n = this.run(
      `INSERT INTO calls (call_id, caller, caller_role, name, action, args, timeout_s, deadline, target, status, checked, result, keep_until, created_at, fingerprint, bytes, deliv)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (call_id) DO NOTHING`,
      c.call_id,
      c.caller,
      c.caller_role,
      c.name,
      c.action,
      c.args,
      c.timeout_s,
      c.deadline,
      c.target,
      c.status,
      c.checked,
      c.result,
      c.keep_until,
      c.created_at,
      c.fingerprint,
      c.bytes,
      c.deliv,
    );
    if (n === 0) return false;
    if (c.status === "open" && this.rows.size < LIMITS.maxOpenCalls) this.rows.set(c.call_id, { ...c });
    this.add(c.bytes);
    if (c.status === "open") this.opened(1, c.name);
    if (c.status === "open" && c.caller_role === "agent")
      this.agent?.set(c.call_id, { name: c.name, fp: c.fingerprint, at: c.created_at, seq: ++this.agentSeq });
    this.dueAdded(c.status === "open" ? c.deadline : c.keep_until);
    return true;
  }
  finishCall(id: string, result: string, keepUntil: number, oldBytes: number) {
    const bytes = utf8Length(result);
    // The idempotent transition: only the first writer moves a call out of 'open'. Its arguments go: a
    // done call needs only its fingerprint (the repeat rule) and its result.
    if (
      this.run(
        "UPDATE calls SET status = 'done', result = ?, keep_until = ?, args = '', bytes = ?, deliv = '[]' WHERE call_id = ? AND status = 'open'",
        result,
        keepUntil,
        bytes,
        id,
      ) === 0
    )
      return false;
    this.rows.delete(id);
    this.add(bytes - oldBytes);
    this.opened(-1, this.agent?.get(id)?.name);
    this.agent?.delete(id);
    this.dueAdded(keepUntil); // its expiry came; its deadline going leaves `due` a lower bound
    return true;
  }
  /** A sealed call re-sealed after a re-key (docs/e2e.md): only an open call's envelopes change. */
  resealCall(id: string, args: string, fingerprint: string, oldBytes: number) {
    const bytes = utf8Length(args);
    if (this.run("UPDATE calls SET args = ?, fingerprint = ?, bytes = ? WHERE call_id = ? AND status = 'open'", args, fingerprint, bytes, id) === 0)
      return false;
    const kept = this.rows.get(id);
    if (kept) Object.assign(kept, { args, fingerprint, bytes });
    this.add(bytes - oldBytes);
    this.version++;
    this.human++;
    const a = this.agent?.get(id);
    if (a) a.fp = fingerprint;
    return true;
  }
  dropOpenCall(id: string) {
    this.rows.delete(id);
    const row = this.one<{ bytes: number }>("DELETE FROM calls WHERE call_id = ? AND status = 'open' RETURNING bytes", id);
    if (!row) return false;
    this.add(-row.bytes);
    this.opened(-1, this.agent?.get(id)?.name);
    this.agent?.delete(id);
    return true;
  }
  setChecked(id: string, target: string | null) {
    const kept = this.rows.get(id);
    if (kept) Object.assign(kept, { checked: 1, target });
    this.run("UPDATE calls SET checked = 1, target = ? WHERE call_id = ?", target, id);
  }
  deleteCall(id: string) {
    this.rows.delete(id);
    const row = this.one<{ bytes: number; status: string }>("DELETE FROM calls WHERE call_id = ? RETURNING bytes, status", id);
    if (!row) return;
    this.add(-row.bytes);
    if (row.status === "open") this.opened(-1, this.agent?.get(id)?.name);
    this.agent?.delete(id);
  }
  ackCall(id: string, caller: string) {
    const row = this.one<{ bytes: number }>("DELETE FROM calls WHERE call_id = ? AND status = 'done' AND caller = ? RETURNING bytes", id, caller);
    if (!row) return false;
    this.add(-row.bytes);
    return true;
  }
  openVersion() {
    return this.version;
  }
  humanVersion() {
    return this.human;
  }
  countOpen() {
    this.open ??= this.one<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE status = 'open'")?.n ?? 0;
    return this.open;
  }
  openCalls() {
    return this.all<CallRow>("SELECT * FROM calls WHERE status = 'open' ORDER BY created_at, rowid");
  }
  agentOpen(limit: number) {
    if (!this.agent) {
      this.agent = new Map();
      const rows = this.all<{ id: string; name: string; fp: string; at: number }>(
        "SELECT call_id AS id, name, fingerprint AS fp, created_at AS at FROM calls WHERE status = 'open' AND caller_role = 'agent' ORDER BY created_at, rowid",
      );
      for (const r of rows) this.agent.set(r.id, { name: r.name, fp: r.fp, at: r.at, seq: ++this.agentSeq });
    }
    // Oldest first, as SQLite orders them (created_at, then rowid: the order of insertion).
    const open = [...this.agent].sort(([, x], [, y]) => x.at - y.at || x.seq - y.seq);
    return { listed: open.slice(0, limit).map(([id, c]) => ({ id, name: c.name, fp: c.fp })), pending: open.length };
  }
  keptResults(caller: string) {
    return this.all<CallRow>("SELECT * FROM calls WHERE caller = ? AND status = 'done' ORDER BY keep_until, rowid", caller);
  }
  dueCalls(now: number, limit: number) {
    return this.all<CallRow>("SELECT * FROM calls WHERE status = 'open' AND deadline <= ? ORDER BY deadline LIMIT ?", now, limit);
  }
  purgeResults(now: number, limit: number) {
    const ids = this.all<{ call_id: string }>("SELECT call_id FROM calls WHERE status = 'done' AND keep_until <= ? LIMIT ?", now, limit);
    for (const { call_id } of ids) this.deleteCall(call_id);
    return ids.length;
  }
  nextDue() {
    this.due ??=
      this.one<{ t: number | null }>(
        `SELECT MIN(t) AS t FROM (SELECT MIN(deadline) AS t FROM calls WHERE status = 'open' UNION ALL SELECT MIN(keep_until) FROM calls WHERE status = 'done'
       UNION ALL SELECT MIN(seen_at) + ${LIMITS.registrationIdleMs} FROM registrations)`,
      )?.t ?? null;
    return this.due ?? undefined;
  }

  addDelivery(row: CallRow, key: string, conn: string) {
    const list = deliveriesOf(row);
    if (list.some((d) => d.conn === conn)) return;
    row.deliv = JSON.stringify([...list, { key, conn }]);
    const kept = this.rows.get(row.call_id);
    if (kept?.status === "open") kept.deliv = row.deliv;
    this.run("UPDATE calls SET deliv = ? WHERE call_id = ? AND status = 'open'", row.deliv, row.call_id);
  }

  registrations(role: Role): Registration[] {
    let regs = this.regs.get(role);
    if (!regs) {
      regs = this.all<{ key: string; tools: string; bytes: number }>("SELECT key, tools, bytes FROM registrations WHERE role = ? ORDER BY seq", role).map(
        (r) => ({
          key: r.key,
          tools: JSON.parse(r.tools) as KeptToolDef[],
          bytes: r.bytes,
        }),
      );
      this.regs.set(role, regs);
    }
    return regs;
  }
  registration(key: string): Registration | undefined {
    const r = this.one<{ tools: string; bytes: number }>("SELECT tools, bytes FROM registrations WHERE key = ?", key);
    return r && { key, tools: JSON.parse(r.tools) as KeptToolDef[], bytes: r.bytes };
  }
  register(key: string, role: Role, tools: KeptToolDef[], now: number) {
    const json = JSON.stringify(tools);
    const bytes = utf8Length(json);
    const old = this.one<{ bytes: number }>("SELECT bytes FROM registrations WHERE key = ?", key)?.bytes ?? 0;
    const seq = (this.one<{ s: number | null }>("SELECT MAX(seq) AS s FROM registrations")?.s ?? 0) + 1;
    this.run(
      `INSERT INTO registrations (key, role, tools, seq, bytes, seen_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET role = excluded.role, tools = excluded.tools, seq = excluded.seq, bytes = excluded.bytes, seen_at = excluded.seen_at`,
      key,
      role,
      json,
      seq,
      bytes,
      now,
    );
    this.add(bytes - old);
    this.due = undefined; // idle expiries moved
    this.regs.clear();
  }
  touch(key: string, now: number) {
    this.run("UPDATE registrations SET seen_at = ? WHERE key = ?", now, key);
    this.due = undefined;
  }
  idleRegistrations(before: number, limit: number) {
    return this.all<{ key: string }>("SELECT key FROM registrations WHERE seen_at < ? ORDER BY seen_at LIMIT ?", before, limit).map((r) => r.key);
  }
  dropRegistration(key: string) {
    this.free("DELETE FROM registrations WHERE key = ? RETURNING bytes", key);
    this.due = undefined;
    this.regs.clear();
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

  addMessage(m: Omit<KeptMessage, "seq">, fromKey: string) {
    const seq = this.lastSeq() + 1;
    const frame = JSON.stringify({ ...m, seq });
    const bytes = utf8Length(frame);
    this.run("INSERT INTO messages (seq, id, from_key, frame, bytes) VALUES (?, ?, ?, ?, ?)", seq, m.id, fromKey, frame, bytes);
    this.add(bytes);
    this.free("DELETE FROM messages WHERE seq <= ? RETURNING bytes", seq - LIMITS.historySize);
    return seq;
  }
  hasMessage(fromKey: string, id: string) {
    return this.one("SELECT 1 AS x FROM messages WHERE from_key = ? AND id = ?", fromKey, id) !== undefined;
  }
  messages(afterSeq: number, limit: number) {
    return this.all<{ frame: string }>(
      "SELECT frame FROM (SELECT seq, frame FROM messages WHERE seq > ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
      afterSeq,
      limit,
    ).map((r) => JSON.parse(r.frame) as KeptMessage);
  }
  messagesBefore(beforeSeq: number, limit: number) {
    return this.all<{ frame: string }>(
      "SELECT frame FROM (SELECT seq, frame FROM messages WHERE seq < ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
      beforeSeq,
      limit,
    ).map((r) => JSON.parse(r.frame) as KeptMessage);
  }
  historyBytes() {
    return this.one<{ n: number }>("SELECT COALESCE(SUM(bytes), 0) AS n FROM messages")?.n ?? 0;
  }
  largeMessages(minBytes: number, limit: number): StoredMessage[] {
    return this.all<{ seq: number; bytes: number; frame: string }>(
      "SELECT seq, bytes, frame FROM messages WHERE bytes >= ? ORDER BY seq LIMIT ?",
      minBytes,
      limit,
    ).map((r) => ({
      seq: r.seq,
      bytes: r.bytes,
      frame: JSON.parse(r.frame) as KeptMessage,
    }));
  }
  replaceMessage(seq: number, frame: KeptMessage) {
    const json = JSON.stringify({ ...frame, seq });
    const bytes = utf8Length(json);
    const old = this.one<{ bytes: number }>("SELECT bytes FROM messages WHERE seq = ?", seq)?.bytes ?? 0;
    this.run("UPDATE messages SET frame = ?, bytes = ? WHERE seq = ?", json, bytes, seq);
    this.add(bytes - old);
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
    for (const t of ["meta", "calls", "registrations", "instances", "messages", "cursors"]) this.run(`DELETE FROM ${t}`);
    this.used = 0;
    this.open = 0;
    this.due = undefined;
    this.regs.clear();
    this.agent = new Map();
    this.rows.clear();
  }
}

export type { Row };
