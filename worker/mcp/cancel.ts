// Explicit MCP cancellation on a stateless server. `notifications/cancelled` arrives in its own POST, possibly
// in another isolate, and names only a JSON-RPC request id. The waiting request therefore holds a second,
// empty LineUp connection whose client id is derived from (token, User-Agent, request id); the cancelling
// request connects with the same id, which makes the relay replace (close with 4409) the waiter's connection —
// that close is the signal. The cancelling side lingers a moment, so a cancel that overtakes the tools/call
// (the waiter connects after it) still lands: the waiter's connect replaces ours, and we reconnect once.
//
// These ids must stay ordinary client ids, whose newer connection replaces the older one.
import { shortHash } from "../../shared/mcp/call-id.js";
import { LineupSocket } from "./lineup-socket.js";
import type { SessionLink } from "./port.js";

const LINGER_MS = 2000;
const BACKOFF_MS = 500;

export async function rendezvousIdOf(tokenId: string, userAgent: string, requestId: string | number): Promise<string> {
  return `mcpc-${await shortHash("cancel", tokenId, userAgent, requestId)}`;
}

/** The waiting side: `cancelled` resolves when a cancelling request takes our connection over. */
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

  static start(link: SessionLink, sid: string, clientId: string): CancelWatch {
    const w = new CancelWatch(link, sid, clientId);
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
      if (c.code === 4409) return this.fire();
      if (c.code >= 4000 && c.code < 5000) return; // session gone: the call ends anyway
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
 * lingering connection is closed again.
 */
export async function signalCancel(link: SessionLink, sid: string, clientId: string): Promise<{ linger: Promise<void> }> {
  let sock: LineupSocket;
  try {
    sock = await LineupSocket.open(link, sid, clientId);
  } catch {
    return { linger: Promise.resolve() };
  }
  const linger = (async () => {
    const replaced = await Promise.race([sock.closed.then((c) => c.code === 4409), new Promise<false>((r) => setTimeout(() => r(false), LINGER_MS))]);
    if (!replaced) return sock.close();
    // A waiter connected after us (the cancel overtook its tools/call): replace it in turn.
    const again = await LineupSocket.open(link, sid, clientId).catch(() => undefined);
    again?.close();
  })();
  return { linger };
}
