// A raw client for tests that check the wire contract from outside, as the hidden tests do: the `ws`
// package over a real socket plus fetch. It knows nothing of the adapter: frames in, frames out.
import WebSocket from "ws";
import type { RelayFrame, SessionCreated, ToolDef } from "../../shared/contract/protocol.js";

export type Frame = RelayFrame & Record<string, unknown>;
/** A received frame: parsed JSON, `{type:"pong"}` for the heartbeat, `{type:"<non-json>", raw}` otherwise. */
export type Pred = string | ((f: Frame) => boolean);

export interface CloseInfo {
  code: number;
  reason: string;
}

export type TokenVia = "header" | "subprotocol" | "query";

export interface ConnectOpts {
  token?: string;
  via?: TokenVia;
  clientId?: string;
  origin?: string;
  /** Extra subprotocols offered (e.g. `lineup.v1` with a header token). */
  protocols?: string[];
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** The URL of a session's socket endpoint, `ws://…/api/sessions/<sid>/ws`, with optional query. */
export function wsUrl(base: string, sid: string, query: Record<string, string> = {}): string {
  const u = new URL(`${base.replace(/^http/, "ws")}/api/sessions/${encodeURIComponent(sid)}/ws`);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u.toString();
}

function plan(url: string, o: ConnectOpts): { url: string; protocols: string[]; headers: Record<string, string> } {
  const u = new URL(url);
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  const protocols = [...(o.protocols ?? [])];
  if (o.clientId !== undefined) u.searchParams.set("client_id", o.clientId);
  if (o.origin !== undefined) headers.origin = o.origin;
  if (o.token !== undefined) {
    const via = o.via ?? "header";
    if (via === "header") headers.authorization = `Bearer ${o.token}`;
    else if (via === "query") u.searchParams.set("token", o.token);
    else {
      if (!protocols.includes("lineup.v1")) protocols.unshift("lineup.v1");
      protocols.push(`lineup.token.${o.token}`);
    }
  }
  return { url: u.toString(), protocols, headers };
}

export class RawClient {
  /** Unread frames, oldest first. */
  readonly frames: Frame[] = [];
  /** Every text frame ever received, raw, in order. */
  readonly log: string[] = [];
  closed: CloseInfo | undefined;
  private waiters: (() => void)[] = [];
  readonly closedP: Promise<CloseInfo>;

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data: WebSocket.RawData, isBinary: boolean) => {
      const text = isBinary ? "<binary>" : data.toString("utf8");
      this.log.push(text);
      let f: Frame;
      if (text === "pong") f = { type: "pong" } as unknown as Frame;
      else {
        try {
          f = JSON.parse(text) as Frame;
        } catch {
          f = { type: "<non-json>", raw: text } as unknown as Frame;
        }
      }
      this.frames.push(f);
      this.wake();
    });
    this.closedP = new Promise((resolve) => {
      ws.on("close", (code: number, reason: Buffer) => {
        this.closed = { code, reason: reason.toString("utf8") };
        this.wake();
        resolve(this.closed);
      });
    });
    ws.on("error", () => {
      /* surfaced as a close */
    });
  }

  /** The subprotocol the server answered with ("" for none). */
  get protocol(): string {
    return this.ws.protocol;
  }

  private wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }
  sendBinary(data: Uint8Array): void {
    this.ws.send(data, { binary: true });
  }

  /** Removes and returns the oldest unread frame matching `pred` (others stay unread), waiting up to `timeoutMs`. */
  async next(pred: Pred, timeoutMs = 10_000): Promise<Frame> {
    const match = typeof pred === "string" ? (f: Frame) => f.type === pred : pred;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.frames.findIndex(match);
      if (i >= 0) return this.frames.splice(i, 1)[0]!;
      if (this.closed) throw new Error(`socket closed (${this.closed.code} ${this.closed.reason}) while waiting; unread: ${this.unread()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for a frame; unread: ${this.unread()}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** True if no frame matching `pred` is unread or arrives within `ms` (a negative check, not a timing one). */
  async none(pred: Pred = () => true, ms = 400): Promise<boolean> {
    try {
      await this.next(pred, ms);
      return false;
    } catch (e) {
      if (this.closed && !(e as Error).message.startsWith("timed out")) return true;
      return true;
    }
  }

  /** Sends `ping` and waits for `pong`: after it, every frame the relay sent before is in the queue. */
  async sync(timeoutMs = 10_000): Promise<void> {
    this.send("ping");
    await this.next("pong", timeoutMs);
  }

  /** Syncs, then forgets every unread frame (so the next read is about what comes after). */
  async drain(): Promise<void> {
    await this.sync();
    this.frames.length = 0;
  }

  /** Waits for the close (the server's or ours). */
  async waitClose(timeoutMs = 10_000): Promise<CloseInfo> {
    return Promise.race([
      this.closedP,
      new Promise<CloseInfo>((_, rej) => setTimeout(() => rej(new Error(`no close within ${timeoutMs} ms; unread: ${this.unread()}`)), timeoutMs)),
    ]);
  }

  close(code = 1000): Promise<CloseInfo> {
    if (!this.closed) this.ws.close(code);
    return this.waitClose().catch(() => {
      this.ws.terminate();
      return { code: 1006, reason: "terminated" };
    });
  }

  unread(): string {
    return JSON.stringify(this.frames.map((f) => ({ ...f, ...(typeof f.content === "object" ? { content: "…" } : {}) }))).slice(0, 800);
  }
}

export interface Refused {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** Opens a socket; resolves the client once open (first frames are queued), or a `Refused` answer. */
export function tryConnect(url: string, o: ConnectOpts = {}): Promise<RawClient | Refused> {
  const p = plan(url, o);
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(p.url, p.protocols, { headers: p.headers, handshakeTimeout: o.timeoutMs ?? 10_000 });
    // Attach the queue before `open`: the relay's hello may arrive in the same packet as the 101.
    const client = new RawClient(ws);
    ws.once("open", () => resolve(client));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on("error", reject);
    });
    ws.once("error", (e) => {
      if (ws.readyState !== WebSocket.OPEN) reject(e);
    });
  });
}

/** Opens a socket that must succeed. */
export async function connect(url: string, o: ConnectOpts = {}): Promise<RawClient> {
  const r = await tryConnect(url, o);
  if (!(r instanceof RawClient)) throw new Error(`upgrade refused: ${r.status} ${r.body}`);
  return r;
}

/** Opens a socket that must be refused before the upgrade. */
export async function refused(url: string, o: ConnectOpts = {}): Promise<Refused> {
  const r = await tryConnect(url, o);
  if (r instanceof RawClient) {
    await r.close();
    throw new Error("expected the upgrade to be refused, but it succeeded");
  }
  return r;
}

// ---------------------------------------------------------------- HTTP

export interface HttpAnswer {
  status: number;
  text: string;
  json: unknown;
  headers: Headers;
}

export async function http(url: string, init: RequestInit & { token?: string } = {}): Promise<HttpAnswer> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`);
  if (typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  const res = await fetch(url, { ...init, headers });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, text, json, headers: res.headers };
}

export async function createSession(base: string, key: string, body?: Record<string, unknown>): Promise<SessionCreated> {
  const r = await http(`${base}/api/sessions`, { method: "POST", token: key, ...(body ? { body: JSON.stringify(body) } : {}) });
  if (r.status !== 201) throw new Error(`create session: ${r.status} ${r.text}`);
  return r.json as SessionCreated;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- fixtures for contract suites

export const ECHO: ToolDef = {
  name: "echo",
  type: "action",
  description: "echoes text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
};
export const MATH: ToolDef = {
  name: "math",
  type: "toolset",
  description: "arithmetic",
  actions: [
    { name: "add", description: "a+b", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
  ],
};
export const CANVAS: ToolDef = {
  name: "canvas",
  type: "app",
  description: "a canvas with instances",
  actions: [
    { name: "open", description: "open", inputSchema: { type: "object" } },
    { name: "update", description: "update", inputSchema: { type: "object", properties: { instance_id: { type: "string" } }, required: ["instance_id"] } },
    { name: "close", description: "close", inputSchema: { type: "object", properties: { instance_id: { type: "string" } }, required: ["instance_id"] } },
  ],
};

/** Opens clients for one test and closes them all afterwards (call `closeAll` in afterEach). */
export class Pool {
  private clients: RawClient[] = [];
  constructor(private readonly base: () => string) {}
  async session(key: string, body?: Record<string, unknown>): Promise<SessionCreated> {
    return createSession(this.base(), key, body);
  }
  /** Connects and reads `hello` (returned) — the contract says it is always the first frame. */
  async join(s: SessionCreated, role: "agent" | "app", o: ConnectOpts = {}): Promise<{ c: RawClient; hello: Frame }> {
    const c = await connect(wsUrl(this.base(), s.session_id), { token: role === "agent" ? s.agent_token : s.app_token, ...o });
    this.clients.push(c);
    const hello = await c.next(() => true);
    if (hello.type !== "hello") throw new Error(`first frame was ${JSON.stringify(hello)}, not hello`);
    return { c, hello };
  }
  async agent(s: SessionCreated, o: ConnectOpts = {}): Promise<RawClient> {
    return (await this.join(s, "agent", o)).c;
  }
  async app(s: SessionCreated, o: ConnectOpts = {}): Promise<RawClient> {
    return (await this.join(s, "app", o)).c;
  }
  track(c: RawClient): RawClient {
    this.clients.push(c);
    return c;
  }
  /** Registers `tools` from `provider` and waits until `caller` sees them in its catalog. */
  async register(provider: RawClient, caller: RawClient, tools: ToolDef[]): Promise<void> {
    provider.send({ type: "tool.list", tools });
    const names = tools.map((t) => t.name);
    await caller.next((f) => f.type === "tool.list" && names.every((n) => (f.tools as ToolDef[]).some((t) => t.name === n)));
    await provider.sync();
  }
  async closeAll(): Promise<void> {
    const cs = this.clients;
    this.clients = [];
    await Promise.all(cs.map((c) => c.close()));
  }
}
