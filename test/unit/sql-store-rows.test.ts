// The SQLite store keeps the open calls it wrote this wake in memory (worker/sql-store.ts `rows`, issue 33): a
// result finds its call without reading it back. Memory is only a cache: after every kind of write the copy it
// answers from equals the row in SQLite, a caller changing the row it got changes nothing kept, and a store that
// forgets (a rollback, the alarm) or a new wake reads SQLite again.
import { describe, expect, it } from "vitest";
import type { CallRow } from "../../shared/session/store.js";
import { NodeSql, SqlStore } from "../helpers/node-sql.js";
import { openCall } from "../helpers/store-conformance.js";

const BY_ID = "SELECT * FROM calls WHERE call_id = ?";
const inSql = (sql: NodeSql, id: string) => sql.db.prepare(BY_ID).get(id) as CallRow | undefined;

describe("the SQLite store's open calls in memory", () => {
  it("answers a call it inserted from memory, equal to SQLite's row after every write of it", () => {
    const sql = new NodeSql();
    const store = new SqlStore(sql);
    const same = (id: string) => expect({ ...store.getCall(id) }).toEqual({ ...inSql(sql, id) });
    store.insertCall(openCall("c1", { caller: "agent:a" }));
    same("c1");
    store.addDelivery(store.getCall("c1")!, "app:p", "conn1");
    same("c1");
    store.setChecked("c1", "app:p");
    same("c1");
    store.resealCall("c1", '{"sealed":"x"}', "fp-new", 2);
    same("c1");
    expect(sql.queries.has(BY_ID)).toBe(false); // never read back while open
    store.finishCall("c1", '{"type":"tool.result"}', 5_000, 14);
    same("c1"); // done: read from SQLite again
    expect(sql.queries.has(BY_ID)).toBe(true);
    expect(store.getCall("c1")).toMatchObject({ status: "done", args: "", deliv: "[]" });
  });

  it("forgets a call that leaves: cancelled, deleted or acked, none is answered from memory", () => {
    const sql = new NodeSql();
    const store = new SqlStore(sql);
    for (const id of ["a", "b", "c"]) store.insertCall(openCall(id, { caller: "agent:a" }));
    store.dropOpenCall("a");
    store.deleteCall("b");
    store.finishCall("c", '{"type":"tool.result"}', 5_000, 14);
    store.ackCall("c", "agent:a");
    for (const id of ["a", "b", "c"]) expect(store.getCall(id)).toBeUndefined();
  });

  it("hands out copies: a caller changing its row changes nothing kept", () => {
    const store = new SqlStore(new NodeSql());
    store.insertCall(openCall("c1"));
    const row = store.getCall("c1")!;
    row.status = "done";
    row.deliv = '[{"key":"app:x","conn":"y"}]';
    expect(store.getCall("c1")).toMatchObject({ status: "open", deliv: "[]" });
  });

  it("reads SQLite again after forget() and on a new wake", () => {
    const sql = new NodeSql();
    const store = new SqlStore(sql);
    store.insertCall(openCall("c1"));
    sql.db.prepare("UPDATE calls SET target = 'app:z' WHERE call_id = 'c1'").run(); // as a rolled-back write would differ
    expect(store.getCall("c1")!.target).toBeNull(); // the cache, until told
    store.forget();
    expect(store.getCall("c1")!.target).toBe("app:z");
    expect(new SqlStore(sql).getCall("c1")!.target).toBe("app:z");
  });
});
