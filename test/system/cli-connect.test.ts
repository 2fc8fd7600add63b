// `lineup connect` and `lineup serve` as real child processes: the session is created by the CLI, the
// app link and QR code are printed, presence and messages are logged, stdin lines become messages, and
// the end of the session (4004) stops the process with exit 2. `serve` is the direct LAN mode end to end.
import { afterEach, describe, expect, inject, it } from "vitest";
import { freePort } from "../helpers/relay.js";
import type { RawClient } from "../helpers/raw-client.js";
import { appClient, runCli, savedSessions, spawnCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("lineup connect", { timeout: 120_000 }, () => {
  it("creates a session, prints the link and QR, logs presence and messages, sends stdin lines, stops on 4004", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const child = spawnCli(
      ["connect"],
      { LINEUP_RELAY_URL: relayUrl, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "", LINEUP_GUEST_LINK: "1" },
      dir,
      "pipe",
    );
    cleanups.push(() => child.kill("SIGKILL"));
    const s = await waitFor(() => savedSessions(dir)[0], "the session to be saved", 60_000);
    await waitFor(() => child.output().stderr.includes(s.appToken!) || undefined, "the app link", 60_000);
    const err = () => child.output().stderr;
    expect(err()).toContain(`#s=${s.sessionId}&t=${s.appToken}`);
    await waitFor(() => /[▄▀█]/.test(err()) || undefined, "the QR code (block characters)");

    const app: RawClient = await appClient(relayUrl, s.sessionId, s.appToken!);
    cleanups.push(() => app.close());
    await waitFor(() => err().includes("1 app connected") || undefined, "presence to be logged");
    app.send({ type: "message", content: [{ type: "text", text: "hi from the phone" }] });
    await waitFor(() => err().includes("hi from the phone") || undefined, "the message to be logged");

    child.stdin!.write("hello from the terminal\n");
    expect(await app.next("message", 15_000)).toMatchObject({ from: { role: "agent" }, content: [{ type: "text", text: "hello from the terminal" }] });
    child.stdin!.write("/status working on tests\n");
    expect(
      await app.next((f) => f.type === "presence" && (f as { agent: { status?: { state: string } } }).agent.status?.state === "working", 15_000),
    ).toMatchObject({
      agent: { online: true, status: { state: "working", detail: "on tests" } },
    });

    const del = await fetch(`${relayUrl}/api/sessions/${s.sessionId}`, { method: "DELETE", headers: { authorization: `Bearer ${s.agentToken}` } });
    expect(del.status).toBe(204);
    const r = await child.done;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("stopped");
  });

  it("reuses the session saved for the directory on the next run", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const env = { LINEUP_RELAY_URL: relayUrl, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" };
    const first = spawnCli(["connect", "--no-qr"], env, dir);
    cleanups.push(() => first.kill("SIGKILL"));
    const s = await waitFor(() => savedSessions(dir)[0], "the session", 60_000);
    await waitFor(() => first.output().stderr.includes("apps connected") || undefined, "the first run to connect", 60_000);
    // Once under CI load the process ended by the signal itself (code null): give it a moment past its
    // first lines, and say how it ended if it happens again.
    await new Promise((r) => setTimeout(r, 300));
    first.kill("SIGINT");
    const ended = await first.done;
    expect(ended.code, `exit ${String(ended.code)} signal ${String(first.signalCode)}; stderr: ${ended.stderr.slice(-400)}`).toBe(0);
    const second = spawnCli(["connect", "--no-qr"], env, dir);
    cleanups.push(() => second.kill("SIGKILL"));
    await waitFor(() => second.output().stderr.includes("apps connected") || undefined, "the second run to connect", 60_000);
    expect(second.output().stderr).toContain(`session ${s.sessionId}`);
    expect(savedSessions(dir)).toHaveLength(1);
    second.kill("SIGINT");
    expect((await second.done).code).toBe(0);
  });
});

describe("lineup serve (direct LAN mode)", { timeout: 120_000 }, () => {
  it("generates a token, prints the links, and serves calls and the app with no relay", async () => {
    const dir = tempDir();
    const port = await freePort();
    const child = spawnCli(["serve", "--port", String(port), "--host", "127.0.0.1", "--no-qr"], { LINEUP_STATE_DIR: dir, LINEUP_LAN_TOKEN: "" }, dir);
    cleanups.push(() => child.kill("SIGKILL"));
    const line = await waitFor(
      () =>
        child
          .output()
          .stdout.split("\n")
          .find((l) => l.startsWith("{")),
      "the serve summary line",
      60_000,
    );
    const info = JSON.parse(line) as { local_url: string; token: string; session_id: string; app_token: string; agent_token: string; app_url: string };
    expect(info.token.length).toBeGreaterThanOrEqual(16);
    expect(child.output().stderr).toContain(info.token); // the generated token is printed for the human
    // What the human is told about the credentials printed and the plain-HTTP network.
    expect(child.output().stderr).toMatch(/warning: this is plain HTTP\. Anyone on the same network can read the tokens/);
    expect(child.output().stderr).toContain("set LINEUP_LAN_TOKEN to keep it");
    expect(child.output().stderr).toMatch(/the line carries the agent token — a credential/);
    expect(child.output().stderr).toMatch(/carries the session's app token — treat it like a password/);
    expect(info.app_url).toBe(`http://127.0.0.1:${port}/#s=${info.session_id}&t=${info.app_token}`);
    expect(await (await fetch(`${info.local_url}/`)).text()).toContain('<div id="app">');

    const app = await appClient(info.local_url, info.session_id, info.app_token);
    cleanups.push(() => app.close());
    // `lineup call` from the same directory finds the session `serve` saved for its local URL.
    const run = runCli(
      ["call", "confirm", "--args", '{"question":"LAN?"}'],
      { LINEUP_RELAY_URL: info.local_url, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" },
      dir,
    );
    const call = await app.next("tool.call", 60_000);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes over the LAN" } });
    const r = await run;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ message: "yes over the LAN" });

    child.kill("SIGINT");
    expect((await child.done).code).toBe(0);
  });

  it("refuses a token shorter than 16 characters (exit 2)", async () => {
    const dir = tempDir();
    const r = await runCli(["serve", "--port", String(await freePort()), "--token", "short"], { LINEUP_STATE_DIR: dir }, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("at least 16");
  });
});
