// Explicit MCP cancellation on a stateless server. `notifications/cancelled` arrives in its own POST, possibly
// in another isolate, and names only a JSON-RPC request id. The waiting request therefore holds a second,
// empty LineUp connection, a watcher `~w.<r>.<nonce>`, where `r` is derived from (token, User-Agent, request
// id); the cancelling request connects as the signal `~s.<r>`, and the session closes every watcher of `r`
// with 4409 — that close is the cancel (shared/session/engine.ts `rendezvous`). Watchers sit side by side: two
// clients of one token with the same request id in flight do not cancel each other by waiting. The signal
// lingers a moment, so a cancel that overtakes its tools/call (the watcher connects after it) still lands.
import { shortHash } from "../../shared/mcp/call-id.js";
import { randomId } from "../../shared/edge/tokens.js";
import { CLOSE, isTerminalClose } from "../../shared/contract/close.js";
import { LineupSocket } from "./lineup-socket.js";
import type { SessionLink } from "./port.js";

const LINGER_MS = 2000;
const BACKOFF_MS = 500;

export async function rendezvousIdOf(tokenId: string, userAgent: string, requestId: string | number): Promise<string> {
  return shortHash("cancel", tokenId, userAgent, requestId);
}

/** The waiting side: `cancelled` resolves when a cancelling request's signal closes our watcher. */
export class CancelWatch {
  readonly cancelled: Promise<void>;
  private stopped = false;
  private sock: LineupSocket | undefined;
  private fire: () => void = () => {};

  private constructor(
    private readonly link: SessionLink,
    private readonly sid: string,
    private readonly clientId: string,
  ) {
    this.cancelled = new Promise((r) => (this.fire = r));
  }

  static start(link: SessionLink, sid: string, rendezvous: string): CancelWatch {
    const w = new CancelWatch(link, sid, `~w.${rendezvous}.${randomId(8)}`);
    void w.run();
    return w;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        this.sock = await LineupSocket.open(this.link, this.sid, this.clientId);
      } catch {
        await new Promise((r) => setTimeout(r, BACKOFF_MS));
        continue; // best effort: without it only the cancellation is lost, never the answer
      }
      if (this.stopped) return this.sock.close();
      const c = await this.sock.closed;
      if (this.stopped) return;
      if (c.code === CLOSE.replaced) return this.fire();
      if (isTerminalClose(c.code)) return; // session gone: the call ends anyway
      await new Promise((r) => setTimeout(r, BACKOFF_MS));
    }
  }

  close(): void {
    this.stopped = true;
    this.sock?.close();
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
