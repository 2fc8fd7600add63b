// Issue 11 §6: the CLI under hostile input — text from the other side cannot drive the terminal, the relay
// key never goes over plain http to another machine, and secrets given as flags are pointed out.
import { afterEach, describe, expect, inject, it } from "vitest";
import { checkKeyTransport } from "../../adapter/client/ensure.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { appClient, runCli, savedSessions, spawnCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("text for a terminal", () => {
  it("drops escape sequences (CSI, OSC title and clipboard, DCS), C0/C1 controls and bidi overrides; keeps newlines, tabs and Unicode", () => {
    const evil = "a\x1b[2J\x1b[31mred\x1b[0m\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x1b\\\x1bPq#0\x1b\\b\x07\x08\x9b1mc\u202eevil\u202c\td\n会话😀";
    expect(forTerminal(evil)).toBe("aredbcevil\td\n会话😀");
  });
});

describe("lineup on the terminal", { timeout: 120_000 }, () => {
  it("regression: a message with terminal escapes from the app is logged by lineup connect without them", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const child = spawnCli(["connect", "--no-qr"], { LINEUP_RELAY_URL: relayUrl, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" }, dir);
    cleanups.push(() => child.kill("SIGKILL"));
    const s = await waitFor(() => savedSessions(dir)[0], "the session to be saved", 60_000);
    const app = await appClient(relayUrl, s.sessionId, s.appToken!);
    cleanups.push(() => app.close());
    // Messages are live: send once the agent is connected (inbox sessions are saved before it connects).
    await waitFor(
      () => child.output().stderr.includes("apps connected") || child.output().stderr.includes("app connected") || undefined,
      "the agent to connect",
    );
    app.send({ type: "message", content: [{ type: "text", text: "\x1b]0;owned\x07\x1b[2Jplain words\x1b[8m hidden" }] });
    await waitFor(() => child.output().stderr.includes("plain words hidden") || undefined, "the message to be logged").catch((e: Error) => {
      throw new Error(`${e.message}; stderr: ${JSON.stringify(child.output().stderr).slice(-900)}`);
    });
    expect(child.output().stderr).not.toContain("\x1b");
    expect(child.output().stderr).not.toContain("owned");
  });

  it("regression: refuses to send the relay key over plain http to another machine (exit 2, no request made)", async () => {
    const dir = tempDir();
    const r = await runCli(
      ["call", "confirm", "--args", '{"question":"x"}'],
      { LINEUP_RELAY_URL: "http://10.255.255.1:9", LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" },
      dir,
      30_000,
    );
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout.trim())).toMatchObject({ error: { code: "insecure" } });
    expect(r.stderr).toMatch(/plain http/);
    expect(() => checkKeyTransport("http://127.0.0.1:8787")).not.toThrow();
    expect(() => checkKeyTransport("http://localhost:9527")).not.toThrow();
    expect(() => checkKeyTransport("https://relay.example.com")).not.toThrow();
    expect(() => checkKeyTransport("http://192.168.1.20:9527")).toThrow(/plain http/);
  });

  // Issue 28 item 9: `new URL("relay.example.com")` threw a TypeError that reached the user as a stack trace.
  it.each(["relay.example.com", "localhost:8787"])("regression: LINEUP_RELAY_URL=%s (no scheme) is a one-line error and exit 2", async (u) => {
    const dir = tempDir();
    for (const args of [["status"], ["call", "confirm", "--args", '{"question":"x"}']]) {
      const r = await runCli(args, { LINEUP_RELAY_URL: u, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" }, dir, 30_000);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(`the relay URL "${u}" is not an http(s):// or ws(s):// URL`);
      expect(r.stderr).not.toMatch(/\n\s+at |TypeError/);
    }
  });

  it("warns when a secret is given as a flag rather than in the environment", async () => {
    const dir = tempDir();
    const r = await runCli(
      ["call", "confirm", "--key", "some-key", "--args", '{"question":"x"}'],
      { LINEUP_RELAY_URL: "http://10.255.255.1:9", LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" },
      dir,
      30_000,
    );
    expect(r.stderr).toMatch(/--key puts a secret in your shell history.*LINEUP_RELAY_KEY/);
  });
});
