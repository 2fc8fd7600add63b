// The interim SessionLink: a WebSocket upgrade into the session's Durable Object through its stub, exactly as
// the Worker's `/api/sessions/:sid/ws` route hands a socket to the object (role from a header the Worker sets
// after checking the token). The engine rewrite will replace this with its reserved `~mcp…` internal callers.
import type { Env } from "../env.js";
import { LinkError, type SessionLink } from "./port.js";

export function stubLink(env: Env): SessionLink {
  return {
    async connect(sid, clientId) {
      const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sid));
      const url = `https://session.internal/api/sessions/${encodeURIComponent(sid)}/ws?client_id=${encodeURIComponent(clientId)}`;
      const res = await stub.fetch(new Request(url, { headers: { upgrade: "websocket", "x-lineup-role": "agent" } }));
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
