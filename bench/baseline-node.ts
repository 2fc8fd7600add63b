// The Node baseline for `npm run bench`: what a user would write instead of the relay — a plain `ws`
// server that forwards every frame between the agent and the app sockets of a room, nothing stored.
// Run as its own process (`tsx bench/baseline-node.ts <port>`) so it does not share the bench client's
// event loop; it prints "listening <port>" once ready.
import { WebSocketServer, type WebSocket } from "ws";

export function startNodeBaseline(port: number): WebSocketServer {
  const rooms = new Map<string, { agent: Set<WebSocket>; app: Set<WebSocket> }>();
  const wss = new WebSocketServer({ host: "127.0.0.1", port });
  wss.on("connection", (ws, req) => {
    const url = new URL(req.url ?? "/", "http://x");
    const name = url.searchParams.get("room") ?? "r";
    const role = url.searchParams.get("role") === "app" ? "app" : "agent";
    let room = rooms.get(name);
    if (!room) rooms.set(name, (room = { agent: new Set(), app: new Set() }));
    const r = room;
    r[role].add(ws);
    const others = role === "agent" ? r.app : r.agent;
    ws.on("message", (data, isBinary) => {
      for (const peer of others) peer.send(data, { binary: isBinary });
    });
    ws.on("close", () => {
      r[role].delete(ws);
      if (r.agent.size === 0 && r.app.size === 0) rooms.delete(name);
    });
  });
  return wss;
}

if (process.argv[1] && /baseline-node\.ts$/.test(process.argv[1])) {
  const port = Number(process.argv[2] ?? "0");
  const wss = startNodeBaseline(port);
  wss.on("listening", () => {
    const a = wss.address();
    process.stdout.write(`listening ${typeof a === "object" && a ? a.port : port}\n`);
  });
  process.on("SIGTERM", () => wss.close(() => process.exit(0)));
}
