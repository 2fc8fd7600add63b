// The docs/benchmarks.md section of `npm run bench -- --direct` (bench/lib/direct.ts, issue 32).
import { fmt, rr, type Extra } from "./render-common.js";
import { DIRECT_LABEL } from "./direct-label.js";

export function directSection(x: Extra): string {
  const d = x.direct;
  if (!d) return "";
  const rows = (Object.keys(DIRECT_LABEL) as (keyof typeof DIRECT_LABEL)[])
    .map((w) => {
      const s = d.ways[w];
      return `| ${DIRECT_LABEL[w]} | ${fmt(s.p50)} | ${fmt(s.p95)} | ${fmt(s.min)}–${fmt(s.max)} |`;
    })
    .join("\n");
  return `## The direct path against the relay

_Measured by \`npm run bench -- --direct\` (bench/lib/direct.ts, also a step of \`npm run bench\`) on
${d.generated_at.slice(0, 16).replace("T", " ")} UTC, Node ${d.node}, ${d.rounds} interleaved rounds of ${d.calls_per_round} calls each way (the order
alternates each round); 1-minute load ${d.load_avg_1m.join(" → ")}; raw figures in [bench/direct.json](../bench/direct.json)._

One call (\`confirm\`) from the agent (the adapter library) to a device and its answer back, timed in the agent from
\`call()\` to the resolved answer. The device is a raw app socket plus a node-datachannel peer that offered the data
channel and checked the answer's bind, as the PWA does (docs/direct.md). Both paths are open in both ways; "via the
relay" answers only the relay's copy, "direct" answers the first copy on every open path (the PWA's rule) and the
agent keeps the first answer. The relay is the real Worker in workerd (\`wrangler dev\`) on this machine, and the
channel's candidates are on 127.0.0.1: this compares the paths' own costs, with no network in either. On a LAN the
direct path adds one Wi-Fi hop each way; the relay path adds the trip to the nearest Cloudflare location and back,
twice (agent → relay → phone, phone → relay → agent).

| path | p50 ms | p95 ms | min–max ms |
|---|---:|---:|---:|
${rows}

The relay's round trip takes ${rr(d.relay_vs_direct)} the direct path's (median of the per-round ratios of the medians,
spread). The load above is other jobs sharing the machine's 2 CPUs: it hits the relay path (two more processes,
workerd and wrangler's proxy, and the Durable Object's writes) far harder than the channel, whose two ends here
share the bench's own process — on a quiet machine the relay's figure is closer to its
[latency above](#latency-and-throughput), and the ratio smaller; the order of magnitude is the point.

`;
}
