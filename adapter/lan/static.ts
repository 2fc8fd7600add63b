// The LAN server's plain HTTP parts: which Host names it answers, and the built PWA as static files.
import { httpError } from "../../shared/contract/protocol.js";
import { readFile, stat } from "node:fs/promises";
import { hostname, networkInterfaces } from "node:os";
import { extname, join, normalize, sep } from "node:path";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { APP_SECURITY_HEADERS } from "../../shared/edge/csp.js";

/** A WebSocket upgrade in flight: the edge decides, the session or inbox completes it with `ws`. */
export interface LanUpgrade {
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  done: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/**
 * The Host values the LAN server answers: loopback, this machine's names (`<hostname>`, `<hostname>.local`),
 * the addresses of its interfaces (read again on a miss: DHCP may move them), the bind address and the
 * names given — each with the server's port. Everything else is a DNS-rebinding attempt or a mistake.
 */
export function allowedHosts(port: () => number, bind: string, extra: string[]): (host: string) => boolean {
  const names = () => {
    const all = ["127.0.0.1", "localhost", "[::1]", hostname(), `${hostname()}.local`, bind, ...extra];
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) all.push(a.family === "IPv6" ? `[${a.address}]` : a.address);
    return new Set([...all.map((n) => `${n.toLowerCase()}:${port()}`), ...extra.map((n) => n.toLowerCase())]);
  };
  let known = names();
  return (host) => known.has(host) || (known = names()).has(host);
}

/** The built PWA, with the single-page-app fallback to index.html (as the Worker's static assets). */
export async function staticFile(webDir: string, req: Request): Promise<Response> {
  if (req.method !== "GET" && req.method !== "HEAD") return Response.json(httpError("method_not_allowed", "GET only"), { status: 405 });
  const index = join(webDir, "index.html");
  const isFile = (f: string) =>
    stat(f).then(
      (s) => s.isFile(),
      () => false,
    );
  if (!(await isFile(index)))
    return new Response("LineUp LAN server: the PWA is not built (npm run build)", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
  let rel: string;
  try {
    rel = normalize(decodeURIComponent(new URL(req.url).pathname));
  } catch {
    rel = "/";
  }
  let file = join(webDir, rel);
  if (!file.startsWith(webDir + sep) || !(await isFile(file))) file = index;
  const body = await readFile(file);
  const headers = {
    "content-type": CONTENT_TYPES[extname(file)] ?? "application/octet-stream",
    "cache-control": file === index ? "no-cache" : "public, max-age=3600",
  };
  return new Response(req.method === "HEAD" ? null : body, { headers: { ...APP_SECURITY_HEADERS, ...headers, "content-length": String(body.byteLength) } });
}
