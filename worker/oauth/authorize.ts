// The authorization endpoint (docs/mcp.md "OAuth connectors"): the request is checked, opened in the OAuth
// object's "pending" role, and the desktop browser waits on the relay's page while the human decides on a
// paired device (worker/oauth/routes.ts, `/api/inbox/oauth/*`).
//
// Nothing is redirected to the client before the human has decided. A client is made by anyone — dynamic
// registration is open, a metadata document is any https URL — so its redirect URI is not trusted until a
// person allowed or denied it: a malformed request redirected "back" at once would make the relay an open
// redirector onto a phishing page (RFC 9700 §4.11.2; OAuth 2.1 draft §7.12.2; the MCP authorization spec,
// "Open Redirection": "SHOULD only automatically redirect the user agent if it trusts the redirection URI").
// So every error of the request itself — unknown client, unregistered redirect URI, response type, PKCE,
// resource, state, scope, too many open requests — is shown on the relay's own page. RFC 6749 §4.1.2.1's
// error redirect is used only for the human's decision (access_denied) and failures after it.
import type { Hono } from "hono";
import type { EdgeEnv } from "../../shared/edge/app.js";
import { canonicalResource, CHALLENGE_RE, mcpResource, OAUTH_LIMITS, OAUTH_SCOPE, redirectMatches, resourceMatches } from "../../shared/contract/oauth.js";
import type { Env } from "../env.js";
import { workerHost } from "../host.js";
import { resolveClient } from "./clients.js";
import { baseOf, clientContext, html, pending, type C } from "./common.js";
import { messagePage, PAGE_CSS, PAGE_HEADERS, WAIT_JS, waitPage } from "./page.js";

const CANNOT = "Cannot connect this app";

export function authorizeRoutes(app: Hono<EdgeEnv<Env>>): void {
  app.get("/oauth/static/wait.js", (c) => {
    c.header("content-type", "text/javascript; charset=utf-8");
    c.header("cache-control", "public, max-age=300");
    c.header("x-content-type-options", "nosniff");
    return c.body(WAIT_JS);
  });
  app.get("/oauth/static/page.css", (c) => {
    c.header("content-type", "text/css; charset=utf-8");
    c.header("cache-control", "public, max-age=300");
    c.header("x-content-type-options", "nosniff");
    return c.body(PAGE_CSS);
  });

  app.get("/oauth/authorize", async (c) => {
    const q = new URL(c.req.url).searchParams;
    const rid = q.get("rid");
    if (rid !== null) return waiting(c, rid);
    const h = workerHost(c);
    const base = baseOf(c);
    const one = (k: string): string | undefined | null => {
      const all = q.getAll(k);
      return all.length > 1 ? null : all[0];
    };
    const refuse = (message: string) => html(c, messagePage(CANNOT, `${message} Start connecting again from your app.`), 400);
    const clientId = one("client_id");
    if (!clientId) return refuse("The request names no client (client_id), or names more than one.");
    const r = await resolveClient(clientId, await clientContext(c, h));
    if (!r.ok && r.error === "rate_limited") {
      c.header("retry-after", "60");
      return html(c, messagePage(CANNOT, `Too many apps were looked up from this address: ${r.description}.`), 429);
    }
    if (!r.ok) return refuse(`The app could not be identified: ${r.description}.`);
    const client = r.client;
    const givenRedirect = one("redirect_uri");
    if (givenRedirect === null) return refuse("The request names more than one redirect_uri.");
    const redirect = givenRedirect ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0] : undefined);
    if (!redirect || !client.redirect_uris.some((u) => redirectMatches(u, redirect))) {
      return refuse("The app's redirect_uri is not one it registered, so the answer cannot be sent back to it safely.");
    }
    const state = one("state");
    if (state === null || (state !== undefined && state.length > OAUTH_LIMITS.maxStateChars))
      return refuse(`The request's state must be given once and be at most ${OAUTH_LIMITS.maxStateChars} characters (invalid_request).`);
    if (one("response_type") !== "code") return refuse("Only response_type=code is supported (unsupported_response_type).");
    const challenge = one("code_challenge");
    if (one("code_challenge_method") !== "S256" || !challenge || !CHALLENGE_RE.test(challenge))
      return refuse("PKCE is required: code_challenge with code_challenge_method=S256 (invalid_request).");
    const resources = q.getAll("resource");
    if (resources.length > 1 || (resources.length === 1 && !resourceMatches(resources[0]!, base)))
      return refuse(`This server's only resource is ${mcpResource(base)} (invalid_target).`);
    const scope = one("scope");
    if (scope === null || (scope !== undefined && scope.length > 1024)) return refuse("The request's scope must be given once (invalid_scope).");
    const begun = await pending(c.env).begin(
      {
        client,
        redirect_uri: redirect,
        redirect_given: givenRedirect !== undefined,
        ...(state !== undefined ? { state } : {}),
        code_challenge: challenge,
        resource: resources[0] ? canonicalResource(resources[0]) : mcpResource(base),
        scope: OAUTH_SCOPE,
        issuer: base,
      },
      h.clientAddr,
    );
    if (begun === "busy") {
      c.header("retry-after", "60");
      return html(c, messagePage(CANNOT, "There are too many open connection requests right now (temporarily_unavailable). Try again in a few minutes."), 503);
    }
    // Post/redirect/get: reloading the page shows the same code instead of opening another request.
    return c.redirect(`/oauth/authorize?rid=${encodeURIComponent(begun.rid)}`, 303);
  });

  async function waiting(c: C, rid: string): Promise<Response> {
    const st = /^[A-Za-z0-9_-]{24}$/.test(rid) ? await pending(c.env).status(rid) : undefined;
    if (!st)
      return html(
        c,
        messagePage("This request has expired", "Connection requests wait 10 minutes for your answer. Start connecting again from your app."),
        404,
      );
    if (st.state === "done") {
      for (const [k, v] of Object.entries(PAGE_HEADERS)) c.header(k, v);
      return c.redirect(st.redirect, 303);
    }
    const h = workerHost(c);
    const connect_url = `${h.publicBase ?? baseOf(c)}/connect#code=${st.code}`;
    return html(
      c,
      waitPage({
        rid,
        code: st.code,
        client_name: st.client_name,
        redirect_host: st.redirect_host,
        expires_at: st.expires_at,
        connect_url,
        claimed: st.state === "claimed",
      }),
    );
  }

  app.get("/oauth/authorize/status", async (c) => {
    c.header("cache-control", "no-store");
    const rid = c.req.query("rid") ?? "";
    const st = /^[A-Za-z0-9_-]{24}$/.test(rid) ? await pending(c.env).status(rid) : undefined;
    if (!st) return c.json({ state: "expired" }, 404);
    return c.json(st.state === "done" ? { state: "done", redirect: st.redirect } : { state: st.state, expires_at: st.expires_at });
  });
}
