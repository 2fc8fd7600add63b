// Issue 32 §6 (docs/protocol.md "The direct path's binding"): a relay that rewrites the direct path's handshake
// cannot take over the channel. A proxy in front of the REAL relay (`wrangler dev`; test/helpers/tamper-proxy.ts)
// rewrites the device's `rtc.signal` frames; the agent is the adapter library with node-datachannel, the device
// the PWA's stand-in (test/helpers/direct-device.ts). Whatever the proxy does, the call still ends over the relay.
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, type Client } from "../../adapter/client/index.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { loadDirectKey } from "../../adapter/client/direct-key.js";
import { generateDirectKey, signBind } from "../../shared/client/direct-bind.js";
import type { CodecKeys } from "../../shared/client/codec.js";
import type { HelloFrame } from "../../shared/contract/protocol.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { appClient, CONFIRM, runCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";
import { Device, LOOPBACK } from "../helpers/direct-device.js";
import { SimDevice } from "../helpers/e2e-device.js";
import { tamperProxy, type Rewrite } from "../helpers/tamper-proxy.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Signal = { kind: string; sdp?: string; bind?: unknown };
const OTHER_FP = `sha-256 ${Array(32).fill("EE").join(":")}`;
const swapFingerprint = (sdp: string) => sdp.replace(/a=fingerprint:sha-256 \S+/g, `a=fingerprint:${OTHER_FP}`);

/** A call made now reaches the device over the relay only, is answered there, and settles the agent's promise. */
async function callEndsOverTheRelay(agent: Client, device: Device): Promise<void> {
  const p = agent.call("confirm", undefined, { question: "still safe?" }, { timeoutS: 60 });
  await waitFor(() => (device.handed.length === 1 ? true : undefined), "the call over the relay");
  expect(device.arrivals.map((a) => a.path)).toEqual(["relay"]);
  device.answer(device.handed[0]!, "via relay");
  await expect(p).resolves.toEqual({ message: "via relay" });
}

describe("a relay that tampers with the direct path's handshake", () => {
  it("in a plaintext session: a swapped offer fingerprint, a swapped answer fingerprint or the relay's own signing key is refused by the bind before setRemoteDescription, and the call ends over the relay", async () => {
    const relayUrl = inject("relayUrl");
    const relays = (await generateDirectKey()).key;
    let mode: "offer-fp" | "answer-fp" | "relay-key" = "offer-fp";
    let lastOffer = "";
    const rewrite: Rewrite = async (f, dir) => {
      const s = f.signal as Signal;
      if (dir === "up" && s.kind === "offer") {
        lastOffer = s.sdp!;
        return mode === "offer-fp" ? { ...f, signal: { ...s, sdp: swapFingerprint(s.sdp!) } } : f;
      }
      if (dir !== "down" || s.kind !== "answer" || mode === "offer-fp") return f;
      if (mode === "answer-fp") return { ...f, signal: { ...s, sdp: swapFingerprint(s.sdp!) } };
      // The relay sees both SDPs in plaintext, so it can sign the REAL fingerprints — with its own key.
      const ctx = { sessionId, signalId: String(f.id), deviceId: "phone" };
      return { ...f, signal: { ...s, bind: await signBind(relays, ctx, lastOffer, s.sdp!) } };
    };
    const proxy = await tamperProxy(relayUrl, rewrite);
    cleanups.push(() => proxy.close());
    const stateDir = tempDir();
    const saved = await ensureSession({ relayUrl, stateDir, cwd: stateDir });
    const sessionId = saved.sessionId;
    const agent = await connectAgent({ relayUrl, stateDir, cwd: stateDir, direct: LOOPBACK });
    cleanups.push(() => agent.close());
    const app = await appClient(proxy.url, sessionId, saved.appToken!, [CONFIRM], "phone");
    cleanups.push(() => app.close());
    // The device pinned the machine's key from its pairing link (`&dk=`).
    const device = new Device(app, agent.clientId, { sessionId, sender: "app:phone", pin: (await loadDirectKey(stateDir)).publicKey });
    cleanups.push(() => device.direct.close());

    const expected = {
      "offer-fp": "the bind's signature does not match this handshake's fingerprints",
      "answer-fp": "the bind's signature does not match this handshake's fingerprints",
      "relay-key": "the answer is signed by another key than the machine's pinned one",
    } as const;
    for (const m of ["offer-fp", "answer-fp", "relay-key"] as const) {
      mode = m;
      const from = device.logs.length;
      device.direct.offer(agent.clientId);
      const refused = await waitFor(() => device.logs.slice(from).find((l) => l.includes("answer was refused")), `the ${m} answer's refusal`);
      expect(refused, m).toContain(expected[m]);
      expect(device.paths.directOpen).toBe(false);
      expect(agent.path).toBe("relay");
    }
    expect(proxy.rewritten).toBeGreaterThanOrEqual(3);
    expect(device.accepted).toEqual([]);
    await callEndsOverTheRelay(agent, device);
  });

  it("in a sealed session: a rewritten sealed handshake does not open, so nothing opens, and the call ends over the relay", async () => {
    const relayUrl = inject("relayUrl");
    const proxy = await tamperProxy(relayUrl, (f, dir) => {
      const sealed = f.sealed as { c: string } | undefined;
      if (dir !== "down" || !sealed) return f;
      const c = sealed.c;
      return { ...f, sealed: { ...sealed, c: (c[0] === "A" ? "B" : "A") + c.slice(1) } };
    });
    cleanups.push(() => proxy.close());
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
    const dev = await SimDevice.redeem(relayUrl, url, "sealed phone");
    expect(await dev.hello()).toBe(201);
    const agent = await connectAgent({ relayUrl, stateDir: dir, cwd: dir, relayKey: DEV_RELAY_KEY, clientId: "ag_direct_tamper", direct: LOOPBACK });
    cleanups.push(() => agent.close());
    expect(agent.sealed).toBe(true);
    await waitFor(() => dev.takeReply(), "the sponsor's reply");
    // The device's own socket goes through the lying proxy.
    const viaProxy = new SimDevice(proxy.url, dev.p);
    viaProxy.keys = dev.keys;
    const { ws, sender, hello } = await viaProxy.join(agent.sessionId, [CONFIRM]);
    cleanups.push(() => ws.close());
    const keys: CodecKeys = { keyOf: dev.keyOf, current: () => dev.current(), refresh: async () => {} };
    const device = new Device(ws, agent.clientId, { sessionId: agent.sessionId, sender, hello: hello as HelloFrame, keys });
    cleanups.push(() => device.direct.close());
    device.direct.offer(agent.clientId);
    await waitFor(() => device.logs.find((l) => l.includes("an rtc.signal does not open")), "the tampered answer to be dropped");
    expect(proxy.rewritten).toBeGreaterThan(0);
    expect(device.paths.directOpen).toBe(false);
    expect(agent.path).toBe("relay");
    expect(device.accepted).toEqual([]);
    await callEndsOverTheRelay(agent, device);
  });
});
