// `npm run bench -- --ab [dir] [dir2]`: an A/B of two relay versions in interleaved rounds, with the durable
// floor alongside: `dir` (default bench/.tmp/relay-before, a snapshot made with snapshotRelay before a change)
// against `dir2` (default: a fresh snapshot of the work tree). Prints p50, calls/s (64 in flight) and CPU µs per call of each
// runtime workerd, as medians over the rounds. How the optimizations in docs/benchmarks.md were measured.
import { rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { baselinePair, createSession, relayPair, type Pair } from "./clients.js";
import { latencyRounds, log, openSystems, RELAY_VARS, saturate } from "./harness.js";
import { cpuMsOf, snapshotRelay, startWrangler, workerdOf, type Proc } from "./proc.js";
import { median, roundRatio, type RoundRatio } from "./stats.js";

type AB = "before" | "after" | "durable";

/** bench/ab.json: the last A/B (docs/benchmarks.md shows it). */
export interface AbResults {
  generated_at: string;
  before: string;
  after: string;
  load_avg_1m: number[];
  figures: Record<AB, { p50_ms: number; calls_per_s: number; cpu_us_per_call: number }>;
  after_vs_before: { p50: RoundRatio; throughput: RoundRatio };
  vs_durable: Record<"before" | "after", { p50: RoundRatio; throughput: RoundRatio }>;
}

export async function runAb(dir = "bench/.tmp/relay-before", dir2?: string): Promise<void> {
  const procs: Proc[] = [];
  const loads = [loadavg()[0]!];
  try {
    for (const d of ["before", "after", "floor"]) rmSync(`bench/.tmp/state-ab-${d}`, { recursive: true, force: true });
    const [before, after, floor] = await Promise.all([
      startWrangler({ config: `${dir}/wrangler.toml`, vars: RELAY_VARS, persistTo: "bench/.tmp/state-ab-before" }),
      startWrangler({
        config: dir2 ? `${dir2}/wrangler.toml` : snapshotRelay("bench/.tmp/relay-after"),
        vars: RELAY_VARS,
        persistTo: "bench/.tmp/state-ab-after",
      }),
      startWrangler({ config: "bench/baseline-do/wrangler.toml", persistTo: "bench/.tmp/state-ab-floor" }),
    ]);
    procs.push(before, after, floor);
    const pid: Record<AB, number | undefined> = {
      before: workerdOf(before.proc.pid!).runtime,
      after: workerdOf(after.proc.pid!).runtime,
      durable: workerdOf(floor.proc.pid!).runtime,
    };
    const [sb, sa] = await Promise.all([createSession(before.url, "ab"), createSession(after.url, "ab")]);
    const open: Record<AB, (tag: string) => Promise<Pair>> = {
      before: (tag) => relayPair(sb, 1, `b${tag}`),
      after: (tag) => relayPair(sa, 1, `a${tag}`),
      durable: (tag) => baselinePair(floor.url, `ab${tag}`, { durable: true }),
    };
    const sys = await openSystems(open);
    const order: AB[] = ["before", "after", "durable"];
    const rounds = Number(process.env.AB_ROUNDS ?? 6);
    const lat = await latencyRounds(sys, order, Number(process.env.AB_CALLS ?? 1200), rounds);
    const tput: Record<AB, number[]> = { before: [], after: [], durable: [] };
    const cpu: Record<AB, { ms: number; n: number }> = { before: { ms: 0, n: 0 }, after: { ms: 0, n: 0 }, durable: { ms: 0, n: 0 } };
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < order.length; k++) {
        const s = order[(r + k) % order.length]!;
        const c0 = cpuMsOf(pid[s]);
        const got = await sys.robust(s, (a) => saturate(a, 64, Number(process.env.AB_SECONDS ?? 2)));
        const c1 = cpuMsOf(pid[s]);
        if (c0 !== null && c1 !== null) cpu[s].ms += c1 - c0;
        cpu[s].n += got.n;
        tput[s].push(Math.round(got.n / got.secs));
      }
      log(`throughput round ${r + 1}/${rounds}: ${order.map((s) => `${s} ${tput[s][r]}/s`).join(", ")}`);
    }
    sys.closeAll();
    loads.push(loadavg()[0]!);
    const p50 = (s: AB) => lat.perRound[s].map((d) => d.p50);
    const show = (x: { median: number; spread: [number, number] }) => `${x.median}× (${x.spread[0]}–${x.spread[1]})`;
    for (const s of order) {
      log(`${s.padEnd(8)} p50 ${median(p50(s)).toFixed(2)} ms, ${median(tput[s])}/s, CPU ${Math.round((cpu[s].ms * 1000) / cpu[s].n)} µs/call`);
    }
    log(`after ÷ before: p50 ${show(roundRatio(p50("after"), p50("before")))}, throughput ${show(roundRatio(tput.after, tput.before))}`);
    log(
      `vs durable floor: before p50 ${show(roundRatio(p50("before"), p50("durable")))}, tput ${show(roundRatio(tput.before, tput.durable))}; after p50 ${show(roundRatio(p50("after"), p50("durable")))}, tput ${show(roundRatio(tput.after, tput.durable))}`,
    );
    log(`load average ${loads.map((l) => l.toFixed(2)).join(" → ")}`);
    const fig = (s: AB) => ({
      p50_ms: Math.round(median(p50(s)) * 1000) / 1000,
      calls_per_s: Math.round(median(tput[s])),
      cpu_us_per_call: Math.round((cpu[s].ms * 1000) / cpu[s].n),
    });
    const saved: AbResults = {
      generated_at: new Date().toISOString(),
      before: dir,
      after: dir2 ?? "work tree",
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      figures: { before: fig("before"), after: fig("after"), durable: fig("durable") },
      after_vs_before: { p50: roundRatio(p50("after"), p50("before")), throughput: roundRatio(tput.after, tput.before) },
      vs_durable: {
        before: { p50: roundRatio(p50("before"), p50("durable")), throughput: roundRatio(tput.before, tput.durable) },
        after: { p50: roundRatio(p50("after"), p50("durable")), throughput: roundRatio(tput.after, tput.durable) },
      },
    };
    writeFileSync(process.env.AB_OUT ?? "bench/ab.json", JSON.stringify(saved, null, 2) + "\n");
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
  }
}
