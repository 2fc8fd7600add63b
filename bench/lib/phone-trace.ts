// `npm run bench -- --phone-trace` (issue 33 item 4): where a phone's time goes before a waiting question shows.
// The same throttled Chromium as bench/lib/phone-open.ts (its `throttled` page, its `watchVisible` mark), one
// cold and one warm load per round, each with an init script that stamps the page's own clock at each step:
// the init script itself (the document's start), the early script's tag and run, the module script's tag, the
// early card (web/src/early-card.ts), the first render of #app, `new WebSocket` and `open` of every socket, the
// first frame of each type (hello, tool.call, …); the network service's own times for the socket (CDP Network:
// the handshake's request and response, each frame);
// plus the navigation's and every resource's timing (from the network or the service worker), and a Chrome
// trace (CDP Tracing, devtools.timeline) summing the renderer main thread's busy time before the card showed.
// It also checks whether the page's CDP throttling reaches the service worker's own fetches (it does not: the
// conditions are scoped to the CDP session they are sent on — the SW is a target of its own), by timing one
// fetch the SW makes for the page against the same fetch made by the page. Figures are printed, not asserted.
import { rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { Browser, Page } from "playwright-core";
import type WebSocket from "ws";
import { createSession, relaySocket } from "./clients.js";
import { log } from "./harness.js";
import { snapshotRelay, startWrangler } from "./proc.js";
import { PHONE, phoneBrowser, throttled, visibleAt, watchVisible } from "./phone-open.js";

const ROUNDS = Number(process.env.PHONE_ROUNDS ?? 3);

/** Stamps (page clock, ms from the navigation's start) of the steps between the HTML and the card. */
const STAMPS = `(() => {
  const s = (window.__stamps = {});
  const at = (k) => { if (s[k] === undefined) { s[k] = Math.round(performance.now()); performance.mark("stamp:" + k); } };
  at("init");
  let early;
  Object.defineProperty(window, "lineupEarly", { configurable: true, get() { return early; }, set(v) { if (v === null) at("early.run"); early = v; } });
  new MutationObserver((_, mo) => {
    if (document.querySelector('script[src*="early"]')) { at("tag.early"); }
    if (document.querySelector('script[type=module]')) { at("tag.module"); }
    if (document.body) { at("body"); mo.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
  new MutationObserver((_, mo) => {
    if (document.querySelector(".early-card [data-call]")) { at("early.card"); mo.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...a) {
      super(...a);
      at("ws.new");
      const u = new URL(String(a[0])).pathname.slice(0, 40);
      (window.__frames ||= []).push("new:" + u + "@" + Math.round(performance.now()));
      this.addEventListener("open", () => { at("ws.open"); (window.__frames ||= []).push("open:" + u + "@" + Math.round(performance.now())); });
      this.addEventListener("message", (e) => {
        let t = "?";
        try { t = JSON.parse(e.data).type; } catch {}
        at("ws." + t);
        (window.__frames ||= []).push("<" + t + "@" + Math.round(performance.now()));
      });
    }
    send(d) {
      let t = "?";
      try { t = JSON.parse(d).type; } catch {}
      (window.__frames ||= []).push(">" + t + "@" + Math.round(performance.now()));
      return super.send(d);
    }
  };
  new MutationObserver((_, mo) => {
    const app = document.getElementById("app");
    if (app && app.firstChild) { at("render.first"); mo.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
  new MutationObserver((_, mo) => {
    if (document.querySelector(".thread [data-call] textarea")) { at("card.dom"); mo.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => at("dcl"));
})();`;

interface Sample {
  way: "cold" | "warm";
  visible: number;
  stamps: Record<string, number | string>;
  nav: { responseStart: number; responseEnd: number; workerStart: number };
  resources: { name: string; start: number; end: number; size: number }[];
  mainThread: Record<string, number>;
}

/** The renderer main thread's busy time by event name (complete events), from navigation start to `until`. */
function busy(events: TraceEvent[], untilMs: number): Record<string, number> {
  const main = new Set(events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
  const nav = events.find((e) => e.name === "navigationStart" && main.has(`${e.pid}:${e.tid}`));
  if (!nav) return {};
  const end = nav.ts + untilMs * 1000;
  const out: Record<string, number> = {};
  const names = new Set([
    "RunTask",
    "EvaluateScript",
    "v8.compile",
    "v8.compileModule",
    "v8.evaluateModule",
    "FunctionCall",
    "ParseHTML",
    "ParseAuthorStyleSheet",
    "UpdateLayoutTree",
    "Layout",
    "Paint",
    "v8.run",
    "TimerFire",
    "FireAnimationFrame",
    "EventDispatch",
    "MajorGC",
    "MinorGC",
  ]);
  const long: string[] = [];
  for (const e of events) {
    if (e.ph !== "X" || !main.has(`${e.pid}:${e.tid}`) || !names.has(e.name) || e.ts < nav.ts || e.ts > end) continue;
    out[e.name] = Math.round(((out[e.name] ?? 0) + (e.dur ?? 0) / 1000) * 10) / 10;
    if (e.name !== "RunTask" && (e.dur ?? 0) > 25_000)
      long.push(`${e.name}${e.what ? `(${e.what})` : ""}@${Math.round((e.ts - nav.ts) / 1000)}+${Math.round((e.dur ?? 0) / 1000)}`);
  }
  if (process.env.PHONE_TRACE_LONG) log(`  long: ${long.join(" ")}`);
  return out;
}
/**
 * PHONE_TRACE_TASKS=1: the renderer main thread's tasks from `from` to `to` (page clock, ms; aligned
 * on the `stamp:ws.tool.call` user-timing mark): the outermost events of 3 ms or more, each with its three longest
 * nested events.
 */
function tasksBetween(events: TraceEvent[], stamps: Record<string, number>, from: number, to: number): void {
  const main = new Set(events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
  const mark = events.find((e) => e.name === "stamp:ws.tool.call");
  const call = stamps["ws.tool.call"];
  if (!mark || call === undefined) {
    log("  tasks: no tool.call mark");
    return;
  }
  const page = (ts: number) => Math.round(call + (ts - mark.ts) / 1000);
  const on = events.filter((e) => e.ph === "X" && main.has(`${e.pid}:${e.tid}`) && page(e.ts) >= from - 5 && page(e.ts) <= to + 5);
  const out: string[] = [];
  const within = (e: TraceEvent, t: TraceEvent) => e !== t && e.ts >= t.ts && e.ts + (e.dur ?? 0) <= t.ts + (t.dur ?? 0);
  const top = on.filter((e) => (e.dur ?? 0) >= 3000 && !on.some((t) => (t.dur ?? 0) > (e.dur ?? 0) && within(e, t)));
  for (const t of top) {
    const inner = on
      .filter((e) => within(e, t))
      .sort((a, b) => (b.dur ?? 0) - (a.dur ?? 0))
      .slice(0, 3)
      .map((e) => `${e.name}${e.what ? `(${e.what})` : ""}+${Math.round((e.dur ?? 0) / 1000)}`);
    out.push(`${t.name}${t.what ? `(${t.what})` : ""}@${page(t.ts)}+${Math.round((t.dur ?? 0) / 1000)} [${inner.join(", ")}]`);
  }
  log(`  tasks ${Math.round(from)} → ${Math.round(to)}: ${out.join(" ")}`);
}
interface TraceEvent {
  name: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: { name?: string };
  what?: string;
}

function traceEvent(e: Record<string, unknown>): TraceEvent {
  const args = e.args && typeof e.args === "object" && "name" in e.args ? { name: String(e.args.name) } : undefined;
  const data =
    e.args && typeof e.args === "object" && "data" in e.args && e.args.data && typeof e.args.data === "object" ? (e.args.data as Record<string, unknown>) : {};
  const what = [data.url, data.functionName, data.type]
    .filter((x) => typeof x === "string" && x)
    .map((x) => String(x).replace(/^.*\//, ""))
    .join(" ");
  return {
    name: String(e.name),
    ph: String(e.ph),
    ts: Number(e.ts),
    dur: Number(e.dur ?? 0),
    pid: Number(e.pid),
    tid: Number(e.tid),
    ...(args ? { args } : {}),
    ...(what ? { what } : {}),
  };
}

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number }; parent?: number; children?: number[] }[];
  startTime: number;
  samples?: number[];
  timeDeltas?: number[];
}
/** Self time per function in the CPU profile: before `ws.new`, from it to the first render, and from `ws.tool.call` to the card's paint. */
function selfTimes(p: Profile, stamps: Record<string, number>, navTs: number, visible: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const spans: Record<string, Map<string, number>> = { early: new Map(), to_render: new Map(), after_call: new Map() };
  let t = p.startTime;
  (p.samples ?? []).forEach((id, i) => {
    t += (p.timeDeltas ?? [])[i] ?? 0;
    const n = byId.get(id);
    if (!n) return;
    const key = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.replace(/^.*\//, "")}:${n.callFrame.lineNumber}:${n.callFrame.columnNumber ?? ""}`;
    // The profile's clock is the trace's (µs, monotonic): aligned on the trace's navigationStart.
    const ms = (t - navTs) / 1000;
    const span =
      ms < 0
        ? undefined
        : ms < (stamps["ws.new"] ?? 0)
          ? "early"
          : ms < (stamps["render.first"] ?? 0)
            ? "to_render"
            : ms >= (stamps["ws.tool.call"] ?? Infinity) && ms <= visible
              ? "after_call"
              : undefined;
    if (span) spans[span]!.set(key, (spans[span]!.get(key) ?? 0) + ((p.timeDeltas ?? [])[i] ?? 0) / 1000);
  });
  for (const [k, m] of Object.entries(spans))
    log(
      `  self ${k}: ${[...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 25)
        .map(([f, v]) => `${f} ${v.toFixed(0)}`)
        .join(" | ")}`,
    );
}

async function traced(page: Page, run: () => Promise<number>): Promise<{ visible: number; mainThread: Record<string, number> }> {
  const cdp = await page.context().newCDPSession(page);
  const events: TraceEvent[] = [];
  // Playwright types the events' fields as strings; they are JSON values, read here one by one.
  cdp.on("Tracing.dataCollected", (d) => {
    for (const e of d.value) events.push(traceEvent(e));
  });
  const done = new Promise<void>((r) => cdp.once("Tracing.tracingComplete", () => r()));
  await cdp.send("Tracing.start", {
    traceConfig: {
      includedCategories: ["devtools.timeline", "v8.execute", "blink.user_timing", "loading", "__metadata"],
      recordMode: "recordAsMuchAsPossible",
    },
    transferMode: "ReportEvents",
  });
  // The network service's own clock for the session's socket (CDP Network events, seconds on the trace's clock).
  const net: { what: string; ts: number }[] = [];
  await cdp.send("Network.enable");
  for (const ev of [
    "webSocketCreated",
    "webSocketWillSendHandshakeRequest",
    "webSocketHandshakeResponseReceived",
    "webSocketFrameReceived",
    "webSocketFrameSent",
  ] as const)
    cdp.on(`Network.${ev}`, (e) => void net.push({ what: ev, ts: ("timestamp" in e ? Number(e.timestamp) : NaN) * 1e6 }));
  const prof = process.env.PHONE_TRACE_PROFILE ? await page.context().newCDPSession(page) : undefined;
  if (prof) {
    await prof.send("Profiler.enable");
    await prof.send("Profiler.setSamplingInterval", { interval: 200 });
    await prof.send("Profiler.start");
  }
  const visible = await run();
  const profile = prof ? (await prof.send("Profiler.stop")).profile : undefined;
  const stamps = await page.evaluate(() => Reflect.get(window, "__stamps") as Record<string, number>);
  await cdp.send("Tracing.end");
  await done;
  {
    const mark = events.find((e) => e.name === "stamp:init");
    const at = stamps.init;
    if (mark && at !== undefined)
      log(
        `  network ${net.map((n) => `${n.what.replace("webSocket", "")}@${Number.isFinite(n.ts) ? Math.round(at + (n.ts - mark.ts) / 1000) : "?"}`).join(" ")}`,
      );
  }
  // PHONE_TRACE_DUMP=<path prefix>: the stamps and the trace's events of each load as JSON, for a closer look.
  if (process.env.PHONE_TRACE_DUMP) writeFileSync(`${process.env.PHONE_TRACE_DUMP}-${Date.now()}.json`, JSON.stringify({ stamps, visible, events }));
  const nav = events.find((e) => e.name === "navigationStart");
  if (profile && nav) selfTimes(profile, stamps, nav.ts, visible);
  if (process.env.PHONE_TRACE_TASKS) {
    tasksBetween(events, stamps, 0, stamps["ws.new"] ?? 0);
    tasksBetween(events, stamps, stamps["ws.tool.call"] ?? 0, visible);
  }
  return { visible, mainThread: busy(events, visible) };
}

async function open(page: Page, url: string, id: string, text: string): Promise<Omit<Sample, "way" | "mainThread">> {
  await page.addInitScript({ content: watchVisible(id, text) });
  await page.addInitScript({ content: STAMPS });
  await page.goto(url, { waitUntil: "commit" });
  await visibleAt(page);
  const got = await page.evaluate(() => {
    // The init scripts' own globals (watchVisible, STAMPS), read off the window.
    const w = { __visibleAt: Reflect.get(window, "__visibleAt") as number, __stamps: Reflect.get(window, "__stamps") as Record<string, number | string> };
    const frames = Reflect.get(window, "__frames") as string[] | undefined;
    const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    const r = (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((e) => ({
      name: new URL(e.name).pathname,
      start: Math.round(e.startTime),
      end: Math.round(e.responseEnd),
      size: e.transferSize,
    }));
    return {
      visible: Math.round(w.__visibleAt),
      stamps: { ...w.__stamps, frames: frames?.join(" ") ?? "" },
      nav: { responseStart: Math.round(n.responseStart), responseEnd: Math.round(n.responseEnd), workerStart: Math.round(n.workerStart) },
      resources: r,
    };
  });
  const card = page.locator(`[data-call="${id}"]`);
  await card.locator("textarea").fill("ok");
  await card.getByRole("button", { name: "Send" }).click();
  return got;
}

/** Does the page's throttling reach the service worker's fetches? One uncached path fetched by the SW (a
 * navigation it answers network-first) against the same path fetched by the page (a LIVE path the SW leaves alone). */
async function swThrottleCheck(browser: Browser, base: string): Promise<{ page_fetch_ms: number; sw_navigation_ms: number }> {
  const ctx = await browser.newContext({ ...PHONE, serviceWorkers: "allow" });
  try {
    const p = await ctx.newPage();
    await p.goto(base);
    await p.evaluate(() => navigator.serviceWorker.ready.then(() => true));
    await p.reload();
    await p.evaluate(() => navigator.serviceWorker.ready.then(() => true));
    await p.close();
    const page = await throttled(ctx);
    await page.goto(`${base}/settings`);
    return await page.evaluate(async () => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      const t0 = performance.now();
      await (await fetch("/healthz", { cache: "no-store" })).text();
      return { page_fetch_ms: Math.round(performance.now() - t0), sw_navigation_ms: Math.round(nav.responseEnd - nav.workerStart) };
    });
  } finally {
    await ctx.close();
  }
}

export async function runPhoneTrace(): Promise<void> {
  const load0 = loadavg()[0]!;
  const relay = await startWrangler({ config: snapshotRelay("bench/.tmp/trace-relay"), persistTo: "bench/.tmp/state-trace" });
  const { browser, sw } = await phoneBrowser();
  let agent: WebSocket | undefined;
  try {
    const s = await createSession(relay.url, "Phone trace");
    agent = await relaySocket(s, s.agent_token, "agent-trace");
    agent.on("message", (d: Buffer) => {
      const f = JSON.parse(d.toString()) as { type: string; call_id?: string };
      if (f.type === "tool.result" && f.call_id) agent!.send(JSON.stringify({ type: "tool.ack", call_id: f.call_id }));
    });
    let seq = 0;
    const ask = () => {
      const id = `t${++seq}`;
      const text = `Deploy build ${seq} to staging now?`;
      agent!.send(
        JSON.stringify({ type: "tool.call", call_id: id, name: "ask_question", arguments: { project_directory: "/srv/app", question: text }, timeout_s: 600 }),
      );
      return { id, text };
    };
    const warmCtx = await browser.newContext({ ...PHONE, serviceWorkers: "allow" });
    {
      const p = await warmCtx.newPage();
      const { id, text } = ask();
      await open(p, s.app_url, id, text);
      await p.evaluate(() => navigator.serviceWorker.ready.then(() => true));
      await p.close();
    }
    const samples: Sample[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const way of ["cold", "warm"] as const) {
        const ctx = way === "warm" ? warmCtx : await browser.newContext({ ...PHONE, serviceWorkers: "allow" });
        const page = await throttled(ctx);
        const { id, text } = ask();
        let got: Omit<Sample, "way" | "mainThread"> | undefined;
        const t = await traced(page, async () => {
          got = await open(page, s.app_url, id, text);
          return got.visible;
        });
        samples.push({ way, ...got!, mainThread: t.mainThread });
        await page.close();
        if (way === "cold") await ctx.close();
        log(`trace ${way}: visible ${got!.visible} ms; ${JSON.stringify(got!.stamps)}; nav ${JSON.stringify(got!.nav)}`);
        log(`  resources ${got!.resources.map((x) => `${x.name} ${x.start}→${x.end}`).join(", ")}`);
        log(`  main thread ${JSON.stringify(t.mainThread)}`);
      }
    }
    const sw = await swThrottleCheck(browser, relay.url);
    log(`service worker throttling: ${JSON.stringify(sw)}`);
    writeFileSync("bench/.tmp/phone-trace.json", `${JSON.stringify({ load: [load0, loadavg()[0]], samples, sw }, null, 2)}\n`);
  } finally {
    agent?.close();
    log(`service workers throttled: ${sw ? `${sw.attached()} attached, errors ${JSON.stringify([...new Set(sw.errors)])}` : "off"}`);
    sw?.close();
    await browser.close();
    await relay.stop();
    for (const d of ["bench/.tmp/trace-relay", "bench/.tmp/state-trace"]) rmSync(d, { recursive: true, force: true });
  }
}
