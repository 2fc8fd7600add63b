// Regression (issue 33): a tool.call and a tool.ack are routed without a savepoint (shared/session/engine.ts
// ONE_WRITE), which is atomic only while each writes at most one statement on every path. This file runs the
// router's unit suites again over the Durable Object's SQLite store (worker/sql-store.ts on node:sqlite), routing
// those frames through the store's `once`, which throws before a second write: a path that grew one fails here.
// It also pins the guard itself and the refused call's single insert.
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/contract/protocol.js";
import type { CallRow } from "../../shared/session/store.js";
import { NodeSql, SqlStore } from "../helpers/node-sql.js";
import { Harness } from "../helpers/router-harness.js";
import { openCall } from "../helpers/store-conformance.js";

const writes = (sql: NodeSql) => [...sql.queries].filter((q) => !/^\s*SELECT/i.test(q));

describe("routing a one-write frame without a savepoint", () => {
  it("refuses a second write before it runs and keeps the first", () => {
    const sql = new NodeSql();
    const store = new SqlStore(sql);
    const call = (id: string): CallRow => openCall(id, { caller: "agent:a" });
    expect(() =>
      store.once(() => {
        store.insertCall(call("first"));
        store.insertCall(call("second"));
      }),
    ).toThrow(/a second write in a one-write frame: INSERT INTO calls/);
    expect(store.getCall("first")?.status).toBe("open");
    expect(store.getCall("second")).toBeUndefined();
    // Reads are free, and the guard ends with its run: the next writes are not counted.
    store.once(() => {
      store.countOpen();
      store.openCalls();
      store.ackCall("nothing", "agent:a");
    });
    store.insertCall(call("third"));
    store.insertCall(call("fourth"));
    expect(store.countOpen()).toBe(3);
  });

  it("stores a refused call closed in one insert, and its repeat gets the same error", () => {
    const sql = new NodeSql();
    const store = new SqlStore(sql);
    const fresh = Harness.backend;
    Harness.backend = () => ({ store, once: (fn) => store.once(fn) });
    const h = new Harness();
    Harness.backend = fresh;
    const ag = h.connect("agent", "ag");
    const ph = h.connect("app", "ph");
    h.send(ph, { type: "tool.list", tools: [{ name: "note", type: "action", description: "", inputSchema: { type: "object" } }] });
    sql.queries.clear();
    const refused = { type: "tool.call", call_id: "r1", name: "nope", arguments: {} };
    h.send(ag, refused);
    expect(writes(sql)).toEqual([expect.stringMatching(/^INSERT INTO calls/)]);
    const first = h.take(ag).filter((f) => f.type === "tool.result");
    expect(first).toMatchObject([{ call_id: "r1", error: { code: "unknown_tool" } }]);
    expect(store.getCall("r1")).toMatchObject({ status: "done", args: "", deliv: "[]" });
    expect(store.getCall("r1")!.keep_until).toBe(h.now + LIMITS.resultRetentionMs);
    h.send(ag, refused);
    expect(h.take(ag).filter((f) => f.type === "tool.result")).toEqual(first);
    expect(store.countOpen()).toBe(0);
  });
});

// The router's own suites, over SQLite and one-write routing (each harness gets a fresh store).
describe("the router's unit suites, routed as the Durable Object routes", async () => {
  Harness.backend = () => {
    const store = new SqlStore(new NodeSql());
    return { store, once: (fn) => store.once(fn) };
  };
  await import("./router.test.js");
  await import("./router-sealed.test.js");
  await import("./budgets.test.js");
});
