// Counts what one call costs the relay's storage, deterministically: the real SessionEngine and SqlStore
// (worker/sql-store.ts) over node:sqlite, driven through the frame path (decode, rate limit, route in one
// transaction, flush, re-arm the alarm) with a calculator app and an agent that acks. Per event it counts
// SQLite statements (reads and writes), commits (a Durable Object event with writes ends in one), and
// alarm moves (syncAlarm writes only when the earliest due time changed; emulated here exactly).
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { CALCULATOR } from "../../shared/contract/builtin-tools.js";
import { SessionEngine, type SessionMeta } from "../../shared/session/engine.js";
import type { Peer } from "../../shared/session/router.js";
import type { Store } from "../../shared/session/store.js";

type Value = string | number | null | ArrayBuffer;

/** The slice of workerd's SqlStorage that SqlStore uses. */
class ShimSql {
  reads = 0;
  writes = 0;
  private readonly db = new DatabaseSync(":memory:");
  private readonly stmts = new Map<string, StatementSync>();
  exec(q: string, ...params: Value[]): { toArray(): Record<string, Value>[]; rowsWritten: number } {
    // The schema is one multi-statement exec at construction (not per call).
    if (
      params.length === 0 &&
      q
        .trim()
        .split(";")
        .filter((x) => x.trim()).length > 1
    ) {
      this.db.exec(q);
      return { toArray: () => [], rowsWritten: 0 };
    }
    if (process.env.COUNT_LOG) console.log("SQL", q.replace(/\s+/g, " ").slice(0, 140));
    let st = this.stmts.get(q);
    if (!st) this.stmts.set(q, (st = this.db.prepare(q)));
    const args = params.map((p) => (p instanceof ArrayBuffer ? new Uint8Array(p) : p));
    if (/^\s*(SELECT|WITH)/i.test(q)) {
      this.reads++;
      const rows = st.all(...args) as Record<string, Value>[];
      return { toArray: () => rows, rowsWritten: 0 };
    }
    this.writes++;
    if (/RETURNING/i.test(q)) {
      const rows = st.all(...args) as Record<string, Value>[];
      return { toArray: () => rows, rowsWritten: rows.length };
    }
    const r = st.run(...args);
    return { toArray: () => [], rowsWritten: Number(r.changes) };
  }
  begin() {
    this.db.exec("SAVEPOINT t");
  }
  commit() {
    this.db.exec("RELEASE t");
  }
  rollback() {
    this.db.exec("ROLLBACK TO t");
    this.db.exec("RELEASE t");
  }
}

export interface EventCount {
  /** SQLite statements run (reads + writes). */
  statements: number;
  reads: number;
  writes: number;
  /** 1 when the event wrote anything: the event's one commit (the output gate waits for it). */
  commits: number;
  alarm_writes: number;
  frames_out: number;
}
export type CallCount = Record<"tool.call" | "tool.result" | "tool.ack" | "per_call", EventCount>;

/** Runs `calls` calculator calls (after one warm-up) and returns the mean per event and per call. */
export async function countPerCall(calls = 50): Promise<CallCount> {
  const path = "../../worker/sql-store.js"; // a variable: the node tsconfig cannot load the Worker's types
  const { SqlStore } = (await import(path)) as { SqlStore: new (sql: ShimSql) => Store };
  const sql = new ShimSql();
  const store = new SqlStore(sql);
  let now = Date.now();
  let alarmAt: number | null = null;
  let alarmWrites = 0;
  let framesOut = 0;
  const peers: Peer[] = [];
  const inbox: string[] = [];
  let ids = 0;
  let engine: SessionEngine;
  engine = new SessionEngine(
    store,
    {
      sockets: { peers: () => peers, send: (_to, data) => void (framesOut++, inbox.push(data)), close: () => undefined },
      txn: (fn) => {
        sql.begin();
        try {
          const r = fn();
          sql.commit();
          return r;
        } catch (e) {
          sql.rollback();
          throw e;
        }
      },
      // worker/session.ts syncAlarm: the earliest due time, written only when it moved earlier (an alarm
      // left early finds nothing due and re-arms).
      schedule: () => {
        const due = engine.nextDue();
        const next = Math.max(now, due ?? now);
        if (alarmAt !== null && alarmAt > now && alarmAt <= next) return;
        if (alarmAt !== next) {
          alarmAt = next;
          alarmWrites++;
        }
      },
      sleep: async () => undefined,
    },
    { rate: { perS: 1e9, burst: 1e9 }, newId: () => `id${String(++ids).padStart(10, "0")}` },
  );
  const meta: SessionMeta = { session_id: "bench0001", expires_at: now + 3_600_000, epoch: now };
  engine.init(meta);
  const agent: Peer = { role: "agent", clientId: "ag", conn: "c-agent", cred: "agent" };
  const app: Peer = { role: "app", clientId: "app0", conn: "c-app", cred: "app" };
  for (const p of [agent, app]) {
    peers.push(p);
    await engine.connected(p);
  }
  await engine.frame(app, JSON.stringify({ type: "tool.list", tools: [CALCULATOR] }));
  const zero = (): EventCount => ({ statements: 0, reads: 0, writes: 0, commits: 0, alarm_writes: 0, frames_out: 0 });
  const sum: CallCount = { "tool.call": zero(), "tool.result": zero(), "tool.ack": zero(), per_call: zero() };
  const event = async (kind: "tool.call" | "tool.result" | "tool.ack", peer: Peer, frame: object, count: boolean) => {
    const [r0, w0, a0, f0] = [sql.reads, sql.writes, alarmWrites, framesOut];
    now += 1;
    await engine.frame(peer, JSON.stringify(frame));
    if (!count) return;
    const e = sum[kind];
    const [dr, dw] = [sql.reads - r0, sql.writes - w0];
    e.reads += dr;
    e.writes += dw;
    e.statements += dr + dw;
    e.commits += dw > 0 ? 1 : 0;
    e.alarm_writes += alarmWrites - a0;
    e.frames_out += framesOut - f0;
  };
  for (let i = 0; i <= calls; i++) {
    const count = i > 0; // the first call warms the caches a wake would (usage, compiled schema)
    const call_id = `call${i}`;
    await event("tool.call", agent, { type: "tool.call", call_id, name: "calculator", action: "add", arguments: { a: i, b: 1 } }, count);
    await event(
      "tool.result",
      app,
      { type: "tool.result", call_id, name: "calculator", action: "add", result: { message: String(i + 1), value: i + 1 } },
      count,
    );
    await event("tool.ack", agent, { type: "tool.ack", call_id }, count);
  }
  if (inbox.some((f) => f.includes('"type":"error"'))) throw new Error(`count: the relay answered with an error: ${inbox.find((f) => f.includes('"error"'))}`);
  for (const k of ["tool.call", "tool.result", "tool.ack"] as const) {
    for (const f of Object.keys(zero()) as (keyof EventCount)[]) {
      sum[k][f] = Math.round((sum[k][f] / calls) * 100) / 100;
      sum.per_call[f] = Math.round((sum.per_call[f] + sum[k][f]) * 100) / 100;
    }
  }
  return sum;
}
