// OAuth 2.1 for MCP connectors (docs/mcp.md "OAuth connectors"): the relay is its own authorization server
// for `/mcp`. Discovery (RFC 9728 protected-resource metadata, RFC 8414 server metadata), the authorization
// endpoint (PKCE S256 only, RFC 8707 `resource`), the token endpoint (codes and rotating refresh tokens),
// registration (RFC 7591) and revocation (RFC 7009); client ids are metadata document URLs or registered
// (clients.ts). Consent happens on a paired device: the desktop page shows a code, the device's "Connect an
// app" screen looks it up and decides (`/api/inbox/oauth/*`, device credential). Allow creates a session in
// that device's inbox, labelled with the client's name; the grant's tokens act as that session's agent token.
import type { Context, Hono } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { checkCredential, sha256 } from "../../shared/edge/credential.js";
import type { Holder } from "../../shared/edge/host.js";
import { body, fail, readCapped, readJson } from "../../shared/edge/http.js";
import type { EdgeEnv, EdgeHost } from "../../shared/edge/host.js";
import type { SessionMeta } from "../../shared/session/engine.js";
import type { Attach } from "../../shared/inbox/core.js";
import {
  canonicalResource,
  ConnectDecideBody,
  ConnectLookupBody,
  formatOAuthSecret,
  GRANT_ID_RE,
  mcpResource,
  normalizeUserCode,
  OAUTH_LIMITS,
  OAUTH_SCOPE,
  oauthSecretInbox,
  pkceS256,
  redirectHost,
  resourceMatches,
  TOKEN_AUTH_METHODS,
  VERIFIER_RE,
  type ConnectRequestInfo,
  type GrantInfo,
  type OAuthClient,
} from "../../shared/contract/oauth.js";
import { randomId, safeEqual } from "../../shared/edge/tokens.js";
import type { Env } from "../env.js";
import { workerHost } from "../host.js";
import { authorizeRoutes } from "./authorize.js";
import { clientSecret, isMetadataDocumentId, register, resolveClient } from "./clients.js";
import { baseOf, clientContext, grantsOf, pending, withParams, type C } from "./common.js";
import type { AccessCheck, GrantRecord, PendingRequest, TokenAnswer } from "./object.js";

export const PRM_PATH = "/.well-known/oauth-protected-resource";
export const ASM_PATH = "/.well-known/oauth-authorization-server";

/** The `resource_metadata` URL for `/mcp`'s 401 challenge (RFC 9728 §5.1). */
export const resourceMetadataUrl = (base: string): string => `${base}${PRM_PATH}/mcp`;

/** The session an OAuth access token acts for on `/mcp`, if the token is live and meant for this relay's MCP server. */
export async function checkAccessToken(env: Env, token: string, base: string): Promise<AccessCheck | undefined> {
  const inbox = oauthSecretInbox("access", token);
  if (!inbox) return undefined;
  const r = await grantsOf(env, inbox).check(await sha256(token));
  return r && resourceMatches(r.resource, base) ? r : undefined;
}

// ---------------------------------------------------------------- helpers

/** Public documents and endpoints without ambient credentials: any origin may read them (browser-based clients);
 * hono/cors answers their preflights and sets the headers on every answer, errors included. */
const publicCors = cors({
  origin: "*",
  allowMethods: ["GET", "POST", "OPTIONS"],
  allowHeaders: ["authorization", "content-type", "mcp-protocol-version"],
  maxAge: 600,
});

type OAuthError =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "invalid_target"
  | "invalid_client_metadata"
  | "invalid_redirect_uri"
  | "server_error";

/** An RFC 6749 §5.2 error (token, registration and revocation endpoints). */
function oauthError(c: Context, error: OAuthError, description: string, status: 400 | 401 | 503 = 400): Response {
  c.header("cache-control", "no-store");
  if (status === 401) c.header("www-authenticate", `Basic realm="lineup-relay"`);
  return c.json({ error, error_description: description }, status);
}

/** The form body of a token-type request (JSON is tolerated); duplicated parameters are refused (RFC 6749 §3.2). */
async function formOf(c: Context): Promise<URLSearchParams | "too_large" | "duplicate"> {
  const text = await readCapped(c.req.raw, 16 * 1024);
  if (text === undefined) return "too_large";
  let form: URLSearchParams;
  if ((c.req.header("content-type") ?? "").includes("application/json")) {
    form = new URLSearchParams();
    try {
      const o = JSON.parse(text) as unknown;
      if (typeof o === "object" && o !== null) for (const [k, v] of Object.entries(o)) if (typeof v === "string") form.append(k, v);
    } catch {
      /* empty form: the missing parameters are reported */
    }
  } else form = new URLSearchParams(text);
  const keys = [...form.keys()];
  if (new Set(keys).size !== keys.length) return "duplicate";
  return form;
}

type ClientVars = EdgeEnv<Env> & { Variables: { form: URLSearchParams; client: OAuthClient } };

/**
 * Middleware of the token and revocation endpoints: CORS, the form (`malformed`: one description for either
 * bad body, as the revocation endpoint says it) and RFC 6749 §2.3.1 client authentication — Basic
 * (form-urlencoded id and secret) or the body's client_id/secret — as `c.var.form` and `c.var.client`.
 */
const authenticatedClient = (malformed?: string) =>
  createMiddleware<ClientVars>(async (c, next) => {
    const form = await formOf(c);
    if (form === "too_large") return oauthError(c, "invalid_request", malformed ?? "body too large");
    if (form === "duplicate") return oauthError(c, "invalid_request", malformed ?? "a parameter is given more than once");
    const h = workerHost(c);
    c.set("form", form);
    let id = form.get("client_id") ?? undefined;
    let secret = form.get("client_secret") ?? undefined;
    const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(c.req.header("authorization") ?? "");
    if (basic) {
      let pair: string;
      try {
        pair = atob(basic[1]!);
      } catch {
        return oauthError(c, "invalid_client", "malformed Basic credentials", 401);
      }
      const i = pair.indexOf(":");
      const bid = decodeURIComponent(pair.slice(0, i < 0 ? pair.length : i).replace(/\+/g, " "));
      if (id !== undefined && id !== bid) return oauthError(c, "invalid_request", "client_id in the body differs from the Basic credentials");
      id = bid;
      secret = i < 0 ? "" : decodeURIComponent(pair.slice(i + 1).replace(/\+/g, " "));
    }
    if (!id) return oauthError(c, "invalid_request", "client_id is required (public clients send it in the body)");
    // A metadata-document client is public: the code and refresh token are bound to its client_id, so its
    // document need not be fetched again here.
    if (isMetadataDocumentId(id)) {
      if (secret) return oauthError(c, "invalid_client", "a client metadata document client has no secret", 401);
      c.set("client", { client_id: id, kind: "metadata_document", client_name: "", redirect_uris: [], auth: "none" });
      return next();
    }
    const r = await resolveClient(id, await clientContext(c, h));
    if (!r.ok) return oauthError(c, "invalid_client", r.description, 401);
    if (r.client.auth !== "none") {
      if (!secret || !(await safeEqual(secret, await clientSecret(await h.tokenSecret(), id))))
        return oauthError(c, "invalid_client", "client authentication failed", 401);
    }
    c.set("client", r.client);
    return next();
  });

/** Answers a token request from the grant object's verdict; ends the session of a grant revoked for a replay. */
async function tokenAnswer(c: Context, h: EdgeHost, r: TokenAnswer, access: string, refresh: string): Promise<Response> {
  if (!r.ok) {
    if (r.revoked)
      await h
        .session(r.revoked.session_id)
        .destroy(r.revoked.epoch)
        .catch(() => false);
    return oauthError(c, r.error, r.description);
  }
  c.header("cache-control", "no-store");
  c.header("pragma", "no-cache");
  return c.json({
    access_token: access,
    token_type: "Bearer",
    expires_in: Math.max(1, Math.floor((r.access_expires_at - Date.now()) / 1000)),
    refresh_token: refresh,
    scope: r.grant.scope,
  });
}

/** A fresh access and refresh token of `inbox`, with their hashes. */
async function mint(inbox: string) {
  const access = formatOAuthSecret("access", inbox, randomId(32));
  const refresh = formatOAuthSecret("refresh", inbox, randomId(32));
  return { access, refresh, hashes: { access: await sha256(access), refresh: await sha256(refresh) } };
}

// ---------------------------------------------------------------- routes

export function oauthRoutes(app: Hono<EdgeEnv<Env>>): void {
  for (const p of [`${PRM_PATH}/mcp`, PRM_PATH, ASM_PATH, "/oauth/token", "/oauth/register", "/oauth/revoke"]) app.use(p, publicCors);
  // ---- discovery
  const prm = (c: C, resource: string) => {
    const base = baseOf(c);
    return c.json({
      resource,
      authorization_servers: [base],
      scopes_supported: [OAUTH_SCOPE],
      bearer_methods_supported: ["header"],
      resource_name: "LineUp relay",
    });
  };
  // RFC 9728 §3.1: the path-inserted document is for `/mcp` itself; the root one describes the origin.
  app.get(`${PRM_PATH}/mcp`, (c) => prm(c, mcpResource(baseOf(c))));
  app.get(PRM_PATH, (c) => prm(c, baseOf(c)));
  app.get(ASM_PATH, (c) => {
    const base = baseOf(c);
    return c.json({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
      revocation_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
      scopes_supported: [OAUTH_SCOPE],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
  });

  // ---- the authorization endpoint and its waiting page (worker/oauth/authorize.ts)
  authorizeRoutes(app);

  // ---- the token endpoint
  app.post("/oauth/token", authenticatedClient(), async (c) => {
    const h = workerHost(c);
    const base = baseOf(c);
    const { form, client } = c.var;
    const resource = form.get("resource") ?? undefined;
    if (resource !== undefined && !resourceMatches(resource, base))
      return oauthError(c, "invalid_target", `this server's only resource is ${mcpResource(base)}`);
    const res = resource === undefined ? undefined : canonicalResource(resource);
    const grantType = form.get("grant_type");
    if (grantType === "authorization_code") {
      const code = form.get("code") ?? "";
      const verifier = form.get("code_verifier") ?? "";
      const inbox = oauthSecretInbox("code", code);
      if (!inbox) return oauthError(c, "invalid_grant", "unknown or expired authorization code");
      if (!VERIFIER_RE.test(verifier)) return oauthError(c, "invalid_request", "code_verifier is required (43-128 characters, PKCE)");
      const t = await mint(inbox);
      const r = await grantsOf(c.env, inbox).redeemCode(
        await sha256(code),
        { client_id: client.client_id, redirect_uri: form.get("redirect_uri") ?? undefined, challenge: await pkceS256(verifier), resource: res },
        t.hashes,
      );
      return tokenAnswer(c, h, r, t.access, t.refresh);
    }
    if (grantType === "refresh_token") {
      const refresh = form.get("refresh_token") ?? "";
      const inbox = oauthSecretInbox("refresh", refresh);
      if (!inbox) return oauthError(c, "invalid_grant", "unknown, expired or revoked refresh token");
      const t = await mint(inbox);
      const r = await grantsOf(c.env, inbox).refresh(await sha256(refresh), client.client_id, res, t.hashes);
      return tokenAnswer(c, h, r, t.access, t.refresh);
    }
    return oauthError(c, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  });

  // ---- registration (RFC 7591) and revocation (RFC 7009)
  app.post("/oauth/register", async (c) => {
    const b = await readJson(c);
    if (!b.ok) return oauthError(c, "invalid_client_metadata", "the body must be a JSON object of client metadata");
    const r = await register(b.value ?? {}, await clientContext(c, workerHost(c)));
    if (!r.ok) return oauthError(c, r.error, r.description);
    c.header("cache-control", "no-store");
    return c.json(r.body, 201);
  });

  app.post("/oauth/revoke", authenticatedClient("malformed revocation request"), async (c) => {
    const h = workerHost(c);
    const { form, client } = c.var;
    const token = form.get("token") ?? "";
    const inbox = oauthSecretInbox("refresh", token) ?? oauthSecretInbox("access", token);
    if (inbox) {
      const ended = await grantsOf(c.env, inbox).revokeToken(await sha256(token), client.client_id);
      if (ended)
        await h
          .session(ended.session_id)
          .destroy(ended.epoch)
          .catch(() => false);
    }
    // RFC 7009 §2.2: 200 whether or not the token was known.
    c.header("cache-control", "no-store");
    return c.body(null, 200);
  });

  // ---- the PWA's "Connect an app" (device credential)
  /** Middleware: the device (or machine) credential of the PWA's requests, as `c.var.holder`; Bearer only, behind the brake. */
  const holder = (...kinds: Holder["kind"][]) =>
    createMiddleware<EdgeEnv<Env> & { Variables: { holder: Holder } }>(async (c, next) => {
      const h = c.var.host;
      if (h.brake.blocked(h.clientAddr, Date.now())) {
        c.header("retry-after", "60");
        return fail(c, 429, "rate_limited", `more than ${h.brake.perMin} wrong credentials or codes in a minute from this address; wait a minute`);
      }
      const token = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1];
      const who = token ? await checkCredential(h, token) : undefined;
      if (!who) {
        if (token) h.brake.failed(h.clientAddr, Date.now());
        return fail(c, 401, "unauthorized", "an inbox credential is required; a revoked one is refused");
      }
      if (!kinds.includes(who.kind)) return fail(c, 403, "forbidden", `this endpoint needs a ${kinds.join(" or ")} credential`);
      c.set("holder", who);
      await next();
    });
  const invalidCode = <E extends EdgeEnv<Env>>(c: Context<E>) => {
    const h = workerHost(c);
    h.brake.failed(h.clientAddr, Date.now());
    return fail(c, 404, "invalid_code", "no open connection request has this code (it is wrong, was already answered, or expired after 10 minutes)");
  };

  app.post("/api/inbox/oauth/lookup", holder("device"), ...body(ConnectLookupBody), async (c) => {
    const b = c.req.valid("json");
    const code = normalizeUserCode(b.code);
    const p = code ? await pending(c.env).peek(code) : undefined;
    if (!code || !p) return invalidCode(c);
    const rh = redirectHost(p.redirect_uri);
    const info: ConnectRequestInfo = {
      code,
      client_name: p.client.client_name,
      client_id: p.client.client_id,
      client_kind: p.client.kind,
      ...(p.client.kind === "metadata_document" ? { client_host: new URL(p.client.client_id).host } : {}),
      redirect_uri: p.redirect_uri,
      redirect_host: rh.host,
      redirect_loopback: rh.loopback,
      expires_at: p.expires_at,
    };
    return c.json(info);
  });

  app.post("/api/inbox/oauth/decide", holder("device"), ...body(ConnectDecideBody), async (c) => {
    const who = c.var.holder;
    const b = c.req.valid("json");
    const code = normalizeUserCode(b.code);
    const p = code ? await pending(c.env).claim(code) : undefined;
    if (!code || !p) return invalidCode(c);
    const backTo = (params: Record<string, string>) =>
      withParams(p.redirect_uri, { ...params, ...(p.state !== undefined ? { state: p.state } : {}), iss: p.issuer });
    if (!b.allow) {
      await pending(c.env).finish(p.rid, backTo({ error: "access_denied", error_description: "the human declined on their LineUp device" }));
      return c.json({ allowed: false });
    }
    try {
      return await allow(c, who, p, backTo);
    } catch (e) {
      // The desktop page must not wait for an answer that will never come.
      await pending(c.env).finish(p.rid, backTo({ error: "server_error", error_description: "the relay failed to record the approval; try again" }));
      throw e;
    }
  });

  /** Allow: a session in the device's inbox, the grant, and the code for the client's redirect. */
  async function allow<E extends EdgeEnv<Env>>(
    c: Context<E>,
    who: Holder,
    p: PendingRequest & { rid: string },
    backTo: (params: Record<string, string>) => string,
  ): Promise<Response> {
    const h = workerHost(c);
    // The session the app will act as: in this device's inbox, labelled with the client's name.
    const now = Date.now();
    const sid = randomId(16);
    const label = p.client.client_name.slice(0, 120);
    const meta: SessionMeta = { session_id: sid, expires_at: now + OAUTH_LIMITS.sessionTtlS * 1000, epoch: now, label, inbox: who.inbox };
    const made = await h.session(sid).init(meta);
    if (made === "exists") {
      await pending(c.env).finish(p.rid, backTo({ error: "server_error", error_description: "session id collision" }));
      return fail(c, 409, "conflict", "session id collision; start again");
    }
    const attach: Attach = { session_id: sid, label, created_at: now, expires_at: made.expires_at, epoch: made.epoch };
    await h.inboxes!.inbox(who.inbox).attach(attach);
    const rh = redirectHost(p.redirect_uri);
    const grant: GrantRecord = {
      id: `ga_${randomId(8).slice(0, 10)}`,
      client_name: p.client.client_name,
      client_id: p.client.client_id,
      client_kind: p.client.kind,
      ...(p.client.kind === "metadata_document" ? { client_host: new URL(p.client.client_id).host } : {}),
      redirect_host: rh.host,
      session_id: sid,
      created_at: now,
      last_used: 0,
      expires_at: made.expires_at,
      approved_by: who.name,
      redirect_uri: p.redirect_uri,
      resource: p.resource,
      scope: p.scope,
      epoch: made.epoch,
    };
    const code2 = formatOAuthSecret("code", who.inbox, randomId(32));
    const added = await grantsOf(c.env, who.inbox).addGrant(grant, await sha256(code2), {
      client_id: p.client.client_id,
      redirect_uri: p.redirect_uri,
      redirect_given: p.redirect_given,
      code_challenge: p.code_challenge,
      resource: p.resource,
    });
    if (added === "full") {
      await h
        .session(sid)
        .destroy(made.epoch)
        .catch(() => false);
      await pending(c.env).finish(p.rid, backTo({ error: "access_denied", error_description: "this LineUp inbox has the most connected apps it may have" }));
      return fail(c, 409, "too_many", `an inbox may have ${OAUTH_LIMITS.maxGrantsPerInbox} connected apps; revoke one first`);
    }
    await pending(c.env).finish(p.rid, backTo({ code: code2 }));
    const { redirect_uri: _r, resource: _s, scope: _c, epoch: _e, ...info } = grant;
    return c.json({ allowed: true, grant: info satisfies GrantInfo }, 201);
  }

  app.get("/api/inbox/oauth/grants", holder("device", "machine"), async (c) => {
    return c.json({ grants: await grantsOf(c.env, c.var.holder.inbox).grants() });
  });

  app.delete("/api/inbox/oauth/grants/:id", holder("device", "machine"), async (c) => {
    const who = c.var.holder;
    const id = c.req.param("id");
    const ended = GRANT_ID_RE.test(id) ? await grantsOf(c.env, who.inbox).revoke(id) : undefined;
    if (!ended) return fail(c, 404, "not_found", "no such connected app in this inbox");
    // Its tokens are already refused; ending the session closes its open calls and removes it from the inbox.
    await workerHost(c)
      .session(ended.session_id)
      .destroy(ended.epoch)
      .catch(() => false);
    return c.body(null, 204);
  });
}
