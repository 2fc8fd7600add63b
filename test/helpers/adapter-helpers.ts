// Helpers for the adapter tests: a TCP proxy that can cut or black-hole the agent's connection, a
// scripted app client (raw `ws`, via test/helpers/raw-client.ts), temp state dirs, and the CLI runner.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SessionCreated, ToolDef } from "../../shared/contract/protocol.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { connect, wsUrl, type RawClient } from "./raw-client.js";

export const BIN = fileURLToPath(new URL("../../adapter/bin/lineup.mjs", import.meta.url));
export const REPO = fileURLToPath(new URL("../..", import.meta.url));

export function tempDir(prefix = "lineup-adapter-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export const CONFIRM: ToolDef = {
  name: "confirm",
  type: "action",
  description: "yes or no",
  inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

export async function newSession(relayUrl: string, key = DEV_RELAY_KEY): Promise<SessionCreated> {
  const res = await fetch(`${relayUrl}/api/sessions`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
  if (res.status !== 201) throw new Error(`create session: ${res.status} ${await res.text()}`);
  return (await res.json()) as SessionCreated;
}

/** A scripted human: an app client that registers `tools` and waits for its catalog to be stored. */
export async function appClient(relayUrl: string, sid: string, appToken: string, tools: ToolDef[] = [CONFIRM], clientId?: string): Promise<RawClient> {
  const app = await connect(wsUrl(relayUrl, sid), { token: appToken, via: "subprotocol", ...(clientId ? { clientId } : {}) });
  await app.next("hello");
  app.send({ type: "tool.list", tools });
  await app.sync();
  return app;
}

/** The saved session of a state dir (the CLI/library writes it before connecting). */
export function savedSessions(
  stateDir: string,
): { sessionId: string; agentToken: string; appToken?: string; relayUrl: string; cwd: string; clientId: string }[] {
  try {
    return (JSON.parse(readFileSync(join(stateDir, "sessions.json"), "utf8")) as { sessions: ReturnType<typeof savedSessions> }).sessions;
  } catch {
    return [];
  }
}

export async function waitFor<T>(fn: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP proxy in front of the relay: `cut()` kills every connection, `hold()` refuses new ones,
 * `blackhole()` keeps sockets open but drops everything the relay sends (a silent, half-dead link). */
export class Proxy {
  readonly server: Server;
  readonly sockets = new Set<Socket>();
  connections = 0;
  private refusing = false;
  private swallowing = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => {
      if (this.refusing) return void client.destroy();
      this.connections++;
      const upstream = createConnection(this.target);
      this.sockets.add(client).add(upstream);
      upstream.on("data", (d) => {
        if (!this.swallowing) client.write(d);
      });
      client.on("data", (d) => upstream.write(d));
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("close", end).on("error", end);
      upstream.on("close", end).on("error", end);
    });
  }

  static async start(targetUrl: string): Promise<Proxy> {
    const u = new URL(targetUrl);
    const p = new Proxy({ host: u.hostname, port: Number(u.port) });
    await new Promise<void>((r) => p.server.listen(0, "127.0.0.1", r));
    const a = p.server.address();
    p.port = typeof a === "object" && a ? a.port : 0;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }
  hold(): void {
    this.refusing = true;
  }
  release(): void {
    this.refusing = false;
    this.swallowing = false;
  }
  blackhole(): void {
    this.swallowing = true;
  }
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns the real `lineup` bin with Node (as `npx lineup` does) and collects its output. */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  stdin: "ignore" | "pipe" = "ignore",
): ChildProcess & { output: () => CliRun; done: Promise<CliRun> } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: [stdin, "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const output = () => ({ code: child.exitCode, stdout, stderr });
  const done = new Promise<CliRun>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return Object.assign(child, { output, done });
}

export async function runCli(args: string[], env: Record<string, string>, cwd: string, timeoutMs = 45_000): Promise<CliRun> {
  const c = spawnCli(args, env, cwd);
  const t = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
  const r = await c.done;
  clearTimeout(t);
  return r;
}
