// Sessions created before a schema change keep working after it: SqlStore migrates their tables once, at
// the first wake of the new code. Here: deliveries moved from their own table into the call's row (issue 14).
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deliveriesOf } from "../../shared/session/store.js";
import { SqlStore } from "../../worker/sql-store.js";
import { createSession, stubOf } from "./helpers.js";

const OLD_CALLS = `CREATE TABLE calls (
  call_id TEXT PRIMARY KEY, caller TEXT NOT NULL, caller_role TEXT NOT NULL, name TEXT NOT NULL,
  action TEXT, args TEXT NOT NULL, timeout_s REAL, deadline INTEGER NOT NULL, target TEXT,
  status TEXT NOT NULL, checked INTEGER NOT NULL, result TEXT, keep_until INTEGER,
  created_at INTEGER NOT NULL, fingerprint TEXT NOT NULL, bytes INTEGER NOT NULL DEFAULT 0)`;

describe("a session stored by the previous schema", () => {
  it("moves an open call's deliveries from the old deliveries table into its row, and drops the table", async () => {
    const s = await createSession();
    await runInDurableObject(stubOf(s.session_id), (_i, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE calls");
      sql.exec(OLD_CALLS);
      sql.exec("CREATE TABLE deliveries (call_id TEXT NOT NULL, key TEXT NOT NULL, conn TEXT NOT NULL, PRIMARY KEY (call_id, conn))");
      const row = (id: string, status: string) =>
        sql.exec(
          "INSERT INTO calls (call_id, caller, caller_role, name, action, args, timeout_s, deadline, target, status, checked, result, keep_until, created_at, fingerprint, bytes) VALUES (?, 'agent:a', 'agent', 'confirm', NULL, '{}', NULL, 9e15, NULL, ?, 1, NULL, NULL, 1, 'f', 2)",
          id,
          status,
        );
      row("c_open", "open");
      row("c_alone", "open");
      sql.exec("INSERT INTO deliveries VALUES ('c_open', 'app:phone', 'conn-1'), ('c_open', 'app:tablet', 'conn-2')");

      const store = new SqlStore(sql);
      expect(deliveriesOf(store.getCall("c_open")!).sort((a, b) => a.conn.localeCompare(b.conn))).toEqual([
        { key: "app:phone", conn: "conn-1" },
        { key: "app:tablet", conn: "conn-2" },
      ]);
      expect(deliveriesOf(store.getCall("c_alone")!)).toEqual([]);
      expect(sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'deliveries'").one().n).toBe(0);
      // And the store works on the migrated row: one more delivery, then the result clears them.
      const c = store.getCall("c_open")!;
      store.addDelivery(c, "app:laptop", "conn-3");
      expect(deliveriesOf(store.getCall("c_open")!)).toHaveLength(3);
      expect(store.finishCall("c_open", "{}", 9e15, c.bytes)).toBe(true);
      expect(deliveriesOf(store.getCall("c_open")!)).toEqual([]);
    });
  });
});
