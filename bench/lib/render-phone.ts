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
TTFB is the navigation's \`responseStart − requestStart\`. The floor is a static HTML page with the same question, a
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

`;
}
