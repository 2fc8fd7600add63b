// The one table of WebSocket close codes every party reads (contract §5, docs/protocol.md "Close codes"): the
// relay's own terminal codes (4000–4999, "do not reconnect") and the RFC 6455 §7.4.1 codes we send or see.
// It imports nothing, so the PWA, the adapter, the Worker and the LAN server take it without zod.
export const CLOSE = {
  /** RFC 6455: a normal close (the client's "bye", a stopped tab). */
  normal: 1000,
  /** RFC 6455: the endpoint goes away (the LAN server stopping). */
  goingAway: 1001,
  /** RFC 6455: no close frame came — the socket died (never sent, only reported; also a dead socket we drop). */
  abnormal: 1006,
  /** RFC 6455: a message over the size limit. */
  tooLarge: 1009,
  /** RFC 6455: the server hit an unexpected condition. */
  internal: 1011,
  /** The session was deleted or expired. */
  sessionEnded: 4004,
  /** This device was revoked (its inbox socket and every session socket). */
  revoked: 4401,
  /** Another connection took over this client id (we chose 4409). */
  replaced: 4409,
} as const;

/** RFC 6455 §7.4.1: codes that only describe a close (1004 reserved, 1005 no status, 1006 abnormal, 1015 TLS);
 * never sent in a close frame — `close()` with one throws. */
export const RESERVED_CLOSE: ReadonlySet<number> = new Set([1004, 1005, CLOSE.abnormal, 1015]);

/** Close codes 4000–4999 tell a client not to reconnect (contract §5). */
export const isTerminalClose = (code: number): boolean => code >= 4000 && code <= 4999;

const TERMINAL_NAMES: Record<number, string> = {
  [CLOSE.sessionEnded]: "session_ended",
  [CLOSE.revoked]: "revoked",
  [CLOSE.replaced]: "replaced",
};

/** The error code a client reports for a terminal close: the table's name, else `closed_<code>`. */
export function terminalCodeName(code: number): string {
  return TERMINAL_NAMES[code] ?? `closed_${code}`;
}

/** The code a close frame may carry (RFC 6455 §7.4.1–7.4.2: 1000–1014 but the reserved ones, and 3000–4999): `code`
 * when it may, else a normal close. */
export function sendableClose(code: number): number {
  return code < CLOSE.normal || code > 4999 || (code > 1014 && code < 3000) ? CLOSE.normal : code;
}
