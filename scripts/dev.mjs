// `npm run dev`: builds the PWA, then runs the relay (wrangler dev, workerd) on http://127.0.0.1:8787
// serving the PWA, and rebuilds the PWA on change. Another port: `npm run dev -- --port 8790` or
// `PORT=8790 npm run dev` (the flag wins); other arguments go to `wrangler dev`. No secrets needed: on localhost the relay accepts
// the documented dev key (shared/contract/defaults.ts).
//
// `npm run dev -- --lan`: also answers on this machine's LAN address and sets PUBLIC_URL to it, so links and
// QR codes open on a phone on the same network. The dev key must keep working only for requests from this
// machine. worker/host.ts accepts it when the request's URL is localhost, and in wrangler dev that URL comes
// from what the client sends (Host, or miniflare's MF-Original-URL header): with wrangler on 0.0.0.0 anyone
// on the network could claim "localhost". So wrangler stays on 127.0.0.1 and the LAN address is a small
// forwarder here that sets Host to the LAN address and drops the headers a client could forge.
import { spawn, spawnSync } from "node:child_process";
import { createServer, request as httpRequest } from "node:http";
import { connect } from "node:net";
import { networkInterfaces } from "node:os";

process.env.WRANGLER_SEND_METRICS = "false";
// wrangler fetches https://workers.cloudflare.com/cf.json (request.cf's sample data) at every start; offline
// that printed a harmless `getaddrinfo ENOTFOUND workers.cloudflare.com` stack twice. The relay reads nothing
// of request.cf, so the dev relay uses wrangler's placeholder (CLOUDFLARE_CF_FETCH_ENABLED=true fetches it).
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
const args = process.argv.slice(2);
const lan = args.includes("--lan");
// The port: `npm run dev -- --port N` (or `--port=N`), else PORT, else 8787. Taken out of wrangler's
// arguments: the banner, the LAN forwarder and PUBLIC_URL must use the same one.
let port = process.env.PORT || "8787";
const wranglerArgs = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--lan") continue;
  if (a === "--port" || a.startsWith("--port=")) {
    const v = a === "--port" ? args[++i] : a.slice("--port=".length);
    port = v ?? "";
    continue;
  }
  wranglerArgs.push(a);
}
if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
  console.error(`npm run dev: the port must be a number from 1 to 65535 (--port N or PORT=N), not ${JSON.stringify(port)}`);
  process.exit(2);
}

/** The first non-internal IPv4 address (what a phone on the same Wi-Fi reaches). */
function lanAddress() {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return undefined;
}

let publicUrl;
let lanIp;
if (lan) {
  lanIp = lanAddress();
  if (!lanIp) {
    console.error("npm run dev -- --lan: this machine has no non-internal IPv4 address (not on a network?)");
    process.exit(1);
  }
  publicUrl = `http://${lanIp}:${port}`;
}

// Headers the worker must not take from a LAN client: miniflare's own (MF-Original-URL rewrites
// request.url) and Cloudflare's (CF-Connecting-IP is the auth brake's address); Host is set below.
const FORGEABLE = /^(mf-|cf-|x-forwarded-|forwarded$|host$)/i;
function forwardHeaders(req) {
  const h = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !FORGEABLE.test(k)) h[k] = v;
  h.host = `${lanIp}:${port}`;
  h["cf-connecting-ip"] = req.socket.remoteAddress ?? "unknown";
  return h;
}

/** LAN address → wrangler on 127.0.0.1, HTTP and WebSocket upgrades alike. */
function startLanForwarder() {
  const server = createServer((req, res) => {
    const up = httpRequest({ host: "127.0.0.1", port: Number(port), method: req.method, path: req.url, headers: forwardHeaders(req) }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502, { "content-type": "text/plain" }).end("the relay is not up yet\n")));
    req.pipe(up);
  });
  server.on("upgrade", (req, socket, head) => {
    const up = connect(Number(port), "127.0.0.1", () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (const [k, v] of Object.entries(forwardHeaders(req))) for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`);
      up.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) up.write(head);
      socket.pipe(up).pipe(socket);
    });
    const end = () => {
      socket.destroy();
      up.destroy();
    };
    up.on("error", end).on("close", end);
    socket.on("error", end).on("close", end);
  });
  server.on("error", (e) => {
    console.error(`npm run dev -- --lan: cannot listen on ${lanIp}:${port}: ${e.message}`);
    stop(1);
  });
  server.listen(Number(port), lanIp);
  return server;
}

// Stop handlers come before anything is spawned or printed: a SIGTERM that arrives right after the
// banner (a supervisor, or a test that waited for it) must stop the children, not kill this process bare.
// regression: dev-port.test.ts saw exit code null when the signal beat these handlers under CI load.
/** @type {import("node:child_process").ChildProcess[]} */
const children = [];
let forwarder;
let stopping = false;
const signalGroups = (sig) => {
  // Even when a leader (npx) has exited, its group lives on while a member (workerd) does.
  for (const c of children) {
    if (c.pid === undefined) continue;
    try {
      process.kill(-c.pid, sig);
    } catch {
      /* the group is gone already */
    }
  }
};
const stop = (code = 0) => {
  if (stopping) return;
  stopping = true;
  forwarder?.close();
  forwarder?.closeAllConnections();
  signalGroups("SIGTERM");
  // Wait for the groups to go; whatever is still there after 5 s is killed.
  const kill = setTimeout(() => {
    signalGroups("SIGKILL");
    process.exit(code);
  }, 5000);
  const check = setInterval(() => {
    if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) {
      clearTimeout(kill);
      clearInterval(check);
      // The leaders are gone; make sure nothing they started lingers.
      signalGroups("SIGKILL");
      process.exit(code);
    }
  }, 100);
};
process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));
process.on("SIGHUP", () => stop(0));

const build = spawnSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);

// Each child leads its own process group (detached), so stopping kills npx AND what it started (node,
// wrangler's workerd, vite's esbuild) — a plain child.kill() reaches npx alone and leaves workerd running.
// stdin is not theirs: a background process group reading the terminal would be stopped (SIGTTIN), and
// Ctrl-C reaches this process, which stops them.
const spawnGroup = (cmd, argv) => spawn(cmd, argv, { stdio: ["ignore", "inherit", "inherit"], detached: true });
children.push(
  spawnGroup("npx", ["vite", "build", "--watch", "--logLevel", "warn"]),
  spawnGroup("npx", [
    "wrangler",
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    port,
    // wrangler splits `--var` at the first colon: the URL's own colons stay in the value.
    ...(publicUrl ? ["--var", `PUBLIC_URL:${publicUrl}`] : []),
    ...wranglerArgs,
  ]),
);

forwarder = lan ? startLanForwarder() : undefined;
if (lan) {
  console.log(`
LineUp relay + PWA on the LAN: ${publicUrl}  (and http://127.0.0.1:${port} on this machine)
  Links and QR codes use ${publicUrl} (PUBLIC_URL). The dev RELAY_KEY (lineup-dev-relay-key) is accepted
  only on http://127.0.0.1:${port}: agents on this machine create sessions, nobody on the network can.

  A plain-http LAN origin is not a secure context in browsers, so on the phone:
    - no service worker: the app does not work offline and cannot be installed;
    - no Web Push: no notifications when the app is closed;
    - no crypto.subtle: anything that needs Web Crypto is unavailable.
  Everything crosses the network unencrypted (tokens, questions, answers): use a network you trust.
  For all of it, put the relay behind HTTPS (e.g. \`npx wrangler deploy\` or a TLS tunnel).
`);
} else console.log(`\nLineUp relay + PWA: http://127.0.0.1:${port}  (dev RELAY_KEY: lineup-dev-relay-key)\n`);

for (const c of children) c.on("exit", (code) => code && code !== 0 && stop(code));
