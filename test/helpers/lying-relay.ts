// A lying relay for the sealed-session tests (issue 26): a proxy in front of the real `wrangler dev` relay that
// forwards HTTP as it is and bridges each WebSocket frame by frame, so everything stays real except what the
// test makes it lie about — it can rewrite or drop what the relay sends (e.g. `sealed` left out of `hello`),
// inject frames of its own into a client's socket, answer chosen HTTP requests itself, and it records every
// frame each client sent.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import WebSocket, { WebSocketServer } from "ws";

export type Json = Record<string, unknown>;

export interface Bridged {
  /** The path the client connected to (`/api/sessions/<sid>/ws?client_id=…`). */
  path: string;
  /** Every text frame the client sent, parsed ("ping" left out), in order. */
  sent: Json[];
  /** Frames the relay sent to it, as the relay sent them (before any rewrite). */
  received: Json[];
  /** Sends a frame to the client as if the relay had. */
  inject(f: Json): void;
  /** Cuts both sides (the client sees a dropped connection and reconnects). */
  cut(): void;
}

export class LyingRelay {
  readonly sockets: Bridged[] = [];
  /** Rewrites a frame from the relay before the client sees it; undefined drops it. */
  toClient: (f: Json, b: Bridged) => Json | undefined = (f) => f;
  /** Answers an HTTP request itself (status and JSON body) instead of forwarding it; undefined forwards. */
  http: (method: string, path: string) => { status: number; body: Json } | undefined = () => undefined;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
    readonly url: string,
  ) {}

  static async start(targetUrl: string): Promise<LyingRelay> {
    const target = new URL(targetUrl);
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const a = server.address();
    const port = typeof a === "object" && a ? a.port : 0;
    const lr = new LyingRelay(server, target, `http://127.0.0.1:${port}`);
    server.on("request", (req, res) => lr.forward(req, res));
    const wss = new WebSocketServer({ noServer: true, handleProtocols: (ps) => [...ps][0] ?? false });
    server.on("upgrade", (req, socket, head) => {
      const protocols = String(req.headers["sec-websocket-protocol"] ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      const up = new WebSocket(`ws://${target.host}${req.url ?? "/"}`, protocols);
      up.once("unexpected-response", (_q, r) => {
        socket.end(`HTTP/1.1 ${r.statusCode ?? 502} Refused\r\nConnection: close\r\n\r\n`);
      });
      up.once("error", () => socket.destroy());
      up.once("open", () => wss.handleUpgrade(req, socket, head, (client) => lr.bridge(req.url ?? "/", client, up)));
    });
    return lr;
  }

  private forward(req: IncomingMessage, res: import("node:http").ServerResponse): void {
    const own = this.http(req.method ?? "GET", req.url ?? "/");
    if (own) {
      req.resume();
      res.writeHead(own.status, { "content-type": "application/json" }).end(JSON.stringify(own.body));
      return;
    }
    const up = request({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  }

  private bridge(path: string, client: WebSocket, up: WebSocket): void {
    const b: Bridged = {
      path,
      sent: [],
      received: [],
      inject: (f) => client.readyState === WebSocket.OPEN && client.send(JSON.stringify(f)),
      cut: () => {
        client.terminate();
        up.terminate();
      },
    };
    this.sockets.push(b);
    up.on("message", (d, isBinary) => {
      const text = d.toString();
      if (isBinary || text === "pong") return void client.send(d, { binary: isBinary });
      const f = JSON.parse(text) as Json;
      b.received.push(f);
      const out = this.toClient(f, b);
      if (out !== undefined && client.readyState === WebSocket.OPEN) client.send(JSON.stringify(out));
      this.wake();
    });
    client.on("message", (d, isBinary) => {
      const text = d.toString();
      if (!isBinary && text !== "ping") b.sent.push(JSON.parse(text) as Json);
      if (up.readyState === WebSocket.OPEN) up.send(d, { binary: isBinary });
      this.wake();
    });
    up.on(
      "close",
      (code, reason) => client.readyState === WebSocket.OPEN && client.close(code >= 1000 && code !== 1005 && code !== 1006 ? code : 1000, reason),
    );
    client.on("close", () => up.readyState === WebSocket.OPEN && up.close());
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits until `fn` returns something (checked after every frame either way), or throws after `ms`. */
  async until<T>(fn: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = fn();
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline) throw new Error(`lying relay: timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 100);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Every frame clients of session `sid` sent. */
  sentIn(sid: string): Json[] {
    return this.sockets.filter((b) => b.path.startsWith(`/api/sessions/${sid}/`)).flatMap((b) => b.sent);
  }

  async close(): Promise<void> {
    for (const b of this.sockets) b.cut();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
