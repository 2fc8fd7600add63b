// Helpers for the MCP bridge tests: the real MCP SDK client spawning `lineup mcp` over stdio, and a scripted
// app (raw `ws`, no adapter code) that registers the built-in tools and answers calls.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import WebSocket from "ws";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated, ToolDef } from "../../shared/contract/protocol.js";

export const ROOT = join(import.meta.dirname, "..", "..");

export async function createSession(relayUrl: string): Promise<SessionCreated> {
  const res = await fetch(`${relayUrl}/api/sessions`, { method: "POST", headers: { authorization: `Bearer ${DEV_RELAY_KEY}` } });
  if (res.status !== 201) throw new Error(`session not created: ${res.status}`);
  return (await res.json()) as SessionCreated;
}

export const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

export interface Mcp {
  client: Client;
  stderr: () => string;
  /** Resolves when stderr contains `re`; returns the match. */
  waitStderr(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  notifications: string[];
  errors: Error[];
  close(): Promise<void>;
}

/** How a host starts the server: `lineup mcp` through the package's bin (absolute, so any cwd works). */
export const MCP_ENTRY = [join(ROOT, "adapter/bin/lineup.mjs"), "mcp"];

/** Spawns `lineup mcp` through the CLI, as an MCP host does, and connects the SDK client to it. */
export async function startMcp(env: Record<string, string>, opts: { cwd?: string; args?: string[] } = {}): Promise<Mcp> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...MCP_ENTRY, ...(opts.args ?? [])],
    cwd: opts.cwd ?? ROOT,
    env: { LINEUP_MCP_QR: "0", ...env },
    stderr: "pipe",
  });
  let err = "";
  const watchers: (() => void)[] = [];
  transport.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
    for (const w of watchers.splice(0)) w();
  });
  const client = new Client({ name: "mcp-test", version: "0.0.0" });
  const notifications: string[] = [];
  const errors: Error[] = [];
  client.fallbackNotificationHandler = async (n) => {
    notifications.push(n.method);
  };
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  const waitStderr = (re: RegExp, timeoutMs = 20_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`stderr never matched ${re}:\n${err}`)), timeoutMs);
      const check = () => {
        const m = err.match(re);
        if (m) {
          clearTimeout(t);
          resolve(m);
        } else watchers.push(check);
      };
      check();
    });
  return { client, stderr: () => err, waitStderr, notifications, errors, close: () => client.close() };
}

export type Frame = Record<string, unknown> & { type: string };

/** A scripted human-side client: raw frames over `ws`, registering the built-in tools by default. */
export class App {
  readonly frames: Frame[] = [];
  private waiters: (() => void)[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (d: WebSocket.RawData) => {
      const s = d.toString();
      if (s === "pong") return;
      this.frames.push(JSON.parse(s) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async connect(relayUrl: string, sid: string, appToken: string, tools: ToolDef[] | null = BUILTIN_TOOLS): Promise<App> {
    const ws = new WebSocket(`${relayUrl.replace(/^http/, "ws")}/api/sessions/${sid}/ws`, { headers: { authorization: `Bearer ${appToken}` } });
    const app = new App(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    await app.next((f) => f.type === "hello");
    await app.next((f) => f.type === "tool.list"); // the agent side's catalog, always sent after hello
    if (tools) {
      // Register, then ask for the agent's catalog: the object handles one socket's frames in order, so the
      // answer means the registration is in (a call arriving before it would get unknown_tool, §4.2).
      app.send({ type: "tool.list", tools });
      app.send({ type: "tool.list" });
      await app.next((f) => f.type === "tool.list");
    }
    return app;
  }

  send(f: Frame) {
    this.ws.send(JSON.stringify(f));
  }

  /** The first unconsumed frame matching `pred` (waits for it); consumes it. */
  next(pred: (f: Frame) => boolean, timeoutMs = 20_000): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no matching frame; got ${JSON.stringify(this.frames.map((f) => f.type))}`)), timeoutMs);
      const check = () => {
        const i = this.frames.findIndex(pred);
        if (i >= 0) {
          clearTimeout(t);
          resolve(this.frames.splice(i, 1)[0]!);
        } else this.waiters.push(check);
      };
      check();
    });
  }

  call(name: string) {
    return this.next((f) => f.type === "tool.call" && f.name === name);
  }

  answer(call: Frame, body: { result: Record<string, unknown> } | { error: { code: string; message: string } }) {
    this.send({ type: "tool.result", call_id: call.call_id as string, ...body });
  }

  close() {
    this.ws.close();
  }
}

/** The text of the first content block of a tools/call result. */
export function firstText(r: unknown): string {
  const c = ((r as { content?: unknown }).content as { type: string; text?: string }[] | undefined) ?? [];
  return c[0]?.type === "text" ? (c[0].text ?? "") : "";
}

/** A tiny valid PNG (1×1), base64. */
export const PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
