// Percentiles and the compact latency distribution stored in results.json (and drawn in the SVG).

export interface Dist {
  n: number;
  min: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** Latency (ms) at percentile 0, 1, …, 99, then 99.5, 99.9, 100 — enough to draw the CDF. */
  cdf: [number, number][];
}

/** The `q`-quantile (0…1) of sorted values, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

export function dist(samples: readonly number[]): Dist {
  const s = [...samples].sort((a, b) => a - b);
  const cdf: [number, number][] = [];
  for (let p = 0; p <= 99; p++) cdf.push([p, r3(p === 0 ? s[0]! : quantile(s, p / 100))]);
  for (const p of [99.5, 99.9, 100]) cdf.push([p, r3(quantile(s, p / 100))]);
  return {
    n: s.length,
    min: r3(s[0]!),
    mean: r3(s.reduce((a, b) => a + b, 0) / s.length),
    p50: r3(quantile(s, 0.5)),
    p95: r3(quantile(s, 0.95)),
    p99: r3(quantile(s, 0.99)),
    max: r3(s[s.length - 1]!),
    cdf,
  };
}

export const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

/** A ratio measured once per interleaved round: its median (what the goals are judged on) and spread. */
export interface RoundRatio {
  median: number;
  /** Lowest and highest per-round ratio. */
  spread: [number, number];
  rounds: number[];
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Per-round `a[i] / b[i]`, summarized. */
export function roundRatio(a: readonly number[], b: readonly number[]): RoundRatio {
  const rounds = a.map((x, i) => ratio(x, b[i]!));
  return { median: ratio(median(rounds), 1), spread: [Math.min(...rounds), Math.max(...rounds)], rounds };
}
