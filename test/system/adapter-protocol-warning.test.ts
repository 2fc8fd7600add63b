// Versions that tell the truth (issue 30, item 4): when the relay's `hello` names a newer protocol than the
// adapter knows, the adapter says so once — with the upgrade command — not at every reconnect or call. The real
// `wrangler dev` relay behind a proxy (test/helpers/lying-relay.ts) that only rewrites `hello.protocol`.
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectAgent, type Client } from "../../adapter/client/index.js";
import { UPGRADE_COMMAND } from "../../adapter/client/version.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { LyingRelay } from "../helpers/lying-relay.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { appClient, runCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";

const relay = inject("relayUrl");
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function agentVia(lr: LyingRelay, lines: string[]): Promise<Client> {
  const client = await connectAgent({ relayUrl: lr.url, relayKey: DEV_RELAY_KEY, stateDir: tempDir(), cwd: tempDir(), log: (l) => lines.push(l) });
  cleanups.push(() => client.close());
  return client;
}

describe("a relay that speaks a newer protocol", () => {
  it("is named once, with the upgrade command, across reconnects and a second client of the same relay", async () => {
    const lr = await LyingRelay.start(relay);
    cleanups.push(() => lr.close());
    lr.toClient = (f) => (f.type === "hello" ? { ...f, protocol: "lineup/2" } : f);
    const lines: string[] = [];
    await agentVia(lr, lines);
    const warnings = () => lines.filter((l) => l.includes("speaks lineup/2"));
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toContain(UPGRADE_COMMAND);
    lr.sockets[0]!.cut();
    await waitFor(() => (lines.filter((l) => l.startsWith("connected to session")).length >= 2 ? true : undefined), "the reconnect's hello");
    const other: string[] = [];
    await agentVia(lr, other);
    expect(warnings()).toHaveLength(1);
    expect(other.filter((l) => l.includes("speaks lineup/2"))).toEqual([]);
  });

  it("reaches a library user who gave no log through Node's warning channel (code LINEUP_PROTOCOL), once", async () => {
    const lr = await LyingRelay.start(relay);
    cleanups.push(() => lr.close());
    lr.toClient = (f) => (f.type === "hello" ? { ...f, protocol: "lineup/3" } : f);
    const seen: Error[] = [];
    const onWarning = (w: Error) => seen.push(w);
    process.on("warning", onWarning);
    cleanups.push(() => process.off("warning", onWarning));
    const client = await connectAgent({ relayUrl: lr.url, relayKey: DEV_RELAY_KEY, stateDir: tempDir(), cwd: tempDir() });
    cleanups.push(() => client.close());
    const ours = () => seen.filter((w) => (w as Error & { code?: string }).code === "LINEUP_PROTOCOL");
    await waitFor(() => (ours().length > 0 ? true : undefined), "the protocol warning");
    expect(ours()[0]!.message).toContain("speaks lineup/3");
    expect(ours()[0]!.message).toContain(UPGRADE_COMMAND);
    lr.sockets[0]!.cut();
    await waitFor(() => (lr.sockets.length >= 2 ? true : undefined), "the reconnect");
    await new Promise((r) => setTimeout(r, 300));
    expect(ours()).toHaveLength(1);
  });

  it("regression (warned per process): of two `lineup call`s on one machine only the first names it", async () => {
    const lr = await LyingRelay.start(relay);
    cleanups.push(() => lr.close());
    lr.toClient = (f) => (f.type === "hello" ? { ...f, protocol: "lineup/2" } : f);
    const dir = tempDir();
    const s = await ensureSession({ relayUrl: lr.url, relayKey: DEV_RELAY_KEY, stateDir: dir, cwd: dir });
    const app = await appClient(relay, s.sessionId, s.appToken!);
    cleanups.push(() => app.close());
    const env = { LINEUP_RELAY_URL: lr.url, LINEUP_RELAY_KEY: DEV_RELAY_KEY, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" };
    const oneCall = async () => {
      const run = runCli(["call", "confirm", "--args", '{"question":"Deploy?"}'], env, dir);
      const call = await app.next("tool.call", 30_000);
      app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes", confirmed: true } });
      return run;
    };
    const first = await oneCall();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain("speaks lineup/2");
    expect(first.stderr).toContain(UPGRADE_COMMAND);
    const second = await oneCall();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain("speaks lineup/2");
  });

  it("is not mentioned when the relay speaks the adapter's own protocol", async () => {
    const lr = await LyingRelay.start(relay);
    cleanups.push(() => lr.close());
    const lines: string[] = [];
    await agentVia(lr, lines);
    expect(lines.filter((l) => l.includes("speaks"))).toEqual([]);
  });
});
