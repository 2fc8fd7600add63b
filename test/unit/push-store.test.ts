// Web Push's storage in the inbox object (worker/push-store.ts) over node:sqlite, driven by the real push logic
// (shared/inbox/push.ts): a new waiting call writes its own job and queue items, not every other call's; what
// was written reads back whole; a document stored the old way (one `push` row) is split on its first load.
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it, vi } from "vitest";
import type { SessionReport, WaitingCall } from "../../shared/contract/inbox.js";
import type { PushLogEntry } from "../../shared/contract/push.js";
import { PushCore, type PushData, type PushSub } from "../../shared/inbox/push.js";
import { own } from "../../shared/inbox/push-data.js";
import { PushStore } from "../../worker/push-store.js";

type Value = string | number | null;
class Sql {
  bytes = 0;
  readonly db = new DatabaseSync(":memory:");
  constructor() {
    this.db.exec("CREATE TABLE inbox (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  }
  exec(q: string, ...params: Value[]) {
    const st = this.db.prepare(q);
    if (/^\s*SELECT/i.test(q)) {
      const rows = st.all(...params) as Record<string, unknown>[];
      return { toArray: () => rows, rowsWritten: 0 };
    }
    const changes = Number(st.run(...params).changes);
    if (/^\s*(INSERT|UPDATE)/i.test(q)) for (const p of params) this.bytes += typeof p === "string" ? Buffer.byteLength(p) : 8;
    return { toArray: () => [], rowsWritten: changes };
  }
}

const NOW = 1_800_000_000_000;
const SUB: PushSub = { endpoint: "https://push.example/1", p256dh: "p", auth: "a", key: "k", local: false, lang: "en", at: NOW };
const call = (id: string): WaitingCall => ({ call_id: id, name: "confirm", text: `Deploy ${id}?`, created_at: NOW, deadline_at: NOW + 600_000 });
const report = (waiting: WaitingCall[]): SessionReport => ({ agent_online: true, pending: waiting.length, last_activity: NOW, waiting });

function push(sql: Sql) {
  const store = new PushStore(sql);
  const core = new PushCore({
    load: () => store.load(),
    save: (d) => store.save(d),
    inbox: () => undefined,
    views: () => [],
    wake: () => undefined,
    vapid: () => Promise.reject(new Error("not sending here")),
    send: () => Promise.reject(new Error("not sending here")),
    answer: () => Promise.reject(new Error("not answering here")),
  });
  core.subscribe("dv_1", SUB, "https://relay.example");
  return { core, store };
}

describe("Web Push's storage: rows, not one document", () => {
  it("a new waiting call writes as many bytes beside 200 waiting calls as beside none, but for its ids' digits (regression: the whole push document was rewritten per change)", () => {
    const written = (others: number) => {
      const sql = new Sql();
      const { core } = push(sql);
      for (let i = 0; i < others; i++) core.reported(`s${i}`, [], [call(`c${i}`)], report([call(`c${i}`)]), NOW);
      const before = sql.bytes;
      core.reported("hot", [], [call("new")], report([call("new")]), NOW);
      return sql.bytes - before;
    };
    expect(Math.abs(written(200) - written(0))).toBeLessThanOrEqual(12);
  });

  it("what was written reads back whole from SQLite alone, the queue in its order; an ended call's queued push is gone from it", () => {
    const sql = new Sql();
    const { core, store } = push(sql);
    for (const id of ["a", "b", "c"]) core.reported(`s-${id}`, [], [call(id)], report([call(id)]), NOW);
    core.reported("s-b", [call("b")], [], { ...report([]), closed: [{ call_id: "b", outcome: "answered" }] }, NOW + 1);
    expect(new PushStore(sql).load()).toEqual(store.load());
    expect(store.load()?.queue.map((q) => q.job)).toEqual(["s-a/a", "s-c/c"]);
    expect(sql.db.prepare("SELECT k FROM inbox WHERE k LIKE 'p:q:%' ORDER BY k").all()).toEqual([{ k: "p:q:1" }, { k: "p:q:3" }]);
  });

  it("the attempts log reads back as saved through appends past its cap of 200, saves that left it alone in between, and a failed save", () => {
    const sql = new Sql();
    const { store } = push(sql);
    const entry = (n: number): PushLogEntry => ({ at: NOW + n, session_id: "s", call_id: `c${n}`, device_id: "dv_1", kind: "call", outcome: "sent" });
    const expected: PushLogEntry[] = [];
    for (let n = 0; n < 230; n++) {
      const d = store.load() as PushData;
      d.log.push(entry(n));
      if (d.log.length > 200) d.log.splice(0, d.log.length - 200);
      store.save(d);
      expected.push(entry(n));
      // A save that changes only the queue's sequence keeps the same log.
      const e = store.load() as PushData;
      e.seq++;
      store.save(e);
    }
    expect(new PushStore(sql).load()?.log).toEqual(expected.slice(-200));
    // The copy a load hands out is the caller's: changing its log does not reach the store before a save.
    const copy = store.load() as PushData;
    copy.log.push(entry(999));
    expect(store.load()?.log).toHaveLength(200);
    expect(store.load()?.log.at(-1)).toEqual(entry(229));
  });

  it("a document stored the old way, one `push` row, is split into rows on its first load and keeps everything", () => {
    const sql = new Sql();
    const { core, store } = push(sql);
    core.reported("s1", [], [call("c1")], report([call("c1")]), NOW);
    const old = store.load() as PushData;
    sql.db.exec("DELETE FROM inbox");
    sql.db.prepare("INSERT INTO inbox (k, v) VALUES ('push', ?)").run(JSON.stringify(old));

    expect(new PushStore(sql).load()).toEqual(old);
    const keys = (sql.db.prepare("SELECT k FROM inbox ORDER BY k").all() as { k: string }[]).map((r) => r.k);
    expect(keys).toEqual(["p:j:s1/c1", "p:log", "p:meta", "p:q:1", "p:s:dv_1"]);
    expect(new PushStore(sql).load()).toEqual(old);
  });

  it("a new call's report stringifies as much beside 100 kept jobs as beside one, and a load copies no job (regression: each of a push's loads cloned every job and each save stringified every job)", () => {
    const stringified = (kept: number) => {
      const { core, store } = push(new Sql());
      for (let i = 0; i < kept; i++) core.reported(`s${i}`, [], [call(`c${i}`)], report([call(`c${i}`)]), NOW);
      const spy = vi.spyOn(JSON, "stringify");
      try {
        core.reported("hot", [], [call("new")], report([call("new")]), NOW);
        store.load();
        return spy.mock.calls.length;
      } finally {
        spy.mockRestore();
      }
    };
    expect(stringified(100)).toBe(stringified(1));
    const { core, store } = push(new Sql());
    core.reported("s1", [], [call("c1")], report([call("c1")]), NOW);
    expect(store.load()!.jobs["s1/c1"]).toBe(store.load()!.jobs["s1/c1"]);
  });

  it("a kept job cannot be changed in place; a copy taken with `own` and never saved leaves the store as it was", () => {
    const sql = new Sql();
    const { core, store } = push(sql);
    core.reported("s1", [], [call("c1")], report([call("c1")]), NOW);
    const d = store.load()!;
    expect(() => {
      d.jobs["s1/c1"]!.reminders = 9;
    }).toThrow(TypeError);
    const mine = own(d, "s1/c1")!;
    mine.reminders = 9;
    mine.devices.dv_1!.tokens.push("h");
    expect(store.load()!.jobs["s1/c1"]!.reminders).toBe(0);
    expect(store.load()!.jobs["s1/c1"]!.devices.dv_1!.tokens).toEqual([]);
    store.save(d);
    expect(new PushStore(sql).load()!.jobs["s1/c1"]).toMatchObject({ reminders: 9, devices: { dv_1: { tokens: ["h"] } } });
    expect(store.load()!.jobs["s1/c1"]!.reminders).toBe(9);
  });

  it("a push sent from the report whose pump fails before its lease is stored (a storage error) is left to the alarm, not lost", async () => {
    const store = new PushStore(new Sql());
    const wakes: (number | undefined)[] = [];
    let saves = 0;
    const core = new PushCore({
      load: () => store.load(),
      // The first save is the subscription's, the second the report's own; the pump's lease save (the third, in the
      // same turn) fails.
      save: (d) => {
        if (++saves === 3) throw new Error("storage failed");
        store.save(d);
      },
      inbox: () => undefined,
      views: () => [],
      wake: (at) => void wakes.push(at),
      vapid: () => Promise.reject(new Error("not sending here")),
      send: () => Promise.reject(new Error("not sending here")),
      answer: () => Promise.reject(new Error("not answering here")),
    });
    core.subscribe("dv_1", SUB, "https://relay.example");
    wakes.length = 0;
    const sending = core.reported("s1", [], [call("c1")], report([call("c1")]), NOW, true);
    expect(sending).toBeDefined();
    await expect(sending).rejects.toThrow("storage failed");
    expect(store.load()!.queue).toHaveLength(1); // the call's push is stored, due now
    expect(wakes).toEqual([NOW]); // and the alarm comes for it
  });
});
