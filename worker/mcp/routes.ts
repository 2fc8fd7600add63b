// `POST /mcp`: the relay as a remote MCP server (Streamable HTTP, stateless). Auth is the session's agent
// token as `Authorization: Bearer` — never in the URL — and binds the request to that token's session. The
// SDK v2 handler serves 2025-03-26 … 2025-11-25 (stateless legacy leg) and 2026-07-28 (`server/discover`).
import { createMcpHandler } from "@modelcontextprotocol/server";
import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { httpError, jsonDepth, LIMITS, SESSION_ID_RE } from "../../shared/contract/protocol.js";
import { parseBudgetHeader } from "../../shared/mcp/budget.js";
import { tokenIdentity } from "../../shared/mcp/call-id.js";
import { isClientTimeout } from "../../shared/mcp/hold.js";
import { readCapped, type EdgeHost } from "../../shared/edge/app.js";
import { ownerRevoked } from "../../shared/edge/credential.js";
import { isOAuthAccessToken } from "../../shared/contract/oauth.js";
import { verifyToken } from "../../shared/edge/tokens.js";
import type { Env } from "../env.js";
import { workerHost } from "../host.js";
import { checkAccessToken, resourceMetadataUrl } from "../oauth/routes.js";
import { rendezvousIdOf, signalCancel } from "./cancel.js";
import { edgeLink } from "./link.js";
import type { SessionLink } from "./port.js";
import { RequestScope } from "./scope.js";
import { createRemoteServer, REMOTE_DEFAULTS, type Caller, type RemoteOptions } from "./server.js";

type C = Context<{ Bindings: Env }>;

export interface McpRouteOptions extends RemoteOptions {
  /** How to reach a session's object for a token of `epoch` (the engine's port; tests may wrap it). */
  link: (host: EdgeHost, epoch: number) => SessionLink;
}

const REALM = "lineup-relay";
const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion";

const fail = (c: C, status: 400 | 401 | 403 | 413, code: string, message: string, challenge?: string) => {
  if (challenge !== undefined) c.header("www-authenticate", challenge);
  return c.json(httpError(code, message), status);
};

/**
 * RFC 6750 challenge; no `error` when no credentials were sent at all. `resource_metadata` (RFC 9728 §5.1)
 * points OAuth clients (claude.ai, ChatGPT, …) at the relay's own authorization server (worker/oauth).
 */
const bearer = (c: C, error?: "invalid_token" | "invalid_request", description?: string) =>
  `Bearer realm="${REALM}", resource_metadata="${resourceMetadataUrl(new URL(c.req.url).origin)}"${error ? `, error="${error}"` : ""}${description ? `, error_description="${description.replace(/["\\]/g, "")}"` : ""}`;

/** Preflights and answers for an allowed other origin (hono/cors, as the edge's); our own origin needs none. */
const crossOrigin = cors({
  origin: (origin) => origin,
  allowMethods: ["POST", "OPTIONS"],
  allowHeaders: ["authorization", "content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name", "lineup-wait-budget", "last-event-id"],
  maxAge: 600,
});

export function createMcpRoutes(options: Partial<McpRouteOptions> = {}): Hono<{ Bindings: Env }> {
  const opts: McpRouteOptions = { ...REMOTE_DEFAULTS, link: (h, epoch) => edgeLink(h.session, epoch), ...options };
  const app = new Hono<{ Bindings: Env }>();

  // Stateless: no standalone SSE stream (GET) and no session to end (DELETE).
  app.on(["GET", "DELETE"], "/", (c) => {
    c.header("allow", "POST");
    return c.json({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless (POST only)." }, id: null }, 405);
  });

  // The edge's origin policy (as on /api/*): a browser may only come from our own or a configured origin; another
  // allowed origin gets its preflight and CORS headers from hono/cors.
  app.use("/", async (c, next) => {
    const origin = c.req.header("origin");
    if (!origin || origin === new URL(c.req.url).origin) return next();
    if (!workerHost(c).origins.includes(origin)) return c.json(httpError("origin_not_allowed", "this origin may not use the relay (see ALLOWED_ORIGINS)"), 403);
    return crossOrigin(c, next);
  });

  app.options("/", (c) => c.body(null, 204));

  app.post("/", async (c) => {
    const host = workerHost(c);
    const url = new URL(c.req.url);
    if (url.searchParams.has("token")) {
      return fail(
        c,
        400,
        "token_in_url",
        "tokens are not accepted in the URL; send Authorization: Bearer <agent token>",
        bearer(c, "invalid_request", "send the token in the Authorization header"),
      );
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
    if (!m)
      return fail(
        c,
        401,
        "unauthorized",
        "this MCP server needs Authorization: Bearer <agent token> (a LineUp session's agent token) or an OAuth access token",
        bearer(c),
      );
    const token = m[1]!;
    // An OAuth access token (worker/oauth) acts as the agent token of the session its grant created; its
    // call identity is the grant, so retries join across token refreshes. A valid agent token is accepted
    // as before, without any challenge (Claude Code may ignore its header once OAuth is advertised).
    let t: { sessionId: string; epoch: number; identity: string };
    if (isOAuthAccessToken(token)) {
      const o = await checkAccessToken(c.env, token, new URL(c.req.url).origin);
      if (!o)
        return fail(
          c,
          401,
          "unauthorized",
          "the OAuth access token is not valid (expired, revoked, or for another server)",
          bearer(c, "invalid_token", "the access token is expired or revoked"),
        );
      t = { sessionId: o.session_id, epoch: o.epoch, identity: `oauth:${o.grant_id}` };
    } else {
      const v = await verifyToken(await host.tokenSecret(), token);
      if (!v.ok || !SESSION_ID_RE.test(v.sessionId))
        return fail(c, 401, "unauthorized", "the token is not a valid LineUp session token", bearer(c, "invalid_token", "the token is not valid"));
      if (v.role !== "agent") return fail(c, 403, "forbidden", "an app token cannot act as the agent: use the session's agent token");
      if (v.expired)
        return fail(c, 401, "session_expired", "this token's session has expired; create a new session", bearer(c, "invalid_token", "the session has expired"));
      if (await ownerRevoked(host, v.owner))
        return fail(
          c,
          401,
          "session_ended",
          "this token's session ended: the agent machine that created it was revoked",
          bearer(c, "invalid_token", "the session ended"),
        );
      t = { sessionId: v.sessionId, epoch: v.epoch, identity: token };
    }

    const text = await readCapped(c.req.raw, LIMITS.maxHttpBodyBytes);
    if (text === undefined) return fail(c, 413, "too_large", `body over ${LIMITS.maxHttpBodyBytes} bytes`);
    let body: unknown;
    try {
      // The relay's depth cap for every JSON body: deeper JSON overflows recursive validation.
      if (jsonDepth(text) > LIMITS.maxJsonDepth) throw new Error("too deep");
      body = JSON.parse(text);
    } catch {
      return c.json({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not valid JSON" }, id: null }, 400);
    }

    const link = opts.link(host, t.epoch);
    const caller: Caller = {
      sid: t.sessionId,
      tokenId: await tokenIdentity(t.identity),
      userAgent: c.req.header("user-agent") ?? "",
      budgetOverrideS: parseBudgetHeader(c.req.header("lineup-wait-budget")),
    };
    await forwardCancels(c, link, caller, body);

    const scope = new RequestScope((p) => waitUntil(c, p));
    const log = (line: string) => console.log(line);
    const handler = createMcpHandler(({ era }) => createRemoteServer({ link, caller, scope, era, opts, log }), {
      onerror: (e) => console.log("mcp:", e.message),
    });
    const res = await handler.fetch(normalized(c.req.raw, body), { parsedBody: body });
    return scope.wrap(res);
  });

  app.all("*", (c) => c.json(httpError("not_found", "no such endpoint (the MCP endpoint is POST /mcp)"), 404));
  return app;
}

export const mcpRoutes = createMcpRoutes();

/**
 * Tolerance for known client quirks, so the SDK's strict checks do not refuse real clients:
 * - a repeated `Mcp-Protocol-Version` (`2025-11-25, 2025-11-25`: a client merging its own and a configured
 *   header) is collapsed to the one version it names;
 * - a 2026-07-28 body (`_meta` protocol version) under a header naming another version (claude.ai
 *   connectors, anthropics/claude-code#93290) follows the body, which is what the server answers by;
 * - a missing `Accept` (some connectors) is read as accepting both JSON and SSE.
 */
function normalized(raw: Request, body: unknown): Request {
  const headers = new Headers(raw.headers);
  const pv = headers.get("mcp-protocol-version");
  if (pv?.includes(",")) {
    const vs = [
      ...new Set(
        pv
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ];
    if (vs.length === 1) headers.set("mcp-protocol-version", vs[0]!);
  }
  const claimed = envelopeVersion(body);
  if (claimed !== undefined && headers.get("mcp-protocol-version") !== claimed) headers.set("mcp-protocol-version", claimed);
  const accept = headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) headers.set("accept", "application/json, text/event-stream");
  return new Request(raw.url, { method: "POST", headers, signal: raw.signal });
}

function envelopeVersion(body: unknown): string | undefined {
  const msgs = Array.isArray(body) ? body : [body];
  for (const m of msgs) {
    const meta = isObject(m) && isObject(m.params) && isObject(m.params._meta) ? m.params._meta : undefined;
    const v = meta?.[PROTOCOL_VERSION_KEY];
    if (typeof v === "string") return v;
  }
  return undefined;
}

/**
 * `notifications/cancelled` names the JSON-RPC id of a waiting tools/call: signal that request (cancel.ts).
 * A cancel whose reason says the client's own timer ran out is not the user: the card stays open.
 */
async function forwardCancels(c: C, link: SessionLink, caller: Caller, body: unknown): Promise<void> {
  for (const m of Array.isArray(body) ? body : [body]) {
    if (!isObject(m) || m.method !== "notifications/cancelled" || !isObject(m.params)) continue;
    const id = m.params.requestId;
    if (typeof id !== "string" && typeof id !== "number") continue;
    if (isClientTimeout(m.params.reason)) continue;
    const { linger } = await signalCancel(link, caller.sid, await rendezvousIdOf(caller.tokenId, caller.userAgent, id));
    waitUntil(c, linger);
  }
}

function waitUntil(c: C, p: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(p);
  } catch {
    void p; // no execution context (a bare app.request in tests): the promise runs on its own
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
