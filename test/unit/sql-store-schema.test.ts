// A wake of a session whose schema this code made runs no DDL (worker/sql-store.ts migrate, issue 33): the schema's
// `CREATE … IF NOT EXISTS` and `DROP … IF EXISTS` cost every wake's first call about half a millisecond. A fresh
// store, one with a table or index missing, or one with an old index still there, runs the schema as before.
import { describe, expect, it } from "vitest";
import { NodeSql, SqlStore } from "../helpers/node-sql.js";
import { openCall } from "../helpers/store-conformance.js";

/** Counts the schema's multi-statement execs (the DDL) on top of node:sqlite. */
class CountingSql extends NodeSql {
  ddl = 0;
  override exec(q: string, ...params: (string | number | null)[]) {
    if (params.length === 0 && q.includes("CREATE TABLE IF NOT EXISTS")) this.ddl++;
    return super.exec(q, ...params);
  }
}
const objects = (sql: NodeSql) =>
  (sql.db.prepare("SELECT name FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((r) => r.name);

describe("the SQLite store's schema on a wake", () => {
  it("makes every table and index on a fresh store, and a later wake runs no DDL and keeps the rows", () => {
    const sql = new CountingSql();
    const first = new SqlStore(sql);
    expect(sql.ddl).toBe(1);
    expect(objects(sql)).toEqual(["calls", "calls_done", "calls_open", "cursors", "instances", "messages", "messages_id", "meta", "registrations"]);
    first.insertCall(openCall("c1"));
    const woken = new SqlStore(sql);
    expect(sql.ddl).toBe(1);
    expect(woken.getCall("c1")?.status).toBe("open");
    expect(woken.countOpen()).toBe(1);
  });

  it("runs the schema again when an object is missing or an old index is still there", () => {
    const sql = new CountingSql();
    new SqlStore(sql);
    sql.db.exec("DROP INDEX messages_id");
    new SqlStore(sql);
    expect(sql.ddl).toBe(2);
    expect(objects(sql)).toContain("messages_id");
    sql.db.exec("CREATE INDEX calls_due ON calls (status, deadline)");
    new SqlStore(sql);
    expect(sql.ddl).toBe(3);
    expect(objects(sql)).not.toContain("calls_due");
    new SqlStore(sql);
    expect(sql.ddl).toBe(3);
  });
});
