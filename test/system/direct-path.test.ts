// Issue 32 (docs/direct.md): the direct path end to end against the REAL relay (`wrangler dev`). The agent is
// the adapter library with node-datachannel; the device is a stand-in for the PWA (test/helpers/direct-device.ts):
// a raw app socket with the same client core (call book, paths) and node-datachannel offering the channel.
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, type Client } from "../../adapter/client/index.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { loadDirectKey } from "../../adapter/client/direct-key.js";
import { directKeyOfFragment } from "../../shared/client/direct-bind.js";
import type { CodecKeys } from "../../shared/client/codec.js";
import type { HelloFrame } from "../../shared/contract/protocol.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { appClient, CONFIRM, runCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";
import { Device, LOOPBACK } from "../helpers/direct-device.js";
import { SimDevice } from "../helpers/e2e-device.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

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
