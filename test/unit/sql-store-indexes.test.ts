// The session's call indexes (worker/sql-store.ts) over node:sqlite, the SQLite the object runs on workerd:
// open calls are indexed by deadline, kept results by caller and expiry, each only while in that state (partial
// indexes: a call's row enters and leaves each index once, where the two old indexes rewrote both on every
// transition, issue 33); a session stored with the old indexes gets the new ones on its next wake; and every
// query of a call by state reads its index, never the whole table.
import { describe, expect, it } from "vitest";
import type { CallRow, Store } from "../../shared/session/store.js";
import { openCall } from "../helpers/store-conformance.js";
import { NodeSql as Sql, SqlStore } from "../helpers/node-sql.js";

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
