// The Inbox object's storage (docs/inbox.md "Storage"): one SQLite row per session, device, machine and ending
// session, plus one `meta` row (id, codes, policy, E2E) — SQLite the truth, memory a cache. A change writes
// only the rows it touched (shared/inbox/core.ts `Touched`), and only those whose JSON changed; a change that
// does not say diffs every row against what was last written. An inbox stored the old way, one `state` row
// holding everything, is split on its first load. Over the slice of workerd's SqlStorage it uses, so that
// bench/lib/inbox-scale.ts and test/unit/inbox-store.test.ts run it over node:sqlite as the object does.
import type { InboxData, Touched } from "../shared/inbox/core.js";

type Value = string | number | null;
/** The slice of workerd's `ctx.storage.sql` the store uses. */
export interface SqlLike {
  exec(query: string, ...bindings: Value[]): { toArray(): Record<string, unknown>[]; rowsWritten: number };
}
/** Runs `fn` as one transaction (workerd: `ctx.storage.transactionSync`): all its writes or none. */
export type Txn = <T>(fn: () => T) => T;

/** Row keys: `meta`, `s:<session id>`, `d:<device id>`, `m:<machine id>`, `e:<session id>` (ending). `push` is
 * Web Push's own document (worker/push.ts), `state` the old one-row layout. */
const PREFIX = { sessions: "s:", devices: "d:", machines: "m:", ending: "e:" } as const;
type Group = keyof typeof PREFIX;
const GROUPS = Object.keys(PREFIX) as Group[];
type Meta = Pick<InboxData, "inbox_id" | "created_at" | "codes" | "policy" | "e2e">;

const metaOf = (d: InboxData): Meta => ({
  inbox_id: d.inbox_id,
  created_at: d.created_at,
  codes: d.codes,
  policy: d.policy,
  ...(d.e2e ? { e2e: d.e2e } : {}),
});

export class InboxStore {
  private cache: InboxData | undefined;
  /** Each row's JSON as last written (or read): a row is written only when its JSON changed. */
  private readonly written = new Map<string, string>();

  constructor(
    private readonly sql: SqlLike,
    private readonly txn: Txn = (fn) => fn(),
  ) {
    sql.exec("CREATE TABLE IF NOT EXISTS inbox (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  }

  /** The cached data itself (no copy): the core changes it only inside a change that saves or forgets. */
  load(): InboxData | undefined {
    this.cache ??= this.read();
    return this.cache;
  }

  /** Drops the cache: the next load reads SQLite again. */
  forget(): void {
    this.cache = undefined;
    this.written.clear();
  }

  save(d: InboxData, touched?: Touched): void {
    const rows = new Map<string, string | null>();
    if (touched) {
      if (touched.meta) rows.set("meta", JSON.stringify(metaOf(d)));
      for (const g of ["sessions", "devices", "machines"] as const)
        for (const id of touched[g] ?? []) rows.set(PREFIX[g] + id, Object.hasOwn(d[g], id) ? JSON.stringify(d[g][id]) : null);
    } else {
      for (const k of this.written.keys()) rows.set(k, null);
      for (const [k, v] of this.rowsOf(d)) rows.set(k, v);
    }
    try {
      this.txn(() => {
        for (const [k, v] of rows) {
          if (v === null) {
            if (this.written.delete(k)) this.sql.exec("DELETE FROM inbox WHERE k = ?", k);
          } else if (this.written.get(k) !== v) {
            this.sql.exec("INSERT INTO inbox (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", k, v);
            this.written.set(k, v);
          }
        }
      });
    } catch (e) {
      this.forget(); // rolled back: what `written` says may no longer be true
      throw e;
    }
    this.cache = d;
  }

  /** Every row of `d`, by key. */
  private rowsOf(d: InboxData): Map<string, string> {
    const rows = new Map<string, string>([["meta", JSON.stringify(metaOf(d))]]);
    for (const g of GROUPS) for (const [id, v] of Object.entries(d[g] ?? {})) rows.set(PREFIX[g] + id, JSON.stringify(v));
    return rows;
  }

  private read(): InboxData | undefined {
    this.written.clear();
    const old = this.sql.exec("SELECT v FROM inbox WHERE k = 'state'").toArray()[0];
    if (old) return this.migrate(JSON.parse(String(old.v)) as InboxData);
    const rows = this.sql.exec("SELECT k, v FROM inbox WHERE k <> 'push' AND k NOT LIKE 'p:%' ORDER BY rowid").toArray();
    const meta = rows.find((r) => r.k === "meta");
    if (!meta) return undefined;
    const d: InboxData = { ...(JSON.parse(String(meta.v)) as Meta), devices: {}, machines: {}, sessions: {} };
    this.written.set("meta", String(meta.v));
    for (const { k, v } of rows) {
      const key = String(k);
      const g = GROUPS.find((x) => key.startsWith(PREFIX[x]));
      const id = g && key.slice(PREFIX[g].length);
      // Rows of other keys are not this store's (never rewritten or deleted by it); "__proto__" is never an id.
      if (!g || !id || id === "__proto__") continue;
      this.written.set(key, String(v));
      ((d[g] ??= {}) as Record<string, unknown>)[id] = JSON.parse(String(v));
    }
    return d;
  }

  /** The old layout: one `state` row. Split into rows and the row deleted, in one transaction. */
  private migrate(d: InboxData): InboxData {
    this.txn(() => {
      this.sql.exec("DELETE FROM inbox WHERE k = 'state'");
      for (const [k, v] of this.rowsOf(d)) {
        this.sql.exec("INSERT INTO inbox (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", k, v);
        this.written.set(k, v);
      }
    });
    return d;
  }
}
