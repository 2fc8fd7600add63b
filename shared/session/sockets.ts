// Small socket helpers for both servers (workerd's WebSocket and the `ws` package share this shape).
// `send()` after close throws, and `close()` with a reserved code throws too — so both are wrapped once.
import { RESERVED_CLOSE, sendableClose } from "../contract/close.js";

export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

const OPEN = 1;
/** A close frame's reason is at most 123 bytes of UTF-8 (125 minus the 2-byte code). */
const MAX_REASON_BYTES = 123;

export function sendIfOpen(ws: SocketLike, data: string): boolean {
  if (ws.readyState !== OPEN) return false;
  try {
    ws.send(data);
    return true;
  } catch {
    return false;
  }
}

/** Cuts `reason` to whole characters within 123 UTF-8 bytes. */
export function closeReason(reason: string): string {
  const enc = new TextEncoder();
  if (enc.encode(reason).byteLength <= MAX_REASON_BYTES) return reason;
  let out = "";
  let bytes = 0;
  for (const ch of reason) {
    const n = enc.encode(ch).byteLength;
    if (bytes + n > MAX_REASON_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * Closes with `code` unless that code says the connection is already gone (1005 no status, 1006 abnormal,
 * 1015 TLS): those sockets are dead and get no close frame (partyserver does the same). Codes outside
 * what an endpoint may send become 1000.
 */
export function closeQuietly(ws: SocketLike, code: number, reason: string): void {
  if (RESERVED_CLOSE.has(code)) return;
  const safe = sendableClose(code);
  try {
    ws.close(safe, closeReason(reason));
  } catch {
    /* already closed */
  }
}
