// The docs/benchmarks.md section of `npm run bench -- --phone` (bench/lib/phone-open.ts, issue 33 item 4).
import type { Extra } from "./render-common.js";
import { rr } from "./render-common.js";
import type { PhoneResults } from "./phone-open.js";

const WAY_LABEL = {
  floor: "floor: a static page with the same text (the bench's own server), cold",
  cold: "the app, cold (new context: no cache, no service worker)",
  warm: "the app, warm (its service worker installed and controlling), the call new while the app was closed",
  seen: "the app, warm, the call seen by an earlier visit (its card from this device's own record first)",
} as const;

export function phoneSection(x: Extra): string {
  const p: PhoneResults | undefined = x.phone;
  if (!p) return "";
  const t = p.throttle;
  const rows = (["floor", "cold", "warm", "seen"] as const)
    .map((w) => {
      const d = p.ways[w];
      if (!d) return "";
      return `| ${WAY_LABEL[w]} | ${d.visible.p50} (${d.visible.min}–${d.visible.max}) | ${d.answered.p50} (${d.answered.min}–${d.answered.max}) | ${d.ttfb_p50} |`;
    })
    .filter(Boolean)
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
${swLine(p)}

| p50 (min–max) | visible ms | answered ms | TTFB ms |
|---|---:|---:|---:|
${rows}

| goal | target | this run: median (spread over rounds) | |
|---|---|---:|---|
${goalRow("visible, warm ÷ floor", "warm_vs_floor")}
${goalRow("visible, cold ÷ floor", "cold_vs_floor")}

Answered, warm ÷ floor ${rr(p.ratios.warm_answered_vs_floor)}, cold ÷ floor ${rr(p.ratios.cold_answered_vs_floor)}.${seenLine(p)} The build measured:
initial JavaScript **${p.size.initial_js_gz_kib} KB** gzipped (budget 60 KB; scripts/size.mjs) and initial CSS **${p.size.css_gz_kib} KB** gzipped (the
stylesheets index.html links). The app needs more than bytes before the card shows: its script runs (at 4× CPU), it
opens the session's WebSocket, the relay sends \`hello\` (a new device's waiting call comes after the app's
registration, one round trip later), then the call arrives and is rendered; the markdown renderer is a chunk
loaded once the session has caught up (outside the initial budget).
${before(x)}
`;
}

/** The warm open of a call an earlier visit showed, beside the goal's figure (a call new while the app was closed). */
function seenLine(p: PhoneResults): string {
  const v = p.ratios.seen_vs_floor;
  const a = p.ratios.seen_answered_vs_floor;
  if (!v || !a) return "";
  return ` Seen before (warm, the card from this device's record of an earlier visit): visible ÷ floor ${rr(v)}, answered ÷ floor ${rr(a)} —
the goal is judged on the call new while the app was closed (the case after tapping a notification), which no cache helps.`;
}

/** Whether the service worker was throttled like the page (bench/lib/sw-throttle.ts). */
function swLine(p: PhoneResults): string {
  const s = p.sw_throttle;
  if (!s) return "The service worker was not throttled (its fetches skip the page's CDP conditions).";
  return s.on
    ? `The service worker gets the same conditions (bench/lib/sw-throttle.ts): the page's CDP throttling does not reach it — it is a target of
its own (puppeteer/puppeteer#4305, webdriverio/webdriverio#7452) — so the bench attaches to each service worker as DevTools does and
applies the network conditions there (${s.attached} attached; its CPU slowdown is refused for workers: "${s.errors.join("; ") || "none"}").`
    : "The service worker was not throttled in this run (PHONE_SW_THROTTLE=0): a warm navigation it fetches skips the emulated network.";
}

/** The figures of the app before this round's changes (bench/phone-before.json: the same bench on the old app), when measured. */
function before(x: Extra): string {
  const b = x.phoneBefore;
  const p = x.phone;
  if (!b || !p) return "";
  const w = (r: PhoneResults, k: "cold" | "warm") =>
    `${r.ways[k].visible.p50} ms (${r.goals[k === "cold" ? "cold_vs_floor" : "warm_vs_floor"].median}× its floor)`;
  const seen = (r: PhoneResults) =>
    r.ways.seen && r.ratios.seen_vs_floor ? `, seen before ${r.ways.seen.visible.p50} ms (${r.ratios.seen_vs_floor.median}×)` : "";
  return `
**Where the time went, and what was changed.** \`npm run bench -- --phone-trace\` (bench/lib/phone-trace.ts) loads the
link cold and warm with an init script stamping the page's clock at each step (first render, \`new WebSocket\`, its
\`open\`, every frame in and out), the resource timings, a Chrome trace of the renderer's main thread (PHONE_TRACE_LONG=1:
its long events) and (PHONE_TRACE_PROFILE=1) a CPU profile. The first round (branch i33-phone): web/src/sw.ts answers
navigations from the cached shell (a warm navigation 165–183 → 12–19 ms); web/src/conn.ts starts the direct path once
the catch-up is over and a frame was painted (docs/direct.md); web/src/main.tsx loads the markdown chunk once the
sessions opened at start have caught up (at most 3 s). The second round (branch i33-warm): the page's first script,
a 1.5 KB chunk of its own (then web/src/boot.ts → web/src/early.ts; since i33-warm2 a classic script, an esbuild IIFE of
web/src/early.ts that runs in <head> before the stylesheet), dials the socket of the session the address names
before the main bundle evaluates, and the session's connection takes it on its first dial with the frames it got
meanwhile (traces: \`new WebSocket\` 30–60 ms into the first script's evaluation, where it came after the main bundle's
modules, 450–600 ms after the bundle arrived; the handshake now overlaps the main bundle's evaluation); and the cards
of an earlier visit, kept on the device, no longer load the markdown chunk at the first render (a warm trace showed it
loading there and running marked's rules — up to 1.3 s of main thread on the loaded machine — as the waiting call
arrived); a card shows its text as written until the app loads the chunk.
The same bench on the app before the second round (branch i33-phone's build; bench/phone-before.json, ${b.generated_at.slice(0, 16).replace("T", " ")} UTC, load ${b.load_avg_1m.join(" → ")}): visible p50
cold ${w(b, "cold")}, warm ${w(b, "warm")}${seen(b)}; after (this run): cold ${w(p, "cold")}, warm ${w(p, "warm")}${seen(p)}. The two runs
followed each other, not interleaved, on a machine other jobs share (their loads above); each run's per-round spread
is wide, so read the direction, not the second digit.
The third round (2026-12-06 afternoon): the network service's own times for the socket (CDP Network's handshake
request and response) showed the warm handshake taking 230–400 ms where a cold one took 130–150 ms; a warm open with
the app's module script left out of the page (a bench/.tmp experiment, 6 opens each) had it at 160 ms and the waiting
call at 300–460 ms, against 230–370 ms and 500–650 ms with the app starting beside it — on this 2-core machine the
app's start (its bundle's evaluation and first render) slowed the handshake, and the question then waited for the
app's render. The early script (web/src/early-card.ts) now draws the card of a waiting \`ask_question\` or
\`confirm\` itself, in a plaintext session not pinned sealed, and the app starts a task after that card's paint (or
at once when none is coming, at most 800 ms after the dial); what is typed or pressed on it is carried out by the app's
card when it shows. It also dials before it opens IndexedDB for the seal pin. The code before this round, in the
same kind of 7-round run (14:20 UTC): warm 2.0×, cold 2.81×, seen 1.43×; answered warm 1.69×, cold 1.91× — the
answer still leaves once the app has started, so \`answered\` moved little (warm 1.69× → about 1.7–1.8×, its
milliseconds down by about 100) while \`visible\` moved a lot: the trade is a card readable before it can act.
What is left: the navigation's commit and the early script's fetch and evaluation before the dial (≈ 140–250 ms on the
warm open), the handshake (≈ 160–200 ms under the emulated 150 ms), the first paint of the early card at 4× CPU
(40–70 ms); then the app's start (≈ 250 ms at 4×) before the card's buttons act — what was pressed meanwhile is
carried out then.
`;
}
