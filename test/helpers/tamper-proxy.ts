// A lying relay for the direct path's tamper tests (issue 32): a small proxy on 127.0.0.1 in front of the real
// relay. HTTP requests pass through unchanged; each WebSocket is opened upstream with the client's path,
// subprotocols and Authorization/Origin, and every text frame is passed on — except `rtc.signal` frames, which
// `rewrite` may change ("up": client → relay, "down": relay → client). What a relay that rewrites the handshake
// would do, without changing the relay.
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import WebSocket, { WebSocketServer, type RawData } from "ws";

export type Direction = "up" | "down";
export type Rewrite = (frame: Record<string, unknown>, dir: Direction) => Record<string, unknown> | Promise<Record<string, unknown>>;

export interface TamperProxy {
  url: string;
  /** How many rtc.signal frames `rewrite` changed. */
  rewritten: number;
  close(): Promise<void>;
}

export async function tamperProxy(upstream: string, rewrite: Rewrite): Promise<TamperProxy> {
  const up = new URL(upstream);
  const chosen = new WeakMap<IncomingMessage, string>();
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (_p, req) => chosen.get(req) ?? false });
  const sockets = new Set<WebSocket>();
  const proxy: TamperProxy = { url: "", rewritten: 0, close: async () => {} };

  const pass = async (data: RawData, dir: Direction): Promise<string> => {
    const text = data.toString();
    let f: unknown;
    try {
      f = JSON.parse(text);
    } catch {
      return text; // the heartbeat's ping/pong
    }
    if (typeof f !== "object" || f === null || (f as { type?: unknown }).type !== "rtc.signal") return text;
    const out = JSON.stringify(await rewrite(f as Record<string, unknown>, dir));
    if (out !== text) proxy.rewritten++;
    return out;
  };
  const closeCode = (c: number) => (c === 1000 || (c >= 3000 && c <= 4999) ? c : 1000);

  const server = createServer((req, res) => {
    const fwd = request(
      { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: { ...req.headers, host: up.host } },
      (r) => (res.writeHead(r.statusCode ?? 502, r.headers), r.pipe(res)),
    );
    fwd.on("error", () => (res.headersSent ? res.destroy() : (res.writeHead(502), res.end())));
    req.pipe(fwd);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const protocols = (req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const headers: Record<string, string> = {};
    for (const h of ["authorization", "origin"] as const) if (typeof req.headers[h] === "string") headers[h] = req.headers[h];
    const target = new WebSocket(`${upstream.replace(/^http/, "ws")}${req.url ?? "/"}`, protocols, { headers });
    const early: string[] = [];
    let client: WebSocket | undefined;
    // Each direction in order, though a rewrite may take its time (re-signing).
    let down: Promise<void> = Promise.resolve();
    let upward: Promise<void> = Promise.resolve();
    target.on("message", (d) => {
      down = down.then(async () => {
        const t = await pass(d, "down");
        if (client) client.send(t);
        else early.push(t);
      });
    });
    target.on("unexpected-response", (_r, res) => {
      socket.end(`HTTP/1.1 ${res.statusCode ?? 502} Refused\r\nConnection: close\r\n\r\n`);
    });
    target.on("error", () => socket.destroy());
    target.on("open", () => {
      chosen.set(req, target.protocol);
      wss.handleUpgrade(req, socket, head, (ws) => {
        client = ws;
        sockets.add(ws).add(target);
        for (const t of early.splice(0)) ws.send(t);
        ws.on("message", (d) => {
          upward = upward.then(async () => {
            const t = await pass(d, "up");
            if (target.readyState === WebSocket.OPEN) target.send(t);
          });
        });
        ws.on("close", (c, r) => target.close(closeCode(c), r));
        target.on("close", (c, r) => ws.close(closeCode(c), r));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = async () => {
    for (const s of sockets) s.terminate();
    wss.close();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return proxy;
}
