// Security (issue 4 §3): error messages never echo secrets or tokens, and no token or key appears in any
// log line the relay writes. The relay here is our own `wrangler dev` at log level "debug" with a
// distinctive RELAY_KEY, its whole stdout and stderr captured through a scripted session.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { signToken } from "../../shared/edge/tokens.js";
import { connect, ECHO, http, Pool, refused, sleep, wsUrl, type Frame } from "../helpers/raw-client.js";
import { freePort, wranglerEnv } from "../helpers/relay.js";

const KEY = "leak-test-relay-key-7f3a9c2e5b-4d1e8a60";
let proc: ChildProcess;
let url = "";
let log = "";
// Its own state dir, like test/helpers/relay.ts: relays sharing one .wrangler/state lock each other's SQLite.
const persist = mkdtempSync(join(tmpdir(), "lineup-leaks-"));

async function startLogged(): Promise<void> {
  const port = await freePort();
  const inspector = await freePort();
  const args = [
    "wrangler",
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspector),
    "--log-level",
    "debug",
    "--persist-to",
    persist,
    "--var",
    `RELAY_KEY:${KEY}`,
    "--var",
    "RATE_LIMIT_PER_S:5000",
    "--var",
    "RATE_LIMIT_BURST:10000",
  ];
  proc = spawn("npx", args, {
    env: wranglerEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`wrangler dev exited:\n${log.slice(-2000)}`);
    if (
      await fetch(`${url}/healthz`)
        .then((r) => r.ok)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline) throw new Error(`wrangler dev did not start:\n${log.slice(-2000)}`);
    await sleep(250);
  }
}

beforeAll(startLogged);
afterAll(async () => {
  if (proc?.pid !== undefined && proc.exitCode === null) {
    try {
      process.kill(-proc.pid, "SIGTERM");
    } catch {
      proc.kill("SIGTERM");
    }
  }
  await sleep(200);
  rmSync(persist, { recursive: true, force: true });
});

const pool = new Pool(() => url);
const secrets = new Set<string>([KEY]);
/** A token, and its signature alone (a log that cut the token up would still leak that). */
function remember(t: string) {
  secrets.add(t);
  const sig = t.split(".").pop();
  if (sig && sig.length >= 16) secrets.add(sig);
}
function leaked(text: string): string[] {
  return [...secrets].filter((s) => text.includes(s));
}

describe("no secret in error bodies or logs", () => {
  let s: SessionCreated;
  const forged: string[] = [];

  it("never echoes a presented key or token in an HTTP error body", async () => {
    s = await pool.session(KEY);
    remember(s.agent_token);
    remember(s.app_token);
    const other = await pool.session(KEY);
    remember(other.agent_token);
    const wrongKey = "wrong-key-d41d8cd98f00b204";
    const forgedToken = await signToken("not-the-secret", s.session_id, "agent", s.expires_at, Date.now());
    const tampered = s.agent_token.slice(0, -2) + (s.agent_token.endsWith("AA") ? "BA" : "AA");
    forged.push(wrongKey, forgedToken, tampered);
    for (const f of forged) secrets.add(f);
    const sid = s.session_id;
    const answers = [
      await http(`${url}/api/sessions`, { method: "POST", token: wrongKey }),
      await http(`${url}/api/sessions`, { method: "POST", token: s.agent_token }),
      await http(`${url}/api/sessions`, { method: "POST", token: KEY, body: `{"label": "${KEY}", "ttl_s": "${s.agent_token}"}` }),
      await http(`${url}/api/sessions`, { method: "POST", token: KEY, body: `{oops ${KEY}` }),
      await http(`${url}/api/sessions/${sid}`, { token: forgedToken }),
      await http(`${url}/api/sessions/${sid}?token=${tampered}`),
      await http(`${url}/api/sessions/${sid}`, { token: other.agent_token }),
      await http(`${url}/api/sessions/${sid}`, { method: "DELETE", token: s.app_token }),
      await http(`${url}/api/sessions/${sid}/calls?wait=0`, {
        method: "POST",
        token: s.agent_token,
        body: JSON.stringify({ name: s.app_token, arguments: { k: KEY } }),
      }),
      await http(`${url}/api/sessions/${sid}/calls?wait=0`, { method: "POST", token: s.agent_token, body: `{"name": "${KEY}"` }),
      await http(`${url}/api/sessions/${sid}`, { token: s.app_token, headers: { origin: "https://evil.example" } }),
      await http(wsUrl(url, sid).replace(/^ws/, "http"), { token: s.agent_token }),
    ];
    for (const r of answers) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect([r.status, leaked(r.text)]).toEqual([r.status, []]);
    }
    for (const o of [
      { token: forgedToken },
      { token: tampered, via: "query" as const },
      { token: tampered, via: "subprotocol" as const },
      { token: other.app_token },
    ]) {
      const w = await refused(wsUrl(url, sid), o);
      expect(w.status).toBe(401);
      expect(leaked(w.body)).toEqual([]);
    }
  });

  it("never echoes a token in an error frame, even when a frame carries one", async () => {
    const agent = await pool.agent(s, { clientId: "ag" });
    await agent.drain();
    const bad: unknown[] = [
      `{"type":"tool.call","call_id":"x","token":"${s.app_token}"`,
      { type: "tool.call", call_id: "c", name: s.app_token },
      // (A call_id is echoed back to its sender by design, in the error's call_id; tokens go elsewhere.)
      { type: "tool.result", call_id: "nope", result: { message: KEY }, token: s.app_token },
      { type: "tool.cancel", call_id: "x", reason: 5, secret: KEY },
      { type: "message", content: [{ type: "text", text: 5, note: s.app_token }] },
      { type: "status", state: KEY.repeat(4) },
    ];
    for (const f of bad) agent.send(f);
    const errors: Frame[] = [];
    for (let i = 0; i < bad.length; i++) errors.push(await agent.next("error"));
    for (const e of errors) expect([e.code, leaked(String(e.message))]).toEqual([e.code, []]);
  });

  it("writes no token and no key into any log line during a scripted session", async () => {
    const agent = await pool.agent(s, { clientId: "ag2", via: "header" });
    const app = await pool.app(s, { clientId: "phone", via: "subprotocol" });
    await pool.register(app, agent, [ECHO]);
    agent.send({ type: "status", state: "working" });
    agent.send({ type: "tool.call", call_id: "c1", name: "echo", arguments: { text: "hi" } });
    const call = await app.next((f) => f.type === "tool.call" && f.call_id === "c1");
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "ok" } });
    await agent.next((f) => f.type === "tool.result" && f.call_id === "c1");
    agent.send({ type: "tool.ack", call_id: "c1" });
    agent.send({ type: "message", content: [{ type: "text", text: "hello" }] });
    await app.next("message");
    const pending = http(`${url}/api/sessions/${s.session_id}/calls?wait=10`, {
      method: "POST",
      token: s.agent_token,
      body: JSON.stringify({ call_id: "h1", name: "echo", arguments: { text: "x" } }),
    });
    await app.next((f) => f.type === "tool.call" && f.call_id === "h1");
    app.send({ type: "tool.result", call_id: "h1", result: { message: "x" } });
    expect((await pending).status).toBe(200);
    agent.send("{bad json");
    await agent.next("error");
    agent.send({ type: "tool.call", call_id: "t1", name: "echo", arguments: { text: "x" }, timeout_s: 1 });
    await agent.next((f) => f.type === "tool.result" && f.call_id === "t1", 15_000);
    // A connection that presents its token in the query (the least private carrier) still logs nothing.
    const q = pool.track(await connect(wsUrl(url, s.session_id), { token: s.app_token, via: "query", clientId: "q" }));
    await q.next("hello");
    await http(`${url}/api/sessions/${s.session_id}`, { method: "DELETE", token: s.agent_token });
    await agent.waitClose();
    await sleep(1500);
    // The capture is real: wrangler's per-request lines (method, path, status) are in it.
    expect(log).toContain(`/api/sessions/${s.session_id}/ws`);
    const lines = log.split("\n").filter((l) => leaked(l).length > 0);
    expect(lines).toEqual([]);
  });
});
