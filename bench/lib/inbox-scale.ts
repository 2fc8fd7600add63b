// Flat as the inbox grows (issue 33 item 2): the same `confirm` call (a question a human answers; the app taps
// "Yes" at once), in a session attached to an inbox that
// holds 1, 30 or 200 sessions (2 paired devices), or 1 session and 32 devices. Two parts:
// - Live: the real Worker in workerd (`wrangler dev`), one inbox per size in one relay, one open inbox socket
//   per inbox (the phone showing its home); per call the round trip and workerd's process CPU (bench/lib/proc.ts),
//   in interleaved rounds (the order rotates each round), every ratio per round against the 1-session inbox.
//   Also the bytes the device's inbox socket received per call (a report sends each device its session's row).
// - Counted: the inbox's logic (shared/inbox/core.ts) and the object's storage (worker/inbox-store.ts) over
//   node:sqlite, driven with the two reports a session makes per call (the call waits, then it left): rows and
//   bytes written per call (the bytes bound to INSERT/UPDATE statements: the payload SQLite stores, not its pages),
//   deterministically, as bench/lib/count.ts does for the bare path.
// `npm run bench -- --inbox-scale` runs this alone (bench/inbox-scale.json, then docs/benchmarks.md is re-rendered).
import { rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import WebSocket from "ws";
import { CLOSE } from "../../shared/contract/close.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { SessionReport } from "../../shared/contract/inbox.js";
import { InboxCore, type InboxData, type Touched } from "../../shared/inbox/core.js";
import { relayPair, type Pair } from "./clients.js";
import { log, RELAY_VARS } from "./harness.js";
import { cpuMsOf, snapshotRelay, startWrangler, workerdOf } from "./proc.js";
import { dist, roundRatio, type RoundRatio } from "./stats.js";

export const SCALE_GOAL = 1.25;
const ROUNDS = Number(process.env.INBOX_SCALE_ROUNDS ?? 8);
const PER_ROUND = Number(process.env.INBOX_SCALE_CALLS ?? 50);
const WARM = 50;
const COUNT_CALLS = 50;

type Size = "s1" | "s30" | "s200" | "d32";
const SIZES: Record<Size, { sessions: number; devices: number }> = {
  s1: { sessions: 1, devices: 2 },
  s30: { sessions: 30, devices: 2 },
  s200: { sessions: 200, devices: 2 },
  d32: { sessions: 1, devices: 32 },
};
export const SCALE_LABEL: Record<Size, string> = {
  s1: "1 session, 2 devices",
  s30: "30 sessions, 2 devices",
  s200: "200 sessions, 2 devices",
  d32: "1 session, 32 devices",
};

export interface ScaleFigures {
  /** Live: round-trip distribution (ms) and workerd CPU (µs per call, all rounds). */
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_call: number | null;
  /** Live: bytes the one open inbox socket received per call. */
  socket_bytes_per_call: number;
  /** Counted: per call. */
  rows_written_per_call: number;
  bytes_written_per_call: number;
  /** Live, per round, against the 1-session inbox (median and spread). */
  p50_vs_s1: RoundRatio;
  cpu_vs_s1: RoundRatio | null;
}

export interface InboxScaleResults {
  generated_at: string;
  node: string;
  rounds: number;
  calls_per_round: number;
  load_avg_1m: number[];
  sizes: Record<Size, ScaleFigures>;
  goal: { what: string; goal: string; s200_p50: number; s200_cpu: number | null; s200_bytes: number; met: boolean };
}

// ---------------------------------------------------------------- counted: the storage over node:sqlite

type Value = string | number | null;
/** The slice of workerd's SqlStorage the store uses, counting writes: rows (`rowsWritten`) and the bytes bound. */
class CountingSql {
  rows = 0;
  bytes = 0;
  private readonly db = new DatabaseSync(":memory:");
  private readonly stmts = new Map<string, StatementSync>();
  exec(q: string, ...params: Value[]): { toArray(): Record<string, unknown>[]; rowsWritten: number } {
    let st = this.stmts.get(q);
    if (!st) this.stmts.set(q, (st = this.db.prepare(q)));
    if (/^\s*(SELECT|WITH|CREATE)/i.test(q)) {
      if (/^\s*CREATE/i.test(q)) st.run();
      else {
        const rows = st.all(...params) as Record<string, unknown>[];
        return { toArray: () => rows, rowsWritten: 0 };
      }
      return { toArray: () => [], rowsWritten: 0 };
    }
    const r = st.run(...params);
    this.rows += Number(r.changes);
    if (!/^\s*DELETE/i.test(q)) for (const p of params) this.bytes += typeof p === "string" ? Buffer.byteLength(p) : 8;
    return { toArray: () => [], rowsWritten: Number(r.changes) };
  }
}

interface StoreLike {
  load(): InboxData | undefined;
  save(d: InboxData, touched?: Touched): void;
  forget(): void;
}

async function counted(size: { sessions: number; devices: number }): Promise<{ rows: number; bytes: number }> {
  const path = "../../worker/inbox-store.js"; // a variable: the node tsconfig does not take the Worker's files
  const { InboxStore } = (await import(path)) as { InboxStore: new (sql: CountingSql) => StoreLike };
  const sql = new CountingSql();
  const store = new InboxStore(sql);
  let frames = 0;
  const core = new InboxCore({
    load: () => store.load(),
    save: (d, touched) => store.save(d, touched),
    forget: () => store.forget(),
    broadcast: (frame) => void (frames += frame("dv_0").length),
    closeDevice: () => undefined,
    dropClient: async () => undefined,
    sessionEpoch: async () => undefined,
    endSession: async () => true,
    wakeEnding: () => undefined,
  });
  const now = Date.now();
  core.create("ib_bench", { id: "mc_0", name: "laptop", hash: "h" }, now);
  for (let i = 0; i < size.devices; i++) {
    core.issueCode("pair", `c${i}`, now);
    core.redeem("pair", `c${i}`, { id: `dv_${i}`, name: `phone ${i}`, hash: `h${i}` }, undefined, now);
  }
  for (let i = 0; i < size.sessions; i++)
    core.attach(
      {
        session_id: `s${i}`,
        label: `project ${i}`,
        project_dir: `/home/me/project-${i}`,
        host: "laptop",
        machine_id: "mc_0",
        created_at: now,
        expires_at: now + 3_600_000,
        epoch: 1,
      },
      now + i,
    );
  const hot = `s${size.sessions - 1}`;
  const call = (i: number) => {
    const t = now + 1000 + i;
    const waiting = [{ call_id: `c${i}`, name: "confirm", text: `Deploy build ${i}?`, created_at: t, deadline_at: t + 600_000 }];
    const r1: SessionReport = { agent_online: true, pending: 1, last_activity: t, waiting };
    const r2: SessionReport = {
      agent_online: true,
      pending: 0,
      last_activity: t,
      waiting: [],
      closed: [{ call_id: `c${i}`, outcome: "answered", by: "app-1", answer: "Yes" }],
    };
    core.report(hot, 1, r1);
    core.report(hot, 1, r2);
  };
  call(0);
  const [r0, b0] = [sql.rows, sql.bytes];
  for (let i = 1; i <= COUNT_CALLS; i++) call(i);
  return { rows: Math.round(((sql.rows - r0) / COUNT_CALLS) * 100) / 100, bytes: Math.round((sql.bytes - b0) / COUNT_CALLS) };
}

// ---------------------------------------------------------------- live: the real Worker

async function json<T>(url: string, token: string | undefined, body: unknown): Promise<T> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (r.status !== 201) throw new Error(`inbox-scale: POST ${url} answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as T;
}

interface Live {
  pair: Pair;
  /** Bytes the open inbox socket received so far. */
  received: () => number;
  close(): void;
}

async function liveInbox(base: string, size: { sessions: number; devices: number }, tag: string): Promise<Live> {
  const m = await json<{ machine_credential: string }>(`${base}/api/inboxes`, DEV_RELAY_KEY, { machine_name: "bench" });
  let device = "";
  for (let i = 0; i < size.devices; i++) {
    const c = await json<{ code: string }>(`${base}/api/inbox/pairings`, m.machine_credential, {});
    const d = await json<{ device_credential: string }>(`${base}/api/pair`, undefined, { code: c.code, name: `phone ${i}` });
    device ||= d.device_credential;
  }
  let hot: SessionCreated | undefined;
  for (let i = 0; i < size.sessions; i++)
    hot = await json<SessionCreated>(`${base}/api/inbox/sessions`, m.machine_credential, {
      label: `project ${i}`,
      project_dir: `/home/me/project-${i}`,
      host: "bench",
      ttl_s: 3600,
    });
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/api/inbox/ws`, ["lineup.v1", `lineup.token.${device}`]);
  let received = 0;
  ws.on("message", (d: Buffer) => void (received += d.length));
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  const pair = await relayPair(hot!, 1, tag);
  // A calculator call is answered by the app and never reported (REPORT_DELAY_MS); a confirm is reported twice.
  pair.agent.tool = "confirm";
  return {
    pair,
    received: () => received,
    close: () => {
      pair.close();
      ws.close(CLOSE.normal);
    },
  };
}

export async function runInboxScale(): Promise<InboxScaleResults> {
  const sizes = Object.keys(SIZES) as Size[];
  const counts = {} as Record<Size, { rows: number; bytes: number }>;
  for (const s of sizes) counts[s] = await counted(SIZES[s]);
  log(`inbox-scale: counted ${sizes.map((s) => `${s} ${counts[s].rows} rows / ${counts[s].bytes} B`).join(", ")} per call`);

  const relay = await startWrangler({ config: snapshotRelay("bench/.tmp/inbox-scale-relay"), persistTo: "bench/.tmp/state-inbox-scale", vars: RELAY_VARS });
  const live = {} as Record<Size, Live>;
  try {
    const pid = workerdOf(relay.proc.pid!).runtime;
    for (const s of sizes) {
      live[s] = await liveInbox(relay.url, SIZES[s], s);
      log(`inbox-scale: ${SCALE_LABEL[s]} ready`);
    }
    for (const s of sizes) for (let i = 0; i < WARM; i++) await live[s].pair.agent.call();
    const times = Object.fromEntries(sizes.map((s) => [s, [] as number[]])) as Record<Size, number[]>;
    const p50s = Object.fromEntries(sizes.map((s) => [s, [] as number[]])) as Record<Size, number[]>;
    const cpus = Object.fromEntries(sizes.map((s) => [s, [] as number[]])) as Record<Size, number[]>;
    const bytes = Object.fromEntries(sizes.map((s) => [s, 0])) as Record<Size, number>;
    let cpuOk = pid !== undefined;
    const loads = [loadavg()[0]!];
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < sizes.length; k++) {
        const s = sizes[(r + k) % sizes.length]!;
        const c0 = cpuMsOf(pid);
        const b0 = live[s].received();
        const xs: number[] = [];
        for (let i = 0; i < PER_ROUND; i++) xs.push(await live[s].pair.agent.call());
        const c1 = cpuMsOf(pid);
        bytes[s] += live[s].received() - b0;
        if (c0 === null || c1 === null) cpuOk = false;
        else cpus[s].push(((c1 - c0) * 1000) / PER_ROUND);
        times[s].push(...xs);
        p50s[s].push(dist(xs).p50);
      }
      log(`inbox-scale: round ${r + 1}/${ROUNDS}: p50 ${sizes.map((s) => `${s} ${p50s[s][r]!.toFixed(2)} ms`).join(", ")}`);
    }
    loads.push(loadavg()[0]!);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const fig = (s: Size): ScaleFigures => {
      const d = dist(times[s]);
      return {
        p50_ms: d.p50,
        p99_ms: d.p99,
        cpu_us_per_call: cpuOk ? Math.round(mean(cpus[s])) : null,
        socket_bytes_per_call: Math.round(bytes[s] / (ROUNDS * PER_ROUND)),
        rows_written_per_call: counts[s].rows,
        bytes_written_per_call: counts[s].bytes,
        p50_vs_s1: roundRatio(p50s[s], p50s.s1),
        cpu_vs_s1: cpuOk ? roundRatio(cpus[s], cpus.s1) : null,
      };
    };
    const out = Object.fromEntries(sizes.map((s) => [s, fig(s)])) as Record<Size, ScaleFigures>;
    const s200 = out.s200;
    const bytesRatio = Math.round((s200.bytes_written_per_call / out.s1.bytes_written_per_call) * 100) / 100;
    const res: InboxScaleResults = {
      generated_at: new Date().toISOString(),
      node: process.version,
      rounds: ROUNDS,
      calls_per_round: PER_ROUND,
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      sizes: out,
      goal: {
        what: "200 sessions ÷ 1 session, per call: p50, workerd CPU, bytes written",
        goal: `≤ ${SCALE_GOAL} each`,
        s200_p50: s200.p50_vs_s1.median,
        s200_cpu: s200.cpu_vs_s1?.median ?? null,
        s200_bytes: bytesRatio,
        met: s200.p50_vs_s1.median <= SCALE_GOAL && (s200.cpu_vs_s1?.median ?? 0) <= SCALE_GOAL && bytesRatio <= SCALE_GOAL,
      },
    };
    writeFileSync("bench/inbox-scale.json", `${JSON.stringify(res, null, 2)}\n`);
    log(`inbox-scale: 200 sessions vs 1: p50 ${res.goal.s200_p50}×, CPU ${res.goal.s200_cpu ?? "n/a"}×, bytes written ${bytesRatio}× [goal ≤ ${SCALE_GOAL}]`);
    return res;
  } finally {
    for (const l of Object.values(live)) l.close();
    await relay.stop();
    for (const d of ["bench/.tmp/inbox-scale-relay", "bench/.tmp/state-inbox-scale"]) rmSync(d, { recursive: true, force: true });
  }
}
