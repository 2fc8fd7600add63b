// `npm run bench -- --extras`: what each write the relay's contract forces beyond the durable floor costs,
// measured on the floor itself (bench/baseline-do/worker.js `?extra=`): the plain floor and the floor plus
// one extra at a time, in interleaved rounds like the main bench, with the CPU per call of its workerd.
// Writes bench/extras.json (rendered into docs/benchmarks.md by the next `npm run bench`).
import { rmSync, writeFileSync } from "node:fs";
import { baselinePair, type Pair } from "./clients.js";
import { latencyRounds, log, openSystems, saturate } from "./harness.js";
import { cpuMsOf, startWrangler, workerdOf, type Proc } from "./proc.js";
import { median, ratio, roundRatio, type RoundRatio } from "./stats.js";

export const EXTRAS = {
  floor: "",
  dup: "dup",
  check: "check",
  deliv: "deliv",
  alarm: "alarm",
  all: "dup,check,deliv,alarm",
} as const;
export type Extra = keyof typeof EXTRAS;

export interface ExtrasResults {
  generated_at: string;
  load_avg_1m: number[];
  /** Per variant: p50 ms per round, calls/s per round (64 in flight), CPU µs per call of the floor's workerd. */
  variants: Record<Extra, { p50_ms: number; p50_vs_floor: RoundRatio; calls_per_s: number; tput_vs_floor: RoundRatio; cpu_us_per_call: number | null }>;
}

const CALLS = Number(process.env.EXTRAS_CALLS ?? 1000);
const ROUNDS = 6;
const TPUT_S = Number(process.env.EXTRAS_SECONDS ?? 1.5);

export async function runExtras(): Promise<void> {
  let floor: Proc | undefined;
  const { loadavg } = await import("node:os");
  const loads: number[] = [loadavg()[0]!];
  try {
    rmSync("bench/.tmp/state-extras", { recursive: true, force: true });
    floor = await startWrangler({ config: "bench/baseline-do/wrangler.toml", persistTo: "bench/.tmp/state-extras" });
    const pid = workerdOf(floor.proc.pid!).runtime;
    const names = Object.keys(EXTRAS) as Extra[];
    const open = Object.fromEntries(
      names.map((x) => [x, (tag: string) => baselinePair(floor!.url, `x-${x}-${tag}`, { durable: true, extra: EXTRAS[x] })]),
    ) as Record<Extra, (tag: string) => Promise<Pair>>;
    const sys = await openSystems(open);
    const lat = await latencyRounds(sys, names, CALLS, ROUNDS);
    loads.push(loadavg()[0]!);
    const tput = Object.fromEntries(names.map((x) => [x, [] as number[]])) as Record<Extra, number[]>;
    const cpu = Object.fromEntries(names.map((x) => [x, { ms: 0, calls: 0 }])) as Record<Extra, { ms: number; calls: number }>;
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const x = names[(r + k) % names.length]!;
        const c0 = cpuMsOf(pid);
        const got = await sys.robust(x, (a) => saturate(a, 64, TPUT_S));
        const c1 = cpuMsOf(pid);
        if (c0 !== null && c1 !== null) cpu[x].ms += c1 - c0;
        cpu[x].calls += got.n;
        tput[x].push(Math.round(got.n / got.secs));
      }
      log(`extras throughput: round ${r + 1}/${ROUNDS}: ${names.map((x) => `${x} ${tput[x][r]}/s`).join(", ")}`);
    }
    sys.closeAll();
    loads.push(loadavg()[0]!);
    const p50 = (x: Extra) => lat.perRound[x].map((d) => d.p50);
    const out: ExtrasResults = {
      generated_at: new Date().toISOString(),
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      variants: Object.fromEntries(
        names.map((x) => [
          x,
          {
            p50_ms: Math.round(median(p50(x)) * 1000) / 1000,
            p50_vs_floor: roundRatio(p50(x), p50("floor")),
            calls_per_s: Math.round(median(tput[x])),
            tput_vs_floor: roundRatio(tput[x], tput.floor),
            cpu_us_per_call: pid === undefined ? null : Math.round((cpu[x].ms * 1000) / cpu[x].calls),
          },
        ]),
      ) as ExtrasResults["variants"],
    };
    writeFileSync("bench/extras.json", JSON.stringify(out, null, 2) + "\n");
    for (const x of names) {
      const v = out.variants[x];
      log(
        `${x.padEnd(6)} p50 ${v.p50_ms} ms (${v.p50_vs_floor.median}× floor), ${v.calls_per_s}/s (${v.tput_vs_floor.median}×), CPU ${v.cpu_us_per_call} µs/call`,
      );
    }
    void ratio;
  } finally {
    await floor?.stop();
  }
}
