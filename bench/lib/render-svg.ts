// docs/bench-latency.svg: a hand-written SVG of the latency CDF of the systems on a log axis.
import { COLOR, esc, fmt, LABEL, SYSTEMS } from "./render-common.js";
import type { Results } from "./results.js";

export function renderSvg(r: Results): string {
  const W = 640,
    H = 420,
    L = 56,
    R = 16,
    T = 28,
    B = 126;
  const pts = SYSTEMS.flatMap((s) => r.latency[s].cdf.filter(([p]) => p <= 99.9).map(([, ms]) => ms));
  const lo = Math.max(0.01, Math.min(...pts));
  const hi = Math.max(...pts);
  const x0 = Math.floor(Math.log10(lo) * 2) / 2;
  const x1 = Math.ceil(Math.log10(hi) * 2) / 2;
  const X = (ms: number) => L + ((Math.log10(Math.max(ms, lo)) - x0) / (x1 - x0)) * (W - L - R);
  const Y = (p: number) => T + (1 - p / 100) * (H - T - B);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(
    `<text x="${L}" y="16" font-size="13" font-weight="600">tool.call → tool.result round trip, one call in flight (CDF, ${r.config.latency_calls} calls each)</text>`,
  );
  // Grid: decades and their 2× / 5× steps on x, every 25 % on y.
  for (let e = Math.floor(x0); e <= Math.ceil(x1); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      const lv = Math.log10(v);
      if (lv < x0 - 1e-9 || lv > x1 + 1e-9) continue;
      const x = X(v).toFixed(1);
      out.push(`<line x1="${x}" y1="${T}" x2="${x}" y2="${H - B}" stroke="${m === 1 ? "#ccc" : "#eee"}"/>`);
      out.push(`<text x="${x}" y="${H - B + 14}" text-anchor="middle" fill="#555">${v >= 1 ? v : v.toPrecision(1)}</text>`);
    }
  }
  for (const p of [0, 25, 50, 75, 90, 99]) {
    const y = Y(p).toFixed(1);
    out.push(`<line x1="${L}" y1="${y}" x2="${W - R}" y2="${y}" stroke="${p === 50 || p === 99 ? "#ccc" : "#eee"}"/>`);
    out.push(`<text x="${L - 6}" y="${(Y(p) + 4).toFixed(1)}" text-anchor="end" fill="#555">${p}%</text>`);
  }
  out.push(`<text x="${(L + W - R) / 2}" y="${H - B + 30}" text-anchor="middle" fill="#333">latency, ms (log scale)</text>`);
  out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#999"/>`);
  for (const s of SYSTEMS) {
    const line = r.latency[s].cdf
      .filter(([p]) => p <= 99.9)
      .map(([p, ms]) => `${X(ms).toFixed(1)},${Y(p).toFixed(1)}`)
      .join(" ");
    out.push(`<polyline fill="none" stroke="${COLOR[s]}" stroke-width="2" points="${line}"/>`);
  }
  SYSTEMS.forEach((s, i) => {
    // Under the plot, so no curve is hidden.
    const x = L + 10;
    const y = H - B + 52 + i * 16;
    out.push(`<line x1="${x}" y1="${y - 4}" x2="${x + 20}" y2="${y - 4}" stroke="${COLOR[s]}" stroke-width="3"/>`);
    out.push(`<text x="${x + 26}" y="${y}">${esc(LABEL[s])} — p50 ${fmt(r.latency[s].p50)} ms, p99 ${fmt(r.latency[s].p99)} ms</text>`);
  });
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
