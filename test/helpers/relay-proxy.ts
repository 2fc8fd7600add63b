// A relay that lies, for the E2E policy tests (issue 26): an HTTP proxy in front of the real `wrangler dev`
// relay that records every request body the adapter sends and can rewrite any JSON answer (serve another
// policy, flip a byte of an envelope), as a compromised relay could. WebSocket upgrades are piped through
// untouched (raw TCP after the request head).
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect as tcpConnect } from "node:net";

export interface Seen {
  method: string;
  path: string;
  body: string;
}

/** Rewrites the relay's JSON answer to `method path`; return undefined to pass it on unchanged. */
export type Rewrite = (method: string, path: string, answer: unknown) => unknown;

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let s = "";
    req.on("data", (d: Buffer) => (s += d.toString()));
    req.on("end", () => resolve(s));
    req.on("error", reject);
  });

const HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade"]);

export class LyingRelay {
  readonly seen: Seen[] = [];
  rewrite: Rewrite | undefined;
  port = 0;
  /** Upgraded (WebSocket) connections: the HTTP server no longer tracks them. */
  readonly piped = new Set<{ destroy(): void }>();
  private constructor(
    readonly server: Server,
    readonly target: URL,
  ) {}

  static async start(targetUrl: string): Promise<LyingRelay> {
    const target = new URL(targetUrl);
    let self: LyingRelay;
    const server = createServer((req, res) => {
      void (async () => {
        const body = await readBody(req);
        const path = req.url ?? "/";
        self.seen.push({ method: req.method ?? "GET", path, body });
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && typeof v === "string") headers[k] = v;
        const r = await fetch(new URL(path, target), { method: req.method ?? "GET", headers, ...(body ? { body } : {}), redirect: "manual" });
        let out = Buffer.from(await r.arrayBuffer());
        const fake =
          self.rewrite && (r.headers.get("content-type") ?? "").includes("json")
            ? self.rewrite(req.method ?? "GET", path, JSON.parse(out.toString() || "null"))
            : undefined;
        if (fake !== undefined) out = Buffer.from(JSON.stringify(fake));
        const back: Record<string, string> = {};
        r.headers.forEach((v, k) => {
          if (!HOP.has(k) && k !== "content-encoding") back[k] = v;
        });
        res.writeHead(r.status, { ...back, "content-length": String(out.length) });
        res.end(out);
      })().catch((e: unknown) => {
        res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "proxy", message: String(e) } }));
      });
    });
    server.on("upgrade", (req: IncomingMessage, socket, head: Buffer) => {
      const up = tcpConnect(Number(target.port), target.hostname, () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(`${lines.join("\r\n")}\r\n\r\n`);
        if (head.length) up.write(head);
        socket.pipe(up).pipe(socket);
      });
      self.piped.add(socket).add(up);
      const end = () => {
        socket.destroy();
        up.destroy();
        self.piped.delete(socket);
        self.piped.delete(up);
      };
      up.on("error", end).on("close", end);
      socket.on("error", end).on("close", end);
    });
    self = new LyingRelay(server, target);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const a = server.address();
    self.port = typeof a === "object" && a ? a.port : 0;
    return self;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every request body (and path) the adapter sent, as one text, to search for what must never travel. */
  sentText(): string {
    return this.seen.map((s) => `${s.method} ${s.path}\n${s.body}`).join("\n");
  }

  close(): Promise<void> {
    for (const s of this.piped) s.destroy();
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}
