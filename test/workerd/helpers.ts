// Test helpers for workerd tests: a raw WebSocket client that queues frames, and session creation.
import { env, exports } from "cloudflare:workers";
import type { RelayFrame, Role, SessionCreated } from "../../shared/contract/protocol.js";
import { signToken } from "../../shared/edge/tokens.js";
import { tokenSecret } from "../../worker/host.js";

export const BASE = "http://relay.test";
export const RELAY_KEY = "test-relay-key-0123456789abcdef-0123";

export function fetchWorker(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(BASE + path, init));
}

export async function createSession(body: Record<string, unknown> = {}): Promise<SessionCreated> {
  const res = await fetchWorker("/api/sessions", {
    method: "POST",
    headers: { authorization: `Bearer ${RELAY_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`create session: ${res.status} ${await res.text()}`);
  return (await res.json()) as SessionCreated;
}

/** The epoch a session's tokens carry (its incarnation's creation time). */
export const epochOf = (s: Pick<SessionCreated, "agent_token">) => parseInt(s.agent_token.split(".")[4]!, 36);

/** A token signed with the relay's real secret, as the relay would sign it (expired ones, other roles…). */
export async function signAs(sessionId: string, role: Role, expiresAt: number, epoch = Date.now()): Promise<string> {
  return signToken(await tokenSecret(env), sessionId, role, expiresAt, epoch);
}

export function stubOf(sessionId: string) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
}

export type Frame = RelayFrame & Record<string, unknown>;

export class Client {
  readonly frames: Frame[] = [];
  private cursor = 0;
  private waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | undefined;
  hello: Frame | undefined;
  constructor(readonly ws: WebSocket) {
    ws.addEventListener("message", (e) => {
      const data = typeof e.data === "string" ? e.data : "<binary>";
      this.frames.push(data === "pong" ? ({ type: "pong" } as unknown as Frame) : (JSON.parse(data) as Frame));
      this.wake();
    });
    ws.addEventListener("close", (e) => {
      this.closed = { code: e.code, reason: e.reason };
      this.wake();
    });
  }
  private wake() {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }
  send(frame: unknown) {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }
  /** The next unread frame matching `pred` (frames before it stay unread). */
  async next(pred: string | ((f: Frame) => boolean), timeoutMs = 5000): Promise<Frame> {
    const match = typeof pred === "string" ? (f: Frame) => f.type === pred : pred;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = this.cursor; i < this.frames.length; i++) {
        const f = this.frames[i]!;
        if (match(f)) {
          this.frames.splice(i, 1);
          return f;
        }
      }
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting; got ${JSON.stringify(this.frames.map((f) => f.type))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting; unread: ${JSON.stringify(this.frames).slice(0, 600)}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }
  /** Resolves true if no frame matching `pred` arrives within `ms`. */
  async none(pred: string | ((f: Frame) => boolean), ms = 300): Promise<boolean> {
    try {
      await this.next(pred, ms);
      return false;
    } catch {
      return true;
    }
  }
  async closedWith(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error("socket did not close");
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.closed;
  }
  close() {
    try {
      this.ws.close(1000, "done");
    } catch {
      /* closed */
    }
  }
}

export interface ConnectOpts {
  clientId?: string;
  via?: "header" | "subprotocol" | "query";
  origin?: string;
  /** `?register=first`: counted as a provider only once it registers (docs/protocol.md). */
  registerFirst?: boolean;
}

export async function connectRaw(sessionId: string, token: string, opts: ConnectOpts = {}): Promise<Response> {
  const q = new URLSearchParams();
  if (opts.clientId) q.set("client_id", opts.clientId);
  if (opts.registerFirst) q.set("register", "first");
  const headers: Record<string, string> = { upgrade: "websocket" };
  const via = opts.via ?? "header";
  if (via === "header") headers.authorization = `Bearer ${token}`;
  if (via === "query") q.set("token", token);
  if (via === "subprotocol") headers["sec-websocket-protocol"] = `lineup.v1, lineup.token.${token}`;
  if (opts.origin) headers.origin = opts.origin;
  const qs = q.toString();
  return fetchWorker(`/api/sessions/${sessionId}/ws${qs ? "?" + qs : ""}`, { headers });
}

export async function connect(sessionId: string, token: string, opts: ConnectOpts = {}): Promise<Client> {
  const res = await connectRaw(sessionId, token, opts);
  if (res.status !== 101 || !res.webSocket) throw new Error(`connect: ${res.status} ${await res.text()}`);
  res.webSocket.accept();
  const c = new Client(res.webSocket);
  c.hello = await c.next("hello");
  return c;
}
