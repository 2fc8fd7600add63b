// The `lineup` CLI as a real child process (node adapter/bin/lineup.mjs, what `npx lineup` runs) against
// the real relay, with a scripted app answering. Exit codes: 0 result, 1 error result, 2 usage/auth/connection.
import { afterEach, describe, expect, inject, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { RawClient } from "../helpers/raw-client.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { appClient, Proxy, runCli, savedSessions, spawnCli, tempDir } from "../helpers/adapter-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function envFor(relayUrl: string, stateDir: string): Record<string, string> {
  return { LINEUP_RELAY_URL: relayUrl, LINEUP_STATE_DIR: stateDir, LINEUP_RELAY_KEY: DEV_RELAY_KEY, LINEUP_SESSION: "", LINEUP_TOKEN: "" };
}

/** The app's next tool.call, or the CLI's output if it exits first (so a failure says why). */
async function nextCall(app: RawClient, run: Promise<{ code: number | null; stdout: string; stderr: string }>) {
  return Promise.race([
    app.next("tool.call", 30_000),
    run.then((r) => {
      throw new Error(`the CLI exited before the call arrived: ${JSON.stringify(r)}`);
    }),
  ]);
}

/**
 * A directory whose session is already saved (the CLI reuses it) with the scripted app connected and its
 * tools registered — so a call cannot race the app's registration (a connected app without the tool
 * makes the relay answer unknown_tool at once, as the contract says).
 */
async function prepared(relayUrl: string): Promise<{ dir: string; app: RawClient; sessionId: string }> {
  const dir = tempDir();
  const s = await ensureSession({ relayUrl, stateDir: dir, cwd: dir });
  const app = await appClient(relayUrl, s.sessionId, s.appToken!);
  cleanups.push(() => app.close());
  return { dir, app, sessionId: s.sessionId };
}

describe("lineup call", { timeout: 120_000 }, () => {
  it("prints the result JSON on stdout and exits 0", async () => {
    const relayUrl = inject("relayUrl");
    const { dir, app } = await prepared(relayUrl);
    const run = runCli(["call", "confirm", "--args", '{"question":"Deploy?"}', "--timeout", "60"], envFor(relayUrl, dir), dir);
    const call = await nextCall(app, run);
    expect(call).toMatchObject({ name: "confirm", arguments: { question: "Deploy?" }, timeout_s: 60 });
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes", confirmed: true } });
    const r = await run;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ message: "yes", confirmed: true });
    expect(r.stderr).toContain("calling confirm");
  });

  it("prints {error} and exits 1 for an error result from the provider or the relay", async () => {
    const relayUrl = inject("relayUrl");
    const { dir, app } = await prepared(relayUrl);
    const run = runCli(["call", "confirm", "--args", '{"question":"?"}'], envFor(relayUrl, dir), dir);
    const call = await nextCall(app, run);
    app.send({ type: "tool.result", call_id: call.call_id, error: { code: "declined", message: "the human dismissed it" } });
    const r = await run;
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ error: { code: "declined", message: "the human dismissed it" } });

    // The app is still connected and has no `nope` tool: the relay answers unknown_tool.
    const r2 = await runCli(["call", "nope"], envFor(relayUrl, dir), dir);
    expect(r2.code).toBe(1);
    expect(JSON.parse(r2.stdout).error.code).toBe("unknown_tool");

    // The relay's own deadline.
    const r3 = await runCli(["call", "confirm", "--args", '{"question":"late"}', "--timeout", "1"], envFor(relayUrl, dir), dir);
    expect(r3.code).toBe(1);
    expect(JSON.parse(r3.stdout).error.code).toBe("timeout");
  });

  it("exits 2 for usage errors, a refused token and an unreachable relay", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const bad = await runCli(["call", "confirm", "--args", "{not json"], envFor(relayUrl, dir), dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--args is not valid JSON");
    expect((await runCli(["call"], envFor(relayUrl, dir), dir)).code).toBe(2);
    expect((await runCli(["call", "x", "--bogus"], envFor(relayUrl, dir), dir)).code).toBe(2);
    expect((await runCli(["frobnicate"], envFor(relayUrl, dir), dir)).code).toBe(2);

    const forged = await runCli(
      ["call", "confirm"],
      { ...envFor(relayUrl, dir), LINEUP_SESSION: "AAAAAAAAAAAAAAAAAAAAAA", LINEUP_TOKEN: "v1.AAAAAAAAAAAAAAAAAAAAAA.agent.zzzzzzzz.forged" },
      dir,
    );
    expect(forged.code).toBe(2);
    expect(JSON.parse(forged.stdout).error.code).toBe("auth");

    const wrongKey = await runCli(["call", "confirm"], { ...envFor(relayUrl, dir), LINEUP_RELAY_KEY: "not-the-key" }, dir);
    expect(wrongKey.code).toBe(2);
    expect(JSON.parse(wrongKey.stdout).error.code).toBe("auth");

    const p = await Proxy.start(relayUrl);
    await p.close(); // a port where nothing listens
    const down = await runCli(["call", "confirm"], envFor(p.url, dir), dir);
    expect(down.code).toBe(2);
    expect(JSON.parse(down.stdout).error.code).toBe("connect");
  });

  it("a killed `lineup call --call-id` re-run prints the answer that came while it was gone", async () => {
    const relayUrl = inject("relayUrl");
    const { dir, app } = await prepared(relayUrl);
    const args = ["call", "confirm", "--args", '{"question":"survive a restart?"}', "--call-id", "restart-1"];
    const first = spawnCli(args, envFor(relayUrl, dir), dir);
    cleanups.push(() => first.kill("SIGKILL"));
    const call = await nextCall(app, first.done);
    expect(call.call_id).toBe("restart-1");
    first.kill("SIGKILL");
    await first.done;
    await app.next((f) => f.type === "presence" && (f as { agent: { online: boolean } }).agent.online === false, 15_000);
    app.send({ type: "tool.result", call_id: "restart-1", result: { message: "yes, you were away" } });
    await app.sync();

    const second = await runCli(args, envFor(relayUrl, dir), dir);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ message: "yes, you were away" });
    // The re-run resumed the same call by id: the app never got a second tool.call.
    expect(await app.none((f) => f.type === "tool.call", 300)).toBe(true);
  });

  it("SIGINT cancels the call: the app gets tool.cancel and the CLI exits 130", async () => {
    const relayUrl = inject("relayUrl");
    const { dir, app } = await prepared(relayUrl);
    const child = spawnCli(["call", "confirm", "--args", '{"question":"interrupt me"}'], envFor(relayUrl, dir), dir);
    cleanups.push(() => child.kill("SIGKILL"));
    const call = await nextCall(app, child.done);
    child.kill("SIGINT");
    expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id, 15_000)).toMatchObject({ reason: "cancelled" });
    const r = await child.done;
    expect(r.code).toBe(130);
    expect(JSON.parse(r.stdout).error.code).toBe("cancelled");
  });
});

describe("lineup status, sessions and --help", { timeout: 120_000 }, () => {
  it("status shows the saved session; sessions lists and forgets it", async () => {
    const relayUrl = inject("relayUrl");
    const empty = tempDir();
    expect((await runCli(["status"], envFor(relayUrl, empty), empty)).code).toBe(2); // nothing saved
    const { dir, app } = await prepared(relayUrl);
    const env = envFor(relayUrl, dir);
    const run = runCli(["call", "confirm", "--args", '{"question":"hi"}'], env, dir);
    const call = await nextCall(app, run);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes" } });
    expect((await run).code).toBe(0);
    const sid = savedSessions(dir)[0]!.sessionId;

    const st = await runCli(["status", "--json"], env, dir);
    expect(st.code).toBe(0);
    const status = JSON.parse(st.stdout);
    expect(status).toMatchObject({ session_id: sid, apps: 1, relay_url: relayUrl });
    expect(status.tools.app.map((t: { name: string }) => t.name)).toEqual(["confirm"]);

    const list = await runCli(["sessions", "list"], env, dir);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(sid);
    const forget = await runCli(["sessions", "forget"], env, dir);
    expect(forget.stdout).toContain(`forgot ${sid}`);
    expect(savedSessions(dir)).toEqual([]);
  });

  it("--help works for the tool and every command", async () => {
    const dir = tempDir();
    const top = await runCli(["--help"], {}, dir);
    expect(top.code).toBe(0);
    for (const word of ["connect", "call", "status", "sessions", "serve", "mcp", "LINEUP_RELAY_URL", "LINEUP_STATE_DIR"]) expect(top.stdout).toContain(word);
    for (const cmd of ["connect", "call", "status", "sessions", "serve"]) {
      const r = await runCli([cmd, "--help"], {}, dir);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toContain(`lineup ${cmd}`);
    }
    expect((await runCli([], {}, dir)).code).toBe(2);
  });
});
