// Issue 32 (docs/direct.md): the direct path end to end against the REAL relay (`wrangler dev`). The agent is
// the adapter library with node-datachannel; the device is a stand-in for the PWA (whose side is not built
// yet): a raw app socket with the same client core (call book, paths) and node-datachannel offering the
// channel. Both ends bind to 127.0.0.1 and pass only loopback candidates, so no private address is probed.
import nodeDataChannel from "node-datachannel";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, type Client } from "../../adapter/client/index.js";
import { DirectSide, type NdcModule } from "../../adapter/client/direct.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { loadDirectKey } from "../../adapter/client/direct-key.js";
import { directKeyOfFragment } from "../../shared/client/direct-bind.js";
import { CallBook, type Effect } from "../../shared/client/call-book.js";
import { fromPeer, Paths, type PathName } from "../../shared/client/paths.js";
import { Codec, type CodecKeys } from "../../shared/client/codec.js";
import type { HelloFrame, RelayFrame, ToolCallOut } from "../../shared/contract/protocol.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { appClient, CONFIRM, runCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";
import { SimDevice } from "../helpers/e2e-device.js";
import type { RawClient } from "../helpers/raw-client.js";

const ndc: NdcModule = nodeDataChannel;
const LOOPBACK = { ndc, bindAddress: "127.0.0.1", allowCandidate: (c: string) => / 127\.0\.0\.1 \d+ typ host/.test(c) };

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The device: its relay socket, its direct path, and the same client core the PWA will use (codec, call book, paths). */
class Device {
  readonly book = new CallBook({ unclaimed: "ack" });
  readonly paths = new Paths();
  /** Every copy of a call that arrived, with its path. */
  readonly arrivals: { callId: string; path: PathName }[] = [];
  /** Calls handed over to the person (the book's `call` effects). */
  readonly handed: ToolCallOut[] = [];
  readonly direct: DirectSide;
  readonly codec: Codec;
  /** The agent machine's direct key as this device pinned it (from the pairing link, else on first contact). */
  pin: string | undefined;
  /** Keys the device took an answer from: `first` when it pinned it then (trust on first use). */
  readonly accepted: { key: string; first: boolean }[] = [];

  constructor(
    readonly app: RawClient,
    readonly agentId: string,
    o: { sessionId: string; sender: string; hello?: HelloFrame; keys?: CodecKeys; pin?: string },
  ) {
    this.pin = o.pin;
    this.codec = new Codec({
      sessionId: o.sessionId,
      sender: () => o.sender,
      keys: o.keys,
      write: (w) => (app.send(w), true),
      deliver: (d) => {
        if ("rtc" in d) this.direct.signal(d.rtc.from.client_id, d.rtc.id, d.rtc.signal);
        else if ("frame" in d && d.frame.type === "tool.call") this.in("relay", d.frame);
      },
    });
    if (o.hello) this.codec.hello(o.hello);
    this.direct = new DirectSide({
      ...LOOPBACK,
      send: (to, id, signal) => this.codec.signal(to, `agent:${to}`, id, signal),
      frame: (f) => this.in("direct", fromPeer(f, { role: "agent", clientId: agentId }, Date.now())),
      state: (peer) => this.paths.setDirect(peer),
      verify: {
        sessionId: o.sessionId,
        selfId: o.sender.slice("app:".length),
        required: !o.keys,
        pinned: () => this.pin,
        accepted: (key, first) => {
          this.accepted.push({ key, first });
          this.pin ??= key;
        },
      },
    });
    app.ws.on("message", (data: Buffer) => {
      const f = JSON.parse(data.toString("utf8")) as Record<string, unknown>;
      if (f.type !== "hello") this.codec.in(f);
    });
    this.run(this.book.hello());
  }

  private in(path: PathName, f: RelayFrame | undefined): void {
    if (!f) return;
    if (f.type === "tool.call") this.arrivals.push({ callId: f.call_id, path });
    if (this.paths.accept(path, f)) this.run(this.book.receive(f));
  }

  answer(call: ToolCallOut, message: string): void {
    this.run(this.book.answer(call, { result: { message } }));
  }

  /** Answers with the relay stalled: the answer goes on the direct path now, its relay copy only on `release()`. */
  answerWithRelayStalled(call: ToolCallOut, message: string): { release: () => void } {
    const held = this.book.answer(call, { result: { message } }).flatMap((e) => (e.kind === "send" ? [e.frame] : []));
    for (const f of held) this.paths.alsoDirect(f);
    return { release: () => held.forEach((f) => this.codec.out(f)) };
  }

  private run(fx: Effect[]): void {
    for (const e of fx) {
      if (e.kind === "send") {
        this.codec.out(e.frame);
        this.paths.alsoDirect(e.frame);
      }
      if (e.kind === "call") this.handed.push(e.call);
    }
  }
}

async function world(): Promise<{ agent: Client; device: Device; sessionId: string; agentToken: string; relayUrl: string }> {
  const relayUrl = inject("relayUrl");
  const stateDir = tempDir();
  const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
  const agent = await connectAgent({ relayUrl, stateDir, cwd: stateDir, direct: LOOPBACK });
  cleanups.push(() => agent.close());
  const app = await appClient(relayUrl, saved.sessionId, saved.appToken!, [CONFIRM], "phone");
  cleanups.push(() => app.close());
  const device = new Device(app, agent.clientId, { sessionId: saved.sessionId, sender: "app:phone" });
  cleanups.push(() => device.direct.close());
  device.direct.offer(agent.clientId);
  await waitFor(() => (agent.path === "direct" && device.paths.directOpen ? true : undefined), "the direct path to open");
  // Plaintext: the device took the answer only because its bind verified, and pinned the machine's key then.
  expect(device.accepted).toEqual([{ key: (await loadDirectKey(stateDir)).publicKey, first: true }]);
  return { agent, device, sessionId: saved.sessionId, agentToken: saved.agentToken, relayUrl };
}

async function pendingCalls(relayUrl: string, sid: string, token: string): Promise<number> {
  const r = await fetch(`${relayUrl}/api/sessions/${sid}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await r.json()) as { pending_calls: number }).pending_calls;
}

describe("the direct path between two node-datachannel peers, signalled through the relay", () => {
  it("a call goes on both paths and reaches the person once; answered over the direct path while the relay is stalled, it settles once, and the relay's late copy closes it there and changes nothing here", async () => {
    const { agent, device, sessionId, agentToken, relayUrl } = await world();
    const unclaimed: unknown[] = [];
    agent.on("result", (r) => unclaimed.push(r));
    const p = agent.call("confirm", undefined, { question: "direct?" }, { timeoutS: 60 });
    await waitFor(() => (device.arrivals.length === 2 ? true : undefined), "both copies of the call");
    expect(device.arrivals.map((a) => a.path).sort()).toEqual(["direct", "relay"]);
    expect(device.handed).toHaveLength(1);
    const answer = device.answerWithRelayStalled(device.handed[0]!, "yes");
    await expect(p).resolves.toEqual({ message: "yes" });
    // Only the direct path carried the answer so far: the relay still holds the call open.
    expect(await pendingCalls(relayUrl, sessionId, agentToken)).toBe(1);
    answer.release();
    await waitFor(async () => ((await pendingCalls(relayUrl, sessionId, agentToken)) === 0 ? true : undefined), "the relay to close the call");
    expect(device.handed).toHaveLength(1);
    expect(unclaimed).toEqual([]);
  });

  it("when the direct path drops mid-call, the answer still arrives over the relay, exactly once", async () => {
    const { agent, device } = await world();
    let settled = 0;
    const p = agent.call("confirm", undefined, { question: "still there?" }, { timeoutS: 60 }).then((r) => (settled++, r));
    await waitFor(() => (device.arrivals.length === 2 ? true : undefined), "both copies of the call");
    device.direct.close();
    await waitFor(() => (agent.path === "relay" && !device.paths.directOpen ? true : undefined), "the direct path to close on both ends");
    device.answer(device.handed[0]!, "via relay");
    await expect(p).resolves.toEqual({ message: "via relay" });
    expect(settled).toBe(1);
    expect(device.handed).toHaveLength(1);
    // A later call takes the relay only.
    const q = agent.call("confirm", undefined, { question: "and now?" }, { timeoutS: 60 });
    await waitFor(() => (device.handed.length === 2 ? true : undefined), "the second call");
    expect(device.arrivals.filter((a) => a.callId === device.handed[1]!.call_id).map((a) => a.path)).toEqual(["relay"]);
    device.answer(device.handed[1]!, "ok");
    await expect(q).resolves.toEqual({ message: "ok" });
  });

  it("in a sealed session the handshake travels sealed (no SDP readable on the wire) and the direct path still opens and answers", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const env = {
      LINEUP_RELAY_URL: relayUrl,
      LINEUP_RELAY_KEY: DEV_RELAY_KEY,
      LINEUP_STATE_DIR: dir,
      LINEUP_SESSION: "",
      LINEUP_TOKEN: "",
      LINEUP_GUEST_LINK: "",
    };
    expect((await runCli(["e2e", "on", "--json"], env, dir)).code).toBe(0);
    const pair = await runCli(["pair", "--json"], env, dir);
    expect(pair.code, pair.stderr).toBe(0);
    const { url } = JSON.parse(pair.stdout.trim().split("\n").pop()!) as { url: string };
    // The link carries the machine's direct key beside the pairing secret: the device pins it from there.
    const pin = directKeyOfFragment(new URL(url).hash);
    expect(pin).toBe((await loadDirectKey(dir)).publicKey);
    const dev = await SimDevice.redeem(relayUrl, url, "sealed phone");
    expect(await dev.hello()).toBe(201);
    const agent = await connectAgent({ relayUrl, stateDir: dir, cwd: dir, relayKey: DEV_RELAY_KEY, clientId: "ag_direct_sealed", direct: LOOPBACK });
    cleanups.push(() => agent.close());
    expect(agent.sealed).toBe(true);
    await waitFor(() => dev.takeReply(), "the sponsor's reply");
    const { ws, sender, hello } = await dev.join(agent.sessionId, [CONFIRM]);
    cleanups.push(() => ws.close());
    const keys: CodecKeys = { keyOf: dev.keyOf, current: () => dev.current(), refresh: async () => {} };
    const device = new Device(ws, agent.clientId, { sessionId: agent.sessionId, sender, hello: hello as HelloFrame, keys, ...(pin ? { pin } : {}) });
    cleanups.push(() => device.direct.close());
    device.direct.offer(agent.clientId);
    await waitFor(() => (agent.path === "direct" && device.paths.directOpen ? true : undefined), "the direct path to open");
    expect(device.accepted).toEqual([{ key: pin, first: false }]);
    const signals = ws.log.filter((t) => t.includes('"rtc.signal"'));
    expect(signals.length).toBeGreaterThan(0);
    for (const t of signals) {
      expect(t).toContain('"sealed"');
      expect(t).not.toContain("sdp");
      expect(t).not.toContain("candidate");
    }
    const p = agent.call("confirm", undefined, { question: "sealed and direct?" }, { timeoutS: 60 });
    await waitFor(() => (device.handed.length === 1 ? true : undefined), "the call");
    const answer = device.answerWithRelayStalled(device.handed[0]!, "yes");
    await expect(p).resolves.toEqual({ message: "yes" });
    answer.release();
  });
});
