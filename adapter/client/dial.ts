// The adapter's dial to the relay with `ws`: the agent token as a subprotocol, and what an HTTP refusal of the
// upgrade said (read by the client to stop on 400/401/403/404 instead of retrying), and the hellos it must refuse.
import WebSocket from "ws";
import { type HelloFrame, SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX, type PeerState } from "../../shared/contract/protocol.js";
import type { HelloVerdict } from "../../shared/client/codec.js";
import { LineUpError } from "../../shared/client/errors.js";
import type { WebSocketLike } from "../../shared/client/socket.js";
import { errorText } from "./session.js";
import type { Presence } from "./types.js";

/** The status and the first 2,000 characters of a refused upgrade's body, filled in while the dial fails. */
export interface HttpRefusal {
  status?: number;
  body: string;
}

/** The session's WebSocket URL for this client id (the token travels as a subprotocol, never in it). */
export function sessionWsUrl(relayUrl: string, sessionId: string, clientId: string): string {
  const u = new URL(`${relayUrl.replace(/^http/, "ws")}/api/sessions/${encodeURIComponent(sessionId)}/ws`);
  u.searchParams.set("client_id", clientId);
  return u.toString();
}

export function dialRelay(wsUrl: string, token: string, connectTimeoutMs: number): { ws: WebSocketLike; http: HttpRefusal } {
  const http: HttpRefusal = { body: "" };
  // closeTimeout (ws ≥ 8.18, not in @types/ws): after the relay's close frame, wait at most 1 s for the
  // TCP close — `wrangler dev` holds it ~10 s, and a terminal code (4004/4409) should stop us at once.
  const options: WebSocket.ClientOptions & { closeTimeout?: number } = { handshakeTimeout: connectTimeoutMs, closeTimeout: 1000 };
  const ws = new WebSocket(wsUrl, [SUBPROTOCOL, `${TOKEN_SUBPROTOCOL_PREFIX}${token}`], options);
  ws.on("unexpected-response", (_req, res) => {
    http.status = res.statusCode;
    res.on("data", (d: Buffer) => (http.body += d.toString().slice(0, 2000)));
    res.on("end", () => ws.terminate());
    res.on("error", () => ws.terminate());
  });
  return { ws, http };
}

/** An upgrade the relay refused over HTTP that must not be retried. */
export function refusalOf(http: HttpRefusal): LineUpError | undefined {
  const { status, body } = http;
  if (status === 401 || status === 403) return new LineUpError("auth", `the relay refused the agent token (${status}) ${errorText(body)}`.trim());
  if (status === 404) return new LineUpError("session_ended", `the session is gone (404) ${errorText(body)}`.trim());
  if (status === 400) return new LineUpError("bad_request", `the relay refused the connection (400) ${errorText(body)}`.trim());
  return undefined;
}

export function peersToPresence(p: PeerState): Presence {
  return { agent: p.agent.status ? { online: p.agent.online, status: p.agent.status } : { online: p.agent.online }, apps: p.apps };
}

/** A `hello` for another role than the agent's: the token is an app's, which would make this process a "human". */
export function wrongRole(f: HelloFrame): LineUpError | undefined {
  return f.role === "agent" ? undefined : new LineUpError("auth", `this token is for the ${f.role} role; the adapter needs the session's agent token`);
}

/** A `hello` the codec refused: a sealed session the relay now calls plaintext, or sealed with no key of its inbox here. */
export function sealRefusal(f: HelloFrame, v: Extract<HelloVerdict, { ok: false }>, at: { relayUrl: string; sessionId: string; sealed: boolean }): LineUpError {
  if (v.code === "e2e_downgrade") {
    // A relay that drops `sealed` would get every frame in plaintext: refused before anything is sent.
    const why = at.sealed ? "its earlier hello said so" : "this machine created it sealed";
    const msg = `session ${at.sessionId} is end-to-end encrypted (${why}), but the relay at ${at.relayUrl} now says it is not: refused, nothing was sent. A relay cannot unseal a session; check LINEUP_RELAY_URL, or start a new session`;
    return new LineUpError("e2e_downgrade", msg);
  }
  return new LineUpError(
    "e2e_no_key",
    `session ${f.session_id} is sealed (end-to-end encrypted) but this machine holds no key of its inbox on ${at.relayUrl}: \`lineup e2e status\` tells why`,
  );
}
