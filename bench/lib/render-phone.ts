// The docs/benchmarks.md section of `npm run bench -- --phone` (bench/lib/phone-open.ts, issue 33 item 4).
import type { Extra } from "./render-common.js";
import { rr } from "./render-common.js";
import type { PhoneResults } from "./phone-open.js";

const WAY_LABEL = {
  floor: "floor: a static page with the same text (the bench's own server), cold",
  cold: "the app, cold (new context: no cache, no service worker)",
  warm: "the app, warm (its service worker installed and controlling)",
} as const;

export function phoneSection(x: Extra): string {
  const p: PhoneResults | undefined = x.phone;
  if (!p) return "";
  const t = p.throttle;
  const rows = (["floor", "cold", "warm"] as const)
    .map((w) => {
      const d = p.ways[w];
      return `| ${WAY_LABEL[w]} | ${d.visible.p50} (${d.visible.min}–${d.visible.max}) | ${d.answered.p50} (${d.answered.min}–${d.answered.max}) | ${d.ttfb_p50} |`;
    })
    .join("\n");
  const g = p.goals;
  const goalRow = (what: string, k: keyof PhoneResults["goals"]) =>
    `| ${what} | ${g[k].goal} | **${g[k].median}×** (${g[k].spread[0]}–${g[k].spread[1]}) | ${g[k].met ? "met" : "**not met**"} |`;
  return `## A phone opening a waiting question

_Measured by \`npm run bench -- --phone\` (bench/lib/phone-open.ts) on ${p.generated_at.slice(0, 16).replace("T", " ")} UTC, Chromium ${p.chromium}
(playwright-core, /usr/bin/chromium, a 390×844 phone viewport), ${p.rounds} interleaved rounds (the order rotates each round);
1-minute load ${p.load_avg_1m.join(" → ")}; raw figures in [bench/phone.json](../bench/phone.json)._

The agent's \`ask_question\` waits in a session; a phone opens the session's link (\`app_url\`). The page is throttled
over CDP: \`Network.emulateNetworkConditions\` (${t.rtt_ms} ms latency, ${t.down_kbps} kbps down, ${t.up_kbps} kbps up) and
\`Emulation.setCPUThrottlingRate\` ${t.cpu_slowdown}×. **visible**: ms from the navigation's start (the page's own clock) until the card
holding the question has its text and a frame was painted after it (an init script: a MutationObserver on the card,
then \`requestAnimationFrame\` and a message-channel task). **answered**: ms from \`page.goto\` until the answer reached its
receiver — the agent's \`tool.result\`, or the floor server's form POST — with the bench typing "ok" and pressing Send
as soon as the text is visible (so it includes the bench's own Playwright round trips, alike for all three).
TTFB is the navigation's \`responseStart − requestStart\` (it stays under the emulated 150 ms: Chromium's emulated
latency evidently falls outside that span, so it is shown for the record only). The floor is a static HTML page with the same question, a
reply box and a Send button (no script) served by the bench's own HTTP server on 127.0.0.1, loaded cold.

| p50 (min–max) | visible ms | answered ms | TTFB ms |
|---|---:|---:|---:|
${rows}

| goal | target | this run: median (spread over rounds) | |
|---|---|---:|---|
${goalRow("visible, warm ÷ floor", "warm_vs_floor")}
${goalRow("visible, cold ÷ floor", "cold_vs_floor")}

Answered, warm ÷ floor ${rr(p.ratios.warm_answered_vs_floor)}, cold ÷ floor ${rr(p.ratios.cold_answered_vs_floor)}. The build measured:
initial JavaScript **${p.size.initial_js_gz_kib} KB** gzipped (budget 60 KB; scripts/size.mjs) and initial CSS **${p.size.css_gz_kib} KB** gzipped (the
stylesheets index.html links). The app needs more than bytes before the card shows: its script runs (at 4× CPU), it
opens the session's WebSocket, the relay sends \`hello\`, the app its \`tool.list\`, then the waiting call arrives and is
rendered; the markdown renderer is a chunk loaded after the first paint (outside the initial budget).
${before(x)}
`;
}

/** The figures of the app before web/src/conn.ts dialed its socket during the pin read, when measured. */
function before(x: Extra): string {
  const b = x.phoneBefore;
  const p = x.phone;
  if (!b || !p) return "";
  const w = (r: PhoneResults, k: "cold" | "warm") =>
    `${r.ways[k].visible.p50} ms (${r.goals[k === "cold" ? "cold_vs_floor" : "warm_vs_floor"].median}× its floor)`;
  return `
**What was changed, and its effect.** A trace of a warm load (Playwright's request and WebSocket events, an init
script timing \`indexedDB.open\` and \`new WebSocket\`) showed the session's socket dialed only after the app had read
the session's seal pin from IndexedDB (issue 26: a pinned session's first frame must be read as sealed); under the
4× CPU slowdown that read took 0.3–0.7 s, and the dial, \`hello\`, \`tool.list\` and the call followed it one after
another. web/src/conn.ts now dials at once and holds the socket's events until the pin is read, then replays them
in order, so the rule is kept (the downgrade test of test/browser/browser-e2e-lying.test.ts still passes). The same bench
on the code before (bench/phone-before.json, ${b.generated_at.slice(0, 16).replace("T", " ")} UTC, load ${b.load_avg_1m.join(" → ")}): visible p50
cold ${w(b, "cold")}, warm ${w(b, "warm")}; after (this run): cold ${w(p, "cold")}, warm ${w(p, "warm")}. The app's
milliseconds dropped, but the floor's came out faster in the later run too, so the ratios rose: on this loaded
machine the per-round spreads (above) are wider than the change, and these two runs neither prove nor disprove its
effect on the ratio. What the trace shows directly is the socket dialed about half a second earlier.
Not changed: the markdown chunk still loads after the first paint (a \`modulepreload\` would put its 17 KB into the
initial JavaScript, over the 60 KB budget), and nothing blocks the first paint but the app's one script and stylesheet.
`;
}
