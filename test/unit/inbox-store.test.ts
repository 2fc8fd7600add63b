// The Inbox object's storage (worker/inbox-store.ts) over node:sqlite — the same statements the object runs on
// workerd's SQLite — driven by the real inbox logic (shared/inbox/core.ts): a change writes only the rows it
// touched, what was written reads back whole, and an inbox stored the old way (one `state` row) is split on load.
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import type { SessionReport } from "../../shared/contract/inbox.js";
import { InboxCore, type InboxData } from "../../shared/inbox/core.js";
import { InboxStore } from "../../worker/inbox-store.js";

type Value = string | number | null;
/** workerd's `sql.exec` over node:sqlite, counting the rows written and the bytes bound to writes. */
class Sql {
  rows = 0;
  bytes = 0;
  failNextWrite = false;
  readonly db = new DatabaseSync(":memory:");
  exec(q: string, ...params: Value[]) {
    const st = this.db.prepare(q);
    if (/^\s*SELECT/i.test(q)) {
      const rows = st.all(...params) as Record<string, unknown>[];
      return { toArray: () => rows, rowsWritten: 0 };
    }
    if (this.failNextWrite && /^\s*(INSERT|UPDATE|DELETE)/i.test(q)) {
      this.failNextWrite = false;
      throw new Error("SQLITE_FULL");
    }
    const changes = Number(st.run(...params).changes);
    if (/^\s*(INSERT|UPDATE)/i.test(q)) {
      this.rows += changes;
      for (const p of params) this.bytes += typeof p === "string" ? Buffer.byteLength(p) : 8;
    }
    return { toArray: () => [], rowsWritten: changes };
  }
  /** As `ctx.storage.transactionSync`: all of `fn`'s writes or none. */
  txn = <T>(fn: () => T): T => {
    this.db.exec("SAVEPOINT t");
    try {
      const r = fn();
      this.db.exec("RELEASE t");
      return r;
    } catch (e) {
      this.db.exec("ROLLBACK TO t");
      this.db.exec("RELEASE t");
      throw e;
    }
  };
}

const NOW = 1_800_000_000_000;

function inbox(sql: Sql, sessions: number, ends = { session: async (_sid: string) => true }) {
  const store = new InboxStore(sql, sql.txn);
  const core = new InboxCore({
    load: () => store.load(),
    save: (d, touched) => store.save(d, touched),
    forget: () => store.forget(),
    broadcast: () => undefined,
    closeDevice: () => undefined,
    dropClient: async () => undefined,
    sessionEpoch: async () => undefined,
    endSession: (sid) => ends.session(sid),
    wakeEnding: () => undefined,
  });
  core.create("ib_1", { id: "mc_1", name: "laptop", hash: "hm" }, NOW);
  for (const i of [1, 2]) {
    core.issueCode("pair", `code${i}`, NOW);
    core.redeem("pair", `code${i}`, { id: `dv_${i}`, name: `phone ${i}`, hash: `hd${i}` }, undefined, NOW);
  }
  for (let i = 0; i < sessions; i++)
    core.attach(
      {
        session_id: `s${i}`,
        label: `p${i}`,
        project_dir: `/home/me/p${i}`,
        host: "laptop",
        machine_id: "mc_1",
        created_at: NOW,
        expires_at: NOW + 3_600_000,
        epoch: 1,
      },
      NOW + i,
    );
  return { core, store };
}

const waits = (id: string): SessionReport => ({
  agent_online: true,
  pending: 1,
  last_activity: NOW + 10_000,
  waiting: [{ call_id: id, name: "confirm", text: "Deploy now?", created_at: NOW + 10_000, deadline_at: NOW + 600_000 }],
});
const reread = (sql: Sql) => new InboxStore(sql, sql.txn).load();

describe("the inbox's storage: rows, not one document", () => {
  it("a session's report writes that session's row only: as many bytes in an inbox of 200 sessions as in one of 1 (regression: the whole state was rewritten per change)", () => {
    const written = (sessions: number) => {
      const sql = new Sql();
      const { core } = inbox(sql, sessions);
      const [rows, bytes] = [sql.rows, sql.bytes];
      core.report("s0", 1, waits("c1"));
      return { rows: sql.rows - rows, bytes: sql.bytes - bytes };
    };
    const one = written(1);
    expect(one.rows).toBe(1);
    expect(written(200)).toEqual(one);
  });

  it("everything a change wrote reads back from SQLite alone: sessions, devices, machines, codes, policy", () => {
    const sql = new Sql();
    const { core, store } = inbox(sql, 3);
    core.report("s1", 1, waits("c1"));
    core.markAttention("s2", "needs_input", false, NOW + 20_000);
    core.rename("device", "dv_2", "tablet");
    core.issueCode("join", "j1", NOW);
    core.setPolicy({ permissions: { allow: ["Bash(ls *)"] } });
    const mem = structuredClone(store.load());
    expect(reread(sql)).toEqual(mem);
    expect(mem?.sessions.s1?.waiting.map((w) => w.call_id)).toEqual(["c1"]);
    expect(mem?.sessions.s2?.attention?.reason).toBe("needs_input");
    expect(mem?.devices.dv_2?.name).toBe("tablet");
  });

  it("a revoked machine's sessions leave storage and their ending is kept until delivered, then dropped", async () => {
    const sql = new Sql();
    // The first attempt fails (the session objects are unreachable), the retry succeeds.
    const ends = { session: async (_sid: string): Promise<boolean> => Promise.reject(new Error("unreachable")) };
    const { core } = inbox(sql, 2, ends);
    core.report("s0", 1, waits("c1"));
    expect(await core.revoke("machine", "mc_1", NOW + 1000)).toBe(true);
    const after = reread(sql);
    expect(after?.machines).toEqual({});
    expect(after?.sessions).toEqual({});
    expect(Object.keys(after?.ending ?? {}).sort()).toEqual(["s0", "s1"]);
    ends.session = async () => true;
    await core.finishEnding(NOW + 3_600_000 * 24);
    expect(reread(sql)?.ending).toBeUndefined();
    expect(sql.db.prepare("SELECT k FROM inbox WHERE k LIKE 'e:%'").all()).toEqual([]);
  });

  it("rows of other keys in the table (Web Push's `push`, anything later) are never rewritten or deleted, even by a change that diffs every row", async () => {
    const sql = new Sql();
    sql.db.exec("CREATE TABLE inbox (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    sql.db.exec(`INSERT INTO inbox (k, v) VALUES ('push', '{"subs":{}}'), ('x:later', '1')`);
    const { core, store } = inbox(sql, 2);
    store.forget(); // the next load reads every row, as after an eviction
    expect(await core.revoke("machine", "mc_1", NOW + 1000)).toBe(true);
    expect(sql.db.prepare("SELECT k, v FROM inbox WHERE k IN ('push', 'x:later') ORDER BY k").all()).toEqual([
      { k: "push", v: '{"subs":{}}' },
      { k: "x:later", v: "1" },
    ]);
  });

  it("an inbox stored the old way, one `state` row, is split into rows on its first load and keeps everything", () => {
    const sql = new Sql();
    const { core, store } = inbox(sql, 2);
    core.report("s1", 1, waits("c9"));
    const old = structuredClone(store.load()) as InboxData;
    sql.db.exec("DELETE FROM inbox");
    sql.db.prepare("INSERT INTO inbox (k, v) VALUES ('state', ?)").run(JSON.stringify(old));

    expect(reread(sql)).toEqual(old);
    const keys = (sql.db.prepare("SELECT k FROM inbox ORDER BY k").all() as { k: string }[]).map((r) => r.k);
    expect(keys).toEqual(["d:dv_1", "d:dv_2", "m:mc_1", "meta", "s:s0", "s:s1"]);
    expect(reread(sql)).toEqual(old); // and reads the same from the rows
  });

  it("a write that fails leaves SQLite as it was and the next load reads SQLite, not the changed cache", () => {
    const sql = new Sql();
    const { core, store } = inbox(sql, 1);
    const before = structuredClone(store.load());
    sql.failNextWrite = true;
    expect(() => core.report("s0", 1, waits("c1"))).toThrow("SQLITE_FULL");
    expect(reread(sql)).toEqual(before);
    expect(store.load()).toEqual(before);
  });
});
