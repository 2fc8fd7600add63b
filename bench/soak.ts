// `npm run soak`: a bounded soak (default 6 minutes; SOAK_MINUTES=5..10) against the relay in `wrangler dev`
// with reconnect churn: sockets dropped abruptly at random, clients reconnecting with their client ids,
// and the whole relay process killed and restarted on the same port and storage now and then (what a
// deploy does to every socket, and more). Agents keep calls in flight, re-send unanswered calls after
// each reconnect (identical repeats are safe), ack every result and de-duplicate by call_id, as the
// adapter does. At the end it checks that every call got exactly its one correct result — none lost, none
// timed out, none different — and that no session is left with open calls. Exit code 1 on any failure.
import { rmSync, writeFileSync } from "node:fs";
import WebSocket from "ws";
import { CALCULATOR } from "../shared/contract/builtin-tools.js";
import { CLOSE, isTerminalClose } from "../shared/contract/close.js";
import type { SessionCreated } from "../shared/contract/protocol.js";
import { freePort } from "../test/helpers/relay.js";
import { snapshotRelay, startWrangler, type Proc } from "./lib/proc.js";
import { createSession } from "./lib/clients.js";

const MINUTES = Math.min(10, Math.max(1, Number(process.env.SOAK_MINUTES ?? 6)));
const SESSIONS = 8;
const IN_FLIGHT = 6;
const DROP_EVERY_MS = 1500;
const RESTART_EVERY_MS = Number(process.env.SOAK_RESTART_S ?? 100) * 1000;
const DRAIN_MS = Math.min(60_000, (MINUTES * 60_000) / 4);
const VARS = { RATE_LIMIT_PER_S: "100000", RATE_LIMIT_BURST: "100000" };

const t0 = Date.now();
const log = (s: string) => process.stderr.write(`[soak ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seed = 0x50a4;
const rand = () => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return seed / 2 ** 32;
};

interface Frame {
  type: string;
  call_id?: string;
  code?: string;
  arguments?: { a?: number; b?: number };
  action?: string;
  name?: string;
  result?: { message: string; value?: number };
  error?: { code: string; message: string };
}

const stats = { calls: 0, results: 0, resent: 0, sameConnRepeats: 0, drops: 0, restarts: 0, reconnects: 0, errors: new Map<string, number>() };
const failures: string[] = [];
const fail = (s: string) => {
  if (failures.length < 50) failures.push(s);
};

/** One logical client: reconnects with the same client id until stopped. */
class Client {
  ws: WebSocket | undefined;
  up = false;
  stopped = false;
  conn = 0;
  constructor(
    readonly base: () => string,
    readonly s: SessionCreated,
    readonly token: string,
    readonly id: string,
    readonly onOpen: () => void,
    readonly onFrame: (f: Frame) => void,
  ) {}
  start() {
    if (this.stopped) return;
    const url = `${this.base().replace(/^http/, "ws")}/api/sessions/${this.s.session_id}/ws?client_id=${this.id}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.token}` } });
    this.ws = ws;
    ws.on("message", (d) => {
      const f = JSON.parse(d.toString()) as Frame;
      if (f.type === "hello") {
        this.up = true;
        this.conn++;
        this.onOpen();
      } else this.onFrame(f);
    });
    ws.on("error", () => {
      /* followed by close */
    });
    ws.on("close", (code) => {
      this.up = false;
      if (isTerminalClose(code) && code !== CLOSE.replaced) fail(`${this.id}: closed with ${code}`);
      if (!this.stopped) setTimeout(() => this.start(), 100 + Math.floor(rand() * 1400));
      stats.reconnects++;
    });
  }
  send(f: object) {
    if (this.up && this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(f));
  }
  drop() {
    this.up = false;
    this.ws?.terminate();
  }
  stop() {
    this.stopped = true;
    this.up = false;
    this.ws?.close(CLOSE.normal);
  }
}

class AgentSide {
  readonly outstanding = new Map<string, { a: number; b: number }>();
  readonly done = new Map<string, string>();
  private seen = new Set<string>(); // result call_ids on the current connection
  private retried = new Set<string>();
  private seq = 0;
  pumping = true;
  readonly client: Client;
  constructor(
    base: () => string,
    readonly s: SessionCreated,
    readonly tag: string,
  ) {
    this.client = new Client(
      base,
      s,
      s.agent_token,
      `ag-${tag}`,
      () => this.opened(),
      (f) => this.frame(f),
    );
  }
  private callFrame(id: string, a: number, b: number) {
    return { type: "tool.call", call_id: id, name: "calculator", action: "add", arguments: { a, b }, timeout_s: 600 };
  }
  private opened() {
    this.seen = new Set();
    this.retried = new Set();
    // A call sent just before a drop may never have reached the relay: repeat it identically (a no-op if it did).
    for (const [id, { a, b }] of this.outstanding) {
      this.retried.add(id);
      this.client.send(this.callFrame(id, a, b));
    }
    this.pump();
  }
  pump() {
    while (this.pumping && this.client.up && this.outstanding.size < IN_FLIGHT) {
      const id = `${this.tag}-${++this.seq}`;
      const a = Math.floor(rand() * 1000);
      const b = this.seq;
      this.outstanding.set(id, { a, b });
      stats.calls++;
      this.client.send(this.callFrame(id, a, b));
    }
  }
  private frame(f: Frame) {
    if (f.type === "error") {
      stats.errors.set(f.code ?? "?", (stats.errors.get(f.code ?? "?") ?? 0) + 1);
      if (f.code !== "rate_limited") fail(`${this.tag}: error frame ${f.code} ${f.call_id ?? ""}`);
      return;
    }
    if (f.type !== "tool.result" || !f.call_id) return;
    const id = f.call_id;
    if (this.seen.has(id) && !this.retried.has(id)) stats.sameConnRepeats++;
    this.seen.add(id);
    const text = JSON.stringify(f.result ?? f.error);
    const want = this.outstanding.get(id);
    if (want) {
      if (f.error) fail(`${id}: ended with error ${f.error.code}`);
      else if (f.result?.message !== String(want.a + want.b)) fail(`${id}: wrong result ${text}`);
      this.outstanding.delete(id);
      this.done.set(id, text);
      stats.results++;
    } else if (this.done.has(id)) {
      stats.resent++;
      if (this.done.get(id) !== text) fail(`${id}: a second, different result ${text}`);
    } else fail(`${id}: result for a call never made`);
    this.client.send({ type: "tool.ack", call_id: id });
    this.pump();
  }
}

function appSide(base: () => string, s: SessionCreated, id: string): Client {
  const c: Client = new Client(
    base,
    s,
    s.app_token,
    id,
    () => c.send({ type: "tool.list", tools: [CALCULATOR] }),
    (f) => {
      // A provider answers every delivery: a re-delivered call it already answered just gets unknown_call.
      if (f.type !== "tool.call" || !f.call_id) return;
      const v = (f.arguments?.a ?? 0) + (f.arguments?.b ?? 0);
      c.send({ type: "tool.result", call_id: f.call_id, name: f.name, action: f.action, result: { message: String(v), value: v } });
    },
  );
  return c;
}

async function pendingCalls(base: string, s: SessionCreated): Promise<number> {
  const r = await fetch(`${base}/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } });
  return ((await r.json()) as { pending_calls: number }).pending_calls;
}

async function main() {
  const port = await freePort();
  log(
    `soak for ${MINUTES} min: ${SESSIONS} sessions × (1 agent + 2 apps), ${IN_FLIGHT} calls in flight each; drops every ${DROP_EVERY_MS} ms, relay restart every ${RESTART_EVERY_MS / 1000} s (rate limit raised: ${JSON.stringify(VARS)})`,
  );
  // Private state, kept across the restarts (see WranglerOpts.persistTo for why not .wrangler/state).
  const persistTo = "bench/.tmp/state-soak";
  rmSync(persistTo, { recursive: true, force: true });
  const config = snapshotRelay("bench/.tmp/soak-snapshot");
  let relay: Proc = await startWrangler({ config, port, vars: VARS, persistTo });
  const base = () => relay.url;
  try {
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => createSession(relay.url, `soak${i}`)));
    const agents = sessions.map((s, i) => new AgentSide(base, s, `s${i}`));
    const apps = sessions.flatMap((s, i) => [appSide(base, s, `ph${i}a`), appSide(base, s, `ph${i}b`)]);
    for (const a of apps) a.start();
    await sleep(1500); // registrations first, so no call meets an empty catalog
    for (const a of agents) a.client.start();

    const churnUntil = t0 + MINUTES * 60_000 - DRAIN_MS;
    let nextRestart = Date.now() + RESTART_EVERY_MS;
    let lastLog = 0;
    while (Date.now() < churnUntil) {
      await sleep(DROP_EVERY_MS * (0.5 + rand()));
      const all = [...apps, ...agents.map((a) => a.client)];
      const victim = all[Math.floor(rand() * all.length)]!;
      if (victim.up) {
        victim.drop();
        stats.drops++;
      }
      if (Date.now() >= nextRestart && Date.now() < churnUntil - 20_000) {
        log("restarting the relay process (every socket drops; storage stays)…");
        await relay.stop();
        await sleep(500);
        relay = await startWrangler({ config, port, vars: VARS, persistTo });
        stats.restarts++;
        log("relay back");
        nextRestart = Date.now() + RESTART_EVERY_MS;
      }
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        const open = agents.reduce((n, a) => n + a.outstanding.size, 0);
        log(
          `calls ${stats.calls}, results ${stats.results}, open ${open}, re-sent results ${stats.resent}, drops ${stats.drops}, restarts ${stats.restarts}, failures ${failures.length}`,
        );
      }
    }
    log("churn over: no new calls; waiting for every open call to finish…");
    for (const a of agents) a.pumping = false;
    const drainUntil = Date.now() + DRAIN_MS - 5000;
    while (Date.now() < drainUntil && agents.some((a) => a.outstanding.size > 0)) await sleep(500);
    await sleep(1000); // last acks
    for (const a of agents) for (const id of a.outstanding.keys()) fail(`${id}: never answered (lost)`);
    const pending = await Promise.all(sessions.map((s) => pendingCalls(relay.url, s)));
    pending.forEach((n, i) => n !== 0 && fail(`session ${i}: relay still has ${n} open calls`));
    for (const c of [...apps, ...agents.map((a) => a.client)]) c.stop();

    const summary = {
      generated_at: new Date().toISOString(),
      minutes: MINUTES,
      sessions: SESSIONS,
      in_flight_per_session: IN_FLIGHT,
      calls: stats.calls,
      results: stats.results,
      results_resent_after_reconnect: stats.resent,
      same_connection_repeats: stats.sameConnRepeats,
      socket_drops: stats.drops,
      relay_restarts: stats.restarts,
      socket_closes_incl_failed_reconnects: stats.reconnects,
      error_frames: Object.fromEntries(stats.errors),
      failures,
      ok: failures.length === 0 && stats.sameConnRepeats === 0 && stats.results === stats.calls,
    };
    writeFileSync("bench/soak-results.json", JSON.stringify(summary, null, 2) + "\n");
    log(
      `${summary.ok ? "PASS" : "FAIL"}: ${stats.calls} calls, ${stats.results} answered once each to the caller's code, ${stats.resent} results re-sent after reconnects, ${stats.drops} drops, ${stats.restarts} relay restarts; failures: ${failures.length ? failures.join("; ") : "none"}`,
    );
    process.exitCode = summary.ok ? 0 : 1;
  } finally {
    await relay.stop();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e: unknown) => {
    process.stderr.write(`[soak] failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
