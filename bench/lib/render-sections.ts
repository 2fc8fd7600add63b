// The sections of docs/benchmarks.md built from more than the latency tables: the cost model (with the
// list prices it cites), the storage counts, the CPU profile, the extras, the A/B and the reopen note.
import type { EventCount } from "./count.js";
import { esc, fmt, rr, us, type Extra } from "./render-common.js";
import type { Results } from "./results.js";
import { STARTUP_LABEL } from "./startup.js";

// ------------------------------------------------------------------ pricing (cited in the cost model)

/** Workers and Durable Objects list prices as published (see the links in the cost model). */
export const PRICE = {
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

export function costModel(r: Results, x: Extra): string {
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

The durable floor writes 3 rows per call (insert, update, delete); the relay writes ${rowsWritten}${
    rowsWritten > 3
      ? `, so on the Free plan the
contract's extra writes (below) decide how many calls a day fit: ${n(perDay(PRICE.rowsWrittenFreePerDay, 3))} for the floor, ${n(freeLimits[0]!.calls)} for the relay.`
      : `: the contract's extra rules (below) ride on
those same writes, so both fit ${n(freeLimits[0]!.calls)} calls a day on the Free plan.`
  }

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

export function counts(r: Results): string {
  const c = r.storage_per_call;
  const row = (k: keyof typeof c, e: EventCount) =>
    `| ${k} | ${e.statements} | ${e.reads} | ${e.writes} | ${e.commits} | ${e.alarm_writes} | ${e.frames_out} |`;
  return `| event | SQLite statements | reads | writes | commits | alarm writes | frames out |
|---|---:|---:|---:|---:|---:|---:|
${(["tool.call", "tool.result", "tool.ack", "per_call"] as const).map((k) => row(k, c[k])).join("\n")}
| durable floor, per call | 3 | 0 | 3 | 3 | 0 | 2 |`;
}

export function profileSection(x: Extra): string {
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

export function extrasSection(x: Extra): string {
  const e = x.extras;
  if (!e) return "_Not measured yet: `npm run bench -- --extras` writes bench/extras.json._";
  const v = e.variants;
  const line = (k: keyof typeof v, what: string) =>
    `| ${what} | ${v[k].p50_ms} ms | ${rr(v[k].p50_vs_floor)} | ${v[k].calls_per_s} | ${rr(v[k].tput_vs_floor)} | ${us(v[k].cpu_us_per_call)} |`;
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

export function abSection(x: Extra): string {
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

export function reopenNote(r: Results): string {
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

/** The agent package's start-up (bench/startup.json, `--startup`; issue 30). */
export function startupSection(x: Extra): string {
  const s = x.startup;
  if (!s) return "";
  const rows = (Object.keys(STARTUP_LABEL) as (keyof typeof STARTUP_LABEL)[])
    .map((c) => {
      const d = s.commands[c];
      return `| ${STARTUP_LABEL[c]} | ${fmt(d.p50)} | ${fmt(d.p95)} | ${fmt(d.min)}–${fmt(d.max)} | ${c === "floor" ? "1×" : rr(d.vs_floor)} |`;
    })
    .join("\n");
  const p = s.package;
  return `## The agent package: install and start-up

_Measured by \`npm run bench -- --startup\` (bench/lib/startup.ts, also the first step of \`npm run bench\`) on
${s.generated_at.slice(0, 16).replace("T", " ")} UTC, Node ${s.node}, ${s.runs} runs of each command in interleaved rounds (the order rotates each
round); 1-minute load ${s.load_avg_1m.join(" → ")}; raw figures in [bench/startup.json](../bench/startup.json)._

\`${p.name}@${p.version}\` packed by \`npm pack\` (${p.tarball_kib} KiB) and installed with \`npm install -g --prefix <tmp> <tarball> --omit=dev\`
from the warm npm cache in ${p.install_s} s: **${p.packages} packages, ${p.installed_kib} KiB on disk** (${p.dependencies.length} direct
dependencies: ${p.dependencies.map((d) => `\`${d}\``).join(", ")}${p.dependencies.includes("zod") ? "; zod is bundled into the code and a dependency for the library's type declarations only" : ""})${
    p.optional
      ? `, plus where its prebuilt binary installs the optional ${p.optional.dependencies.map((d) => `\`${d}\``).join(", ")} (the direct path): ${p.optional.packages} packages, ${p.optional.installed_kib} KiB more`
      : ""
  }. Each command is a fresh \`node\` process started by the
bench (\`spawnSync\`, wall time to exit, stdin given); the hook answers \`allow\` from a project
\`.lineup/policy.json\` rule — disk only, no network, no inbox copy to refresh.

| command | p50 ms | p95 ms | min–max ms | ÷ floor (median of rounds, spread) |
|---|---:|---:|---:|---:|
${rows}

**Goal: hook p50 ≤ ${s.goal.goal.replace("≤ ", "")}× the floor's p50: ${s.goal.p50_ratio}×, ${s.goal.met ? "met" : "not met"}.** The bundle is split at every \`import()\` of the
command table (esbuild \`splitting\`), so \`lineup hook pre-tool-use\` loads the CLI's entry, the hook entry and the
policy code with zod — not \`ws\`, the MCP SDK, the LAN server, Hono or the QR code. zod is bundled into the package's
chunks (\`BUNDLED\` in packages/agent/build.mjs): loaded from node_modules as its ~100 ESM files it took about 70 ms
here, more than everything else on the hook path. On Node ≥ 22.1 the bin also turns on Node's compile cache
(\`module.enableCompileCache()\`, kept in \`<state dir>/compile-cache\`). The load figures above are the machine's (other jobs
shared its 2 CPUs): every ratio is taken within a round, so both sides of it ran under the same load.

`;
}
