// The direct path's round trip beside the relay's (issue 32, docs/direct.md): one agent (the adapter library with
// node-datachannel) and one device (a raw app socket plus a node-datachannel peer that offered the channel and
// checked the answer's bind, as the PWA does) in one session on the relay (the real Worker in workerd via
// `wrangler dev`). A round trip is `agent.call("confirm")` → the answer back in the agent, timed in the agent.
//  - "relay": the device answers the copy that came through the relay, on the relay only;
//  - "direct": the device answers the first copy (the direct one, in practice) on every open path — what the
//    PWA does — and the agent keeps the first answer.
// Both ways run in the same processes in interleaved rounds (the order alternates), every ratio per round.
// `npm run bench -- --direct` runs only this (bench/direct.json, then docs/benchmarks.md is re-rendered).
// Candidates stay on 127.0.0.1 (bindAddress and a filter), so this is loopback: the figure is the paths' own
// cost (the relay's hops and its Durable Object against a DTLS/SCTP channel), not a Wi-Fi's.
import { rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import nodeDataChannel from "node-datachannel";
import WebSocket from "ws";
import { connectAgent } from "../../adapter/client/index.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { DirectSide, type DirectPeer, type NdcModule } from "../../adapter/client/direct.js";
import type { ClientFrame, OutFrame, ToolDef } from "../../shared/contract/protocol.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { log } from "./harness.js";
import { snapshotRelay, startWrangler } from "./proc.js";
import { dist, median, roundRatio } from "./stats.js";

const ROUNDS = Number(process.env.DIRECT_ROUNDS ?? 10);
const CALLS = Number(process.env.DIRECT_CALLS ?? 40);
const WARMUP = 10;

import type { DirectResults, Way } from "./direct-label.js";

const LOOPBACK = {
  ndc: nodeDataChannel as NdcModule,
  bindAddress: "127.0.0.1",
  allowCandidate: (c: string) => / 127\.0\.0\.1 \d+ typ host/.test(c),
};
const CONFIRM: ToolDef = {
  name: "confirm",
  type: "action",
  description: "yes or no",
  inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

export async function runDirect(): Promise<DirectResults> {
  const relay = await startWrangler({ config: snapshotRelay("bench/.tmp/direct-relay"), persistTo: "bench/.tmp/state-direct" });
  const stateDir = join(tmpdir(), `lineup-bench-direct-${process.pid}`);
  const closers: (() => unknown)[] = [];
  try {
    const saved = await ensureSession({ relayUrl: relay.url, stateDir, cwd: stateDir, relayKey: DEV_RELAY_KEY });
    const agent = await connectAgent({ relayUrl: relay.url, stateDir, cwd: stateDir, relayKey: DEV_RELAY_KEY, direct: LOOPBACK });
    closers.push(() => agent.close());

    // The device.
    let way: Way = "relay";
    let peer: DirectPeer | undefined;
    const answered = new Set<string>();
    const ws = new WebSocket(`${relay.url.replace(/^http/, "ws")}/api/sessions/${saved.sessionId}/ws?client_id=phone`, [
      "lineup.v1",
      `lineup.token.${saved.appToken!}`,
    ]);
    closers.push(() => ws.close());
    const send = (f: ClientFrame) => ws.send(JSON.stringify(f));
    const onCall = (path: Way, call: { call_id: string; name: string }) => {
      if (way === "relay" ? path !== "relay" : answered.has(call.call_id)) return;
      answered.add(call.call_id);
      const result: ClientFrame = { type: "tool.result", call_id: call.call_id, name: call.name, result: { message: "yes" } };
      if (way === "direct") peer?.send(result);
      send(result);
    };
    const side = new DirectSide({
      ...LOOPBACK,
      send: (to, id, signal) => send({ type: "rtc.signal", id, to, signal }),
      frame: (f) => f.type === "tool.call" && onCall("direct", f),
      state: (p) => (peer = p),
      verify: { sessionId: saved.sessionId, selfId: "phone", required: true, pinned: () => undefined },
    });
    closers.push(() => side.close());
    const hello = new Promise<void>((res, rej) => {
      ws.on("message", (d: Buffer) => {
        const f = JSON.parse(d.toString("utf8")) as OutFrame;
        if (f.type === "hello") send({ type: "tool.list", tools: [CONFIRM] }), res();
        else if (f.type === "tool.call" && "call_id" in f) onCall("relay", f);
        else if (f.type === "rtc.signal" && "from" in f && f.signal) side.signal(f.from.client_id, f.id, f.signal);
      });
      ws.once("error", rej);
    });
    await hello;
    side.offer(agent.clientId);
    for (let i = 0; i < 200 && !(peer?.isOpen() && agent.path === "direct"); i++) await new Promise((r) => setTimeout(r, 50));
    if (agent.path !== "direct") throw new Error("direct: the data channel did not open on loopback");
    log("direct: the data channel is open; timing round trips");

    const once = async (): Promise<number> => {
      const t = performance.now();
      await agent.call("confirm", undefined, { question: "bench" }, { timeoutS: 30 });
      return performance.now() - t;
    };
    for (const w of ["relay", "direct"] as Way[]) {
      way = w;
      for (let i = 0; i < WARMUP; i++) await once();
    }
    const times: Record<Way, number[]> = { relay: [], direct: [] };
    const perRound: Record<Way, number[]> = { relay: [], direct: [] };
    const loads = [loadavg()[0]!];
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of (r % 2 ? ["direct", "relay"] : ["relay", "direct"]) as Way[]) {
        way = w;
        const these: number[] = [];
        for (let i = 0; i < CALLS; i++) these.push(await once());
        times[w].push(...these);
        perRound[w].push(median(these));
      }
      log(`direct: round ${r + 1}/${ROUNDS}: relay ${perRound.relay[r]!.toFixed(2)} ms, direct ${perRound.direct[r]!.toFixed(2)} ms (medians)`);
    }
    loads.push(loadavg()[0]!);
    const d = (w: Way) => {
      const x = dist(times[w]);
      return { p50: x.p50, p95: x.p95, min: x.min, max: x.max };
    };
    return {
      generated_at: new Date().toISOString(),
      node: process.version,
      rounds: ROUNDS,
      calls_per_round: CALLS,
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      ways: { relay: d("relay"), direct: d("direct") },
      relay_vs_direct: roundRatio(perRound.relay, perRound.direct),
    };
  } finally {
    for (const c of closers.reverse()) await c();
    await relay.stop();
    for (const dir of [stateDir, "bench/.tmp/direct-relay", "bench/.tmp/state-direct"]) rmSync(dir, { recursive: true, force: true });
  }
}
