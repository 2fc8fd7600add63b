// The Inbox object's storage (docs/inbox.md): its state in the object's SQLite, memory as a cache.
// Over the slice of workerd's SqlStorage it uses, so that bench/lib/inbox-scale.ts can count its writes over
// node:sqlite exactly as the object makes them.
import type { InboxData } from "../shared/inbox/core.js";

type Value = string | number | null;
/** The slice of workerd's `ctx.storage.sql` the store uses. */
export interface SqlLike {
  exec(query: string, ...bindings: Value[]): { toArray(): Record<string, unknown>[]; rowsWritten: number };
}

export class InboxStore {
  private cache: InboxData | undefined;
  constructor(private readonly sql: SqlLike) {
    sql.exec("CREATE TABLE IF NOT EXISTS inbox (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  }

  load(): InboxData | undefined {
    if (!this.cache) {
      const row = this.sql.exec("SELECT v FROM inbox WHERE k = 'state'").toArray()[0];
      this.cache = row ? (JSON.parse(String(row.v)) as InboxData) : undefined;
    }
    // A copy: a change that throws half-way must not leave the cache ahead of SQLite.
    return this.cache && (structuredClone(this.cache) as InboxData);
  }

  save(d: InboxData): void {
    this.sql.exec("INSERT INTO inbox (k, v) VALUES ('state', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", JSON.stringify(d));
    this.cache = d;
  }
}
