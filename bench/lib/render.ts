// Renders bench/results.json as docs/benchmarks.md (tables and the analysis around them) and
// docs/bench-latency.svg (a hand-written SVG: the latency CDF of the systems on a log axis). The profile
// (bench/profile.json, `--profile`), the extras (bench/extras.json, `--extras`) and the last A/B
// (bench/ab.json, `--ab`) are shown when present. Re-run `npm run bench` to refresh the page.
import { existsSync, readFileSync } from "node:fs";
import type { AbResults } from "./ab.js";
import type { SystemName } from "./clients.js";
import type { EventCount } from "./count.js";
import type { ExtrasResults } from "./extras.js";
import type { SavedProfile } from "./profile.js";
import type { Results } from "./results.js";
import type { RoundRatio } from "./stats.js";

const LABEL: Record<SystemName, string> = {
  relay: "LineUp relay",
  durable: "durable floor",
  durable_alarm: "durable floor + alarm writes",
  do: "bare Durable Object",
  node: "plain Node ws relay",
};
const COLOR: Record<SystemName, string> = { relay: "#d9480f", durable: "#7048e8", durable_alarm: "#ae3ec9", do: "#1971c2", node: "#2f9e44" };
const SYSTEMS: SystemName[] = ["relay", "durable", "durable_alarm", "do", "node"];

export interface Extra {
  profile?: SavedProfile;
  extras?: ExtrasResults;
  ab?: AbResults;
  /** The A/B of the relay with no alarm writes against the relay (bench/ab-noalarm.json), if measured. */
  abNoAlarm?: AbResults;
}

/** The side files of the other modes, when they exist. */
export function loadExtra(): Extra {
  const read = <T>(f: string): T | undefined => (existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as T) : undefined);
  const x: Extra = {};
  const profile = read<SavedProfile>("bench/profile.json");
  const extras = read<ExtrasResults>("bench/extras.json");
  const ab = read<AbResults>("bench/ab.json");
  const abNoAlarm = read<AbResults>("bench/ab-noalarm.json");
  if (profile) x.profile = profile;
  if (extras) x.extras = extras;
  if (ab) x.ab = ab;
  if (abNoAlarm) x.abNoAlarm = abNoAlarm;
  return x;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const mib = (kib: number | null) => (kib === null ? "n/a" : `${(kib / 1024).toFixed(0)} MiB`);
const kib = (k: number | null) => (k === null ? "n/a" : `${k} KiB`);
const rr = (x: RoundRatio) => `**${x.median}×** (${x.spread[0]}–${x.spread[1]})`;
const us = (x: number | null) => (x === null ? "n/a" : `${x} µs`);

export function renderSvg(r: Results): string {
  const W = 640, H = 420, L = 56, R = 16, T = 28, B = 126;
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
  out.push(`<text x="${L}" y="16" font-size="13" font-weight="600">tool.call → tool.result round trip, one call in flight (CDF, ${r.config.latency_calls} calls each)</text>`);
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

// ------------------------------------------------------------------ pricing (cited in the cost model)

/** Workers and Durable Objects list prices as published (see the links in the cost model). */
const PRICE = {
  doRequestsFreePerDay: 100_000,
  doRequestsPaidPerMonth: 1_000_000,
  doRequestsPerMillion: 0.15,
  doGbsFreePerDay: 13_000,
  doGbsPaidPerMonth: 400_000,
  doGbsPerMillion: 12.5,
  doMemoryGb: 0.128,
  wsMessagesPerRequest: 20,
  rowsWrittenFreePerDay: 100_000,
  rowsWrittenPaidPerMonth: 50_000_000,
  rowsWrittenPerMillion: 1.0,
  rowsReadFreePerDay: 5_000_000,
  rowsReadPaidPerMonth: 25_000_000_000,
  workerRequestsFreePerDay: 100_000,
  workerRequestsPaidPerMonth: 10_000_000,
};

function costModel(r: Results, x: Extra): string {
  const c = r.storage_per_call.per_call;
  // Rows written: every write statement of a call touches one row (insert, update, delete of one call or
  // delivery), and each setAlarm() is billed as one row written.
  const rowsWritten = c.writes + c.alarm_writes;
  const rowsRead = c.reads; // ~1 row per read here (primary-key lookups, one registration, MIN over an index)
  const incoming = 3; // tool.call, tool.result, tool.ack
  const requests = incoming / PRICE.wsMessagesPerRequest;
  const activeMs = (r.cpu.relay.us_per_call ?? 0) / 1000;
  const gbs = (activeMs / 1000) * PRICE.doMemoryGb;
  const perDay = (limit: number, per: number) => (per > 0 ? Math.floor(limit / per) : Infinity);
  const freeLimits = [
    { what: "rows written", calls: perDay(PRICE.rowsWrittenFreePerDay, rowsWritten) },
    { what: "DO requests", calls: perDay(PRICE.doRequestsFreePerDay, requests) },
    { what: "DO duration", calls: perDay(PRICE.doGbsFreePerDay, gbs) },
    { what: "rows read", calls: perDay(PRICE.rowsReadFreePerDay, rowsRead) },
  ].sort((a, b) => a.calls - b.calls);
  const paidIncluded = [
    { what: "DO requests (1 million/month included)", calls: perDay(PRICE.doRequestsPaidPerMonth / 30, requests) },
    { what: "rows written (50 million/month included)", calls: perDay(PRICE.rowsWrittenPaidPerMonth / 30, rowsWritten) },
    { what: "DO duration (400,000 GB-s/month included)", calls: perDay(PRICE.doGbsPaidPerMonth / 30, gbs) },
  ].sort((a, b) => a.calls - b.calls);
  const perMillion = rowsWritten * PRICE.rowsWrittenPerMillion + requests * PRICE.doRequestsPerMillion + gbs * PRICE.doGbsPerMillion;
  const n = (x: number) => Math.round(x).toLocaleString("en-US");
  return `## Cost model (Cloudflare list prices)

Prices as published by Cloudflare: [Durable Objects pricing](https://developers.cloudflare.com/durable-objects/platform/pricing/)
(requests: free ${n(PRICE.doRequestsFreePerDay)}/day, paid 1 million/month + $0.15/million, counting HTTP requests, RPC
sessions, incoming WebSocket messages at **20:1** and alarm invocations; no charge for outgoing messages or
protocol pings; auto-responses set with \`setWebSocketAutoResponse\` incur no wall-clock time. Duration: free
${n(PRICE.doGbsFreePerDay)} GB-s/day, paid 400,000 GB-s/month + $12.50/million GB-s, billed at 128 MB per object while it
runs or cannot hibernate, **not** while idle and hibernatable. SQLite storage: rows read free 5 million/day,
paid 25 billion/month + $0.001/million; rows written free 100,000/day, paid 50 million/month + $1.00/million,
**each \`setAlarm()\` billed as one row written**, deletes counted as rows written; stored data 5 GB free, paid
5 GB-month + $0.20/GB-month), and [Workers pricing](https://developers.cloudflare.com/workers/platform/pricing/)
(requests: free 100,000/day, paid 10 million/month + $0.30/million; a WebSocket connection is one request, its
messages are not). The Workers Paid plan is $5/month minimum.

**One call** (agent → relay → app → relay → agent, then the ack), from this run's counts (bench/lib/count.ts):

| | per call | how |
|---|---:|---|
| Durable Object requests | ${requests} | 3 incoming WebSocket messages (call, result, ack) at 20:1; the 2 outgoing frames are free |
| Worker requests | 0 | the sockets are already open; only connecting costs one |
| rows written | ${rowsWritten} | ${c.writes} SQL writes (${describe(r.storage_per_call)}) + ${c.alarm_writes} \`setAlarm()\` |
| rows read | ≈ ${rowsRead} | ${c.reads} read${c.reads === 1 ? "" : "s"}, each one row or one index probe |
| duration | ≈ ${gbs.toPrecision(2)} GB-s | 128 MB × the time the object is active per call, estimated as this run's CPU per call (${fmt(activeMs)} ms in local \`wrangler dev\`; between events a hibernatable object is not billed) |
| list price (paid, past the included amounts) | ≈ $${perMillion.toFixed(2)} per million calls | rows written dominate: $${(rowsWritten * PRICE.rowsWrittenPerMillion).toFixed(2)} of it |

What a plan carries per day, calls only (everything else idle):

| plan | calls per day | the limit that binds first |
|---|---:|---|
| Free | ${n(freeLimits[0]!.calls)} | ${freeLimits[0]!.what} (then ${freeLimits[1]!.what} at ${n(freeLimits[1]!.calls)}) |
| Paid, within the included amounts (a month ÷ 30) | ${n(paidIncluded[0]!.calls)} | ${paidIncluded[0]!.what}, then ${paidIncluded[1]!.what} at ${n(paidIncluded[1]!.calls)} |

The durable floor writes 3 rows per call (insert, update, delete); the relay writes ${rowsWritten}${rowsWritten > 3 ? `, so on the Free plan the
contract's extra writes (below) decide how many calls a day fit: ${n(perDay(PRICE.rowsWrittenFreePerDay, 3))} for the floor, ${n(freeLimits[0]!.calls)} for the relay.` : `: the contract's extra rules (below) ride on
those same writes, so both fit ${n(freeLimits[0]!.calls)} calls a day on the Free plan.`}

**An idle session with its sockets open** (an agent and an app connected, no calls) costs **nothing per hour**
in requests and duration: the heartbeat \`ping\` is answered by the runtime's auto-response without waking
the object (no request, no wall-clock time), and a hibernated object is not billed for duration. Its alarm
sits at the earliest due time — the session's expiry, a kept result's 24 h retention, a registration's 7-day
idle expiry — so it wakes a few times per session lifetime, not per hour; each wake is one request. Storage:
an empty SQLite database is about 12 KB, a session with its tables and a few kept rows some tens of KB
(5 GB free; $0.20/GB-month beyond 5 GB-month on Paid). Connecting a socket costs one Worker request and one
Durable Object request.

**How other traffic changes it:**

- **Presence** — a connect is one Worker request and one Durable Object request; it writes the client's cursor
  and its registration's last-seen time (2 rows, plus one update of each open call's row it catches up on, recording the delivery), and a
  disconnect writes the last-seen time (1 row). Each sends a \`presence\` frame to every other connected
  client (outgoing: free). A client that reconnects every few minutes costs more in rows written than an
  idle one costs in anything.
- **Chat** — a \`message\` is one incoming frame (1/20 request); it is kept in the history (1 row written, plus
  1 when the oldest of 200 is trimmed) and moves the cursor of every connected client (1 row each), so a
  message to a session with N connected clients writes about N + 1 rows. Delivery to the N clients is free.
- **History reads** — keeping a message also sums the history's bytes (its budget): up to 200 rows read per
  message, at $0.001 per million rows.
- **Push** (inbox sessions) — an inbox session tells its inbox when its waiting calls or agent presence change:
  one RPC (one Durable Object request, and the inbox's own 1-row write) per change, so about two per call a
  human answers (listed, then closed). Each notification is sent from the inbox's alarm (one request plus one
  row written for the alarm) and is an outgoing \`fetch\` to the browser's push service, during which the inbox
  object is awake and billed for duration (≈ 128 MB × the push service's response time, e.g. 0.1 s ≈ 0.013
  GB-s): the one per-call cost here that is wall-clock bound rather than per-row. Plain (v1) sessions make no
  reports: \`report()\` returns after reading the cached session meta (${reportShare(x)} of the profiled time).
`;
}

function describe(c: Results["storage_per_call"]): string {
  return `call ${c["tool.call"].writes}, result ${c["tool.result"].writes}, ack ${c["tool.ack"].writes}`;
}

function reportShare(x: Extra): string {
  const p = x.profile?.summary.inclusive.find((i) => i.part.startsWith("report"));
  return p ? `${p.pct}%` : "a negligible share";
}

function counts(r: Results): string {
  const c = r.storage_per_call;
  const row = (k: keyof typeof c, e: EventCount) => `| ${k} | ${e.statements} | ${e.reads} | ${e.writes} | ${e.commits} | ${e.alarm_writes} | ${e.frames_out} |`;
  return `| event | SQLite statements | reads | writes | commits | alarm writes | frames out |
|---|---:|---:|---:|---:|---:|---:|
${(["tool.call", "tool.result", "tool.ack", "per_call"] as const).map((k) => row(k, c[k])).join("\n")}
| durable floor, per call | 3 | 0 | 3 | 3 | 0 | 2 |`;
}

function profileSection(x: Extra): string {
  const p = x.profile;
  if (!p) return "_No profile recorded yet: run `npm run bench -- --profile` (writes bench/profile.json)._\n";
  const top = p.summary.top_self
    .slice(0, 14)
    .map((t) => `| \`${esc(t.fn)}\` | ${esc(t.where.replace(/ \(bundle line \d+\)$/, ""))} | ${t.self_pct}% | ${t.us_per_call} |`)
    .join("\n");
  const parts = p.summary.inclusive
    .filter((i) => i.ms > 0)
    .map((i) => `| ${esc(i.part.trim())}${i.part.startsWith("  ") ? " (within the row above)" : ""} | ${i.pct}% | ${i.us_per_call} |`)
    .join("\n");
  return `Profile of ${p.seconds} s with 64 calls in flight on one session (${p.calls_per_s} calls/s while profiled;
${p.generated_at.slice(0, 16).replace("T", " ")} UTC, load average ${p.load_avg_1m}). Percentages are of the sampled time of workerd's JS
thread; "µs/call" divides by the calls made and is inflated by the profiler and the load — read the columns
as proportions.

| top self time | where | % | µs/call |
|---|---|---:|---:|
${top}

| the frame path, inclusive | % | µs/call |
|---|---:|---:|
${parts}
`;
}

function extrasSection(x: Extra): string {
  const e = x.extras;
  if (!e) return "_Not measured yet: `npm run bench -- --extras` writes bench/extras.json._";
  const v = e.variants;
  const line = (k: keyof typeof v, what: string) => `| ${what} | ${v[k].p50_ms} ms | ${rr(v[k].p50_vs_floor)} | ${v[k].calls_per_s} | ${rr(v[k].tput_vs_floor)} | ${us(v[k].cpu_us_per_call)} |`;
  return `Measured on the durable floor itself (\`npm run bench -- --extras\`, ${e.generated_at.slice(0, 16).replace("T", " ")} UTC, load average
${e.load_avg_1m.join(" → ")}): the floor, and the floor plus one of the relay's extra writes at a time, in interleaved rounds.

| floor variant | p50 | p50 ÷ floor | calls/s | calls/s ÷ floor | CPU per call |
|---|---:|---:|---:|---:|---:|
${line("floor", "durable floor (insert, update, delete)")}
${line("dup", "+ the duplicate-call read before the insert")}
${line("check", "+ a second statement on the call (the old insert-then-mark-checked)")}
${line("deliv", "+ a delivery row per provider, cleared at the result (the relay's old deliveries table)")}
${line("alarm", "+ the alarm moved on call and on result")}
${line("all", "all of the above")}`;
}

function abSection(x: Extra): string {
  const a = x.ab;
  if (!a) return "";
  const f = a.figures;
  return `A/B of the frame path before and after these changes (\`npm run bench -- --ab\`: two relays and the durable floor
in interleaved rounds, ${a.generated_at.slice(0, 16).replace("T", " ")} UTC, load average ${a.load_avg_1m.join(" → ")}; before = ${esc(a.before)}, after = ${esc(a.after)}):

| | p50 | calls/s (64 in flight) | CPU per call | p50 ÷ durable floor | calls/s ÷ durable floor |
|---|---:|---:|---:|---:|---:|
| before | ${f.before.p50_ms} ms | ${f.before.calls_per_s} | ${f.before.cpu_us_per_call} µs | ${rr(a.vs_durable.before.p50)} | ${rr(a.vs_durable.before.throughput)} |
| after | ${f.after.p50_ms} ms | ${f.after.calls_per_s} | ${f.after.cpu_us_per_call} µs | ${rr(a.vs_durable.after.p50)} | ${rr(a.vs_durable.after.throughput)} |
| durable floor | ${f.durable.p50_ms} ms | ${f.durable.calls_per_s} | ${f.durable.cpu_us_per_call} µs | | |

After ÷ before: p50 ${rr(a.after_vs_before.p50)}, throughput ${rr(a.after_vs_before.throughput)}.
`;
}

export function renderMarkdown(r: Results, x: Extra = {}): string {
  const lat = SYSTEMS.map((s) => {
    const d = r.latency[s];
    return `| ${LABEL[s]} | ${fmt(d.p50)} | ${fmt(d.p95)} | ${fmt(d.p99)} | ${fmt(d.mean)} | ${fmt(d.max)} | ${r.throughput[s].calls_per_s.toLocaleString("en-US")} |`;
  }).join("\n");
  const rt = r.ratios;
  const g = r.goals;
  const vars = Object.entries(r.config.relay_vars).map(([k, v]) => `\`${k}=${v}\``).join(", ");
  const goalRow = (what: string, x: Results["goals"]["latency_p50_vs_durable"]) => `| ${what} | ${x.goal} | **${x.median}×** (${x.spread[0]}–${x.spread[1]}) | ${x.met ? "met" : "**not met**"} |`;
  const ratioRow = (what: string, x: Results["ratios"]["latency_p50"]) => `| ${what} | ${rr(x.vs_durable)} | ${rr(x.vs_durable_alarm)} | ${rr(x.vs_do)} | ${rr(x.vs_node)} |`;
  const scaleRow = (what: string, f: (s: Results["scale"]["relay"]) => string) => `| ${what} | ${f(r.scale.relay)} | ${f(r.scale.durable)} |`;
  const wk = r.wakeup;
  const wakeRow = (s: "relay" | "durable" | "do") => `| ${LABEL[s]} | ${wk[s].first_ms.map(fmt).join(", ")} | ${wk[s].warm_ms.map(fmt).join(", ")} | ${wk[s].ratio.join(", ")} |`;
  const la = r.load_avg_1m;
  return `# Benchmarks

_Generated by \`npm run bench\` (bench/run.ts) on ${r.generated_at.slice(0, 16).replace("T", " ")} UTC in ${r.total_s} s; raw figures in
[bench/results.json](../bench/results.json). Re-run to refresh this page (\`npx tsx bench/render-docs.ts\` re-renders it
from the JSON files)._

Machine: ${r.machine.cpus} × ${esc(r.machine.cpu_model)}, ${r.machine.mem_gib} GiB, ${r.machine.platform}, Node ${r.machine.node},
wrangler ${r.machine.wrangler}. **1-minute load average during the run: ${la.min}–${la.max} (mean ${la.mean}; ${la.start} at the
start, ${la.end} at the end)** on ${r.machine.cpus} CPUs shared by the client, the systems under test and whatever else the machine
ran (the load rises during a run: the bench itself keeps both CPUs busy). That is why every ratio below is taken **per interleaved round**
and reported as the median with its spread (lowest–highest round): a load spike hits all systems of a round
alike. Absolute figures are for comparison within one run, not capacity planning. \`wrangler dev\` puts a proxy
workerd in front of the runtime: the relay and the Durable Object baselines all pay for that hop, the Node
relay does not; none of this is the Cloudflare edge.

## Goals

| goal | target | this run: median (spread over rounds) | |
|---|---|---:|---|
${goalRow("p50 round trip, relay ÷ durable floor", g.latency_p50_vs_durable)}
${goalRow("throughput (64 in flight), relay ÷ durable floor", g.throughput_vs_durable)}
${goalRow("first call after hibernation ÷ a warm call (relay)", g.wakeup_vs_warm)}

Per connected session and per call, relay vs durable floor (the floor's figures in its own workerd, measured the same way):

| | relay | durable floor | relay ÷ floor |
|---|---:|---:|---:|
| workerd memory per connected session (3 sockets, one call made; (peak − before) ÷ ${r.scale.relay.sessions} in the scale step) | ${kib(r.scale.relay.per_session_kib)} | ${kib(r.scale.durable.per_session_kib)} | ${r.scale.per_session_relay_vs_durable ?? "n/a"}× |
| CPU per call (runtime workerd, /proc utime + stime over the throughput rounds ÷ calls) | ${us(r.cpu.relay.us_per_call)} | ${us(r.cpu.durable.us_per_call)} | ${r.cpu.relay_vs_durable ?? "n/a"}× |
| CPU per call of wrangler's proxy workerd in front (not the system's own) | ${us(r.cpu.relay.proxy_us_per_call)} | ${us(r.cpu.durable.proxy_us_per_call)} | |
| SQLite statements / commits / alarm writes per call | ${r.storage_per_call.per_call.statements} / ${r.storage_per_call.per_call.commits} / ${r.storage_per_call.per_call.alarm_writes} | 3 / 3 / 0 | |

**Where the gap was:** mostly the alarm. The floor plus only round 1's two alarm writes per call
(the \`durable floor + alarm writes\` system, same rounds) is already ${rr(r.alarm_vs_durable.latency_p50)} the floor's p50 and
${rr(r.alarm_vs_durable.throughput)} its throughput; the relay is ${rr(rt.latency_p50.vs_durable_alarm)} the p50 and ${rr(rt.throughput.vs_durable_alarm)} the throughput of *that*.
With one call in flight the earliest due time moves twice per call (to the new call's deadline, then back to
the session's expiry once it is answered). The relay now moves its alarm **only earlier**: an alarm left early
by an answered call fires, finds nothing due and re-arms (test/workerd/contract-deadlines.test.ts, "the alarm
is never later than the earliest due time"), so a steady stream of calls writes the alarm almost never — the
figures above are measured with that rule.

## What runs

- **LineUp relay** — this repository's Worker and \`Session\` Durable Object in local workerd (\`wrangler dev\`,
  SQLite storage in a private \`--persist-to\` directory), started with ${vars} so that the per-connection
  rate limit (default 200 frames/s) does not cap one agent socket. Clients are raw \`ws\` sockets speaking
  lineup/1: the agent sends \`tool.call\` (\`calculator\` / \`add\`, schema-checked by the relay), an app
  client answers at once, the agent gets \`tool.result\` and sends \`tool.ack\` (as the adapter does).
- **durable floor** (bench/baseline-do/ \`DurableRoom\`) — the bare object plus exactly the storage a relay that
  must not lose a call needs: one SQLite insert on \`tool.call\`, one update on \`tool.result\`, one delete on
  \`tool.ack\`, each in its own event and so its own commit, which gates the frames sent after it as in the
  relay. It parses each frame (\`JSON.parse\`) to know the call; it validates nothing and sets no alarm.
- **durable floor + alarm writes** — the same object with \`?extra=alarm\`: it also moves its alarm on each call
  and back on each result, the two alarm writes per call the relay makes. A reference, not a goal.
- **bare Durable Object** (bench/baseline-do/ \`Room\`) — the platform floor: hibernatable sockets, every frame
  forwarded verbatim, nothing parsed, stored or acked.
- **plain Node \`ws\` relay** (bench/baseline-node.ts) — what a user would write instead: nothing stored, no
  durability, no hibernation, no auth.

${reopenNote(r)}All carry the same \`tool.call\` / \`tool.result\` frames from the same client code, measured in the same run; the
two durable objects also get the agent's \`tool.ack\`.

## Latency and throughput

Round trip \`tool.call\` → \`tool.result\` with one call in flight (${r.config.warmup_calls} warm-up calls, then ${r.config.latency_calls} measured
in ${r.config.latency_rounds} interleaved rounds), and throughput with ${r.config.throughput_in_flight} calls in flight on one session for
${r.config.throughput_seconds} s (${r.config.throughput_rounds} interleaved rounds).

| system | p50 ms | p95 ms | p99 ms | mean ms | max ms | calls/s (${r.config.throughput_in_flight} in flight) |
|---|---:|---:|---:|---:|---:|---:|
${lat}

![latency CDF of the systems](bench-latency.svg)

**Ratios**, relay ÷ baseline, the median of the per-round ratios with their spread (latency: how many times
slower; throughput: the fraction of the baseline's calls/s):

| | vs durable floor | vs durable floor + alarm writes | vs bare Durable Object | vs plain Node ws relay |
|---|---:|---:|---:|---:|
${ratioRow("latency p50", rt.latency_p50)}
${ratioRow("latency p95", rt.latency_p95)}
${ratioRow("latency p99", rt.latency_p99)}
${ratioRow("throughput", rt.throughput)}

What durability alone costs the platform: the durable floor is ${rr(r.durable_vs_do.latency_p50)} the bare object's p50 and
${rr(r.durable_vs_do.throughput)} its throughput.

## Where the relay's time goes

${profileSection(x)}
Storage work per call (bench/lib/count.ts runs the real \`SessionEngine\` and \`SqlStore\` over \`node:sqlite\`
through the same frame path and counts; a commit is one per event that wrote):

${counts(r)}

What the profile and the counts say, item by item:

- **SQLite statements and commits dominate.** \`exec\` (every statement) and the per-event commit behind the
  output gate are most of the sampled time; the profiler sometimes counts a statement's native time in its JS
  caller (\`insertCall\`, \`finish\`, \`all\` above). The first statement of each event is the
  dearest — \`insertCall\` on a call, \`ackCall\` on an ack — and the durable floor's one statement per
  event shows the same cost (\`PROFILE_TARGET=durable\`). Every further statement the relay does not run is time saved; the commits
  themselves (3 per call, one per event) are the floor's too. \`(anonymous)\` in worker/session.ts is the
  sockets port's \`send\` (\`getWebSockets(tag)\`, then \`ws.send\`, whose native time lands in it): the same
  work as the floor's \`forward\`.
- **Alarm writes per call: ${r.storage_per_call.per_call.alarm_writes}.** \`syncAlarm\` used to keep the alarm exactly at the earliest due
  time, so with one call in flight it moved on every call and every result (2 \`setAlarm()\` per call, each a
  storage write the event's commit waits for; measured above as the \`durable floor + alarm writes\` system,
  and one write at a time in the extras below). Now the alarm only ever moves **earlier**: a new call's later
  deadline leaves it, an answered call leaves it early, and an alarm that finds nothing due re-arms at the
  true earliest time (worker/session.ts; the test "the alarm is never later than the earliest due time" runs
  that early alarm). Cost: at most one wasted wake per answered earliest call.
- **Sockets enumerated and attachments deserialized per frame:** every frame used to enumerate all sockets
  (\`getWebSockets()\`) and deserialize each one's attachment to know who is connected (\`ctx()\`), and a
  connect did it twice more. Now each socket's identity is deserialized once per wake and again only after a
  connect, a close or a revoke (worker/session.ts); the open-state check stays per frame.
- **Registrations re-parsed per frame:** a call read and \`JSON.parse\`d its provider side's registrations
  twice (to check the call, then to find who serves it) and a result twice (who may answer, and whether the
  tool is app-type). Now they are parsed once **per wake**: \`SqlStore\` keeps each side's parsed
  registrations, and every write to them (\`register\`, \`dropRegistration\`, \`clear\`) goes through it and
  drops them; a rolled-back frame and the alarm forget them (\`forget()\`), and a new wake starts without.
  The atomicity tests, which corrupt a registration row directly in SQL to fail a handler half-way, drop the
  cache after corrupting, as a new wake would.
- **Schema compilation:** none per call. Compiled validators (\`@cfworker/json-schema\`) are cached per schema
  text at module level, which survives hibernation as long as the isolate lives, and found by the schema
  object's identity first (a \`WeakMap\`: registrations are parsed once per wake, so the same object comes
  back), so \`JSON.stringify\` of the schema for the text key runs only on a miss; what is left is the
  validation itself (the \`checkArguments\` row above).
- **zod:** the frame's \`safeParse\` (Workers forbid code generation, so zod runs without its JIT) is about
  5–8 µs per frame measured in Node without JIT; small next to the storage work. Left as is: it is the
  contract's one definition of a valid frame.
- **JSON work:** one \`JSON.parse\` of the frame, the fingerprint's canonical JSON, \`JSON.stringify\` of the
  arguments and of each frame sent; microseconds.
- **Inbox reports:** bench sessions are plain v1 sessions; \`report()\` returns after reading the cached meta
  (no inbox), so its cost per frame is near zero (see the profile row).

## What the optimizations did

Statements per call ${"20 → " + r.storage_per_call.per_call.statements} (reads 13 → ${r.storage_per_call.per_call.reads}, writes 7 → ${r.storage_per_call.per_call.writes}); commits unchanged (3, one per event, as the floor's);
alarm writes per call 2 → ${r.storage_per_call.per_call.alarm_writes}.
Every guarantee is kept; every change is on the frame path named in issue 14:

| change | where | statements saved per call |
|---|---|---:|
| registrations read once per frame, not per lookup (call: check + providers; result: who may answer + app type) | shared/session/router.ts | 2 reads (+ 2 \`JSON.parse\`) |
| a call is inserted already checked, not inserted and then marked checked | shared/session/router.ts | 1 write |
| the duplicate-call rule reads the call only when the insert finds its id taken (\`ON CONFLICT DO NOTHING\`) or a refusal is about to be stored | shared/session/router.ts, worker/sql-store.ts | 1 read |
| closing a call no longer reads its deliveries apart; the budget uses the bytes read with the row | worker/sql-store.ts, shared/session/router.ts | 2 reads |
| the ack is one \`DELETE … WHERE done AND caller RETURNING\`; a done call has no deliveries to clear | worker/sql-store.ts, shared/session/router.ts | 2 (1 read, 1 write) |
| the number of open calls is counted once per wake and kept in step (like the byte usage) | worker/sql-store.ts | 1 read |
| the earliest due time is kept as a **lower bound**: a call's insert or a result's expiry can only lower it, and a result or ack that removes a due time leaves it (the alarm only moves earlier, so a bound that is too early costs one early alarm, never a late one). Forgotten on rollback and by the alarm | worker/sql-store.ts, worker/session.ts | 3 reads (the \`MIN\` query on call, result and ack) |
| the alarm only ever moves earlier (no \`setAlarm()\` when a later deadline is added or the earliest call is answered) | worker/session.ts | 2 alarm writes |
| parsed registrations kept per wake (dropped by every write to them, forgotten on rollback and by the alarm) | worker/sql-store.ts | 2 reads (+ 2 \`JSON.parse\`) |
| socket identities deserialized once per wake, not per frame | worker/session.ts | — (a few µs per socket per frame) |
| deliveries kept in the call's own row (a JSON column \`deliv\`): written by the call's insert, read with the row by the result, cleared by the result's update; a device catching up later is one update of the row. The old \`deliveries\` table is migrated and dropped on the first wake | shared/session/router.ts, shared/session/store.ts, worker/sql-store.ts | 2 writes (the delivery insert, its delete at the result) |

${abSection(x)}
## Writes the contract forces beyond the floor

The floor writes the call, its result and its deletion. The relay's contract (docs/protocol.md,
docs/reliability.md) makes it write more, each for a rule:

- **Deadlines on the alarm** — every call has a deadline (\`timeout_s\`, 600 s by default) that must fire even
  if the object was evicted, so the one alarm must never be later than the earliest due time. Kept exactly
  there it moved to each new call's deadline and back when the call was answered: 2 \`setAlarm()\` per call
  with one in flight, each billed as a row written and part of the commit that gates the next frame — by far
  the largest extra (the \`+ alarm\` rows here and above). Moved only earlier it costs
  ${r.storage_per_call.per_call.alarm_writes} per call in steady traffic, plus one early, empty alarm after an answered earliest call.
- **Per-device checks: deliveries** — which connections got each call: a result is accepted only from a
  client the call went to or whose registration serves it, a reconnecting device gets exactly the calls it
  has not seen, and the other devices get \`tool.cancel\` naming who answered. Kept as a JSON column of the
  call's own row (\`deliv\`, about 60 bytes per provider connection), so it rides on the call's insert and the
  result's update: **no extra statement** per call. A device that connects while a call is open and gets it in
  its catch-up costs one update of that row.
- **Kept results until ack** — the result replaces the arguments in the call's row and stays until the
  caller's \`tool.ack\` (or 24 h): the floor does the same update and delete, so the extra is only the
  row's bookkeeping columns (\`keep_until\` for the expiry, the byte count for the session budget) and the
  alarm moving to the expiry when it is the earliest due time.
- **The duplicate-call rule** — a \`call_id\` in use is refused unless the repeat is identical (same caller and
  fingerprint: a safe retry that gets the kept result again). The fingerprint is a column of the insert; the
  read happens only when the insert finds the id taken. No extra write.
- **Instance bindings** — a result of an app-type tool (e.g. \`canvas\`) binds its \`instance_id\` to the client
  that opened it (1 row upsert; \`close\` deletes it), and a call naming an instance is routed to its owner (1
  read). Not on the bench's path (\`calculator\` is a toolset); 1 row written per opening or closing result.
- **Budgets and limits** — the byte budget and the 1000-open-calls limit are checked from in-memory counts
  kept in step with the writes: no extra statement per call.

${extrasSection(x)}

## Scale

${r.scale.relay.sessions} sessions × (1 agent + ${r.config.scale_apps_per_session} apps) = ${r.scale.relay.sockets} sockets on one relay process, one call per session,
all at once; the same on the durable floor (rooms need no creating). Both apps answer every call; on the relay
the first answer wins and the other app gets \`tool.cancel\`.

| step | relay | durable floor |
|---|---:|---:|
${scaleRow(`create ${r.scale.relay.sessions} sessions (\`POST /api/sessions\`, 32 at a time)`, (s) => (s.create_sessions_ms === null ? "—" : `${s.create_sessions_ms} ms`))}
${scaleRow(`connect all ${r.scale.relay.sockets} sockets, 25 sessions at a time`, (s) => `${s.connect_all_ms} ms`)}
${scaleRow(`complete all ${r.scale.relay.sessions} calls (sent together)`, (s) => `${s.complete_all_ms} ms`)}
${scaleRow("per-call latency in that burst, p50 / p99", (s) => `${fmt(s.call_latency.p50)} / ${fmt(s.call_latency.p99)} ms`)}
${scaleRow("workerd RSS before the step", (s) => mib(s.workerd_rss_before_kib))}
${scaleRow("workerd RSS peak during it (sampled every 100 ms)", (s) => mib(s.workerd_rss_peak_kib))}
${scaleRow("**per connected session** ((peak − before) ÷ sessions)", (s) => `**${kib(s.per_session_kib)}**`)}
${scaleRow("workerd VmHWM (peak over the whole run)", (s) => mib(s.workerd_hwm_kib))}
${scaleRow("error frames seen by the agents", (s) => String(s.errors))}

## Wake-up after idleness

${wk.relay.first_ms.length} sessions per system (each 1 agent + 1 app, one call made) sat idle for ${wk.idle_s} s — no frames, no pings,
nothing else running — then made one call, then ${5} more on the same sockets. This step runs first.

| | first call after idle, ms | warm calls right after (median), ms | first ÷ warm |
|---|---|---|---|
${wakeRow("relay")}
${wakeRow("durable")}
${wakeRow("do")}

${wk.note} The relay's \`Session\` runs in the same kind of workerd with the same kind of hibernatable sockets;
on a wake it rebuilds its caches (session meta, byte usage, open calls, due time, socket identities, the
alarm time) from SQLite and the attachments with a handful of reads.

${costModel(r, x)}
## What is left and why

- **The alarm writes: ${r.storage_per_call.per_call.alarm_writes} per call** in steady traffic, since the alarm only moves earlier (above). The price
  is one early, empty alarm invocation (one request) after an answered call that held the earliest deadline;
  every deadline still fires on time (the contract's deadline tests and their eviction variants).
- **The one statement beyond the floor** (${r.storage_per_call.per_call.statements} per call vs the floor's 3): the result reads the call's row before
  updating it — its caller, status, byte count and deliveries decide who may answer, whom to tell and whether
  the budget holds. Folding it into an \`UPDATE … RETURNING\` would need the per-device check inside SQL; left
  as one primary-key read.
- **zod and the JSON Schema check** stay: they are the contract's definition of a valid frame and a valid
  call, and cost microseconds.
- **\`transactionSync\` per event** stays: it makes a frame atomic (a handler failing half-way leaves nothing),
  and an A/B without it measured no difference.
- **Wake-up:** the constructor runs the schema's \`CREATE … IF NOT EXISTS\` (one multi-statement exec) and the
  first frame re-reads what the caches hold; measured above.

## Reproduce

\`\`\`sh
npm ci && npm run bench          # about 3 minutes; BENCH_CALLS, BENCH_SECONDS, BENCH_SESSIONS override the sizes
npm run bench -- --profile       # CPU profile of the relay's frame path → bench/relay.cpuprofile (gitignored) + bench/profile.json
PROFILE_TARGET=durable npm run bench -- --profile   # the same for the durable floor
npm run bench -- --extras        # the contract's extra writes, one by one, on the durable floor → bench/extras.json
npm run bench -- --ab [dir]      # A/B: a relay snapshot (default bench/.tmp/relay-before) vs the work tree → bench/ab.json
\`\`\`
`;
}

function reopenNote(r: Results): string {
  const n = r.reopened_after_drop;
  const total = Object.values(n).reduce((a, b) => a + b, 0);
  if (total === 0) return "";
  return `During this run ${total} measurement round(s) lost their socket (${Object.entries(n)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")}) — \`wrangler dev\` reloads the Worker, dropping every socket, when a source file changes — and were
measured again on a new connection.

`;
}
