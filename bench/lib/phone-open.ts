// `npm run bench -- --phone` (issue 33 item 4): how long a phone takes to show a waiting question. Chromium
// (playwright-core, /usr/bin/chromium, a phone viewport) with CDP network throttling on the page (150 ms RTT,
// 1.6 Mbps down, 750 kbps up: `Network.emulateNetworkConditions`) and a 4× CPU slowdown
// (`Emulation.setCPUThrottlingRate`) opens a session link (`app_url`) while the agent's `ask_question` waits:
// - cold: a fresh browser context (no HTTP cache, no service worker);
// - warm: a new page in a context that loaded the app before (its service worker installed and controlling), the
//   call new while the app was closed (the realistic case after tapping a notification: no cache of it helps);
// - seen: the same warm context, the call shown once by an earlier (unthrottled) visit left without answering, so
//   the card comes from this device's own record of it (web/src/calls.ts, plaintext sessions only) first;
// - floor: a static HTML page with the same text, a reply box and a Send button, served by the bench's own
//   HTTP server on 127.0.0.1 (none of the relay's code), loaded cold.
// Measured: `visible` — ms from the navigation's start (the page's own clock) until the card holding the question
// has its text in the DOM and a frame has been painted after it (an init script: a MutationObserver, then
// requestAnimationFrame and a message-channel task); `answered` — ms from `page.goto` until the answer reached its
// receiver (the agent's `tool.result`, or the floor server's POST), the bench typing "ok" and pressing Send as
// soon as the text is visible. Interleaved rounds (the order rotates), ratios per round. No timing is asserted.
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { loadavg } from "node:os";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import type WebSocket from "ws";
import { createSession, relaySocket } from "./clients.js";
import { log } from "./harness.js";
import { snapshotRelay, startWrangler } from "./proc.js";
import { dist, roundRatio, type RoundRatio } from "./stats.js";
import { freePort, throttleServiceWorkers } from "./sw-throttle.js";

const ROUNDS = Number(process.env.PHONE_ROUNDS ?? 7);
export const PHONE_GOALS = { warm_vs_floor: 1.5, cold_vs_floor: 3 } as const;
export const THROTTLE = { rtt_ms: 150, down_kbps: 1600, up_kbps: 750, cpu_slowdown: 4 } as const;
export const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
type Way = "cold" | "warm" | "seen" | "floor";

export interface WayFigures {
  visible: { p50: number; min: number; max: number };
  answered: { p50: number; min: number; max: number };
  ttfb_p50: number;
}

export interface PhoneResults {
  generated_at: string;
  chromium: string;
  rounds: number;
  throttle: typeof THROTTLE;
  /** Whether the service workers got the same throttling (bench/lib/sw-throttle.ts), how many were attached, CDP errors. */
  sw_throttle: { on: boolean; attached: number; errors: string[] };
  load_avg_1m: number[];
  /** Per way: the distribution of `visible` and `answered` (ms), and the navigation's own timing (ms). */
  ways: Record<Exclude<Way, "seen">, WayFigures> & { seen?: WayFigures };
  ratios: {
    warm_vs_floor: RoundRatio;
    cold_vs_floor: RoundRatio;
    warm_answered_vs_floor: RoundRatio;
    cold_answered_vs_floor: RoundRatio;
    /** The warm context, the call seen by an earlier visit (absent in runs before this way was measured). */
    seen_vs_floor?: RoundRatio;
    seen_answered_vs_floor?: RoundRatio;
  };
  goals: Record<keyof typeof PHONE_GOALS, { goal: string; median: number; spread: [number, number]; met: boolean }>;
  /** The initial JS (scripts/size.mjs) and CSS of the build that was measured, KiB gzipped. */
  size: { initial_js_gz_kib: number; css_gz_kib: number; lines: string[] };
  /** Samples measured again after a failure (no answer within 60 s, a page that never showed the card). */
  retried: string[];
}

/**
 * Marks the moment the card `[data-call=<id>]` holds `text` and a frame was painted after it: `window.__visibleAt`.
 * A string, not a function: tsx (esbuild's keepNames) would wrap the function's inner names in a `__name` helper
 * the page does not have.
 */
export const watchVisible = (id: string, text: string): string => `(() => {
  const id = ${JSON.stringify(id)}, text = ${JSON.stringify(text)};
  const check = () => {
    const el = document.querySelector('[data-call="' + id + '"]');
    if (!el || !el.textContent || !el.textContent.includes(text)) return false;
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { if (window.__visibleAt === undefined) window.__visibleAt = performance.now(); };
      ch.port2.postMessage(0);
    });
    return true;
  };
  const mo = new MutationObserver(() => { if (check()) mo.disconnect(); });
  mo.observe(document, { childList: true, subtree: true, characterData: true });
})();`;

const FLOOR = (id: string, q: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>LineUp</title><style>body{font:16px system-ui,sans-serif;margin:0;padding:16px;background:#f6f7fb}
.card{background:#fff;border-radius:12px;padding:16px}textarea{width:100%;box-sizing:border-box;min-height:4em}
button{margin-top:8px;padding:10px 16px}</style></head>
<body><form class="card" data-call="${id}" method="post" action="/answer?id=${id}"><p>${q}</p>
<label>Reply <textarea name="reply"></textarea></label><button type="submit">Send</button></form></body></html>`;

/** The floor's server: `/floor?id=&q=` the static page; `POST /answer?id=` resolves that id's waiter. */
async function floorServer(): Promise<{ url: string; server: Server; answered(id: string): Promise<number> }> {
  const waiters = new Map<string, (t: number) => void>();
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/floor") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      return void res.end(FLOOR(u.searchParams.get("id") ?? "", u.searchParams.get("q") ?? ""));
    }
    if (u.pathname === "/answer" && req.method === "POST") {
      waiters.get(u.searchParams.get("id") ?? "")?.(performance.now());
      res.writeHead(200, { "content-type": "text/plain" });
      return void res.end("ok");
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    answered: (id) => new Promise((r) => waiters.set(id, r)),
  };
}

/** `p`, or a failure naming `what` after `ms`: no step of a sample may hang the bench. */
function bounded<T>(p: Promise<T>, what: string, ms = 60_000): Promise<T> {
  let t: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => (t = setTimeout(() => rej(new Error(`phone: ${what} took over ${ms / 1000} s`)), ms)))]).finally(() =>
    clearTimeout(t),
  );
}
const step = (what: string) => process.env.PHONE_DEBUG && log(`phone: ${what}`);

export async function throttled(ctx: BrowserContext): Promise<Page> {
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: THROTTLE.rtt_ms,
    downloadThroughput: (THROTTLE.down_kbps * 1000) / 8,
    uploadThroughput: (THROTTLE.up_kbps * 1000) / 8,
  });
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: THROTTLE.cpu_slowdown });
  return page;
}

/**
 * Chromium as a phone: headless, and (unless PHONE_SW_THROTTLE=0) a debugging port through which every service
 * worker gets the page's network conditions and CPU slowdown too (bench/lib/sw-throttle.ts: the page's own CDP
 * throttling does not reach its service worker, so a warm load's navigation would skip it).
 */
export async function phoneBrowser(): Promise<{ browser: Browser; sw: Awaited<ReturnType<typeof throttleServiceWorkers>> | undefined }> {
  const port = process.env.PHONE_SW_THROTTLE === "0" ? undefined : await freePort();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      ...(port ? [`--remote-debugging-port=${port}`] : []),
    ],
  });
  const sw = port
    ? await throttleServiceWorkers(port, {
        latency: THROTTLE.rtt_ms,
        downloadThroughput: (THROTTLE.down_kbps * 1000) / 8,
        uploadThroughput: (THROTTLE.up_kbps * 1000) / 8,
        cpu: THROTTLE.cpu_slowdown,
      })
    : undefined;
  return { browser, sw };
}

/**
 * Polls the init script's `window.__visibleAt` (watchVisible) until it is set, and returns it. A page expression
 * through CDP's Runtime.evaluate, which the page's CSP does not govern — `page.waitForFunction` with a string
 * predicate compiles it inside the page, which our `script-src 'self'` refuses (an EvalError once seen).
 */
export async function visibleAt(page: Page, timeoutMs = 60_000): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const at = await page.evaluate<number | undefined>("window.__visibleAt");
    if (typeof at === "number") return at;
    if (Date.now() > until) throw new Error(`the card did not show within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits for `__visibleAt`, types "ok" into the card's reply box and presses Send; returns `visible` and the navigation's TTFB. */
async function openAndAnswer(page: Page, url: string, id: string, text: string): Promise<{ visible: number; ttfb: number }> {
  await page.addInitScript({ content: watchVisible(id, text) });
  await page.goto(url, { waitUntil: "commit" });
  // `window.__visibleAt` is the init script's own global (watchVisible): read as page expressions, not typed code.
  // Read while the page is still this one (the floor's form navigates once sent).
  const visible = await visibleAt(page);
  const ttfb = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
    return nav ? nav.responseStart - nav.requestStart : NaN;
  });
  const got = { visible, ttfb };
  const card = page.locator(`[data-call="${id}"]`);
  await card.locator("textarea").fill("ok");
  await card.getByRole("button", { name: "Send" }).click();
  return got;
}

/** scripts/size.mjs's initial JavaScript, and the stylesheets index.html links (gzipped like it), of dist/web. */
function sizes(): PhoneResults["size"] {
  const out = execFileSync(process.execPath, ["scripts/size.mjs"], { encoding: "utf8" });
  const lines = out.trim().split("\n");
  const initial = Number(/initial JavaScript: ([\d.]+) KB/.exec(out)?.[1] ?? NaN);
  const html = readFileSync("dist/web/index.html", "utf8");
  const css = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="\/?([^"]+\.css)"/g)].reduce(
    (n, m) => n + gzipSync(readFileSync(`dist/web/${m[1]}`), { level: 9 }).length,
    0,
  );
  return {
    initial_js_gz_kib: initial,
    css_gz_kib: Math.round((css / 1024) * 10) / 10,
    lines: lines.filter((l) => /initial|index\.html/.test(l)),
  };
}

export async function runPhone(): Promise<PhoneResults> {
  const loads = [loadavg()[0]!];
  const size = sizes(); // of the build the relay snapshot below serves
  rmSync("bench/.tmp/state-phone", { recursive: true, force: true });
  log("phone: starting the relay (wrangler dev), the floor's server and Chromium");
  const relay = await startWrangler({ config: snapshotRelay("bench/.tmp/phone-relay"), persistTo: "bench/.tmp/state-phone" });
  const floor = await floorServer();
  const { browser, sw } = await phoneBrowser();
  let agent: WebSocket | undefined;
  try {
    const s = await createSession(relay.url, "Phone bench");
    agent = await relaySocket(s, s.agent_token, "agent-phone");
    const results = new Map<string, (t: number) => void>();
    agent.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as { type: string; call_id?: string };
      if (f.type === "tool.result" && f.call_id) {
        results.get(f.call_id)?.(performance.now());
        agent!.send(JSON.stringify({ type: "tool.ack", call_id: f.call_id }));
      }
    });
    // The warm context: the app loaded once (unthrottled), its service worker installed and in control.
    const warmCtx = await browser.newContext({ ...PHONE, serviceWorkers: "allow" });
    let seq = 0;
    const ask = (way: Way) => {
      const id = `q${++seq}`;
      const text = `Deploy build ${seq} (${way}) to staging now?`;
      return { id, text };
    };
    const once = async (way: Way): Promise<{ visible: number; answered: number; ttfb: number }> => {
      const { id, text } = ask(way);
      step(`${way} ${id}: context`);
      const ctx = way === "warm" || way === "seen" ? warmCtx : await bounded(browser.newContext({ ...PHONE, serviceWorkers: "allow" }), "newContext");
      try {
        step(`${way} ${id}: page`);
        const page = await bounded(throttled(ctx), "a throttled page");
        let done: Promise<number>;
        let url: string;
        if (way === "floor") {
          done = floor.answered(id);
          url = `${floor.url}/floor?id=${id}&q=${encodeURIComponent(text)}`;
        } else {
          done = new Promise((r) => results.set(id, r));
          agent!.send(
            JSON.stringify({
              type: "tool.call",
              call_id: id,
              name: "ask_question",
              arguments: { project_directory: "/srv/app", question: text },
              timeout_s: 600,
            }),
          );
          url = s.app_url;
          if (way === "seen") {
            // An earlier visit (unthrottled) showed the card and was left without answering.
            step(`${way} ${id}: the earlier visit`);
            const before = await bounded(ctx.newPage(), "a page for the earlier visit");
            await before.goto(url, { waitUntil: "commit" });
            await before.locator(`[data-call="${id}"]`).getByText(text).waitFor({ timeout: 60_000 });
            await bounded(before.close(), "page.close", 20_000);
          }
        }
        step(`${way} ${id}: open`);
        const t0 = performance.now();
        const got = await bounded(openAndAnswer(page, url, id, text), `opening and answering ${id} (${way})`, 90_000);
        step(`${way} ${id}: answered on the page`);
        const answered = (await bounded(done, `the answer to ${id} (${way})`)) - t0;
        step(`${way} ${id}: closing`);
        // Only the warm context lives on; the floor's page, mid-navigation after its POST, could take long to close.
        if (way === "warm" || way === "seen") await bounded(page.close(), "page.close", 20_000);
        return { visible: got.visible, answered, ttfb: got.ttfb };
      } finally {
        if (way !== "warm" && way !== "seen") await bounded(ctx.close(), "context.close", 20_000).catch((e: unknown) => log(String(e)));
      }
    };
    {
      const p = await warmCtx.newPage();
      const { id, text } = ask("warm");
      const done = new Promise<number>((r) => results.set(id, r));
      agent.send(
        JSON.stringify({ type: "tool.call", call_id: id, name: "ask_question", arguments: { project_directory: "/srv/app", question: text }, timeout_s: 600 }),
      );
      await openAndAnswer(p, s.app_url, id, text);
      await done;
      await p.evaluate(() => navigator.serviceWorker.ready.then(() => true));
      await p.close();
    }
    const order: Way[] = ["floor", "cold", "warm", "seen"];
    const got: Record<Way, { visible: number; answered: number; ttfb: number }[]> = { floor: [], cold: [], warm: [], seen: [] };
    const retried: string[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < order.length; k++) {
        const w = order[(r + k) % order.length]!;
        for (let attempt = 1; ; attempt++) {
          try {
            got[w].push(await once(w));
            break;
          } catch (e) {
            if (attempt >= 3) throw e;
            retried.push(`round ${r + 1} ${w}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
            log(`phone: ${retried.at(-1)} — measured again`);
          }
        }
      }
      log(`phone: round ${r + 1}/${ROUNDS}: visible ${order.map((w) => `${w} ${got[w][r]!.visible.toFixed(0)}`).join(", ")} ms`);
    }
    loads.push(loadavg()[0]!);
    const v = (w: Way) => got[w].map((x) => x.visible);
    const a = (w: Way) => got[w].map((x) => x.answered);
    const short = (xs: number[]) => {
      const d = dist(xs);
      return { p50: Math.round(d.p50), min: Math.round(d.min), max: Math.round(d.max) };
    };
    const ratios = {
      warm_vs_floor: roundRatio(v("warm"), v("floor")),
      cold_vs_floor: roundRatio(v("cold"), v("floor")),
      warm_answered_vs_floor: roundRatio(a("warm"), a("floor")),
      cold_answered_vs_floor: roundRatio(a("cold"), a("floor")),
      seen_vs_floor: roundRatio(v("seen"), v("floor")),
      seen_answered_vs_floor: roundRatio(a("seen"), a("floor")),
    };
    const goal = (x: RoundRatio, g: number) => ({ goal: `≤ ${g}`, median: x.median, spread: x.spread, met: x.median <= g });
    const res: PhoneResults = {
      generated_at: new Date().toISOString(),
      chromium: browser.version(),
      rounds: ROUNDS,
      throttle: THROTTLE,
      sw_throttle: { on: !!sw, attached: sw?.attached() ?? 0, errors: [...new Set(sw?.errors ?? [])] },
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      ways: Object.fromEntries(
        order.map((w) => [w, { visible: short(v(w)), answered: short(a(w)), ttfb_p50: Math.round(dist(got[w].map((x) => x.ttfb)).p50) }]),
      ) as PhoneResults["ways"],
      ratios,
      goals: { warm_vs_floor: goal(ratios.warm_vs_floor, PHONE_GOALS.warm_vs_floor), cold_vs_floor: goal(ratios.cold_vs_floor, PHONE_GOALS.cold_vs_floor) },
      size,
      retried,
    };
    writeFileSync("bench/phone.json", `${JSON.stringify(res, null, 2)}\n`);
    log(
      `phone: visible p50 floor ${res.ways.floor.visible.p50} ms, cold ${res.ways.cold.visible.p50} ms (${ratios.cold_vs_floor.median}× [goal ≤ ${PHONE_GOALS.cold_vs_floor}]), warm ${res.ways.warm.visible.p50} ms (${ratios.warm_vs_floor.median}× [goal ≤ ${PHONE_GOALS.warm_vs_floor}]), seen before ${res.ways.seen?.visible.p50} ms (${ratios.seen_vs_floor.median}×); initial JS ${res.size.initial_js_gz_kib} KB gz, CSS ${res.size.css_gz_kib} KB gz`,
    );
    return res;
  } finally {
    agent?.close();
    sw?.close();
    await browser.close();
    await new Promise<void>((r) => floor.server.close(() => r()));
    await relay.stop();
    for (const d of ["bench/.tmp/phone-relay", "bench/.tmp/state-phone"]) rmSync(d, { recursive: true, force: true });
  }
}
