// The docs/benchmarks.md section of `npm run bench -- --inbox` (bench/lib/inbox-path.ts, issue 33 items 1 and 3):
// the inbox path beside the bare session and the durable floor, the push delay, and the cost per call.
import { fmt, observabilityNote, rr, type Extra } from "./render-common.js";
import type { PathCount } from "./inbox-count.js";
import { INBOX_LABEL, type InboxResults, type InboxSystem } from "./inbox-path.js";
import { PRICE } from "./render-sections.js";

/** Cloudflare's list prices applied to one path's per-call counts (the model of the "Cost model" section). */
export function pathCost(c: PathCount, cpuUs: number | null) {
  const rowsWritten = Math.round((c.rows_written.total + c.set_alarm) * 100) / 100;
  const rowsRead = c.rows_read.total;
  const gbs = ((cpuUs ?? 0) / 1e6) * PRICE.doMemoryGb;
  const perDay = (limit: number, per: number) => (per > 0 ? Math.floor(limit / per) : Infinity);
  const free = [
    { what: "rows written", calls: perDay(PRICE.rowsWrittenFreePerDay, rowsWritten) },
    { what: "DO requests", calls: perDay(PRICE.doRequestsFreePerDay, c.do_requests) },
    { what: "DO duration", calls: perDay(PRICE.doGbsFreePerDay, gbs) },
    { what: "rows read", calls: perDay(PRICE.rowsReadFreePerDay, rowsRead) },
  ].sort((a, b) => a.calls - b.calls);
  const perMillion = rowsWritten * PRICE.rowsWrittenPerMillion + c.do_requests * PRICE.doRequestsPerMillion + gbs * PRICE.doGbsPerMillion;
  return { rowsWritten, rowsRead, gbs, free, perMillion: Math.round(perMillion * 100) / 100 };
}

const byClass = (o: Record<string, number>) =>
  Object.entries(o)
    .filter(([k]) => k !== "total")
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "no";

export function inboxSection(x: Extra): string {
  const r: InboxResults | undefined = x.inbox;
  if (!r) return "";
  const n = (v: number) => Math.round(v).toLocaleString("en-US");
  const sys: InboxSystem[] = ["inbox", "relay", "durable"];
  const rows = sys
    .map(
      (s) =>
        `| ${INBOX_LABEL[s]} | ${fmt(r.latency[s].p50)} | ${fmt(r.latency[s].p99)} | ${r.throughput[s].calls_per_s.toLocaleString("en-US")} | ${r.cpu_us_per_call[s] ?? "n/a"} µs |`,
    )
    .join("\n");
  const g = r.goals;
  const goalRow = (what: string, k: keyof InboxResults["goals"]) =>
    `| ${what} | ${g[k].goal} | **${g[k].median}×** (${g[k].spread[0]}–${g[k].spread[1]}) | ${g[k].met ? "met" : "**not met**"} |`;
  let cost = "";
  if (r.cost) {
    const c = r.cost;
    const paths: [string, PathCount, number | null][] = [
      ["bare session, calculator", c.bare, r.cpu_us_per_call.relay],
      ["inbox session, calculator", c.inbox_calculator, r.cpu_us_per_call.inbox],
      ["inbox session, `confirm` pushed and answered", c.inbox_confirm_pushed, r.cpu_us_per_call.inbox],
    ];
    const costRows = paths
      .map(([what, p, cpu]) => {
        const m = pathCost(p, cpu);
        return `| ${what} | ${p.do_requests} (${byClass(p.stub_calls)} stub calls; ${p.ws_messages_in} socket messages ÷ 20; ${p.alarm_invocations} alarms) | ${m.rowsWritten} (${byClass(p.rows_written)}; ${p.set_alarm} \`setAlarm\`) | ${p.rows_read.total} | ${p.subrequests} | $${m.perMillion.toFixed(2)} | ${n(m.free[0]!.calls)} (${m.free[0]!.what}) |`;
      })
      .join("\n");
    const bare = pathCost(c.bare, r.cpu_us_per_call.relay);
    const inb = pathCost(c.inbox_calculator, r.cpu_us_per_call.inbox);
    const ratio = (a: number, b: number) => (b > 0 ? `${Math.round((a / b) * 100) / 100}×` : "n/a");
    cost = `
### Cost per call on the inbox path

Counted on the same relay code run with meters (bench/count-worker/entry.js, its own \`wrangler dev\`: the repository's
classes unchanged; each object's SQLite cursors report their own \`rowsRead\` / \`rowsWritten\`, KV-API keys and
\`setAlarm()\` calls are counted, every call on a Durable Object stub is one Durable Object request, incoming
WebSocket messages are billed at 20:1 and each alarm invocation is one request; a subrequest is an outgoing
\`fetch\`, here the Web Push POST). ${c.bare.calls} calculator calls on each session, one in flight, and
${c.inbox_confirm_pushed.calls} \`confirm\` calls each pushed to the device and answered by it; counts are taken
after the inbox has settled. Dollars are the paid list price past the included amounts; the Free plan's calls
per day are the first daily limit reached (the prices of the "Cost model" section below).

| per call | DO requests | rows written | rows read | subrequests | $ per million calls | Free plan calls/day (binding limit) |
|---|---:|---:|---:|---:|---:|---:|
${costRows}

A calculator call on the inbox path costs ${ratio(c.inbox_calculator.do_requests, c.bare.do_requests)} the bare path's Durable Object
requests and ${ratio(inb.rowsWritten, bare.rowsWritten)} its rows written (goal ≤ 2×). A report to the inbox object is a stub
call (a request) and the inbox's writes to keep it; a session sends one at a time, and a calculator call answered
within 2 s is never reported (docs/inbox.md), while a pushed \`confirm\` is reported twice (listed, then gone).
The bare row is the same meter on the bare path. Its rows written are the cursors' own \`rowsWritten\`,
${bare.rowsWritten} per call where the "Cost model" section counts one row per write statement: the platform's count is the
higher one (each secondary index entry a statement writes counts as a row: with \`calls\`' two full indexes a call
wrote 8, with the two partial ones, each entered and left once by a call, 6), so
the dollar and Free-plan figures of this table are the ones to trust for both paths.
`;
  }
  return `## The inbox path: a session with a device and Web Push

_Measured by \`npm run bench -- --inbox\` (bench/lib/inbox-path.ts) on ${r.generated_at.slice(0, 16).replace("T", " ")} UTC in ${r.total_s} s,
Node ${r.node}; 1-minute load ${r.load_avg_1m.join(" → ")}; raw figures in [bench/inbox.json](../bench/inbox.json)._

The session a \`lineup connect\` makes: created by a machine of an inbox (\`POST /api/inbox/sessions\`), one paired
device whose socket on the session answers \`calculator\` at once (as the app does), whose inbox socket
(\`/api/inbox/ws\`) receives every InboxState, and whose push subscription points at a local fake push service
(test/helpers/fake-push.ts behind a real HTTP server on 127.0.0.1: it checks VAPID and decrypts each push with
http_ece). Beside it, in the same interleaved rounds (the order rotates each round): a bare session
(\`RELAY_KEY\`, one app socket) on the same relay, and the durable floor in its own \`wrangler dev\`. Relay started
with ${Object.entries(r.config.relay_vars)
    .map(([k, v]) => `\`${k}=${v}\``)
    .join(
      ", ",
    )}, ${observabilityNote(r.config.local_observability)}. ${r.config.latency_calls} calls per system in ${r.config.rounds} rounds, one in flight; throughput
with ${r.config.throughput_in_flight} in flight for ${r.config.throughput_seconds} s per system; CPU of the runtime workerd (/proc) over the
throughput rounds ÷ calls (inbox and bare share one workerd, measured in turn).

| | p50 ms | p99 ms | calls/s | CPU per call |
|---|---:|---:|---:|---:|
${rows}
| push delay: agent's \`tool.call\` (\`confirm\`) → the push service has the encrypted push, the path at rest | ${fmt(r.push.p50)} | ${fmt(r.push.p99)} | | |
${r.push_back_to_back ? `| the same, back to back (the call sent the moment the last one was answered) | ${fmt(r.push_back_to_back.p50)} | ${fmt(r.push_back_to_back.p99)} | | |\n` : ""}${r.idle ? `| the same, each after ${r.idle.idle_ms} ms with nothing sent | ${fmt(r.idle.push.p50)} | ${fmt(r.idle.push.p99)} | | |\n` : ""}${r.round_trip_at_rest ? `| a calculator call's round trip on the inbox session, started in the same state as each push at rest | ${fmt(r.round_trip_at_rest.p50)} | ${fmt(r.round_trip_at_rest.p99)} | | |\n` : ""}${r.idle ? `| a calculator call's round trip on the inbox session after the same idle | ${fmt(r.idle.round_trip.p50)} | ${fmt(r.idle.round_trip.p99)} | | |\n` : ""}
| goal | target | this run: median (spread over rounds) | |
|---|---|---:|---|
${goalRow("p50 round trip, inbox ÷ durable floor", "latency_p50_vs_durable")}
${goalRow("throughput (64 in flight), inbox ÷ durable floor", "throughput_vs_durable")}
${goalRow("push delay p50 (at rest) ÷ the inbox call's round trip p50 (the latency rounds')", "push_vs_round_trip")}
${r.ratios.push_vs_round_trip_at_rest ? `| push delay p50 at rest ÷ a calculator call's round trip p50 started in the same state | (no goal) | ${rr(r.ratios.push_vs_round_trip_at_rest)} | |\n` : ""}${r.ratios.push_back_to_back_vs_round_trip ? `| push delay back to back ÷ the same round trip | (no goal) | ${rr(r.ratios.push_back_to_back_vs_round_trip)} | |\n` : ""}${r.ratios.push_idle_vs_round_trip_idle && r.idle ? `| push delay ÷ a call's round trip, both after ${r.idle.idle_ms} ms idle | (no goal) | ${rr(r.ratios.push_idle_vs_round_trip_idle)} | |\n` : ""}
${pushReading(r)}${confirmRows(r)}
Inbox ÷ bare session: p50 ${rr(r.ratios.latency_p50.inbox_vs_relay)}, p99 ${rr(r.ratios.latency_p99.inbox_vs_relay)}, throughput
${rr(r.ratios.throughput.inbox_vs_relay)}; bare ÷ floor in the same rounds: p50 ${rr(r.ratios.latency_p50.relay_vs_durable)}, throughput
${rr(r.ratios.throughput.relay_vs_durable)}. The device's inbox socket received ${r.inbox_frames_per_call} InboxState frames per call (one per report
the inbox took). ${r.pushes.samples} pushes were timed at rest and as many back to back (${r.config.push_samples_per_round} of each per round, after the latency
rounds, one at a time: the device answers each \`confirm\` once its push has arrived; at rest, the next call waits until the
device's inbox socket shows the answered one gone from the session's Waiting list — the inbox took the answer's report${r.rest_timeouts !== undefined ? ` (${r.rest_timeouts} of these waits gave up after 2 s)` : ""} — while back to back the answer's
report, the agent's ack and the next call overlap, and local workerd runs both objects on one thread)${r.round_trip_at_rest ? `. After each timed push at rest a calculator call is timed from the same state (the answered confirm just left the Waiting list), then an untimed \`confirm\` brings the path back to it` : ""}${r.idle ? `; then ${r.idle.push.n} pushes and as many calculator calls, each after ${r.idle.idle_ms} ms with nothing sent, alternating` : ""}; the fake push service decrypted ${r.pushes.decrypted} on that
subscription with ${r.pushes.problems.length === 0 ? "no problems" : `problems: ${r.pushes.problems.join("; ")}`}. Error frames seen by the agents: inbox ${r.agent_errors.inbox}, bare ${r.agent_errors.relay}, floor ${r.agent_errors.durable}.
${beforeAfter(r, x.inboxBefore)}${cost}
`;
}

/** The push beside calls sent in the same state: alone after the last answer, and after an idle. */
function pushReading(r: InboxResults): string {
  const a = r.round_trip_at_rest;
  if (!a) return "";
  const idle = r.idle
    ? ` After ${r.idle.idle_ms} ms with nothing sent (as a question usually comes) every hop is slower on this machine, for both: a push took ${fmt(r.idle.push.p50)} ms and a calculator call ${fmt(r.idle.round_trip.p50)} ms (${rr(r.ratios.push_idle_vs_round_trip_idle!)}).`
    : "";
  return `
The goal's round trip is the p50 of the latency rounds' ${r.config.latency_calls.toLocaleString("en-US")} calls, sent back to back; a push is one call sent
alone. A calculator call timed from the state a push at rest starts in took ${fmt(a.p50)} ms (the hot loop: ${fmt(r.latency.inbox.p50)} ms).${idle}
`;
}

/** The run before the session's reports were coalesced (bench/inbox-before.json) beside this one. */
function beforeAfter(a: InboxResults, b: InboxResults | undefined): string {
  if (!b) return "";
  const row = (what: string, f: (r: InboxResults) => string) => `| ${what} | ${f(b)} | ${f(a)} |`;
  const g = (k: keyof InboxResults["goals"]) => (r: InboxResults) => `${r.goals[k].median}× (${r.goals[k].spread[0]}–${r.goals[k].spread[1]})`;
  const c = (f: (p: PathCount) => number) => (r: InboxResults) => (r.cost ? String(f(r.cost.inbox_calculator)) : "n/a");
  return `
### Before and after: one report in flight, automatic tools' calls held 2 s, a push sent from the report's request

The same mode run on the code before the change (bench/inbox-before.json, ${b.generated_at.slice(0, 16).replace("T", " ")} UTC, 1-minute
load ${b.load_avg_1m.join(" → ")}) and after it (this run). Before, a session sent its inbox a report on every change of
its Waiting list, each its own stub call, read its open calls on every frame and wrote the listed ids twice per call;
the inbox sent a push only from its alarm.

| | before | after |
|---|---:|---:|
${row("p50 round trip, inbox ÷ durable floor (goal ≤ 1.3)", g("latency_p50_vs_durable"))}
${row("throughput, inbox ÷ durable floor (goal ≥ 0.75)", g("throughput_vs_durable"))}
${row("push delay at rest ÷ the latency rounds' round trip", (r) => rr(r.ratios.push_vs_round_trip))}
${row("inbox p50 / p99 ms; bare session p50 ms", (r) => `${fmt(r.latency.inbox.p50)} / ${fmt(r.latency.inbox.p99)}; ${fmt(r.latency.relay.p50)}`)}
${row("workerd CPU per call, inbox / bare", (r) => `${r.cpu_us_per_call.inbox ?? "n/a"} / ${r.cpu_us_per_call.relay ?? "n/a"} µs`)}
${row("InboxState frames per calculator call", (r) => String(r.inbox_frames_per_call))}
${row(
  "calculator call: DO requests",
  c((p) => p.do_requests),
)}
${row(
  "calculator call: inbox stub calls",
  c((p) => p.stub_calls.total),
)}
${row("calculator call: rows written / read", (r) => (r.cost ? `${r.cost.inbox_calculator.rows_written.total} / ${r.cost.inbox_calculator.rows_read.total}` : "n/a"))}
${row("pushed `confirm`: DO requests / rows written", (r) => (r.cost ? `${r.cost.inbox_confirm_pushed.do_requests} / ${r.cost.inbox_confirm_pushed.rows_written.total}` : "n/a"))}
`;
}

/** The latency rounds again with a question a human answers (`confirm`, tapped at once). */
function confirmRows(r: InboxResults): string {
  const c = r.confirm;
  if (!c) return "";
  return `
The same rounds with a question a human answers instead of a calculator sum (\`confirm\`, tapped "Yes" as soon as
it arrives; ${r.config.confirm_calls ?? "?"} calls per system): on the inbox session each is reported to the inbox (listed, then
gone) and pushed (${c.pushes_per_call} pushes per call reached the fake push service), which a calculator call is not
(docs/inbox.md "When a report goes"). The ≤ 1.3× goal above is stated for the calculator call; this is the figure
for a question, beside it:

| \`confirm\` answered at once | p50 ms | p99 ms |
|---|---:|---:|
${(["inbox", "relay", "durable"] as const).map((s) => `| ${INBOX_LABEL[s]} | ${fmt(c.latency[s].p50)} | ${fmt(c.latency[s].p99)} |`).join("\n")}

p50 inbox ÷ durable floor ${rr(c.inbox_vs_durable_p50)}, inbox ÷ bare ${rr(c.inbox_vs_relay_p50)}.
`;
}
