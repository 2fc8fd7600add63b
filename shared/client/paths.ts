// Issue 32 (docs/direct.md): the transport seam under the call book. A session has the relay path (the
// reconnecting socket through the codec: always there, the truth for sessions, push and history) and at most
// one direct path (a WebRTC data channel to the one peer on the same LAN). PURE — no sockets, no timers:
//  - out: calls, results and cancels go on EVERY open path; everything else (acks, lists, messages, status)
//    on the relay only. The relay copy goes through the call book's queue, so the relay is always told.
//  - in: a frame from the relay always reaches the call book (which already drops repeated calls and results,
//    and relies on the relay's re-deliveries after a reconnect); a frame from the direct path reaches it only
//    the first time its (type, call_id) is seen on any path. First answer wins, exactly once.
// Direct frames are the peer's own client frames (DTLS authenticates the channel end to end, its fingerprints
// having travelled sealed or bound to the session): `fromPeer` gives them the shape the relay would have.
// limits.js, not protocol.js: the PWA's initial bundle takes this module without the contract's zod schemas.
import { clampTimeout } from "../contract/limits.js";
import type { ClientFrame, RelayFrame, Role } from "../contract/protocol.js";

export type PathName = "relay" | "direct";

/** One way to the peer. `send` is false when the frame did not go (the path is closing). */
export interface DirectPath {
  isOpen(): boolean;
  send(frame: ClientFrame): boolean;
}

/** Frame types a direct path carries besides the relay (the others are the relay's business). */
export const MULTIPATH_TYPES: ReadonlySet<string> = new Set(["tool.call", "tool.result", "tool.cancel"]);

export const PATHS_DEFAULTS = { memory: 2000 } as const;

export class Paths {
  private direct: DirectPath | undefined;
  /** `type call_id` → the path it came on first. Bounded, oldest forgotten first. */
  private readonly seen = new Map<string, PathName>();

  constructor(private readonly memory: number = PATHS_DEFAULTS.memory) {}

  /** The direct path opened (or went: undefined). */
  setDirect(p: DirectPath | undefined): void {
    this.direct = p;
  }

  get directOpen(): boolean {
    return this.direct?.isOpen() === true;
  }

  /** A frame the call book sends (it goes to the relay through the codec anyway): also on the direct path
   * when it is a call, a result or a cancel and that path is open. Returns the direct path's verdict. */
  alsoDirect(frame: ClientFrame): boolean {
    if (!MULTIPATH_TYPES.has(frame.type) || !this.direct?.isOpen()) return false;
    return this.direct.send(frame);
  }

  /** Whether a frame that arrived on `path` goes on to the call book. */
  accept(path: PathName, frame: RelayFrame): boolean {
    if (!("call_id" in frame) || typeof frame.call_id !== "string" || !MULTIPATH_TYPES.has(frame.type)) return path === "relay";
    const k = `${frame.type} ${frame.call_id}`;
    const first = this.seen.get(k);
    if (first === undefined) {
      this.seen.set(k, path);
      while (this.seen.size > this.memory) {
        const oldest = this.seen.keys().next();
        if (oldest.done) break;
        this.seen.delete(oldest.value);
      }
    }
    return path === "relay" || first === undefined;
  }
}

/** A peer's client frame from the direct path, as the relay would have delivered it (undefined: not carried
 * there). `from`: the peer as the handshake named it. A call's deadline counts from its arrival. */
export function fromPeer(frame: ClientFrame, from: { role: Role; clientId: string }, now: number): RelayFrame | undefined {
  switch (frame.type) {
    case "tool.call": {
      const { type, call_id, name, action, arguments: args, timeout_s } = frame;
      const t = clampTimeout(timeout_s);
      return {
        type,
        call_id,
        name,
        ...(action !== undefined ? { action } : {}),
        arguments: args,
        ...(timeout_s !== undefined ? { timeout_s } : {}),
        deadline: now + t * 1000,
        from: from.role,
      };
    }
    case "tool.result": {
      const { type, call_id, name, action, result, error } = frame;
      const body = result !== undefined ? { result } : error !== undefined ? { error } : {};
      return { type, call_id, name: name ?? "", ...(action !== undefined ? { action } : {}), ...body, answered_by: from.clientId };
    }
    case "tool.cancel":
      return { type: "tool.cancel", call_id: frame.call_id, reason: "cancelled" };
    default:
      return undefined;
  }
}
