// The agent adapter's side of end-to-end encryption (issue 19, docs/e2e.md, docs/adapter.md "End-to-end
// encryption") against the real relay: `lineup e2e on|off|status`, pairing with the link's secret, sealed
// `lineup call`s answered by a device built from shared/e2e, a key substitution refused, receiver-side
// validation, and a re-key after revoking a device. The CLI runs as a subprocess with its own state dir.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, LineUpError } from "../../adapter/client/index.js";
import { syncOnce } from "../../adapter/e2e/switch.js";
import { findInbox } from "../../adapter/client/state.js";
import { CONFIRM } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { exportPublicKey, generateHolderKeyPair, isE2EError, openFrame, type Frame as E2EFrame } from "../../shared/crypto/e2e/index.js";
import type { ToolDef } from "../../shared/contract/protocol.js";
import { runCli, spawnCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";
import { SimDevice } from "../helpers/e2e-device.js";
import { startMcp } from "../helpers/mcp-helpers.js";

const relay = inject("relayUrl");
// In-process agents (connectAgent) watch the inbox's keys at this pace too.
process.env.LINEUP_E2E_POLL_MS = "300";
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const envFor = (stateDir: string, extra: Record<string, string> = {}): Record<string, string> => ({
  LINEUP_RELAY_URL: relay,
  LINEUP_RELAY_KEY: DEV_RELAY_KEY,
  LINEUP_STATE_DIR: stateDir,
  LINEUP_SESSION: "",
  LINEUP_TOKEN: "",
  LINEUP_GUEST_LINK: "",
  LINEUP_E2E_POLL_MS: "300",
  ...extra,
});

async function cliJson<T>(args: string[], stateDir: string): Promise<T> {
  const r = await runCli(args, envFor(stateDir), stateDir);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as T;
}

/** `lineup e2e on` + `lineup pair`, then a device redeems the link and says hello. */
async function pairedDevice(stateDir: string, name = "sim phone"): Promise<SimDevice> {
  const { url } = await cliJson<{ url: string }>(["pair", "--json"], stateDir);
  // The pairing secret, then the machine's direct key (issue 32: `&dk=`, docs/protocol.md).
  expect(url).toMatch(/#pair=[^&]+&k=[A-Za-z0-9_-]{43}&dk=[A-Za-z0-9_-]{87}$/);
  const d = await SimDevice.redeem(relay, url, name);
  expect(await d.hello()).toBe(201);
  return d;
}

const machineCred = (stateDir: string) => findInbox(stateDir, relay)!.machineCredential;
async function machineE2E(stateDir: string): Promise<{ epoch: number; holders: string[]; rekey_needed: boolean }> {
  const r = await fetch(`${relay}/api/inbox/e2e`, { headers: { authorization: `Bearer ${machineCred(stateDir)}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as { epoch: number; holders: string[]; rekey_needed: boolean };
}

describe("lineup e2e on|off|status", () => {
  it("creates the inbox and the first key, publishes it, and reports it; off keeps the keys", async () => {
    const dir = tempDir();
    const before = await cliJson<{ on: boolean; inbox_id: string | null; epoch: number }>(["e2e", "status", "--json"], dir);
    expect(before).toMatchObject({ on: false, inbox_id: null, epoch: 0 });

    const on = await cliJson<{ on: boolean; inbox_id: string; epoch: number; created: boolean }>(["e2e", "on", "--json"], dir);
    expect(on).toMatchObject({ on: true, epoch: 1, created: true });
    const inbox = findInbox(dir, relay)!;
    expect(inbox.inboxId).toBe(on.inbox_id);
    expect(Object.keys(inbox.e2e!.keys)).toEqual(["1"]);
    expect(inbox.e2e!.roster.map((h) => h.id)).toEqual([inbox.machineId]);
    expect(statSync(join(dir, "sessions.json")).mode & 0o777).toBe(0o600);
    expect((await machineE2E(dir)).holders).toEqual([inbox.machineId]);

    const again = await cliJson<{ epoch: number; created: boolean }>(["e2e", "on", "--json"], dir);
    expect(again).toMatchObject({ epoch: 1, created: false });

    const st = await cliJson<Record<string, unknown>>(["e2e", "status", "--json"], dir);
    expect(st).toMatchObject({ on: true, epoch: 1, has_current_key: true, holders: [inbox.machineId], pending_pairings: [], rekey_needed: false });
    const text = await runCli(["e2e", "status"], envFor(dir), dir);
    expect(text.stdout).toContain("end-to-end encryption: on");
    expect(text.stdout).toContain("key epoch: 1");

    const off = await cliJson<{ on: boolean; was_on: boolean }>(["e2e", "off", "--json"], dir);
    expect(off).toMatchObject({ on: false, was_on: true });
    const after = await cliJson<Record<string, unknown>>(["e2e", "status", "--json"], dir);
    expect(after).toMatchObject({ on: false, epoch: 1, has_current_key: true });
    expect(findInbox(dir, relay)!.e2e!.keys["1"]).toBe(inbox.e2e!.keys["1"]);
  });

  it("pair prints the secret in the link only while on, and keeps it as a pending pairing", async () => {
    const dir = tempDir();
    const plain = await cliJson<{ url: string }>(["pair", "--json"], dir);
    expect(plain.url).not.toContain("&k=");
    await cliJson(["e2e", "on", "--json"], dir);
    const { url, expires_at } = await cliJson<{ url: string; expires_at: number }>(["pair", "--json"], dir);
    const k = /&k=([A-Za-z0-9_-]{43})(?:&|$)/.exec(url)?.[1];
    expect(k).toBeTruthy();
    const pending = findInbox(dir, relay)!.e2e!.pending;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ secret: k, expires_at });
    const st = await cliJson<{ pending_pairings: { code_id: string }[] }>(["e2e", "status", "--json"], dir);
    expect(st.pending_pairings.map((p) => p.code_id)).toEqual([pending[0]!.code_id]);
    expect(JSON.stringify(st)).not.toContain(k!); // status never prints a secret
  });
});

describe("a sealed session", () => {
  it("pairs the device at the next `lineup call`, seals the call (with a preview) and opens the device's sealed answer", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const dev = await pairedDevice(dir);
    const call = spawnCli(
      ["call", "confirm", "--args", JSON.stringify({ question: "Deploy the secret plan?", yes_label: "Ship it" }), "--timeout", "60"],
      envFor(dir),
      dir,
    );
    cleanups.push(() => call.exitCode === null && call.kill("SIGKILL"));
    // The call process answers the hello before it connects: the device gets the key.
    const key = await waitFor(() => dev.takeReply(), "the sponsor's reply", 20_000);
    expect(key.epoch).toBe(1);
    expect(findInbox(dir, relay)!.e2e!.pending).toEqual([]);
    expect(findInbox(dir, relay)!.e2e!.roster.map((h) => h.id)).toContain(dev.p.deviceId);
    expect((await machineE2E(dir)).holders).toContain(dev.p.deviceId);

    // Joined once the call waits (a device connected before its sealed tool.list is not counted as a provider
    // in a sealed session, so the call would wait for it too: issue 28 item 7).
    const s = await waitFor(
      async () => (await dev.sessions()).find((x) => x.sealed === true && x.waiting.length > 0),
      "a sealed session with the call waiting",
      20_000,
    );
    const { ws, sender } = await dev.join(s.session_id, [CONFIRM]);
    cleanups.push(() => ws.close());
    const f = await ws.next("tool.call", 20_000);
    expect(f.arguments).toBeUndefined();
    expect(JSON.stringify(f)).not.toContain("secret plan");
    const opened = await dev.open(s.session_id, f);
    expect(opened.arguments).toEqual({ question: "Deploy the secret plan?", yes_label: "Ship it" });
    expect(await dev.preview(s.session_id, f)).toEqual({ text: "Deploy the secret plan?", yes_label: "Ship it", tool: "confirm" });
    const waiting = (await dev.sessions()).find((x) => x.session_id === s.session_id)!.waiting;
    expect(JSON.stringify(waiting)).not.toContain("secret plan");

    ws.send(
      await dev.seal(s.session_id, sender, {
        type: "tool.result",
        call_id: String(f.call_id),
        name: "confirm",
        result: { message: "yes, shipped", confirmed: true },
      }),
    );
    const r = await call.done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ message: "yes, shipped", confirmed: true });
  });

  // Issue 28 item 7: a sealed call before any device holds the key waited silently (or failed), and nothing
  // said why nobody was asked.
  it("`lineup call` says once, on stderr, that no paired device can read sealed questions yet and how to pair; the call waits", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const r = await runCli(["call", "confirm", "--args", JSON.stringify({ question: "Anyone?" }), "--timeout", "2"], envFor(dir), dir);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: "timeout" } });
    expect(r.stderr.split("no paired device can read sealed questions yet")).toHaveLength(2);
    expect(r.stderr).toContain("Pair a device with `lineup pair`");
    // Once a device holds the key the line is gone.
    const dev = await pairedDevice(dir);
    const again = spawnCli(["call", "confirm", "--args", JSON.stringify({ question: "Now?" }), "--timeout", "2"], envFor(dir), dir);
    cleanups.push(() => again.exitCode === null && again.kill("SIGKILL"));
    await waitFor(() => dev.takeReply(), "the sponsor's reply", 20_000);
    const r2 = await again.done;
    expect(r2.stderr).not.toContain("no paired device can read sealed questions yet");
  });

  // Issue 28 item 7: the phone's banner said "any `lineup` command" hands it the key, but `lineup e2e status`
  // only reported the pairing as pending.
  it("`lineup e2e status` completes a pending pairing and prints the comparison code", async () => {
    const dir = tempDir();
    // Turning on says what happens to an agent already running: it keeps its plaintext session until restarted.
    const on = await runCli(["e2e", "on"], envFor(dir), dir);
    expect(on.code, on.stderr).toBe(0);
    expect(on.stderr).toContain("already running keeps its plaintext session: restart it");
    const dev = await pairedDevice(dir);
    const r = await runCli(["e2e", "status"], envFor(dir), dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`paired ${dev.p.deviceId} \\(comparison code [^)]+\\)`));
    expect(r.stdout).toContain("pending pairings: none");
    expect((await dev.takeReply())?.epoch).toBe(1);
  });

  // Issue 28 item 7: the comparison code was only on the phone (and in a later command's log): `lineup pair`
  // printed the link and exited.
  it("`lineup pair --wait` stays until the device opened the link, hands it the key and prints the comparison code", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const pair = spawnCli(["pair", "--wait", "--no-qr"], envFor(dir), dir);
    cleanups.push(() => pair.exitCode === null && pair.kill("SIGKILL"));
    const url = await waitFor(() => /https?:\/\/\S+#pair=[^&\s]+&k=[A-Za-z0-9_-]{43}/.exec(pair.output().stderr)?.[0], "the link", 20_000);
    const dev = await SimDevice.redeem(relay, url, "waiting phone");
    expect(await dev.hello()).toBe(201);
    const r = await pair.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`paired ${dev.p.deviceId} \\(comparison code [^)]+\\)`));
    expect(r.stderr).toContain("compare the code above with the one on its screen");
    expect((await dev.takeReply())?.epoch).toBe(1);
  });

  it("refuses a key substitution during pairing: nothing is wrapped for the tampered hello", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const { url } = await cliJson<{ url: string }>(["pair", "--json"], dir);
    const dev = await SimDevice.redeem(relay, url);
    // The relay (or whoever) swaps the joiner's key and keeps the MAC made over the real one.
    const evil = await exportPublicKey((await generateHolderKeyPair({ extractable: true })).publicKey);
    expect(await dev.hello(async (h) => ({ ...h, joiner: { ...(h.joiner as object), publicKey: evil } }))).toBe(201);
    const lines: string[] = [];
    const k = await syncOnce({ relayUrl: relay, stateDir: dir, log: (s) => lines.push(s) });
    k?.close();
    expect(lines.join("\n")).toMatch(/REFUSED the pairing hello of dv_.*bad_mac|REFUSED the pairing hello of dv_.*MAC/);
    const st = await machineE2E(dir);
    expect(st.holders).not.toContain(dev.p.deviceId);
    expect((await dev.e2eState()).replies).toEqual([]);
    expect(findInbox(dir, relay)!.e2e!.pending).toEqual([]);
    expect(findInbox(dir, relay)!.e2e!.roster.map((h) => h.id)).not.toContain(dev.p.deviceId);
  });

  it("validates on the receiving side: arguments before sealing, a provided tool's arguments after opening, results after opening", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const dev = await pairedDevice(dir);
    const PING: ToolDef = {
      name: "ping",
      type: "action",
      description: "ping the agent",
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
    };
    const agent = await connectAgent({ relayUrl: relay, stateDir: dir, cwd: dir, relayKey: DEV_RELAY_KEY, clientId: "ag_e2e_validate" });
    cleanups.push(() => agent.close());
    agent.provide(PING, (args) => ({ message: `pong ${String(args.n)}` }));
    expect(agent.sealed).toBe(true);
    await waitFor(() => dev.takeReply(), "the sponsor's reply");
    const { ws, sender } = await dev.join(agent.sessionId, [CONFIRM]);
    cleanups.push(() => ws.close());

    // 1. The agent's own call with bad arguments never leaves: invalid_arguments, locally.
    await expect(agent.call("confirm", undefined, { question: 5 })).rejects.toMatchObject({ code: "invalid_arguments" });

    // 2. The device calls the agent's tool with bad arguments: the agent answers invalid_arguments, sealed.
    ws.send(await dev.seal(agent.sessionId, sender, { type: "tool.call", call_id: "c_bad_ping", name: "ping", arguments: { n: "five" } }));
    const bad = await ws.next((f) => f.type === "tool.result" && f.call_id === "c_bad_ping", 15_000);
    expect(bad.error).toBeUndefined();
    expect((await dev.open(agent.sessionId, bad)).error).toMatchObject({ code: "invalid_arguments" });
    ws.send(await dev.seal(agent.sessionId, sender, { type: "tool.call", call_id: "c_ok_ping", name: "ping", arguments: { n: 5 } }));
    const ok = await ws.next((f) => f.type === "tool.result" && f.call_id === "c_ok_ping", 15_000);
    expect((await dev.open(agent.sessionId, ok)).result).toMatchObject({ message: "pong 5" });

    // 3. A malformed result from the device: the call ends with bad_result, not with garbage.
    const pending = agent.call("confirm", undefined, { question: "ok?" });
    const f = await ws.next("tool.call", 15_000);
    ws.send(await dev.seal(agent.sessionId, sender, { type: "tool.result", call_id: String(f.call_id), name: "confirm", result: { message: 42 } }));
    const e = await pending.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LineUpError);
    expect((e as LineUpError).code).toBe("bad_result");
  });

  it("re-keys when a device is revoked: open calls are re-sealed, and the revoked key opens nothing made after", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const phone = await pairedDevice(dir, "old phone");
    const tablet = await pairedDevice(dir, "tablet");
    const agent = await connectAgent({ relayUrl: relay, stateDir: dir, cwd: dir, relayKey: DEV_RELAY_KEY, clientId: "ag_e2e_rekey" });
    cleanups.push(() => agent.close());
    await waitFor(() => phone.takeReply(), "the phone's reply");
    await waitFor(() => tablet.takeReply(), "the tablet's reply");
    // The tablet trusts the machine (its sponsor) for the next wrap.
    const { ws, sender } = await tablet.join(agent.sessionId, [CONFIRM]);
    cleanups.push(() => ws.close());

    const open = agent.call("confirm", undefined, { question: "Still open across the re-key?" }, { timeoutS: 120 });
    open.catch(() => {}); // awaited below; a failure before that must not surface as unhandled
    const first = await ws.next("tool.call", 15_000);
    expect((first.sealed as { e: number }).e).toBe(1);

    const rv = await runCli(["devices", "revoke", phone.p.deviceId], envFor(dir), dir);
    expect(rv.code, rv.stderr).toBe(0);
    // The revoking command or the running agent (whichever sees rekey_needed first) makes epoch 2.
    const st = await waitFor(async () => {
      const x = await machineE2E(dir);
      return x.epoch === 2 ? x : undefined;
    }, "epoch 2");
    expect(st.rekey_needed).toBe(false);
    expect(st.holders).not.toContain(phone.p.deviceId);
    expect(st.holders).toContain(tablet.p.deviceId);

    // The running agent notices the new epoch and re-seals its open call (tool.reseal → resealed tool.call).
    const resealed = await ws.next((f) => f.type === "tool.call" && f.resealed === true, 15_000);
    expect((resealed.sealed as { e: number }).e).toBe(2);
    const k2 = await tablet.takeWrap();
    expect(k2?.epoch).toBe(2);
    expect((await tablet.open(agent.sessionId, resealed)).arguments).toEqual({ question: "Still open across the re-key?" });
    // The revoked phone's key does not open it, not even with the epoch forced.
    await expect(phone.open(agent.sessionId, resealed)).rejects.toSatisfy((e: unknown) => isE2EError(e, "wrong_epoch"));
    const forced = { ...resealed, sealed: { ...(resealed.sealed as object), e: 1 } };
    await expect(openFrame(phone.keyOf, agent.sessionId, forced as unknown as E2EFrame)).rejects.toSatisfy((e: unknown) => isE2EError(e));

    // A call made after the revocation: sealed under epoch 2, the phone's old key opens nothing of it.
    const later = agent.call("confirm", undefined, { question: "Made after the revocation" }, { timeoutS: 120 });
    later.catch(() => {});
    const f2 = await ws.next((f) => f.type === "tool.call" && f.resealed !== true && f.call_id !== first.call_id, 15_000);
    expect((f2.sealed as { e: number }).e).toBe(2);
    await expect(phone.open(agent.sessionId, f2)).rejects.toSatisfy((e: unknown) => isE2EError(e));
    expect((await tablet.open(agent.sessionId, f2)).arguments).toEqual({ question: "Made after the revocation" });

    // The tablet answers both under epoch 2.
    for (const c of [first, f2])
      ws.send(
        await tablet.seal(agent.sessionId, sender, {
          type: "tool.result",
          call_id: String(c.call_id),
          name: "confirm",
          result: { message: `ok ${String(c.call_id)}` },
        }),
      );
    await expect(open).resolves.toMatchObject({ message: `ok ${String(first.call_id)}` });
    await expect(later).resolves.toMatchObject({ message: `ok ${String(f2.call_id)}` });
  });

  it("`lineup devices revoke` re-keys by itself when no other adapter process runs", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const phone = await pairedDevice(dir);
    const k = await syncOnce({ relayUrl: relay, stateDir: dir });
    k?.close();
    await waitFor(() => phone.takeReply(), "the sponsor's reply");
    const rv = await runCli(["devices", "revoke", phone.p.deviceId], envFor(dir), dir);
    expect(rv.code, rv.stderr).toBe(0);
    expect(rv.stdout).toMatch(/re-keyed the inbox to epoch 2/);
    const st = await machineE2E(dir);
    expect(st).toMatchObject({ epoch: 2, rekey_needed: false, holders: [findInbox(dir, relay)!.machineId] });
    expect(Object.keys(findInbox(dir, relay)!.e2e!.keys).sort()).toEqual(["1", "2"]);
    expect(findInbox(dir, relay)!.e2e!.roster.map((h) => h.id)).toEqual([findInbox(dir, relay)!.machineId]);
  });

  it("seals again after stale_epoch: a device re-keyed while the agent still held the old key", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const dev = await pairedDevice(dir);
    const agent = await connectAgent({ relayUrl: relay, stateDir: dir, cwd: dir, relayKey: DEV_RELAY_KEY, clientId: "ag_e2e_stale" });
    cleanups.push(() => agent.close());
    await waitFor(() => dev.takeReply(), "the sponsor's reply");
    await dev.takeRoster();
    const { ws, sender } = await dev.join(agent.sessionId, [CONFIRM]);
    cleanups.push(() => ws.close());
    // The agent stops polling for a while, so only the relay's stale_epoch can tell it.
    process.env.LINEUP_E2E_POLL_MS = "600000";
    cleanups.push(() => (process.env.LINEUP_E2E_POLL_MS = "300"));
    await new Promise((r) => setTimeout(r, 700));
    const m = findInbox(dir, relay)!;
    const machinePub = m.e2e!.roster.find((h) => h.id === m.machineId)!.publicKey;
    expect(dev.trusted[m.machineId]).toBe(machinePub);
    const k2 = await dev.rekeyFor([{ id: m.machineId, publicKey: machinePub }]);
    expect(k2.epoch).toBe(2);

    const p = agent.call("confirm", undefined, { question: "after the device's re-key" }, { timeoutS: 60 });
    p.catch(() => {});
    const f = await ws.next("tool.call", 15_000);
    expect((f.sealed as { e: number }).e).toBe(2);
    expect((await dev.open(agent.sessionId, f)).arguments).toEqual({ question: "after the device's re-key" });
    ws.send(await dev.seal(agent.sessionId, sender, { type: "tool.result", call_id: String(f.call_id), name: "confirm", result: { message: "fine" } }));
    await expect(p).resolves.toMatchObject({ message: "fine" });
    expect(Object.keys(findInbox(dir, relay)!.e2e!.keys).sort()).toEqual(["1", "2"]);
  });
});

describe("sealed sessions in the other adapter processes", () => {
  it("a killed sealed `lineup call --call-id` re-run prints the answer that came while it was gone", { timeout: 120_000 }, async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const dev = await pairedDevice(dir);
    const args = ["call", "confirm", "--args", JSON.stringify({ question: "Rerun?" }), "--call-id", "c_sealed_rerun", "--timeout", "120"];
    const first = spawnCli(args, envFor(dir), dir);
    cleanups.push(() => first.exitCode === null && first.kill("SIGKILL"));
    await waitFor(() => dev.takeReply(), "the sponsor's reply", 20_000);
    // regression (CI stop 23): joining before the call was made let it land between the device's connect and
    // its sealed tool.list, and come back unknown_tool. Join once the call waits in the inbox.
    const s = await waitFor(
      async () => (await dev.sessions()).find((x) => x.sealed === true && x.waiting.length > 0),
      "the sealed session with the call waiting",
      45_000,
    );
    const { ws, sender } = await dev.join(s.session_id, [CONFIRM]);
    cleanups.push(() => ws.close());
    // Under a loaded CI machine the first process can take a while from pairing to its call: wait longer,
    // and say what it printed if the call never comes.
    const f = await ws.next("tool.call", 45_000).catch((e: unknown) => {
      throw new Error(`${String(e)}\nthe first lineup call printed:\n${first.output().stderr}`);
    });
    first.kill("SIGKILL");
    await first.done;
    ws.send(
      await dev.seal(s.session_id, sender, { type: "tool.result", call_id: "c_sealed_rerun", name: "confirm", result: { message: "answered while away" } }),
    );
    await ws.sync();
    expect(f.call_id).toBe("c_sealed_rerun");
    const again = await runCli(args, envFor(dir), dir);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ message: "answered while away" });
  });

  it("a running `lineup connect` answers a hello for a link another process printed", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const conn = spawnCli(["connect", "--no-qr"], envFor(dir), dir);
    cleanups.push(() => conn.exitCode === null && conn.kill("SIGKILL"));
    await waitFor(() => /session \S+ on /.test(conn.output().stderr), "connect to start", 30_000);
    const dev = await pairedDevice(dir); // `lineup pair` in its own process, then the device's hello
    await waitFor(() => dev.takeReply(), "the running connect's reply", 20_000);
    expect(conn.output().stderr).toMatch(/paired dv_\S+ \(comparison code \d{3} \d{3}\)/);
    // connect's own link (printed while no device was paired) carries a secret too; the used one is gone.
    expect(conn.output().stderr).toMatch(/#pair=[^&\s]+&k=/);
    expect(findInbox(dir, relay)!.e2e!.pending.map((p) => p.code_id)).not.toContain(dev.p.codeId);
    // Issue 28 item 7: a sealed call in its session is logged by its tool's name (it was `confirm ""`).
    const call = spawnCli(["call", "confirm", "--args", JSON.stringify({ question: "SEALED-Q" }), "--timeout", "20"], envFor(dir), dir);
    cleanups.push(() => call.exitCode === null && call.kill("SIGKILL"));
    await waitFor(() => /call waiting for the human: confirm \(sealed/.test(conn.output().stderr), "connect's line for the sealed call", 20_000);
    expect(conn.output().stderr).not.toContain('confirm ""');
    expect(conn.output().stderr).not.toContain("SEALED-Q");
  });

  it("lineup mcp completes the pairing at start and carries a sealed call", async () => {
    const dir = tempDir();
    await cliJson(["e2e", "on", "--json"], dir);
    const dev = await pairedDevice(dir);
    const mcp = await startMcp(envFor(dir), { cwd: dir });
    cleanups.push(() => mcp.close());
    await waitFor(() => dev.takeReply(), "the sponsor's reply", 30_000);
    const s = await waitFor(async () => (await dev.sessions()).find((x) => x.sealed === true), "the sealed session", 20_000);
    const { ws, sender } = await dev.join(s.session_id, [CONFIRM]);
    cleanups.push(() => ws.close());
    const p = mcp.client.callTool({ name: "confirm", arguments: { question: "Sealed through MCP?", timeout: 60 } });
    const f = await ws.next("tool.call", 20_000);
    expect(f.arguments).toBeUndefined();
    expect((await dev.open(s.session_id, f)).arguments).toEqual({ question: "Sealed through MCP?" });
    ws.send(
      await dev.seal(s.session_id, sender, {
        type: "tool.result",
        call_id: String(f.call_id),
        name: "confirm",
        result: { message: "yes via mcp", confirmed: true },
      }),
    );
    const r = await p;
    expect(JSON.stringify(r.content)).toContain("yes via mcp");
    expect(mcp.errors).toEqual([]);
  });
});

describe("lineup join CODE#SECRET", () => {
  it("a second machine gets the key from a paired device, waiting with progress output, then seals its sessions", async () => {
    const a = tempDir();
    await cliJson(["e2e", "on", "--json"], a);
    const dev = await pairedDevice(a);
    const k = await syncOnce({ relayUrl: relay, stateDir: a });
    k?.close();
    await waitFor(() => dev.takeReply(), "the sponsor's reply");
    await dev.takeRoster();
    const { code, secret, codeId } = await dev.joinCode();

    const b = tempDir();
    const join = spawnCli(["join", `${code}#${secret}`, "--name", "second box"], envFor(b), b);
    cleanups.push(() => join.exitCode === null && join.kill("SIGKILL"));
    await waitFor(() => join.output().stderr.includes("waiting for a paired device"), "the join's progress line");
    await waitFor(() => dev.sponsor(secret, codeId), "the joiner's hello", 20_000);
    const r = await join.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/got the inbox's end-to-end key \(epoch 1\) from dv_/);
    const mb = findInbox(b, relay)!;
    expect(mb.e2e).toMatchObject({ on: true });
    expect(Object.keys(mb.e2e!.keys)).toEqual(["1"]);
    expect(mb.e2e!.keys["1"]).toBe(findInbox(a, relay)!.e2e!.keys["1"]);
    // The device's roster made machine A trusted on B too (for later re-keys).
    expect(mb.e2e!.roster.map((h) => h.id)).toEqual(expect.arrayContaining([findInbox(a, relay)!.machineId, dev.p.deviceId, mb.machineId]));
    const st = await cliJson<Record<string, unknown>>(["e2e", "status", "--json"], b);
    expect(st).toMatchObject({ on: true, epoch: 1, has_current_key: true });
  });

  it("a join secret that is not 43 characters is refused before anything is sent", async () => {
    const dir = tempDir();
    const r = await runCli(["join", "AAAAAAAAAAAA.BBBBBBBBBBBBBBBB#short"], envFor(dir), dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("pairing secret after # is not 43 characters");
    expect(findInbox(dir, relay)).toBeUndefined();
  });
});
