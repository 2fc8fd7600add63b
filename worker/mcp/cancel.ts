// Explicit MCP cancellation on a stateless server. `notifications/cancelled` arrives in its own POST, possibly
// in another isolate, and names only a JSON-RPC request id. The waiting request therefore holds a second,
// empty LineUp connection, a watcher `~w.<r>.<nonce>`, where `r` is derived from (token, User-Agent, request
// id); the cancelling request connects as the signal `~s.<r>`, and the session closes every watcher of `r`
// with 4409 — that close is the cancel (shared/session/engine.ts `rendezvous`). Watchers sit side by side: two
// clients of one token with the same request id in flight do not cancel each other by waiting. The signal
// lingers a moment, so a cancel that overtakes its tools/call (the watcher connects after it) still lands.
import { shortHash } from "../../shared/mcp/call-id.js";
import { randomId } from "../../shared/edge/tokens.js";
import { CLOSE } from "../../shared/contract/close.js";
import { ReconnectingSocket } from "../../shared/client/socket.js";
import { LineupSocket, MCP_SOCKET, linkDial } from "./lineup-socket.js";
import type { SessionLink } from "./port.js";

const LINGER_MS = 2000;
/** The watcher reconnects every 500 ms (no growth: it only lives as long as one request). */
export const CANCEL_BACKOFF = { baseMs: 500, capMs: 500, minUptimeMs: 0, jitter: false } as const;

export async function rendezvousIdOf(tokenId: string, userAgent: string, requestId: string | number): Promise<string> {
  return shortHash("cancel", tokenId, userAgent, requestId);
}

/** The waiting side: `cancelled` resolves when a cancelling request's signal closes our watcher. */
export class CancelWatch {
  readonly cancelled: Promise<void>;
  private fire: () => void = () => {};
  private readonly sock: ReconnectingSocket;

  private constructor(link: SessionLink, sid: string, clientId: string) {
    this.cancelled = new Promise((r) => (this.fire = r));
    // Best effort: a failed dial is retried; without the watcher only the cancellation is lost, never the answer.
    this.sock = new ReconnectingSocket({ dial: linkDial(link, sid, clientId), backoff: CANCEL_BACKOFF, ...MCP_SOCKET });
    // 4409 is the signal; any other terminal close means the session is gone, and the call ends anyway.
    this.sock.on("terminal", (t) => (t.code === CLOSE.replaced && t.name !== "stopped" ? this.fire() : undefined));
  }

  static start(link: SessionLink, sid: string, rendezvous: string): CancelWatch {
    const w = new CancelWatch(link, sid, `~w.${rendezvous}.${randomId(8)}`);
    w.sock.start();
    return w;
  }

  close(): void {
    void this.sock.stop(CLOSE.normal, "done", 0);
  }
}

/**
 * The cancelling side. Resolves once the signal is given; `linger` (for waitUntil) resolves when the
 * lingering signal is closed again.
 */
export async function signalCancel(link: SessionLink, sid: string, rendezvous: string): Promise<{ linger: Promise<void> }> {
  let sock: LineupSocket;
  try {
    sock = await LineupSocket.open(link, sid, `~s.${rendezvous}`);
  } catch {
    return { linger: Promise.resolve() };
  }
  const linger = (async () => {
    await Promise.race([sock.closed, new Promise((r) => setTimeout(r, LINGER_MS))]);
    sock.close();
  })();
  return { linger };
}
