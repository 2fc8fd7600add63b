// `npm run bench -- --inbox` (issue 33 item 1): the path people use. A session made by a machine of an inbox
// (`POST /api/inbox/sessions`), with one paired device whose socket on the session answers, whose inbox socket
// receives every InboxState, and whose push subscription points at a local fake push service (test/helpers/
// fake-push.ts, behind a real HTTP server: it checks VAPID and decrypts each push with http_ece). Measured beside
// the bare session (`POST /api/sessions` with RELAY_KEY, an app socket) and the durable floor, in interleaved
// rounds (the order rotates each round), every ratio per round: call round trip p50/p99, calls/s with 64 in flight,
// CPU per call; and the time from the agent's `tool.call` of a `confirm` to the push service receiving its
// encrypted push (the device answers once it has). Then the cost per call (lib/inbox-count.ts). Only the public
// HTTP and WebSocket API is used, so the mode measures the inbox whatever its storage. No timing is asserted.
import { rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { PushMessage } from "../../shared/contract/push.js";
import { startFakePush } from "../../test/helpers/fake-push-server.js";
import { baselinePair, createSession, relayPair, type Pair } from "./clients.js";
import { latencyRounds, log, openSystems, RELAY_VARS, saturate, WARMUP, type Systems } from "./harness.js";
import { inboxPair, inboxSocket, setupInbox, type Held } from "./inbox-clients.js";
import { countInboxPath, type InboxCount } from "./inbox-count.js";
import { cpuMsOf, LOCAL_OBSERVABILITY, snapshotRelay, startWrangler, workerdOf } from "./proc.js";
import { dist, median, ratio, roundRatio, type Dist, type RoundRatio } from "./stats.js";

export type InboxSystem = "inbox" | "relay" | "durable";
export const INBOX_LABEL: Record<InboxSystem, string> = {
  inbox: "inbox session (1 device socket, 1 push subscription)",
  relay: "bare session (`RELAY_KEY`, 1 app socket)",
  durable: "durable floor",
};
export const INBOX_GOALS = { latency_p50_vs_durable: 1.3, throughput_vs_durable: 0.75, push_vs_round_trip: 2 } as const;

const CALLS = Number(process.env.BENCH_CALLS ?? 1000); // per system; three systems one in flight on a shared machine
const ROUNDS = 10;
const PUSH_PER_ROUND = 3;
const CONFIRM_CALLS = Number(process.env.BENCH_CONFIRM_CALLS ?? 300);
const TPUT_ROUNDS = 5;
const IDLE_MS = 1000;
const TPUT_S = Number(process.env.BENCH_SECONDS ?? 10);
const IN_FLIGHT = 64;

export interface InboxResults {
  generated_at: string;
  node: string;
  config: {
    latency_calls: number;
    rounds: number;
    push_samples_per_round: number;
    /** Calls per system in the confirm rounds (absent in runs before they existed). */
    confirm_calls?: number;
    throughput_in_flight: number;
    throughput_seconds: number;
    relay_vars: Record<string, string>;
    /** X_LOCAL_OBSERVABILITY of every `wrangler dev` started (absent in runs before it was set: wrangler's default, on). */
    local_observability?: boolean;
  };
  load_avg_1m: number[];
  latency: Record<InboxSystem, Dist>;
  latency_rounds: Record<InboxSystem, { p50: number[]; p99: number[] }>;
  throughput: Record<InboxSystem, { calls_per_s: number; rounds: number[] }>;
  cpu_us_per_call: Record<InboxSystem, number | null>;
  /** The latency rounds again with `confirm` calls the device answers at once (each reported, and pushed on the inbox). */
  confirm?: {
    latency: Record<InboxSystem, Dist>;
    inbox_vs_durable_p50: RoundRatio;
    inbox_vs_relay_p50: RoundRatio;
    pushes_per_call: number;
  };
  /** agent `tool.call` of a confirm → the fake push service has the whole encrypted request (ms), each call made
   * once the inbox has taken the last one's answer (the path at rest: the figure the goal is about). */
  push: Dist & { per_round_p50: number[] };
  /** The same, each call made the moment the last one was answered: its answer's report, the session's ack and the
   * new call overlap (absent in runs before it was measured). */
  push_back_to_back?: Dist & { per_round_p50: number[] };
  /** After `idle_ms` with nothing sent: the push delay, and a calculator call's round trip on the same session after
   * the same idle (alternating; absent in runs before it was measured). */
  idle?: { idle_ms: number; push: Dist & { per_round_p50: number[] }; round_trip: Dist & { per_round_p50: number[] } };
  /** A calculator call's round trip on the inbox session, each started in the at-rest pushes' state (absent before). */
  round_trip_at_rest?: Dist & { per_round_p50: number[] };
  /** How many at-rest waits for the answered call to leave the Waiting list gave up after 2 s (0: every one was seen). */
  rest_timeouts?: number;
  /** InboxState frames the device's inbox socket received per call in the latency rounds (one per inbox change). */
  inbox_frames_per_call: number;
  ratios: {
    latency_p50: Record<"inbox_vs_durable" | "inbox_vs_relay" | "relay_vs_durable", RoundRatio>;
    latency_p99: Record<"inbox_vs_durable" | "inbox_vs_relay", RoundRatio>;
    throughput: Record<"inbox_vs_durable" | "inbox_vs_relay" | "relay_vs_durable", RoundRatio>;
    /** push delay at rest ÷ the latency rounds' round trip (a hot loop), p50 of each round. */
    push_vs_round_trip: RoundRatio;
    /** The back-to-back push delay ÷ the same round trip. */
    push_back_to_back_vs_round_trip?: RoundRatio;
    /** Push delay at rest ÷ a calculator call's round trip started in the same state. */
    push_vs_round_trip_at_rest?: RoundRatio;
    /** Both after the same idle: push delay ÷ a calculator call's round trip. */
    push_idle_vs_round_trip_idle?: RoundRatio;
  };
  goals: Record<keyof typeof INBOX_GOALS, { goal: string; median: number; spread: [number, number]; met: boolean }>;
  pushes: { samples: number; decrypted: number; problems: string[] };
  agent_errors: Record<InboxSystem, number>;
  reopened_after_drop: Record<InboxSystem, number>;
  cost: InboxCount | null;
  total_s: number;
}

/** Waits for the fake push service to hold the push of `call`; resolves with the time its request was complete. */
function pushWatch(fake: Awaited<ReturnType<typeof startFakePush>>["fake"]) {
  const waiting = new Map<string, (t: number) => void>();
  const handle = fake.handle.bind(fake);
  fake.handle = async (req: Request) => {
    const t = performance.now(); // the server calls handle once the request's body has been read
    const n = fake.received.length;
    const res = await handle(req);
    const got = fake.received[n];
    const msg = got?.msg as (PushMessage & { call?: string }) | undefined;
    if (msg && (msg.kind === "call" || msg.kind === "reminder") && msg.call) waiting.get(msg.call)?.(t);
    return res;
  };
  return (call: string, timeoutMs = 60_000) =>
    new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no push for ${call} within ${timeoutMs} ms`)), timeoutMs);
      waiting.set(call, (t) => {
        clearTimeout(timer);
        waiting.delete(call);
        resolve(t);
      });
    });
}

export async function runInboxPath(): Promise<InboxResults> {
  const t0 = Date.now();
  const loads = [loadavg()[0]!];
  rmSync("bench/.tmp/state-inbox", { recursive: true, force: true });
  rmSync("bench/.tmp/state-inbox-floor", { recursive: true, force: true });
  log("inbox: starting the relay and the durable floor (wrangler dev) and a fake push service on 127.0.0.1");
  const fakePush = await startFakePush();
  const [relay, floor] = await Promise.all([
    startWrangler({ config: snapshotRelay("bench/.tmp/inbox-relay"), vars: RELAY_VARS, persistTo: "bench/.tmp/state-inbox" }),
    startWrangler({ config: "bench/baseline-do/wrangler.toml", persistTo: "bench/.tmp/state-inbox-floor" }),
  ]);
  try {
    const fake = fakePush.fake;
    const watch = pushWatch(fake);
    const setup = await setupInbox(relay.url, fake, "path");
    const live = await inboxSocket(relay.url, setup.device.device_credential);
    const bare = await createSession(relay.url, "inbox-bare");
    const held = new Map<string, (h: Held) => void>();
    let inboxPairNow: Awaited<ReturnType<typeof inboxPair>> | undefined;
    let confirmAtOnce = false; // the confirm rounds: the device taps "Yes" as soon as a confirm arrives
    const open: Record<InboxSystem, (tag: string) => Promise<Pair>> = {
      inbox: async (tag) =>
        (inboxPairNow = await inboxPair(setup.session, setup.device, `in${tag}`, (h) => {
          const w = held.get(h.call_id);
          if (w) w(h);
          else if (confirmAtOnce) inboxPairNow?.answer(h.call_id);
        })),
      relay: (tag) => relayPair(bare, 1, `bare${tag}`),
      durable: (tag) => baselinePair(floor.url, `inb${tag}`, { durable: true }),
    };
    const sys: Systems<InboxSystem> = await openSystems(open);
    const order: InboxSystem[] = ["durable", "relay", "inbox"];

    // One confirm: sent by the agent, held by the device until its push arrived, then answered "yes" and acked.
    // At rest, the next one waits until the device's inbox socket shows the answered call gone (the inbox took
    // the answer's report); back to back, it is sent at once.
    let pushSeq = 0;
    let goneTimeouts = 0;
    const gone = (call_id: string) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          goneTimeouts++;
          done();
        }, 2000);
        function done() {
          clearTimeout(t);
          live.ws.off("message", on);
          resolve();
        }
        // Gone from the session's Waiting list, in a whole state or one session's (the state keeps the call under
        // `recent` for 10 minutes, so a frame may still name it).
        type Row = { waiting?: { call_id: string }[] };
        function on(d: Buffer) {
          let st: { type?: string; sessions?: Row[]; session?: Row };
          try {
            st = JSON.parse(d.toString()) as typeof st;
          } catch {
            return; // not a state frame
          }
          const rows = st.type === "inbox" ? (st.sessions ?? []) : st.type === "inbox.session" ? (st.session ? [st.session] : []) : undefined;
          if (rows && !rows.some((x) => x.waiting?.some((w) => w.call_id === call_id))) done();
        }
        live.ws.on("message", on);
      });
    const pushOnce = async (atRest: boolean): Promise<number> => {
      const p = inboxPairNow!;
      const call_id = `push-${++pushSeq}`;
      const ws = p.agent.ws;
      const asked = new Promise<void>((r) => held.set(call_id, () => r()));
      const answered = new Promise<void>((resolve) => {
        const on = (d: Buffer) => {
          const s = d.toString();
          if (s.includes('"tool.result"') && s.includes(`"${call_id}"`)) {
            ws.off("message", on);
            ws.send(JSON.stringify({ type: "tool.ack", call_id }));
            resolve();
          }
        };
        ws.on("message", on);
      });
      const pushed = watch(call_id);
      const start = performance.now();
      ws.send(JSON.stringify({ type: "tool.call", call_id, name: "confirm", arguments: { question: `Deploy build ${pushSeq} to staging?` } }));
      const at = await pushed;
      await asked;
      held.delete(call_id);
      const left = atRest ? gone(call_id) : undefined;
      p.answer(call_id);
      await answered;
      await left;
      return at - start;
    };

    log(`inbox: ${CALLS} calls per system, one in flight, ${ROUNDS} interleaved rounds, ${PUSH_PER_ROUND} pushes timed per round`);
    const frames0 = live.frames();
    const lat = await latencyRounds(sys, order, CALLS, ROUNDS);
    const framesPerCall = Math.round(((live.frames() - frames0) / (lat.all.inbox.length + WARMUP)) * 100) / 100; // the warm-up's calls too
    const pushAll: number[] = [];
    const pushRoundP50: number[] = [];
    const b2bAll: number[] = [];
    const b2bRoundP50: number[] = [];
    const restCall: number[] = [];
    const restCallP50: number[] = [];
    const timedCall = async () => {
      const t = performance.now();
      await inboxPairNow!.agent.call();
      return performance.now() - t;
    };
    await pushOnce(true); // a first push after the latency rounds: its answer leaves the path at rest
    for (let r = 0; r < ROUNDS; r++) {
      // Each timed push, and each timed calculator call, starts as the last confirm's answer left the Waiting list;
      // an untimed confirm after the call brings the path back to that state.
      const xs: number[] = [];
      const cs: number[] = [];
      for (let k = 0; k < PUSH_PER_ROUND; k++) {
        xs.push(await pushOnce(true));
        cs.push(await timedCall());
        await pushOnce(true);
      }
      pushAll.push(...xs);
      pushRoundP50.push(median(xs));
      restCall.push(...cs);
      restCallP50.push(median(cs));
      const ys: number[] = [];
      for (let k = 0; k < PUSH_PER_ROUND; k++) ys.push(await pushOnce(false));
      await pushOnce(true); // not timed: back to rest
      b2bAll.push(...ys);
      b2bRoundP50.push(median(ys));
    }
    log(`inbox: push delay p50 ${median(pushAll).toFixed(1)} ms at rest, ${median(b2bAll).toFixed(1)} ms back to back, over ${pushAll.length} pushes each`);

    // After IDLE_MS with nothing sent (as a question usually comes): a push, and a calculator call's round trip on
    // the same session after the same idle, alternating, so both start from the same quiet relay.
    log(`inbox: ${PUSH_PER_ROUND} pushes and ${PUSH_PER_ROUND} calculator calls per round, each after ${IDLE_MS} ms idle`);
    const idlePush: number[] = [];
    const idleCall: number[] = [];
    const idlePushP50: number[] = [];
    const idleCallP50: number[] = [];
    const idle = () => new Promise((r) => setTimeout(r, IDLE_MS));
    for (let r = 0; r < ROUNDS; r++) {
      const xs: number[] = [];
      const ys: number[] = [];
      for (let k = 0; k < PUSH_PER_ROUND; k++) {
        await idle();
        xs.push(await pushOnce(true));
        await idle();
        ys.push(await timedCall());
      }
      idlePush.push(...xs);
      idleCall.push(...ys);
      idlePushP50.push(median(xs));
      idleCallP50.push(median(ys));
    }
    log(`inbox: after ${IDLE_MS} ms idle: push p50 ${median(idlePush).toFixed(1)} ms, calculator round trip p50 ${median(idleCall).toFixed(1)} ms`);

    // The same rounds with a question a human answers (confirm, tapped at once): on the inbox session each such
    // call is reported to the inbox twice and pushed (a calculator call is answered by the app and never reported).
    log(`inbox: ${CONFIRM_CALLS} confirm calls per system answered at once, ${ROUNDS} interleaved rounds`);
    sys.tool = "confirm";
    confirmAtOnce = true;
    const pushed0 = fake.received.length;
    const latC = await latencyRounds(sys, order, CONFIRM_CALLS, ROUNDS);
    const pushesPerConfirm = Math.round(((fake.received.length - pushed0) / (latC.all.inbox.length + WARMUP)) * 100) / 100;
    sys.tool = "calculator";
    confirmAtOnce = false;

    log(`inbox: throughput, ${IN_FLIGHT} in flight, ${TPUT_S} s per system in ${TPUT_ROUNDS} interleaved rounds`);
    const wd = workerdOf(relay.proc.pid!).runtime;
    const fd = workerdOf(floor.proc.pid!).runtime;
    const pid: Record<InboxSystem, number | undefined> = { inbox: wd, relay: wd, durable: fd };
    const tput: Record<InboxSystem, number[]> = { inbox: [], relay: [], durable: [] };
    const cpu: Record<InboxSystem, { ms: number; calls: number; ok: boolean }> = {
      inbox: { ms: 0, calls: 0, ok: true },
      relay: { ms: 0, calls: 0, ok: true },
      durable: { ms: 0, calls: 0, ok: true },
    };
    for (let r = 0; r < TPUT_ROUNDS; r++) {
      for (let k = 0; k < order.length; k++) {
        const s = order[(r + k) % order.length]!;
        const c0 = cpuMsOf(pid[s]);
        const got = await sys.robust(s, (a) => saturate(a, IN_FLIGHT, TPUT_S / TPUT_ROUNDS));
        const c1 = cpuMsOf(pid[s]);
        if (c0 === null || c1 === null) cpu[s].ok = false;
        else cpu[s].ms += c1 - c0;
        cpu[s].calls += got.n;
        tput[s].push(Math.round(got.n / got.secs));
      }
      log(`inbox: throughput round ${r + 1}/${TPUT_ROUNDS}: ${order.map((s) => `${s} ${tput[s][r]}/s`).join(", ")}`);
    }
    const agentErrors = { inbox: sys.agent("inbox").errors.length, relay: sys.agent("relay").errors.length, durable: sys.agent("durable").errors.length };
    sys.closeAll();
    live.ws.close();
    loads.push(loadavg()[0]!);

    const pr = (s: InboxSystem, k: "p50" | "p99") => lat.perRound[s].map((x) => x[k]);
    const prC = (s: InboxSystem) => latC.perRound[s].map((x) => x.p50);
    const rr = {
      latency_p50: {
        inbox_vs_durable: roundRatio(pr("inbox", "p50"), pr("durable", "p50")),
        inbox_vs_relay: roundRatio(pr("inbox", "p50"), pr("relay", "p50")),
        relay_vs_durable: roundRatio(pr("relay", "p50"), pr("durable", "p50")),
      },
      latency_p99: {
        inbox_vs_durable: roundRatio(pr("inbox", "p99"), pr("durable", "p99")),
        inbox_vs_relay: roundRatio(pr("inbox", "p99"), pr("relay", "p99")),
      },
      throughput: {
        inbox_vs_durable: roundRatio(tput.inbox, tput.durable),
        inbox_vs_relay: roundRatio(tput.inbox, tput.relay),
        relay_vs_durable: roundRatio(tput.relay, tput.durable),
      },
      push_vs_round_trip: roundRatio(pushRoundP50, pr("inbox", "p50")),
      push_back_to_back_vs_round_trip: roundRatio(b2bRoundP50, pr("inbox", "p50")),
      push_idle_vs_round_trip_idle: roundRatio(idlePushP50, idleCallP50),
      push_vs_round_trip_at_rest: roundRatio(pushRoundP50, restCallP50),
    };
    const goal = (x: RoundRatio, g: number, le: boolean) => ({
      goal: `${le ? "≤" : "≥"} ${g}`,
      median: x.median,
      spread: x.spread,
      met: le ? x.median <= g : x.median >= g,
    });
    const cost = await countInboxPath(fake).catch((e: unknown) => {
      log(`inbox: the cost count failed: ${e instanceof Error ? e.message : String(e)}`);
      return null;
    });
    const all = (s: InboxSystem) => tput[s].reduce((a, b) => a + b, 0) / tput[s].length;
    const res: InboxResults = {
      generated_at: new Date().toISOString(),
      node: process.version,
      config: {
        latency_calls: CALLS,
        rounds: ROUNDS,
        push_samples_per_round: PUSH_PER_ROUND,
        confirm_calls: CONFIRM_CALLS,
        throughput_in_flight: IN_FLIGHT,
        throughput_seconds: TPUT_S,
        relay_vars: RELAY_VARS,
        local_observability: LOCAL_OBSERVABILITY,
      },
      load_avg_1m: [...loads, loadavg()[0]!].map((l) => Math.round(l * 100) / 100),
      latency: { inbox: dist(lat.all.inbox), relay: dist(lat.all.relay), durable: dist(lat.all.durable) },
      latency_rounds: {
        inbox: { p50: pr("inbox", "p50"), p99: pr("inbox", "p99") },
        relay: { p50: pr("relay", "p50"), p99: pr("relay", "p99") },
        durable: { p50: pr("durable", "p50"), p99: pr("durable", "p99") },
      },
      throughput: {
        inbox: { calls_per_s: Math.round(all("inbox")), rounds: tput.inbox },
        relay: { calls_per_s: Math.round(all("relay")), rounds: tput.relay },
        durable: { calls_per_s: Math.round(all("durable")), rounds: tput.durable },
      },
      cpu_us_per_call: {
        inbox: cpu.inbox.ok ? Math.round((cpu.inbox.ms * 1000) / cpu.inbox.calls) : null,
        relay: cpu.relay.ok ? Math.round((cpu.relay.ms * 1000) / cpu.relay.calls) : null,
        durable: cpu.durable.ok ? Math.round((cpu.durable.ms * 1000) / cpu.durable.calls) : null,
      },
      confirm: {
        latency: { inbox: dist(latC.all.inbox), relay: dist(latC.all.relay), durable: dist(latC.all.durable) },
        inbox_vs_durable_p50: roundRatio(prC("inbox"), prC("durable")),
        inbox_vs_relay_p50: roundRatio(prC("inbox"), prC("relay")),
        pushes_per_call: pushesPerConfirm,
      },
      push: { ...dist(pushAll), per_round_p50: pushRoundP50.map((x) => Math.round(x * 1000) / 1000) },
      push_back_to_back: { ...dist(b2bAll), per_round_p50: b2bRoundP50.map((x) => Math.round(x * 1000) / 1000) },
      idle: {
        idle_ms: IDLE_MS,
        push: { ...dist(idlePush), per_round_p50: idlePushP50.map((x) => Math.round(x * 1000) / 1000) },
        round_trip: { ...dist(idleCall), per_round_p50: idleCallP50.map((x) => Math.round(x * 1000) / 1000) },
      },
      round_trip_at_rest: { ...dist(restCall), per_round_p50: restCallP50.map((x) => Math.round(x * 1000) / 1000) },
      rest_timeouts: goneTimeouts,
      inbox_frames_per_call: framesPerCall,
      ratios: rr,
      goals: {
        latency_p50_vs_durable: goal(rr.latency_p50.inbox_vs_durable, INBOX_GOALS.latency_p50_vs_durable, true),
        throughput_vs_durable: goal(rr.throughput.inbox_vs_durable, INBOX_GOALS.throughput_vs_durable, false),
        push_vs_round_trip: goal(rr.push_vs_round_trip, INBOX_GOALS.push_vs_round_trip, true),
      },
      pushes: { samples: pushAll.length, decrypted: fake.for(setup.endpoint).length, problems: [...fake.problems] },
      agent_errors: agentErrors,
      reopened_after_drop: { ...sys.reopened },
      cost,
      total_s: Math.round((Date.now() - t0) / 1000),
    };
    writeFileSync("bench/inbox.json", `${JSON.stringify(res, null, 2)}\n`);
    const g = res.goals;
    log(
      `inbox: p50 ${res.latency.inbox.p50} ms vs floor ${res.latency.durable.p50} ms = ${g.latency_p50_vs_durable.median}× [goal ${g.latency_p50_vs_durable.goal}]; throughput ${g.throughput_vs_durable.median}× [goal ${g.throughput_vs_durable.goal}]; push at rest ${res.push.p50} ms = ${g.push_vs_round_trip.median}× the latency rounds' round trip [goal ${g.push_vs_round_trip.goal}] (${rr.push_vs_round_trip_at_rest?.median}× a call's ${res.round_trip_at_rest?.p50} ms started in the same state; back to back ${res.push_back_to_back?.p50} ms = ${rr.push_back_to_back_vs_round_trip?.median}×; after ${IDLE_MS} ms idle ${res.idle?.push.p50} ms ÷ a call's ${res.idle?.round_trip.p50} ms = ${rr.push_idle_vs_round_trip_idle?.median}×; ${goneTimeouts} rest waits timed out); ${ratio(res.inbox_frames_per_call, 1)} inbox frames per call`,
    );
    return res;
  } finally {
    await Promise.all([relay.stop(), floor.stop(), fakePush.close()]);
    for (const d of ["bench/.tmp/inbox-relay", "bench/.tmp/state-inbox", "bench/.tmp/state-inbox-floor"]) rmSync(d, { recursive: true, force: true });
  }
}
