// `npm run bench -- --profile` (or BENCH_PROFILE=1): a CPU profile of the relay's frame path in workerd.
// `wrangler dev --inspector-port` serves the DevTools protocol (targets at http://127.0.0.1:<port>/json);
// the profiler is started over that WebSocket while one session carries calls with 64 in flight, and
// stopped after PROFILE_S seconds. Writes bench/relay.cpuprofile (open it in Chrome DevTools or
// speedscope) and prints the top self-time functions, the inclusive time of the frame path's parts per
// call, and the statements, commits and alarm writes per call (bench/lib/count.ts).
import { rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import WebSocket from "ws";
import { startFakePush } from "../../test/helpers/fake-push-server.js";
import { baselinePair, createSession, relayPair, type Pair } from "./clients.js";
import { inboxPair, inboxSocket, setupInbox } from "./inbox-clients.js";
import { countPerCall, type CallCount } from "./count.js";
import { log, RELAY_VARS, saturate } from "./harness.js";
import { snapshotRelay, startWrangler, type Proc } from "./proc.js";

const PROFILE_S = Number(process.env.PROFILE_S ?? 10);
const OUT = process.env.PROFILE_OUT ?? "bench/relay.cpuprofile";

interface CallFrame {
  functionName: string;
  scriptId?: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** A minimal DevTools-protocol client: one request at a time is all the profiler needs. */
export class Cdp {
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (d) => {
      const m = JSON.parse(d.toString()) as { id?: number; result?: unknown; error?: { message: string } };
      const w = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id!);
      if (m.error) w.reject(new Error(m.error.message));
      else w.resolve(m.result);
    });
  }
  static async connect(inspectorPort: number): Promise<Cdp> {
    const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { webSocketDebuggerUrl: string; title: string }[];
    const t = targets[0];
    if (!t) throw new Error("the inspector lists no target");
    const ws = new WebSocket(t.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return new Cdp(ws);
  }
  send<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: (v) => resolve(v as T), reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }
  close() {
    this.ws.close();
  }
}

/**
 * Which source module a bundle line belongs to: esbuild's unminified bundles (what wrangler dev runs) mark
 * each module with a `// path/to/module.ts` comment line. `sources`: script id → source text.
 */
function moduleMap(sources: Map<string, string>): (f: CallFrame & { scriptId?: string }) => string {
  const maps = new Map<string, { line: number; mod: string }[]>();
  for (const [id, text] of sources) {
    const marks: { line: number; mod: string }[] = [];
    text.split("\n").forEach((l, i) => {
      const m = /^\/\/ (\S+\.(?:ts|js|mjs|cjs))$/.exec(l);
      if (m) marks.push({ line: i, mod: m[1]!.replace(/^(\.\.\/)+/, "").replace(/^.*node_modules\//, "node_modules/") });
    });
    maps.set(id, marks);
  }
  return (f) => {
    const marks = maps.get(f.scriptId ?? "") ?? [];
    let mod = f.url ? (f.url.split("/").pop() ?? f.url) : "(native)";
    for (const m of marks) {
      if (m.line > f.lineNumber) break;
      mod = m.mod;
    }
    return mod;
  };
}

export interface SavedProfile {
  generated_at: string;
  seconds: number;
  calls_per_s: number;
  load_avg_1m: number;
  summary: ProfileSummary;
  storage_per_call: CallCount;
}

export interface ProfileSummary {
  total_ms: number;
  calls: number;
  top_self: { fn: string; where: string; self_ms: number; self_pct: number; us_per_call: number }[];
  inclusive: { part: string; ms: number; pct: number; us_per_call: number }[];
  by_module: { module: string; self_ms: number; pct: number }[];
}

/** The frame path's parts, by the function names that head them (inclusive time: each sample counted once). */
const PARTS: { part: string; fns: string[] }[] = [
  { part: "webSocketMessage (the whole frame event)", fns: ["webSocketMessage"] },
  { part: "decodeFrame (size, JSON.parse, depth, zod)", fns: ["decodeFrame"] },
  { part: "  zod (frame schema safeParse)", fns: ["parseFrameValue"] },
  { part: "router.handle (the rules)", fns: ["handle"] },
  { part: "  registrations() (SQL + JSON.parse of the tools)", fns: ["registrations"] },
  { part: "  checkArguments (JSON Schema)", fns: ["checkArguments"] },
  { part: "  canonicalJson + fingerprintHash (duplicate-call rule)", fns: ["canonicalJson", "fingerprintHash"] },
  { part: "sockets: peers() (getWebSockets + deserializeAttachment)", fns: ["peers"] },
  { part: "  deserializeAttachment", fns: ["deserializeAttachment"] },
  { part: "  getWebSockets (any caller)", fns: ["getWebSockets"] },
  { part: "flush (JSON.stringify + send)", fns: ["flush"] },
  { part: "SQLite: exec (every statement)", fns: ["exec"] },
  { part: "transactionSync", fns: ["transactionSync"] },
  { part: "syncAlarm (nextDue + setAlarm)", fns: ["syncAlarm"] },
  { part: "  setAlarm", fns: ["setAlarm"] },
  { part: "JSON.parse (any caller)", fns: ["parse"] },
  { part: "JSON.stringify (any caller)", fns: ["stringify"] },
  { part: "report (inbox sessions only)", fns: ["report", "summarize"] },
  { part: "(garbage collector)", fns: ["(garbage collector)"] },
  { part: "(program) (native work outside JS frames)", fns: ["(program)"] },
  { part: "(idle)", fns: ["(idle)"] },
];

export function summarize(profile: CpuProfile, calls: number, sources = new Map<string, string>(), top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const total = (profile.endTime - profile.startTime) / 1000;
  // Each sample lasts until the next one (the last: the mean interval).
  const mean = samples.length ? (profile.endTime - profile.startTime) / samples.length : 0;
  const dur = (i: number) => (i + 1 < deltas.length ? deltas[i + 1]! : mean) / 1000;
  const modOf = moduleMap(sources);
  const self = new Map<string, { fn: string; where: string; ms: number }>();
  const mods = new Map<string, number>();
  const incl = new Map<string, number>();
  for (let i = 0; i < samples.length; i++) {
    const n = byId.get(samples[i]!);
    if (!n) continue;
    const ms = dur(i);
    const f = n.callFrame;
    const fn = f.functionName || "(anonymous)";
    const mod = modOf(f);
    const key = `${fn}|${f.url}|${f.lineNumber}`;
    // The module, and the line in wrangler's bundle (not in the source file) to tell functions apart.
    const e = self.get(key) ?? { fn, where: f.url ? `${mod} (bundle line ${f.lineNumber + 1})` : mod, ms: 0 };
    e.ms += ms;
    self.set(key, e);
    mods.set(mod, (mods.get(mod) ?? 0) + ms);
    const seen = new Set<string>();
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const name = byId.get(id)?.callFrame.functionName ?? "";
      if (!seen.has(name)) {
        seen.add(name);
        incl.set(name, (incl.get(name) ?? 0) + ms);
      }
    }
  }
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const per = (ms: number) => (calls ? Math.round((ms * 1000) / calls) : 0);
  return {
    total_ms: Math.round(total),
    calls,
    top_self: [...self.values()]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top)
      .map((e) => ({ fn: e.fn, where: e.where, self_ms: r2(e.ms), self_pct: r2((100 * e.ms) / total), us_per_call: per(e.ms) })),
    inclusive: PARTS.map((p) => {
      // Inclusive over several names: the larger one stands for the part (they rarely nest in each other).
      const ms = Math.max(...p.fns.map((f) => incl.get(f) ?? 0));
      return { part: p.part, ms: r2(ms), pct: r2((100 * ms) / total), us_per_call: per(ms) };
    }),
    by_module: [...mods.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([module, ms]) => ({ module, self_ms: r2(ms), pct: r2((100 * ms) / total) })),
  };
}

export function printSummary(s: ProfileSummary): void {
  const out = process.stdout;
  out.write(
    `\nCPU profile: ${s.total_ms} ms sampled, ${s.calls} calls (${s.calls ? Math.round((s.total_ms * 1000) / s.calls) : 0} µs of profile per call)\n\n`,
  );
  out.write(`top self time\n${"function".padEnd(34)} ${"where".padEnd(44)} ${"ms".padStart(8)} ${"%".padStart(6)} ${"µs/call".padStart(8)}\n`);
  for (const t of s.top_self)
    out.write(
      `${t.fn.slice(0, 34).padEnd(34)} ${t.where.slice(-44).padEnd(44)} ${t.self_ms.toFixed(1).padStart(8)} ${t.self_pct.toFixed(1).padStart(6)} ${String(t.us_per_call).padStart(8)}\n`,
    );
  out.write(`\nframe path, inclusive\n`);
  for (const p of s.inclusive)
    out.write(`${p.part.padEnd(60)} ${p.ms.toFixed(1).padStart(8)} ms ${p.pct.toFixed(1).padStart(6)} % ${String(p.us_per_call).padStart(6)} µs/call\n`);
  out.write(`\nself time by module\n`);
  for (const m of s.by_module) out.write(`${m.module.padEnd(60)} ${m.self_ms.toFixed(1).padStart(8)} ms ${m.pct.toFixed(1).padStart(6)} %\n`);
}

export async function runProfile(): Promise<void> {
  let relay: Proc | undefined;
  try {
    rmSync("bench/.tmp/state-profile", { recursive: true, force: true });
    // PROFILE_TARGET=durable profiles the durable floor instead: what the platform costs on its own.
    const floor = process.env.PROFILE_TARGET === "durable";
    relay = await startWrangler({
      config: floor ? "bench/baseline-do/wrangler.toml" : snapshotRelay("bench/.tmp/profile-snapshot"),
      vars: RELAY_VARS,
      persistTo: "bench/.tmp/state-profile",
    });
    // PROFILE_TARGET=inbox profiles a session of an inbox (a paired device's socket answering, a push subscription
    // at a local fake push service, the device's inbox socket open): the path people use (bench/lib/inbox-path.ts).
    const inbox = process.env.PROFILE_TARGET === "inbox";
    const fakePush = inbox ? await startFakePush() : undefined;
    let pair: Pair;
    if (floor) pair = await baselinePair(relay.url, "prof", { durable: true });
    else if (fakePush) {
      const setup = await setupInbox(relay.url, fakePush.fake, "profile");
      const live = await inboxSocket(relay.url, setup.device.device_credential);
      const p = await inboxPair(setup.session, setup.device, "prof");
      pair = {
        ...p,
        close: () => {
          p.close();
          live.ws.close();
          void fakePush.close();
        },
      };
    } else pair = await relayPair(await createSession(relay.url, "profile"), 1, "prof");
    log(`relay ${relay.url}, inspector ${relay.inspector}; warming up`);
    await saturate(pair.agent, 64, 3);
    const cdp = await Cdp.connect(relay.inspector!);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: Number(process.env.PROFILE_INTERVAL_US ?? 200) });
    await cdp.send("Profiler.start");
    log(`profiling ${PROFILE_S} s with 64 calls in flight`);
    const got = await saturate(pair.agent, 64, PROFILE_S);
    const { profile } = await cdp.send<{ profile: CpuProfile }>("Profiler.stop");
    // The bundle's text, to name the module of each line (wrangler deletes its bundle on exit).
    const sources = new Map<string, string>();
    await cdp.send("Debugger.enable").catch(() => undefined);
    for (const id of new Set(profile.nodes.map((n) => n.callFrame.scriptId).filter((x): x is string => !!x && x !== "0"))) {
      const src = await cdp.send<{ scriptSource: string }>("Debugger.getScriptSource", { scriptId: id }).catch(() => undefined);
      if (src) sources.set(id, src.scriptSource);
    }
    cdp.close();
    pair.close();
    writeFileSync(OUT, JSON.stringify(profile));
    log(`${got.n} calls (${Math.round(got.n / got.secs)}/s); wrote ${OUT}`);
    const summary = summarize(profile, got.n, sources);
    printSummary(summary);
    if (floor || inbox) return;
    const c = await countPerCall();
    process.stdout.write(`\nper call (bench/lib/count.ts: the same engine and SqlStore over node:sqlite)\n`);
    for (const [k, e] of Object.entries(c))
      process.stdout.write(
        `${k.padEnd(12)} statements ${e.statements} (reads ${e.reads}, writes ${e.writes}), commits ${e.commits}, alarm writes ${e.alarm_writes}, frames out ${e.frames_out}\n`,
      );
    // The summary (not the profile itself) is small enough to keep: docs/benchmarks.md renders it.
    const saved: SavedProfile = {
      generated_at: new Date().toISOString(),
      seconds: PROFILE_S,
      calls_per_s: Math.round(got.n / got.secs),
      load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
      summary,
      storage_per_call: c,
    };
    writeFileSync("bench/profile.json", JSON.stringify(saved, null, 2) + "\n");
    log("wrote bench/profile.json (the summary docs/benchmarks.md shows)");
  } finally {
    await relay?.stop();
  }
}
