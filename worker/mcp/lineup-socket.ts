// One LineUp v1 agent connection from the Worker into a session's object, for one-shot uses (a catalog snapshot,
// a last frame, a cancel signal): the shared client socket (shared/client/socket.ts) without reconnecting, its
// frames as parsed objects, the close as a promise, a `ping` every 30 s (answered by the runtime's auto-response,
// so it never wakes the object). The waiting links (call-link.ts, cancel.ts) reconnect through the same socket.
import { CLOSE } from "../../shared/contract/close.js";
import { isRelayFrame, ReconnectingSocket, type Dial } from "../../shared/client/socket.js";
import type { PeerState, RelayFrame, ToolDef } from "../../shared/contract/protocol.js";
import { LinkError, type SessionLink } from "./port.js";

/** The MCP links' timings: a hello within 10 s, a ping every 30 s. */
export const MCP_SOCKET = { helloTimeoutMs: 10_000, heartbeatMs: 30_000 } as const;
/** hello, the catalog, kept results and up to 200 replayed messages fit. */
const BACKLOG = 512;

export interface Closed {
  code: number;
  reason: string;
}

/** How the Worker dials a session's object as an internal caller. */
export const linkDial =
  (link: SessionLink, sid: string, clientId: string): Dial =>
  () =>
    link.connect(sid, clientId);

export class LineupSocket {
  readonly closed: Promise<Closed>;
  /** Apps connected, from hello and every presence frame. */
  apps = 0;
  /** The app side's catalog, from the tool.list after hello and every change. */
  appTools: ToolDef[] = [];
  private readonly listeners = new Set<(f: RelayFrame) => void>();
  /** Every frame so far (bounded), so a listener added late still sees what came right after hello. */
  private readonly backlog: RelayFrame[] = [];
  private isClosed = false;
  private readonly sock: ReconnectingSocket;
  /** Why the dial failed, when it did. */
  private failure: unknown;

  private constructor(link: SessionLink, sid: string, clientId: string) {
    let onClosed: (c: Closed) => void = () => {};
    this.closed = new Promise((r) => (onClosed = r));
    this.sock = new ReconnectingSocket({ dial: linkDial(link, sid, clientId), reconnect: false, ...MCP_SOCKET });
    this.sock.on("frame", (f) => {
      if (!isRelayFrame(f)) return;
      if (f.type === "hello") this.apps = peersApps(f.peers);
      else if (f.type === "presence") this.apps = f.apps;
      else if (f.type === "tool.list") this.appTools = f.tools;
      if (this.backlog.length < BACKLOG) this.backlog.push(f);
      for (const l of [...this.listeners]) l(f);
    });
    this.sock.on("terminal", (t) => {
      this.isClosed = true;
      this.failure = t.cause;
      onClosed({ code: t.code, reason: t.reason });
    });
    this.sock.start();
  }

  /** Connects and waits for `hello` (and the catalog right after it). */
  static async open(link: SessionLink, sid: string, clientId: string): Promise<LineupSocket> {
    const s = new LineupSocket(link, sid, clientId);
    // hello, then the other side's catalog, always come first on a new connection (contract §3).
    const catalog = await s.next((f) => f.type === "tool.list", MCP_SOCKET.helloTimeoutMs);
    if (!catalog) {
      s.close();
      if (s.failure instanceof LinkError) throw s.failure;
      const c = await Promise.race([s.closed, Promise.resolve(undefined)]);
      throw new LinkError("link_failed", `no hello from the session${c ? ` (closed ${c.code})` : ""}`);
    }
    return s;
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  /** Calls `cb` for every frame from now on (and, with `replay`, for every frame so far); returns the unsubscribe. */
  on(cb: (f: RelayFrame) => void, replay = false): () => void {
    let live = true;
    const l = (f: RelayFrame) => {
      if (live) cb(f);
    };
    this.listeners.add(l);
    if (replay) for (const f of [...this.backlog]) l(f);
    return () => {
      live = false;
      this.listeners.delete(l);
    };
  }

  /** The next frame matching `pred`, or undefined on close or after `timeoutMs`. */
  next(pred: (f: RelayFrame) => boolean, timeoutMs: number): Promise<RelayFrame | undefined> {
    return new Promise((resolve) => {
      const t = setTimeout(() => done(undefined), timeoutMs);
      const off = this.on((f) => {
        if (pred(f)) done(f);
      });
      void this.closed.then(() => done(undefined));
      function done(f: RelayFrame | undefined) {
        clearTimeout(t);
        off();
        resolve(f);
      }
    });
  }

  send(frame: object): boolean {
    return this.sock.send(frame);
  }

  close(code: number = CLOSE.normal, reason = "done"): void {
    void this.sock.stop(code, reason, 0);
  }
}

export function peersApps(p: PeerState | undefined): number {
  return typeof p?.apps === "number" ? p.apps : 0;
}
