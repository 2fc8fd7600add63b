// The interim SessionLink: a WebSocket upgrade into the session's object through the edge's own session port
// (`EdgeSession.connect`, as `GET /api/sessions/:sid/ws` uses it), with the role and epoch of the checked
// agent token, admitted as one of the engine's reserved internal callers (`~mcp…`, `~w.…`, `~s.…`).
import type { EdgeSession } from "../../shared/edge/app.js";
import { LinkError, type SessionLink } from "./port.js";

/** A link for one token's session incarnation (`epoch`): sessions refuse the tokens of a re-created one. */
export function edgeLink(session: (sid: string) => EdgeSession, epoch: number): SessionLink {
  return {
    async connect(sid, clientId) {
      const url = `https://session.internal/api/sessions/${encodeURIComponent(sid)}/ws?client_id=${encodeURIComponent(clientId)}`;
      const res = await session(sid).connect(new Request(url, { headers: { upgrade: "websocket" } }), {
        role: "agent",
        epoch,
        clientId,
        subprotocol: false,
        internal: true,
      });
      if (res.status === 101 && res.webSocket) {
        res.webSocket.accept();
        return res.webSocket;
      }
      const body = await res.text().catch(() => "");
      if (res.status === 404) throw new LinkError("session_not_found", "this session has expired or was deleted");
      throw new LinkError("link_failed", `the session refused the connection (${res.status}): ${body.slice(0, 200)}`);
    },
  };
}
