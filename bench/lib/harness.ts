// What the bench's modes share (bench/run.ts, lib/profile.ts, lib/extras.ts): the log, the systems that
// reopen a dropped pair, interleaved latency rounds and a saturating load.
import type { Agent, Pair } from "./clients.js";
import { dist, type Dist } from "./stats.js";

export const WARMUP = 200;
// The per-connection rate limit (default 200 frames/s, burst 400) would cap one agent socket far below
// what is measured here; it is raised for the bench and the figure says so.
export const RELAY_VARS = { RATE_LIMIT_PER_S: "1000000", RATE_LIMIT_BURST: "1000000" };

const t0 = Date.now();
export const elapsedS = () => Math.round((Date.now() - t0) / 1000);
export const log = (s: string) => process.stderr.write(`[bench ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${s}\n`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The systems under test, reopened when a socket drops: `wrangler dev` reloads the Worker (dropping every
 * socket) whenever a source file changes, so a round that loses its socket is measured again on a new pair.
 */
export class Systems<S extends string> {
  readonly reopened = {} as Record<S, number>;
  /** What every agent asks (a reopened pair's agent too). */
  tool: Agent["tool"] = "calculator";
  private gen = 0;
  constructor(
    private readonly pairs: Record<S, Pair>,
    private readonly open: Record<S, (tag: string) => Promise<Pair>>,
  ) {
    for (const s of Object.keys(pairs) as S[]) this.reopened[s] = 0;
  }
  agent(s: S): Agent {
    return this.pairs[s].agent;
  }
  async robust<T>(s: S, f: (a: Agent) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const a = this.pairs[s].agent;
        a.tool = this.tool;
        return await f(a);
      } catch (e) {
        if (attempt >= 3) throw e;
        log(`${s}: ${(e as Error).message} — reopening (wrangler dev reloads on source changes) and repeating the round`);
        this.pairs[s].close();
        this.pairs[s] = await this.open[s](`r${++this.gen}`);
        this.reopened[s]++;
      }
    }
  }
  closeAll() {
    for (const p of Object.values(this.pairs) as Pair[]) p.close();
  }
}

/** Opens every system's first pair. */
export async function openSystems<S extends string>(open: Record<S, (tag: string) => Promise<Pair>>): Promise<Systems<S>> {
  const names = Object.keys(open) as S[];
  const pairs = await Promise.all(names.map((s) => open[s]("0")));
  return new Systems(Object.fromEntries(names.map((s, i) => [s, pairs[i]!])) as Record<S, Pair>, open);
}

/** One latency chunk per system per round, rotating who goes first; every sample, and each round's figures. */
export async function latencyRounds<S extends string>(
  sys: Systems<S>,
  order: S[],
  calls: number,
  rounds: number,
): Promise<{ all: Record<S, number[]>; perRound: Record<S, Dist[]> }> {
  const all = {} as Record<S, number[]>;
  const perRound = {} as Record<S, Dist[]>;
  for (const s of order) {
    all[s] = [];
    perRound[s] = [];
    await sys.robust(s, async (a) => {
      for (let i = 0; i < WARMUP; i++) await a.call();
    });
  }
  const per = Math.ceil(calls / rounds);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < order.length; k++) {
      const s = order[(r + k) % order.length]!;
      const chunk = await sys.robust(s, async (a) => {
        const xs: number[] = [];
        for (let i = 0; i < per; i++) xs.push(await a.call());
        return xs;
      });
      all[s].push(...chunk);
      perRound[s].push(dist(chunk));
    }
    log(`latency: round ${r + 1}/${rounds}: p50 ${order.map((s) => `${s} ${perRound[s][r]!.p50.toFixed(2)}`).join(", ")} ms`);
  }
  return { all, perRound };
}

/** `inFlight` calls kept in flight for `secs` on one agent: calls made, seconds taken. */
export async function saturate(a: Agent, inFlight: number, secs: number): Promise<{ n: number; secs: number }> {
  let n = 0;
  const start = performance.now();
  const end = start + secs * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await a.call();
        n++;
      }
    }),
  );
  return { n, secs: (performance.now() - start) / 1000 };
}
