// GET /api/sessions/:sid with the session's token as a Bearer header (never in the URL): its label, presence,
// pending count and message history (web/src/conn.ts shows them before and between connections); and the
// session's WebSocket address (the token travels as a subprotocol, never in it).
import type { SessionStatus } from "../../shared/contract/protocol.js";
import type { SavedSession } from "./storage.js";
import { SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "../../shared/contract/limits.js";

/** `code` 0: the relay could not be reached at all (a network error, not an HTTP answer). */
export interface StatusRead {
  code: number;
  status?: SessionStatus;
  /** The relay says the session is sealed (docs/e2e.md). */
  sealed: boolean;
}

export async function readStatus(saved: SavedSession): Promise<StatusRead> {
  try {
    const r = await fetch(new URL(`/api/sessions/${encodeURIComponent(saved.sid)}`, saved.origin), {
      headers: { authorization: `Bearer ${saved.token}` },
      cache: "no-store",
    });
    if (!r.ok) return { code: r.status, sealed: false };
    const status: SessionStatus & { sealed?: unknown } = await r.json();
    return { code: r.status, status, sealed: status.sealed === true };
  } catch {
    return { code: 0, sealed: false };
  }
}

/** The session's WebSocket address for this device's client id. */
/** The session socket's subprotocols: the token travels as one, never in a URL, a log line or the Referer. */
export const socketProtocols = (token: string): string[] => [SUBPROTOCOL, `${TOKEN_SUBPROTOCOL_PREFIX}${token}`];

export function socketUrl(saved: SavedSession, clientId: string): string {
  const u = new URL(`/api/sessions/${encodeURIComponent(saved.sid)}/ws`, saved.origin);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.searchParams.set("client_id", clientId);
  // Not a provider until its registration arrives: a socket dialled before the app's code has loaded (web/src/early.ts)
  // must not make the relay refuse a new call `unknown_tool` meanwhile (docs/protocol.md, "register=first").
  u.searchParams.set("register", "first");
  return u.toString();
}
