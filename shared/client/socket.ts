// The one reconnecting LineUp socket of every client (issue 27 §1): the adapter (`ws` in Node), the PWA (the
// browser's WebSocket) and the Worker's MCP links (workerd's fetch-upgraded WebSocket) each inject how to dial,
// and get the same loop: backoff (shared/client/backoff.ts), an app-level heartbeat (`ping`, answered `pong` by
// the relay's runtime without waking the object), a hello timeout, and the terminal close codes of the one
// CLOSE table (4000–4999: never reconnect). Frames come out parsed as JSON objects, `hello` included; what
// they mean is the codec's and the call book's business. Timers are the host's globals (vi fake timers in tests).
import { CLOSE, isTerminalClose, terminalCodeName } from "../contract/close.js";
import type { RelayFrame } from "../contract/protocol.js";
import { Backoff, type BackoffOptions } from "./backoff.js";

/** An event as the three runtimes deliver it: a DOM `Event`, a `ws` event and workerd's all have `type`. */
export interface SocketEvent {
  type: string;
  data?: unknown;
  code?: number;
  reason?: string;
  message?: string;
}

/** What the socket needs of a WebSocket: the browser's, `ws`'s and workerd's all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "message" | "close" | "error", listener: (ev: SocketEvent) => void): void;
}

/** A WebSocket constructor (`ws`'s or the browser's). */
export type WebSocketCtor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/** Opens one transport: a constructor call, or an async upgrade (workerd) that resolves with an open socket. */
export type Dial = () => WebSocketLike | Promise<WebSocketLike>;

/** A dial from a constructor, a URL and subprotocols (the token travels as one, never in the URL). */
export const dialWith =
  (Ctor: WebSocketCtor, url: string, protocols: string[]): Dial =>
  () =>
    new Ctor(url, protocols);

/** A JSON frame from the relay, not yet checked (the codec reads it). */
export type RawFrame = Record<string, unknown> & { type?: unknown };

type Json = Record<string, unknown>;
const obj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string";
/**
 * A JSON frame as one of the relay's frame types (contract §4). The relay's frames have no zod schema on the
 * client side (the app would pay for it in its initial bundle): each type is checked for the fields every
 * client reads, and a frame missing them is not handed on.
 */
export function isRelayFrame(f: Json): f is Json & RelayFrame {
  switch (f.type) {
    case "hello":
      return obj(f.peers);
    case "presence":
      return obj(f.agent) && typeof f.apps === "number";
    case "tool.list":
      return Array.isArray(f.tools);
    case "tool.call":
      return str(f.call_id) && str(f.name);
    case "tool.cancel":
    case "tool.result":
      return str(f.call_id);
    case "error":
      return str(f.code);
    case "message":
      return str(f.id) && obj(f.from);
    default:
      return false;
  }
}

export interface Closed {
  code: number;
  reason: string;
  /** The connection got its `hello` before it closed. */
  helloed: boolean;
  /** Why the transport failed (an error event, a refused upgrade, a network error). */
  error?: string;
  /** The dial's own rejection (e.g. the MCP link's LinkError), for `terminalOf`. */
  cause?: unknown;
}
export interface Dropped extends Closed {
  /** The delay before the next attempt. */
  delayMs: number;
}
export interface Terminal extends Closed {
  /** Why the socket stopped for good: `session_ended`, `replaced`, `revoked`, `closed_<code>`, a host's name, or `stopped`. */
  name: string;
}

export interface SocketEvents {
  /** The transport opened (the relay's `hello` comes next). */
  open: undefined;
  /** Every JSON object frame, `hello` first on each connection. */
  frame: RawFrame;
  /** A connection ended and another follows after `delayMs`. */
  close: Dropped;
  /** The socket stopped for good (terminal close code, a host's terminal verdict, or stop()). */
  terminal: Terminal;
}

export interface SocketOptions {
  dial: Dial;
  backoff?: BackoffOptions;
  /** `ping` this often once open; 0 (default) sends none. */
  heartbeatMs?: number;
  /** No frame at all for this long means the socket is dead: it is dropped (default: never). */
  deadMs?: number;
  /** No `hello` this long after dialling: the connection is dropped and retried (default 10 s; 0: no limit). */
  helloTimeoutMs?: number;
  /** The host's own terminal verdicts beyond the close codes (an upgrade refused with 401, a session gone): a name, or undefined to retry. */
  terminalOf?: (c: Closed) => string | undefined;
  /** false: one connection only — any close is terminal (named `closed_<code>` unless terminal already). */
  reconnect?: boolean;
  /** true: the transport's open counts as its `hello` (the PWA's inbox socket: its protocol has no hello frame). */
  helloOnOpen?: boolean;
}

export const SOCKET_DEFAULTS = { helloTimeoutMs: 10_000 } as const;

const OPEN = 1;
type Listener<E extends keyof SocketEvents> = (v: SocketEvents[E]) => void;

export class ReconnectingSocket {
  private ws: WebSocketLike | undefined;
  private readonly backoff: Backoff;
  private helloed = false;
  private helloAt = 0;
  private lastSeen = 0;
  private stopped = false;
  private started = false;
  /** A connection is being dialled or is up (not waiting for a retry). */
  private live = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private helloTimer: ReturnType<typeof setTimeout> | undefined;
  private beatTimer: ReturnType<typeof setInterval> | undefined;
  /** Bumped per connection: events of an older transport are ignored. */
  private gen = 0;
  private readonly listeners: { [E in keyof SocketEvents]: Set<Listener<E>> } = { open: new Set(), frame: new Set(), close: new Set(), terminal: new Set() };

  constructor(private readonly o: SocketOptions) {
    this.backoff = new Backoff(o.backoff);
  }

  on<E extends keyof SocketEvents>(event: E, cb: Listener<E>): () => void {
    const set = this.listeners[event] as Set<Listener<E>>;
    set.add(cb);
    return () => set.delete(cb);
  }

  /** Open and past `hello`: frames may be sent. */
  get connected(): boolean {
    return this.helloed && this.ws?.readyState === OPEN;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Reconnect attempts since the last connection that stayed up (0 on the first connection). */
  get attempts(): number {
    return this.backoff.attempts;
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.connect();
  }

  /** Sends a frame (an object as JSON, a string as it is) on a connection past `hello`; false when there is none. */
  send(frame: object | string): boolean {
    const ws = this.ws;
    if (!ws || !this.helloed || ws.readyState !== OPEN) return false;
    try {
      ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
      return true;
    } catch {
      return false;
    }
  }

  /** Treats the connection as dead now (no pong, the browser went offline): reported as 1006, retried with backoff. */
  drop(reason = "dropped"): void {
    if (!this.live) return;
    const ws = this.ws;
    this.closed(this.gen, { code: CLOSE.abnormal, reason, helloed: this.helloed });
    if (ws) quietClose(ws);
  }

  /** Connects now if a retry is waiting (the network came back, the page became visible). */
  poke(): void {
    if (this.stopped || !this.started || this.live) return;
    stopTimer(this.retryTimer);
    this.connect();
  }

  /** A fresh connection now (the relay reads some things only when a socket connects). */
  renew(): void {
    if (this.stopped || !this.started) return;
    const ws = this.ws;
    this.detach();
    if (ws) quietClose(ws, CLOSE.normal, "renew");
    stopTimer(this.retryTimer);
    this.connect();
  }

  /** Stops for good; resolves once the transport reported its close, or after `waitMs` (then it is abandoned). */
  stop(code: number = CLOSE.normal, reason = "bye", waitMs = 1000): Promise<void> {
    const ws = this.ws;
    const wasHelloed = this.helloed;
    if (this.stopped) return Promise.resolve();
    this.detach();
    this.stopped = true;
    stopTimer(this.retryTimer);
    this.emit("terminal", { code, reason, helloed: wasHelloed, name: "stopped" });
    if (!ws) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, waitMs);
      ws.addEventListener("close", () => {
        stopTimer(t);
        resolve();
      });
      quietClose(ws, code, reason);
    });
  }

  private connect(): void {
    if (this.stopped) return;
    const gen = ++this.gen;
    this.live = true;
    this.helloed = false;
    this.lastSeen = Date.now();
    const helloMs = this.o.helloTimeoutMs ?? SOCKET_DEFAULTS.helloTimeoutMs;
    if (helloMs > 0) this.helloTimer = setTimeout(() => this.gen === gen && this.drop(`no hello within ${helloMs} ms`), helloMs);
    let dialled: WebSocketLike | Promise<WebSocketLike>;
    try {
      dialled = this.o.dial();
    } catch (e) {
      return this.closed(gen, { code: CLOSE.abnormal, reason: "", helloed: false, error: errorText(e), cause: e });
    }
    if ("then" in dialled) {
      dialled.then(
        (ws) => (this.gen === gen && !this.stopped ? this.attach(gen, ws) : quietClose(ws)),
        (e: unknown) => this.closed(gen, { code: CLOSE.abnormal, reason: "", helloed: false, error: errorText(e), cause: e }),
      );
    } else this.attach(gen, dialled);
  }

  private attach(gen: number, ws: WebSocketLike): void {
    this.ws = ws;
    let error: string | undefined;
    ws.addEventListener("open", () => this.gen === gen && this.opened());
    ws.addEventListener("error", (ev) => {
      error = ev.message ?? "socket error";
    });
    ws.addEventListener("close", (ev) =>
      this.closed(gen, { code: ev.code ?? CLOSE.abnormal, reason: ev.reason ?? "", helloed: this.helloed, ...(error ? { error } : {}) }),
    );
    ws.addEventListener("message", (ev) => {
      if (this.gen !== gen) return;
      this.lastSeen = Date.now();
      if (typeof ev.data !== "string" || ev.data === "pong") return;
      let f: unknown;
      try {
        f = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (typeof f !== "object" || f === null || Array.isArray(f)) return;
      const frame = f as RawFrame;
      if (frame.type === "hello" && !this.helloed) {
        this.helloed = true;
        this.helloAt = Date.now();
        stopTimer(this.helloTimer);
      }
      this.emit("frame", frame);
    });
    // A fetch-upgraded socket (workerd) is open already: no `open` event follows.
    if (ws.readyState === OPEN) this.opened();
  }

  private opened(): void {
    this.lastSeen = Date.now();
    if (this.o.helloOnOpen && !this.helloed) {
      this.helloed = true;
      this.helloAt = Date.now();
      stopTimer(this.helloTimer);
    }
    const every = this.o.heartbeatMs ?? 0;
    if (every > 0) {
      stopTimer(this.beatTimer);
      this.beatTimer = setInterval(() => {
        const dead = this.o.deadMs;
        if (dead !== undefined && Date.now() - this.lastSeen > dead) return this.drop(`no answer for ${Math.round((Date.now() - this.lastSeen) / 1000)} s`);
        if (this.ws?.readyState === OPEN) this.ws.send("ping");
      }, every);
    }
    this.emit("open", undefined);
  }

  /** Stops listening to the current transport (its close, if it comes, is ignored). */
  private detach(): void {
    this.gen++;
    this.live = false;
    this.ws = undefined;
    this.helloed = false;
    stopTimer(this.helloTimer);
    stopTimer(this.beatTimer);
  }

  private closed(gen: number, c: Closed): void {
    if (gen !== this.gen || this.stopped) return;
    const uptime = Date.now() - this.helloAt;
    this.detach();
    // Only a connection that got its hello can reset the counter (after `minUptimeMs` of it).
    if (c.helloed) this.backoff.closed(uptime);
    const named = isTerminalClose(c.code) ? terminalCodeName(c.code) : this.o.terminalOf?.(c);
    const name = named ?? (this.o.reconnect === false ? terminalCodeName(c.code) : undefined);
    if (name !== undefined) {
      this.stopped = true;
      return this.emit("terminal", { ...c, name });
    }
    const delayMs = this.backoff.next();
    this.retryTimer = setTimeout(() => this.connect(), delayMs);
    this.emit("close", { ...c, delayMs });
  }

  private emit<E extends keyof SocketEvents>(event: E, v: SocketEvents[E]): void {
    for (const cb of [...(this.listeners[event] as Set<Listener<E>>)]) cb(v);
  }
}

function quietClose(ws: WebSocketLike, code?: number, reason?: string): void {
  try {
    if (code === undefined) ws.close();
    else ws.close(code, reason);
  } catch {
    /* already closed */
  }
}

type Timer = ReturnType<typeof setTimeout> | ReturnType<typeof setInterval>;
function stopTimer(t: Timer | undefined): void {
  if (t !== undefined) {
    clearTimeout(t);
    clearInterval(t);
  }
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
