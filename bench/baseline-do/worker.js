// The bare Durable Object baseline: one object per room, sockets accepted as hibernatable with the tag
// "agent" or "app", every text frame forwarded verbatim to the other role's sockets. Nothing is parsed
// or stored — this is the floor the platform itself sets for a frame that crosses one object.
// Plain JS on purpose: the repository's node tsconfig covers bench/ and cannot also load workers types.
import { DurableObject } from "cloudflare:workers";

export class Room extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // A fresh id per construction: the bench asks for it before and after idling to see whether the
    // runtime really evicted (hibernated) the object.
    this.instance = crypto.randomUUID();
  }

  async fetch(req) {
    const role = new URL(req.url).searchParams.get("role") === "app" ? "app" : "agent";
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [role]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  webSocketMessage(ws, msg) {
    if (msg === "whoami") {
      ws.send(JSON.stringify({ type: "whoami", instance: this.instance }));
      return;
    }
    const role = this.ctx.getTags(ws)[0];
    for (const peer of this.ctx.getWebSockets(role === "agent" ? "app" : "agent")) {
      try {
        peer.send(msg);
      } catch {
        /* peer closing */
      }
    }
  }

  webSocketClose(ws, code) {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "bye");
    } catch {
      /* already closed */
    }
  }
}

export default {
  fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (req.headers.get("upgrade") !== "websocket") return new Response("websocket only", { status: 426 });
    const room = url.searchParams.get("room") ?? "r";
    return env.ROOMS.get(env.ROOMS.idFromName(room)).fetch(req);
  },
};
