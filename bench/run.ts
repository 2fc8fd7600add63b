// `npm run bench`: the relay (the real Worker in workerd, via `wrangler dev`) measured side by side, in one
// run, with three baselines carrying the same frames: the durable floor (a Durable Object making only the
// writes a relay that must not lose a call needs), the bare forwarding Durable Object (the platform floor)
// and a plain Node `ws` relay. Progress goes to stderr; figures to bench/results.json and docs/benchmarks.md.
// `npm run bench -- --profile` (or BENCH_PROFILE=1) instead takes a CPU profile of the relay's frame path
// (bench/lib/profile.ts); `npm run bench -- --extras` costs the contract's writes on the durable floor.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { baselinePair, createSession, relayPair, whoami, type Pair, type SystemName } from "./lib/clients.js";
import { runAb } from "./lib/ab.js";
import { countPerCall } from "./lib/count.js";
import { runExtras } from "./lib/extras.js";
import { elapsedS, latencyRounds, log, openSystems, RELAY_VARS, saturate, sleep, WARMUP, type Systems } from "./lib/harness.js";
import { runProfile } from "./lib/profile.js";
import { runStartup } from "./lib/startup.js";
import { runHttpHook } from "./lib/http-hook.js";
import { runInboxScale } from "./lib/inbox-scale.js";
import { runInboxPath } from "./lib/inbox-path.js";
import { runPhone } from "./lib/phone-open.js";
import { runPhoneTrace } from "./lib/phone-trace.js";
import { runDirect } from "./lib/direct.js";
import { loadExtra, renderMarkdown, renderSvg } from "./lib/render.js";
import { cpuMsOf, LOCAL_OBSERVABILITY, memOf, sampleRss, snapshotRelay, startNodeBaselineProc, startWrangler, workerdOf, type Proc } from "./lib/proc.js";
import type { Cpu, Results, Scale, Throughput, Wake } from "./lib/results.js";
import { dist, median, ratio, roundRatio } from "./lib/stats.js";

const LATENCY_CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const IN_FLIGHT = 64;
const THROUGHPUT_S = Number(process.env.BENCH_SECONDS ?? 10);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 200);
const APPS = 2;
const WAKE_SESSIONS = 3;
const WARM_AFTER_WAKE = 5;
const MIN_IDLE_S = 15;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

// The machine is shared (client, relay, baselines, and whatever else runs): the systems are measured in
// interleaved rounds, rotating who goes first, so that load changes hit all of them alike; every ratio is
// taken per round and summarized by its median and spread.
const ROUNDS = 10;
const TPUT_ROUNDS = 5;
const rec = <T>(f: (s: SystemName) => T): Record<SystemName, T> => ({
  relay: f("relay"),
  durable: f("durable"),
  durable_alarm: f("durable_alarm"),
  do: f("do"),
  node: f("node"),
});

async function throughputRounds(sys: Systems<SystemName>, order: SystemName[], cpuPid: Partial<Record<SystemName, { runtime?: number; proxy?: number }>>) {
  const calls = rec(() => 0);
  const secs = rec(() => 0);
  const rounds = rec(() => [] as number[]);
  const cpu = rec(() => ({ runtime: 0, proxy: 0, ok: true }));
  for (let r = 0; r < TPUT_ROUNDS; r++) {
    for (let k = 0; k < order.length; k++) {
      const s = order[(r + k) % order.length]!;
      const pids = cpuPid[s];
      const c0 = [cpuMsOf(pids?.runtime), cpuMsOf(pids?.proxy)];
      const got = await sys.robust(s, (a) => saturate(a, IN_FLIGHT, THROUGHPUT_S / TPUT_ROUNDS));
      const c1 = [cpuMsOf(pids?.runtime), cpuMsOf(pids?.proxy)];
      if (c0[0] === null || c1[0] === null) cpu[s].ok = false;
      else cpu[s].runtime += c1[0] - c0[0];
      if (c0[1] !== null && c1[1] !== null) cpu[s].proxy += c1[1] - c0[1];
      calls[s] += got.n;
      secs[s] += got.secs;
      rounds[s].push(Math.round(got.n / got.secs));
    }
    log(`throughput: round ${r + 1}/${TPUT_ROUNDS}: ${order.map((s) => `${s} ${rounds[s][r]}/s`).join(", ")}`);
  }
  const one = (s: SystemName): Throughput => ({
    in_flight: IN_FLIGHT,
    seconds: Math.round(secs[s] * 100) / 100,
    calls: calls[s],
    calls_per_s: Math.round(calls[s] / secs[s]),
    rounds: rounds[s],
  });
  const cpuOf = (s: SystemName): Cpu => ({
    cpu_ms: cpu[s].ok ? Math.round(cpu[s].runtime) : null,
    calls: calls[s],
    us_per_call: cpu[s].ok ? Math.round((cpu[s].runtime * 1000) / calls[s]) : null,
    proxy_us_per_call: cpu[s].ok ? Math.round((cpu[s].proxy * 1000) / calls[s]) : null,
  });
  return { tput: rec(one), cpu: { relay: cpuOf("relay"), durable: cpuOf("durable"), durable_alarm: cpuOf("durable_alarm"), do: cpuOf("do") } };
}

async function pool<T, R>(items: readonly T[], n: number, f: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]!, i);
      }
    }),
  );
  return out;
}

/** Many sessions at once on one system's process: connect them all, one call each, memory from /proc. */
async function scaleStep(
  name: string,
  pids: { runtime?: number; proxy?: number },
  open: (i: number, attempt: number) => Promise<Pair>,
  create?: (i: number) => Promise<void>,
): Promise<Scale> {
  log(`scale (${name}): ${SESSIONS} sessions × (1 agent + ${APPS} apps)`);
  await sleep(1000); // let the previous step's garbage settle before the "before" figure
  const rssBefore = memOf(pids.runtime)?.rssKiB ?? null;
  const sampler = sampleRss(pids.runtime);
  let t = performance.now();
  let createMs: number | null = null;
  if (create) {
    await pool(
      Array.from({ length: SESSIONS }, (_, i) => i),
      32,
      (i) => create(i),
    );
    createMs = Math.round(performance.now() - t);
    log(`scale (${name}): ${SESSIONS} sessions created in ${createMs} ms`);
  }
  let pairs: Pair[] = [];
  let lat: number[] = [];
  let connectMs = 0;
  let completeMs = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      t = performance.now();
      // Bounded concurrency: opening 600 sockets at once mostly measures the client's own queueing.
      pairs = await pool(
        Array.from({ length: SESSIONS }, (_, i) => i),
        25,
        (i) => open(i, attempt),
      );
      connectMs = performance.now() - t;
      log(`scale (${name}): all connected in ${connectMs.toFixed(0)} ms; one call each`);
      t = performance.now();
      lat = await Promise.all(pairs.map((p) => p.agent.call()));
      completeMs = performance.now() - t;
      break;
    } catch (e) {
      for (const p of pairs) p.close();
      if (attempt >= 3) throw e;
      log(`scale (${name}): ${(e as Error).message} — a socket dropped (wrangler dev reload?); repeating the step`);
    }
  }
  await sleep(300); // let the losing apps' late results drain
  const rssPeak = sampler.stop();
  const errors = pairs.reduce((n, p) => n + p.agent.errors.length, 0);
  log(`scale (${name}): all ${SESSIONS} calls answered in ${completeMs.toFixed(0)} ms; workerd RSS ${rssBefore ?? "?"} → peak ${rssPeak ?? "?"} KiB`);
  for (const p of pairs) p.close();
  return {
    sessions: SESSIONS,
    sockets: SESSIONS * (1 + APPS),
    create_sessions_ms: createMs,
    connect_all_ms: Math.round(connectMs),
    complete_all_ms: Math.round(completeMs),
    call_latency: dist(lat),
    workerd_rss_before_kib: rssBefore,
    workerd_rss_peak_kib: rssPeak,
    per_session_kib: rssBefore !== null && rssPeak !== null ? Math.round((rssPeak - rssBefore) / SESSIONS) : null,
    workerd_hwm_kib: memOf(pids.runtime)?.hwmKiB ?? null,
    proxy_rss_kib: memOf(pids.proxy)?.rssKiB ?? null,
    errors,
  };
}

/** The first call on each idle pair, then a few warm ones on the same sockets. */
async function wakeCalls(pairs: Pair[], instances?: string[]): Promise<Wake> {
  const w: Wake = { first_ms: [], warm_ms: [], ratio: [] };
  if (instances) w.hibernated = [];
  for (const [i, p] of pairs.entries()) {
    // A socket dropped by a wrangler dev reload cannot measure a wake-up (reconnecting wakes the object): skipped.
    if (p.agent.ws.readyState !== p.agent.ws.OPEN) continue;
    const first = await p.agent.call();
    const warm: number[] = [];
    for (let k = 0; k < WARM_AFTER_WAKE; k++) warm.push(await p.agent.call());
    w.first_ms.push(r3(first));
    w.warm_ms.push(r3(median(warm)));
    w.ratio.push(ratio(first, median(warm)));
    if (instances) w.hibernated!.push((await whoami(p.agent.ws)) !== instances[i]);
  }
  return w;
}

async function main() {
  if (!existsSync("dist/web/index.html")) {
    log("building the PWA once (the Worker serves dist/web)…");
    execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  }
  // First, while nothing else loads the machine: the agent package's start-up (bench/startup.json).
  await runStartup();
  // Then the http hook against the command hook (bench/http-hook.json, issue 29 item 6): its own relay, stopped after.
  await runHttpHook();
  // The direct path's round trip beside the relay's (bench/direct.json, issue 32): its own relay, stopped after.
  writeFileSync("bench/direct.json", `${JSON.stringify(await runDirect(), null, 2)}\n`);
  log("starting the relay (wrangler dev), the Durable Object baselines (wrangler dev) and the Node baseline…");
  let relay: Proc | undefined;
  let floor: Proc | undefined;
  let nodeBase: Proc | undefined;
  const stopAll = async () => {
    await Promise.all([relay?.stop(), floor?.stop(), nodeBase?.stop()]);
  };
  process.on("SIGINT", () => void stopAll().then(() => process.exit(130)));
  process.on("uncaughtException", (e) => {
    process.stderr.write(`[bench] uncaught: ${e.stack ?? e.message}\n`);
    void stopAll().then(() => process.exit(1));
  });
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0]!), 5000);
  try {
    // Fresh private state for both wrangler devs (see WranglerOpts.persistTo for why not .wrangler/state).
    rmSync("bench/.tmp/state-relay", { recursive: true, force: true });
    rmSync("bench/.tmp/state-floor", { recursive: true, force: true });
    [relay, floor, nodeBase] = await Promise.all([
      startWrangler({ config: snapshotRelay("bench/.tmp/relay-snapshot"), vars: RELAY_VARS, persistTo: "bench/.tmp/state-relay" }),
      startWrangler({ config: "bench/baseline-do/wrangler.toml", persistTo: "bench/.tmp/state-floor" }),
      startNodeBaselineProc(),
    ]);
    const wd = workerdOf(relay.proc.pid!);
    const fd = workerdOf(floor.proc.pid!);
    log(
      `relay ${relay.url} (workerd runtime pid ${wd.runtime ?? "?"}, proxy ${wd.proxy ?? "?"}), floors ${floor.url} (runtime ${fd.runtime ?? "?"}), node ${nodeBase.url}`,
    );
    const loadStart = loadavg()[0]!;
    loads.push(loadStart);

    // Wake-up first, on quiet objects: the subjects idle for MIN_IDLE_S with nothing else running, then calls.
    const wakeRelay: Pair[] = [];
    for (let i = 0; i < WAKE_SESSIONS; i++) {
      const p = await relayPair(await createSession(relay.url, `wake${i}`), 1, `wake${i}`);
      await p.agent.call();
      wakeRelay.push(p);
    }
    const wakeBase: Record<"durable" | "do", { pairs: Pair[]; instances: string[] }> = {
      durable: { pairs: [], instances: [] },
      do: { pairs: [], instances: [] },
    };
    for (const kind of ["durable", "do"] as const) {
      for (let i = 0; i < WAKE_SESSIONS; i++) {
        const pair = await baselinePair(floor.url, `wake${i}`, { durable: kind === "durable" });
        await pair.agent.call();
        wakeBase[kind].pairs.push(pair);
        wakeBase[kind].instances.push(await whoami(pair.agent.ws));
      }
    }
    const idleFrom = Date.now();
    const waitMore = MIN_IDLE_S * 1000 - (Date.now() - idleFrom);
    if (waitMore > 0) {
      log(`wake-up: waiting ${Math.ceil(waitMore / 1000)} s idle`);
      await sleep(waitMore);
    }
    const idleS = Math.round((Date.now() - idleFrom) / 1000);
    log(`wake-up: first call after ${idleS} s idle`);
    const wake = {
      relay: await wakeCalls(wakeRelay),
      durable: await wakeCalls(wakeBase.durable.pairs, wakeBase.durable.instances),
      do: await wakeCalls(wakeBase.do.pairs, wakeBase.do.instances),
    };
    for (const p of [...wakeRelay, ...wakeBase.durable.pairs, ...wakeBase.do.pairs]) p.close();
    const hib = [...(wake.durable.hibernated ?? []), ...(wake.do.hibernated ?? [])];
    const evicted = hib.filter(Boolean).length;
    const note =
      hib.length === 0
        ? `no wake-up sample: every idle socket was dropped before the first call (see the log).`
        : evicted === hib.length
          ? `wrangler dev did evict the idle objects: both baseline objects were constructed anew after ${idleS} s idle in ${evicted}/${hib.length} rooms, so these are real wake-ups (local workerd, not the edge).`
          : evicted === 0
            ? `wrangler dev did NOT hibernate the idle objects: the baselines kept their in-memory instance ids after ${idleS} s idle in all ${hib.length} rooms, so these figures are first-call-after-idle, not a real wake-up.`
            : `wrangler dev evicted ${evicted} of ${hib.length} idle baseline objects after ${idleS} s; figures mix real wake-ups and warm calls.`;
    log(
      `wake-up: relay ${wake.relay.first_ms.join(", ")} ms (warm after: ${wake.relay.warm_ms.join(", ")}); durable ${wake.durable.first_ms.join(", ")}; ${note}`,
    );

    const latSession = await createSession(relay.url, "lat");
    const open: Record<SystemName, (tag: string) => Promise<Pair>> = {
      relay: (tag) => relayPair(latSession, 1, `lat${tag}`),
      durable: (tag) => baselinePair(floor!.url, `lat${tag}`, { durable: true }),
      // The floor plus the alarm writes the relay's contract makes (a deadline on call, moved back on result).
      durable_alarm: (tag) => baselinePair(floor!.url, `la${tag}`, { durable: true, extra: "alarm" }),
      do: (tag) => baselinePair(floor!.url, `lat${tag}`),
      node: (tag) => baselinePair(nodeBase!.url, `lat${tag}`),
    };
    const sys0 = await openSystems(open);
    const order: SystemName[] = ["node", "do", "durable", "durable_alarm", "relay"];
    log(`latency: ${WARMUP} warm-up + ${LATENCY_CALLS} calls each, one in flight, ${ROUNDS} interleaved rounds`);
    const lat = await latencyRounds(sys0, order, LATENCY_CALLS, ROUNDS);
    log(`throughput: ${IN_FLIGHT} in flight, ${THROUGHPUT_S} s each in ${TPUT_ROUNDS} interleaved rounds`);
    const { tput, cpu } = await throughputRounds(sys0, order, { relay: wd, durable: fd, durable_alarm: fd, do: fd });
    const agentErrors = rec((s) => sys0.agent(s).errors.length);
    sys0.closeAll();

    const scaleRelay = await scaleStep(
      "relay",
      wd,
      (i, attempt) => relayPair(scaleSessions[i]!, APPS, `s${i}a${attempt}`),
      async (i) => void (scaleSessions[i] = await createSession(relay!.url, `scale${i}`)),
    );
    const scaleDurable = await scaleStep("durable floor", fd, (i, attempt) => baselinePair(floor!.url, `scale${i}a${attempt}`, { durable: true, apps: APPS }));

    const d = rec((s) => dist(lat.all[s]));
    const pr = (s: SystemName, k: "p50" | "p95" | "p99") => lat.perRound[s].map((x) => x[k]);
    const latRatios = (k: "p50" | "p95" | "p99") => ({
      vs_durable: roundRatio(pr("relay", k), pr("durable", k)),
      vs_durable_alarm: roundRatio(pr("relay", k), pr("durable_alarm", k)),
      vs_do: roundRatio(pr("relay", k), pr("do", k)),
      vs_node: roundRatio(pr("relay", k), pr("node", k)),
    });
    const tr = (s: SystemName) => tput[s].rounds;
    const ratios = {
      latency_p50: latRatios("p50"),
      latency_p95: latRatios("p95"),
      latency_p99: latRatios("p99"),
      throughput: {
        vs_durable: roundRatio(tr("relay"), tr("durable")),
        vs_durable_alarm: roundRatio(tr("relay"), tr("durable_alarm")),
        vs_do: roundRatio(tr("relay"), tr("do")),
        vs_node: roundRatio(tr("relay"), tr("node")),
      },
    };
    const wakeR = { median: ratio(median(wake.relay.ratio), 1), spread: [Math.min(...wake.relay.ratio), Math.max(...wake.relay.ratio)] as [number, number] };
    const cpuInfo = cpus();
    const loadEnd = loadavg()[0]!;
    loads.push(loadEnd);
    const l2 = (x: number) => Math.round(x * 100) / 100;
    const results: Results = {
      generated_at: new Date().toISOString(),
      machine: {
        cpus: cpuInfo.length,
        cpu_model: cpuInfo[0]?.model ?? "?",
        mem_gib: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        wrangler: (JSON.parse(readFileSync("node_modules/wrangler/package.json", "utf8")) as { version: string }).version,
      },
      config: {
        latency_calls: LATENCY_CALLS,
        latency_rounds: ROUNDS,
        warmup_calls: WARMUP,
        throughput_in_flight: IN_FLIGHT,
        throughput_seconds: THROUGHPUT_S,
        throughput_rounds: TPUT_ROUNDS,
        scale_sessions: SESSIONS,
        scale_apps_per_session: APPS,
        relay_vars: RELAY_VARS,
        local_observability: LOCAL_OBSERVABILITY,
      },
      latency: d,
      latency_rounds: rec((s) => ({ p50: pr(s, "p50"), p95: pr(s, "p95"), p99: pr(s, "p99") })),
      throughput: tput,
      ratios,
      durable_vs_do: { latency_p50: roundRatio(pr("durable", "p50"), pr("do", "p50")), throughput: roundRatio(tr("durable"), tr("do")) },
      alarm_vs_durable: {
        latency_p50: roundRatio(pr("durable_alarm", "p50"), pr("durable", "p50")),
        throughput: roundRatio(tr("durable_alarm"), tr("durable")),
      },
      storage_per_call: await countPerCall(),
      cpu: {
        ...cpu,
        relay_vs_durable: cpu.relay.us_per_call !== null && cpu.durable.us_per_call ? ratio(cpu.relay.us_per_call, cpu.durable.us_per_call) : null,
      },
      scale: {
        relay: scaleRelay,
        durable: scaleDurable,
        per_session_relay_vs_durable:
          scaleRelay.per_session_kib !== null && scaleDurable.per_session_kib ? ratio(scaleRelay.per_session_kib, scaleDurable.per_session_kib) : null,
      },
      wakeup: { idle_s: idleS, ...wake, note },
      goals: {
        latency_p50_vs_durable: {
          goal: "≤ 1.25",
          median: ratios.latency_p50.vs_durable.median,
          spread: ratios.latency_p50.vs_durable.spread,
          met: ratios.latency_p50.vs_durable.median <= 1.25,
        },
        throughput_vs_durable: {
          goal: "≥ 0.8",
          median: ratios.throughput.vs_durable.median,
          spread: ratios.throughput.vs_durable.spread,
          met: ratios.throughput.vs_durable.median >= 0.8,
        },
        wakeup_vs_warm: { goal: "≤ 2", median: wakeR.median, spread: wakeR.spread, met: wakeR.median <= 2 },
      },
      agent_errors: agentErrors,
      reopened_after_drop: sys0.reopened,
      load_avg_1m: {
        start: l2(loadStart),
        end: l2(loadEnd),
        min: l2(Math.min(...loads)),
        max: l2(Math.max(...loads)),
        mean: l2(loads.reduce((a, b) => a + b, 0) / loads.length),
      },
      total_s: elapsedS(),
    };
    writeFileSync("bench/results.json", JSON.stringify(results, null, 2) + "\n");
    writeFileSync("docs/bench-latency.svg", renderSvg(results));
    writeFileSync("docs/benchmarks.md", renderMarkdown(results, loadExtra()));
    log(`done in ${results.total_s} s: bench/results.json, docs/benchmarks.md, docs/bench-latency.svg`);
    const g = results.goals;
    const show = (x: { median: number; spread: [number, number] }) => `${x.median}× (${x.spread[0]}–${x.spread[1]})`;
    log(
      `relay vs durable floor: p50 ${show(g.latency_p50_vs_durable)} [goal ${g.latency_p50_vs_durable.goal}], throughput ${show(g.throughput_vs_durable)} [goal ${g.throughput_vs_durable.goal}]; wake-up ÷ warm ${show(g.wakeup_vs_warm)} [goal ${g.wakeup_vs_warm.goal}]`,
    );
    log(
      `vs bare DO: p50 ${show(ratios.latency_p50.vs_do)}, throughput ${show(ratios.throughput.vs_do)}; CPU/call relay ${cpu.relay.us_per_call} µs, durable ${cpu.durable.us_per_call} µs; memory/session relay ${scaleRelay.per_session_kib} KiB, durable ${scaleDurable.per_session_kib} KiB; load ${results.load_avg_1m.min}–${results.load_avg_1m.max}`,
    );
  } finally {
    clearInterval(loadTimer);
    await stopAll();
  }
}

const scaleSessions: Awaited<ReturnType<typeof createSession>>[] = [];

const argv = process.argv.slice(2);
/** `--startup`: only the agent package's start-up, then the page re-rendered from the last results.json. */
async function startupOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" }); // the package ships it
  await runStartup();
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log("startup: bench/startup.json and docs/benchmarks.md written");
}

/** `--http-hook`: only the http hook against the command hook, then the page re-rendered (issue 29 item 6). */
async function httpHookOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  await runHttpHook();
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log("http-hook: bench/http-hook.json and docs/benchmarks.md written");
}

/** `--inbox-scale`: only the same call on inboxes of growing size, then the page re-rendered (issue 33 item 2). */
async function inboxScaleOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  await runInboxScale();
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log("inbox-scale: bench/inbox-scale.json and docs/benchmarks.md written");
}

/** `--inbox`: only the inbox path with push and its cost per call, then the page re-rendered (issue 33). */
async function inboxOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  await runInboxPath();
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log("inbox: bench/inbox.json and docs/benchmarks.md written");
}

/** `--phone`: only the phone's open time (Chromium, throttled), then the page re-rendered (issue 33 item 4). */
async function phoneOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  await runPhone();
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log("phone: bench/phone.json and docs/benchmarks.md written");
}

/** `--direct`: only the direct path's round trip beside the relay's, then the page re-rendered (issue 32). */
async function directOnly(): Promise<void> {
  if (!existsSync("dist/web/index.html")) execFileSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
  const d = await runDirect();
  writeFileSync("bench/direct.json", `${JSON.stringify(d, null, 2)}\n`);
  const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
  writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
  log(
    `direct: relay p50 ${d.ways.relay.p50} ms, direct p50 ${d.ways.direct.p50} ms (${d.relay_vs_direct.median}×); bench/direct.json and docs/benchmarks.md written`,
  );
}

// One mode a run: the first flag found (in this order) picks it; none runs everything.
const MODES: [string, () => Promise<void>][] = [
  ["--inbox-scale", inboxScaleOnly],
  ["--inbox", inboxOnly],
  ["--phone-trace", runPhoneTrace],
  ["--phone", phoneOnly],
  ["--direct", directOnly],
  ["--startup", startupOnly],
  ["--http-hook", httpHookOnly],
  ["--profile", runProfile],
  ["--extras", runExtras],
  ["--ab", () => runAb(...argv.slice(argv.indexOf("--ab") + 1).filter((a) => !a.startsWith("-")))],
];
const mode = process.env.BENCH_PROFILE === "1" ? runProfile : (MODES.find(([flag]) => argv.includes(flag))?.[1] ?? main);
mode().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`[bench] failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
