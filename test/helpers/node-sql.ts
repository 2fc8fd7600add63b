// The Durable Object's SQLite store (worker/sql-store.ts) in Node: over node:sqlite, the SQLite the object runs
// on workerd, behind the slice of workerd's SqlStorage that SqlStore uses, recording every query it runs.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { Store } from "../../shared/session/store.js";

// A variable path: the node tsconfig cannot load the Worker's types (as bench/lib/count.ts).
const path = "../../worker/sql-store.js";
/** SqlStore as Node sees it: the Store, plus the cache reset and the one-write run the Durable Object uses. */
export type NodeSqlStore = Store & { forget(): void; once<T>(fn: () => T): T };
export const { SqlStore } = (await import(path)) as { SqlStore: new (sql: NodeSql) => NodeSqlStore };

type Value = string | number | null;
/** The slice of workerd's SqlStorage that SqlStore uses, recording every query it runs. */
export class NodeSql {
  readonly db = new DatabaseSync(":memory:");
  readonly queries = new Set<string>();
  private readonly stmts = new Map<string, StatementSync>();
  exec(q: string, ...params: Value[]) {
    if (params.length === 0 && q.split(";").filter((x) => x.trim()).length > 1) {
      this.db.exec(q); // the schema: one multi-statement exec
      return { toArray: () => [], rowsWritten: 0 };
    }
    this.queries.add(q);
    let st = this.stmts.get(q);
    if (!st) this.stmts.set(q, (st = this.db.prepare(q)));
    if (/^\s*SELECT/i.test(q) || /RETURNING/i.test(q)) {
      const rows = st.all(...params) as Record<string, Value>[];
      return { toArray: () => rows, rowsWritten: /RETURNING/i.test(q) ? rows.length : 0 };
    }
    return { toArray: () => [], rowsWritten: Number(st.run(...params).changes) };
  }
  indexes(): string[] {
    return (
      this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL ORDER BY name").all() as {
        name: string;
      }[]
    ).map((r) => r.name);
  }
  plan(q: string): string {
    const params = (q.match(/\?/g) ?? []).map(() => 0);
    return (this.db.prepare(`EXPLAIN QUERY PLAN ${q}`).all(...params) as { detail: string }[]).map((r) => r.detail).join("; ");
  }
}
