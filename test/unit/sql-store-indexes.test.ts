// The session's call indexes (worker/sql-store.ts) over node:sqlite, the SQLite the object runs on workerd:
// open calls are indexed by deadline, kept results by caller and expiry, each only while in that state (partial
// indexes: a call's row enters and leaves each index once, where the two old indexes rewrote both on every
// transition, issue 33); a session stored with the old indexes gets the new ones on its next wake; and every
// query of a call by state reads its index, never the whole table.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import type { CallRow, Store } from "../../shared/session/store.js";
import { openCall } from "../helpers/store-conformance.js";

// A variable path: the node tsconfig cannot load the Worker's types (as bench/lib/count.ts).
const path = "../../worker/sql-store.js";
const { SqlStore } = (await import(path)) as { SqlStore: new (sql: Sql) => Store & { forget(): void } };

type Value = string | number | null;
/** The slice of workerd's SqlStorage that SqlStore uses, recording every query it runs. */
class Sql {
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

/** An open call as the router inserts it (the conformance suite's), from caller "agent:a" unless told. */
const call = (id: string, over: Partial<CallRow> = {}): CallRow => openCall(id, { caller: "agent:a", ...over });

describe("the session's call indexes", () => {
  it("index open calls by deadline and kept results by caller and expiry, each while the call is in that state", () => {
    const sql = new Sql();
    const store = new SqlStore(sql);
    expect(sql.indexes()).toEqual(["calls_done", "calls_open"]);
    store.insertCall(call("c1", { deadline: 300 }));
    store.insertCall(call("c2", { deadline: 100 }));
    store.insertCall(call("c3", { deadline: 200, caller: "agent:b" }));
    store.finishCall("c3", '{"type":"tool.result"}', 50, 2);
    store.finishCall("c1", '{"type":"tool.result"}', 900, 2);
    expect(store.countOpen()).toBe(1);
    expect(store.dueCalls(1_000, 10).map((c) => c.call_id)).toEqual(["c2"]);
    expect(store.keptResults("agent:a").map((c) => c.call_id)).toEqual(["c1"]);
    expect(store.keptResults("agent:b").map((c) => c.call_id)).toEqual(["c3"]);
    store.forget();
    expect(store.nextDue()).toBe(50); // the kept result of c3 expires first
    expect(store.purgeResults(100, 10)).toBe(1);
    expect(store.keptResults("agent:b")).toEqual([]);
    expect(store.ackCall("c1", "agent:a")).toBe(true);
    expect(sql.db.prepare("SELECT call_id FROM calls ORDER BY call_id").all()).toEqual([{ call_id: "c2" }]);
  });

  it("gives a session stored with the old indexes the new ones on its next wake, its calls kept", () => {
    const sql = new Sql();
    new SqlStore(sql).insertCall(call("old", { deadline: 400 }));
    sql.db.exec("DROP INDEX calls_open; DROP INDEX calls_done");
    sql.db.exec("CREATE INDEX calls_due ON calls (status, deadline); CREATE INDEX calls_caller ON calls (caller, status)");
    const woken = new SqlStore(sql);
    expect(sql.indexes()).toEqual(["calls_done", "calls_open"]);
    expect(woken.dueCalls(1_000, 10).map((c) => c.call_id)).toEqual(["old"]);
  });

  it("reads every call by its state through an index, never by scanning the table", () => {
    const sql = new Sql();
    const store = new SqlStore(sql);
    store.insertCall(call("c1"));
    store.countOpen();
    store.dueCalls(1_000, 10);
    store.keptResults("agent:a");
    store.purgeResults(0, 10);
    store.forget();
    store.nextDue();
    const byState = [...sql.queries].filter((q) => /FROM calls WHERE status = '(open|done)'|caller = \? AND status/.test(q));
    expect(byState.length).toBeGreaterThanOrEqual(5);
    for (const q of byState) expect(sql.plan(q), q).not.toMatch(/SCAN calls(?! USING)/);
  });
});
