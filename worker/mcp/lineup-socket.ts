// One LineUp v1 agent connection from the Worker into a session's object: frames as parsed objects, the close
// as a promise, a `ping` every 30 s (answered by the runtime's auto-response, so it never wakes the object).
import type { PeerState, RelayFrame, ToolDef } from "../../shared/contract/protocol.js";
import { CLOSE } from "../../shared/contract/close.js";
import { LinkError, type SessionLink } from "./port.js";

const HELLO_TIMEOUT_MS = 10_000;
const PING_MS = 30_000;
/** hello, the catalog, kept results and up to 200 replayed messages fit. */
const BACKLOG = 512;

export interface Closed {
  code: number;
  reason: string;
}

export class LineupSocket {
  readonly closed: Promise<Closed>;
  /** Apps connected, from hello and every presence frame. */
  apps = 0;
  /** The app side's catalog, from the tool.list after hello and every change. */
  appTools: ToolDef[] = [];
  private readonly listeners = new Set<(f: RelayFrame) => void>();
  /** Every frame so far (bounded), so a listener added late still sees what came right after hello. */
  private readonly backlog: RelayFrame[] = [];
  private readonly ping: ReturnType<typeof setInterval>;
  private isClosed = false;

  private constructor(private readonly ws: WebSocket) {
    let onClosed: (c: Closed) => void = () => {};
    this.closed = new Promise((r) => (onClosed = r));
    ws.addEventListener("message", (e) => {
      if (typeof e.data !== "string" || e.data === "pong") return;
      let f: RelayFrame;
      try {
        f = JSON.parse(e.data) as RelayFrame;
      } catch {
        return;
      }
      if (f.type === "hello") this.apps = peersApps(f.peers);
      else if (f.type === "presence") this.apps = f.apps;
      else if (f.type === "tool.list") this.appTools = f.tools;
      if (this.backlog.length < BACKLOG) this.backlog.push(f);
      for (const l of [...this.listeners]) l(f);
    });
    const end = (code: number, reason: string) => {
      if (this.isClosed) return;
      this.isClosed = true;
      clearInterval(this.ping);
      onClosed({ code, reason });
    };
    ws.addEventListener("close", (e) => end(e.code, e.reason));
    ws.addEventListener("error", () => end(CLOSE.abnormal, "socket error"));
    this.ping = setInterval(() => this.sendRaw("ping"), PING_MS);
  }

  /** Connects and waits for `hello` (and the catalog right after it). */
  static async open(link: SessionLink, sid: string, clientId: string): Promise<LineupSocket> {
    const s = new LineupSocket(await link.connect(sid, clientId));
    // hello, then the other side's catalog, always come first on a new connection (contract §3).
    const catalog = await s.next((f) => f.type === "tool.list", HELLO_TIMEOUT_MS);
    if (!catalog) {
      s.close();
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
    return this.sendRaw(JSON.stringify(frame));
  }

  private sendRaw(data: string): boolean {
    if (this.isClosed) return false;
    try {
      this.ws.send(data);
      return true;
    } catch {
      return false;
    }
  }

  close(code: number = CLOSE.normal, reason = "done"): void {
    clearInterval(this.ping);
    try {
      this.ws.close(code, reason);
    } catch {
      /* already closed */
    }
  }
}

function peersApps(p: PeerState | undefined): number {
  return typeof p?.apps === "number" ? p.apps : 0;
}
