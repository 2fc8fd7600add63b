// The one edge of both servers: the Worker (worker/index.ts) and the direct LAN server
// (adapter/lan/server.ts) serve this same Hono app. It checks Origin, keys and tokens, reads bodies with
// their caps, and hands each request to the session — all before the session's object is touched, save the
// 404s only the session knows. What differs between the servers is behind `EdgeHost` (shared/edge/host.ts).
// Middleware does the checks once (issue 27 §5): the first sets `c.var.host`, the credential middleware of
// shared/edge/credential.ts sets what a request proved, bodies pass @hono/zod-validator behind their caps
// (shared/edge/http.ts); the route groups are sub-apps: sessions.ts, inbox.ts, push.ts, e2e.ts.
import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { AuthBrake } from "./auth-brake.js";
import type { EdgeEnv, EdgeHost } from "./host.js";
import { fail } from "./http.js";
import { sessionRoutes } from "./sessions.js";
import { inboxRoutes } from "./inbox.js";
import { pushRoutes } from "./push.js";
import { e2eRoutes } from "./e2e.js";
import { PROTOCOL } from "../contract/protocol.js";
import { version as RELAY_VERSION } from "../../package.json";

// The edge's modules, for the servers and the Worker's own routes (worker/oauth, worker/mcp, worker/wukongim).
export type { Authed, EdgeEnv, EdgeHost, EdgePush, EdgeSession, Holder, HostVars, SocketAuth } from "./host.js";
export { fail, readCapped, readJson } from "./http.js";
export { checkCredential, ownerRevoked, sessionObject, sha256 } from "./credential.js";

/** Preflights and answers for an allowed other origin (hono/cors); our own origin needs none. */
const crossOrigin = cors({
  origin: (origin) => origin,
  allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
  allowHeaders: ["authorization", "content-type"],
  maxAge: 600,
});

export function createEdge<B extends object>(hostOf: (c: Context<EdgeEnv<B>>) => EdgeHost, mount?: (app: Hono<EdgeEnv<B>>) => void): Hono<EdgeEnv<B>> {
  const app = new Hono<EdgeEnv<B>>();

  // One host per request, made once (the Worker's depends on bindings, the LAN server's on the socket).
  app.use("*", async (c, next) => {
    const h = hostOf(c);
    c.set("host", h);
    if (h.configError) return fail(c, 503, "bad_config", h.configError);
    // A page on evil.example whose name was rebound to our address sends `Host: evil.example`: its
    // requests are same-origin to the browser, so only the Host check can refuse them.
    if (h.hostAllowed && !h.hostAllowed((c.req.header("host") ?? "").toLowerCase()))
      return fail(c, 403, "host_not_allowed", "this server answers only its own addresses and names (DNS rebinding); see --allow-host");
    await next();
  });

  // Browsers always send Origin on WebSocket and cross-site requests: only our own origin and the
  // configured ones may act with a token (this closes cross-site WebSocket hijacking). A WebSocket
  // handshake needs no CORS headers (browsers do not check them), and its 101 takes none.
  app.use("/api/*", async (c, next) => {
    const origin = c.req.header("origin");
    if (!origin || origin === new URL(c.req.url).origin) return next();
    if (!c.var.host.origins.includes(origin)) return fail(c, 403, "origin_not_allowed", "this origin may not use the relay (see ALLOWED_ORIGINS)");
    return c.req.header("upgrade") ? next() : crossOrigin(c, next);
  });

  // The body is the wire contract's, exactly; the relay's own version rides in a header (issue 30).
  app.get("/healthz", (c) => c.json({ ok: true, protocol: PROTOCOL }, 200, { "x-lineup-version": RELAY_VERSION }));

  app.route("/", sessionRoutes);
  app.route("/", inboxRoutes);
  app.route("/", pushRoutes);
  app.route("/", e2eRoutes);
  mount?.(app);

  app.all("/api/*", (c) => fail(c, 404, "not_found", "no such endpoint"));
  app.all("/webhooks/*", (c) => fail(c, 404, "not_found", "no such endpoint"));
  app.all("*", (c) => c.var.host.assets(c.req.raw));

  app.onError((e, c) => {
    console.error("edge: unhandled", e.name, e.message);
    return fail(c, 500, "internal", "internal error");
  });
  return app;
}

export { AuthBrake };
