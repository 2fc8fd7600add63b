// OAuth for MCP connectors inside workerd (the real Worker, OAuth, inbox and session objects): discovery
// documents checked against RFC 9728 / RFC 8414 / the MCP authorization spec (and the MCP SDK's own schemas),
// registration (RFC 7591) and metadata-document clients (CIMD, outbound fetch stubbed), the authorization
// request's refusals, consent from a paired device's credential, the token endpoint's refusals (PKCE, redirect
// URI, resource, reused code, client authentication), refresh rotation with its retry grace and replay
// detection, tokens acting as the session's agent token on /mcp (MCP SDK client), and revocation.
import { Client as McpClient, StreamableHTTPClientTransport, type CallToolResult } from "@modelcontextprotocol/client";
import {
  OAuthClientInformationFullSchema,
  OAuthMetadataSchema,
  OAuthProtectedResourceMetadataSchema,
  OAuthTokensSchema,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { sha256 } from "../../shared/edge/credential.js";
import type { InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { ConnectRequestInfo, GrantInfo } from "../../shared/contract/oauth.js";
import { randomId } from "../../shared/edge/tokens.js";
import { CIMD_REFUSED, clearClientCache } from "../../worker/oauth/clients.js";
import { connect, RELAY_KEY, type Client } from "./helpers.js";
import {
  authorizeUrl,
  BASE,
  CALLBACK,
  connected,
  decide,
  mcpPost,
  oauthStub,
  pairedDevice,
  pkce,
  postForm,
  postJson,
  registerClient,
  startAuthorization,
  worker,
  type Json,
  type Tokens,
} from "./oauth-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  vi.restoreAllMocks();
  clearClientCache();
});

async function mcp(token: string): Promise<McpClient> {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
    fetch: (u, i) => worker(u.toString(), i),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const c = new McpClient({ name: "oauth-test", version: "0.0.0" });
  await c.connect(transport);
  cleanups.push(() => c.close().catch(() => {}));
  return c;
}

describe("discovery documents", () => {
  it("answers any origin's preflight of its public endpoints (hono/cors), and its errors carry the CORS header too", async () => {
    const pre = await worker("/oauth/token", {
      method: "OPTIONS",
      headers: { origin: "https://claude.ai", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
    const bad = await worker("/oauth/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=nonsense" });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("protected-resource metadata for /mcp (RFC 9728): resource is the MCP URL, authorization_servers names the relay", async () => {
    const r = await worker("/.well-known/oauth-protected-resource/mcp");
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    const doc = (await r.json()) as Json;
    // RFC 9728 §2: `resource` is REQUIRED and (§3.3) identical to the resource the URL was built from;
    // MCP: authorization_servers MUST hold at least one.
    expect(doc.resource).toBe(`${BASE}/mcp`);
    expect(doc.authorization_servers).toEqual([BASE]);
    expect(doc.bearer_methods_supported).toEqual(["header"]);
    expect(OAuthProtectedResourceMetadataSchema.safeParse(doc).success).toBe(true);
    // The root document describes the origin (the client's fallback).
    const root = (await (await worker("/.well-known/oauth-protected-resource")).json()) as Json;
    expect(root.resource).toBe(BASE);
    expect(root.authorization_servers).toEqual([BASE]);
  });

  it("authorization-server metadata (RFC 8414) with what MCP clients check: S256, CIMD, registration, iss", async () => {
    const doc = (await (await worker("/.well-known/oauth-authorization-server")).json()) as Json;
    // RFC 8414 §2 REQUIRED: issuer (= the URL's origin), authorization_endpoint, token_endpoint, response_types_supported.
    expect(doc.issuer).toBe(BASE);
    expect(doc.authorization_endpoint).toBe(`${BASE}/oauth/authorize`);
    expect(doc.token_endpoint).toBe(`${BASE}/oauth/token`);
    expect(doc.response_types_supported).toEqual(["code"]);
    // MCP: clients refuse to proceed without code_challenge_methods_supported (S256).
    expect(doc.code_challenge_methods_supported).toEqual(["S256"]);
    expect(doc.client_id_metadata_document_supported).toBe(true);
    expect(doc.registration_endpoint).toBe(`${BASE}/oauth/register`);
    expect(doc.grant_types_supported).toEqual(["authorization_code", "refresh_token"]);
    expect(doc.token_endpoint_auth_methods_supported).toContain("none");
    expect(doc.authorization_response_iss_parameter_supported).toBe(true);
    const parsed = OAuthMetadataSchema.safeParse(doc);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  });

  it("/mcp without a token answers 401 with resource_metadata; a valid agent token is served without any challenge", async () => {
    const r = await mcpPost();
    expect(r.status).toBe(401);
    const ch = r.headers.get("www-authenticate") ?? "";
    const url = /resource_metadata="([^"]+)"/.exec(ch)?.[1];
    expect(url).toBe(`${BASE}/.well-known/oauth-protected-resource/mcp`);
    expect((await worker(url!)).status).toBe(200);
    // Bearer still works (Claude Code may ignore its header once OAuth is advertised: both paths must work).
    const s = (await (await postJson("/api/sessions", RELAY_KEY, {})).json()) as { agent_token: string };
    const ok = await mcpPost(s.agent_token);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("www-authenticate")).toBeNull();
    // An OAuth-shaped token that is not live: 401 invalid_token with the metadata, so the client refreshes.
    const bogus = await mcpPost(`lua1.${randomId(9)}.${randomId(32)}`);
    expect(bogus.status).toBe(401);
    expect(bogus.headers.get("www-authenticate")).toMatch(/resource_metadata=".*", error="invalid_token"/);
  });
});

describe("client registration (RFC 7591) and metadata documents (CIMD)", () => {
  it("registers a public client and a confidential one (the RFC's default), signed into the client id; bad metadata is refused", async () => {
    const pub = await registerClient();
    expect(OAuthClientInformationFullSchema.safeParse(pub).success).toBe(true);
    expect(pub.client_id).toMatch(/^lcd1\./);
    expect(pub.client_secret).toBeUndefined();
    expect(pub.token_endpoint_auth_method).toBe("none");
    const conf = await registerClient({ token_endpoint_auth_method: undefined });
    expect(conf.token_endpoint_auth_method).toBe("client_secret_basic");
    expect(conf.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const bad = async (meta: Json, error: string) => {
      const r = await postJson("/oauth/register", undefined, { client_name: "x", ...meta });
      expect(r.status).toBe(400);
      expect(((await r.json()) as Json).error).toBe(error);
    };
    await bad({ redirect_uris: ["http://evil.example/cb"] }, "invalid_redirect_uri");
    await bad({ redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri");
    await bad({ redirect_uris: [] }, "invalid_redirect_uri");
    await bad({ redirect_uris: [CALLBACK], grant_types: ["client_credentials"] }, "invalid_client_metadata");
    await bad({ redirect_uris: [CALLBACK], token_endpoint_auth_method: "private_key_jwt" }, "invalid_client_metadata");
    // Native apps: loopback http and private-use schemes are fine.
    await registerClient({ redirect_uris: ["http://127.0.0.1:33418/callback", "cursor://anysphere.cursor-retrieval/oauth/callback"] });
  });

  it("a forged or tampered registered client id is unknown: the authorize page refuses it without redirecting", async () => {
    const { client_id } = await registerClient();
    const { challenge } = await pkce();
    const [pre, payload, mac] = client_id.split(".");
    const forged = `${pre}.${payload}.${mac!.slice(0, -1)}${mac!.endsWith("A") ? "B" : "A"}`;
    const r = await worker(authorizeUrl(forged, challenge), { redirect: "manual" });
    expect(r.status).toBe(400);
    expect(r.headers.get("location")).toBeNull();
    expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
  });

  it("fetches a metadata document client: its name and redirect URIs count; a mismatched, secret-bearing, redirecting or oversized document is refused, all in the same words", async () => {
    const docs: Record<string, { status: number; body: unknown; headers?: Record<string, string> }> = {};
    const seen: string[] = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = input instanceof Request ? input.url : input.toString();
      const d = docs[url];
      if (!d) return real(input, init);
      seen.push(url);
      expect(init?.redirect).toBe("manual");
      return new Response(typeof d.body === "string" ? d.body : JSON.stringify(d.body), {
        status: d.status,
        headers: { "content-type": "application/json", ...d.headers },
      });
    });
    const id = "https://app.example/oauth/client.json";
    docs[id] = { status: 200, body: { client_id: id, client_name: "Example Assistant", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" } };
    const { d } = await pairedDevice();
    const { challenge } = await pkce();
    const { code, html } = await startAuthorization(authorizeUrl(id, challenge));
    expect(html).toContain("Example Assistant");
    const info = (await (await postJson("/api/inbox/oauth/lookup", d.device_credential, { code })).json()) as ConnectRequestInfo;
    expect(info).toMatchObject({
      client_name: "Example Assistant",
      client_id: id,
      client_kind: "metadata_document",
      client_host: "app.example",
      redirect_host: "app.example",
      redirect_loopback: false,
    });
    expect(seen).toEqual([id]);

    const refused = async (doc: { status: number; body: unknown; headers?: Record<string, string> }, url = "https://app.example/oauth/other.json") => {
      docs[url] = doc;
      clearClientCache();
      const r = await worker(authorizeUrl(url, challenge), { redirect: "manual" });
      expect(r.status, url).toBe(400);
      expect(r.headers.get("location")).toBeNull();
      return r.text();
    };
    // One text for every refusal (issue 26 §7: no oracle); the detail is in the relay's log.
    const texts = [
      await refused({ status: 200, body: { client_id: "https://app.example/someone-else.json", client_name: "x", redirect_uris: [CALLBACK] } }),
      await refused({
        status: 200,
        body: { client_id: "https://app.example/oauth/other.json", client_name: "x", redirect_uris: [CALLBACK], client_secret: "s" },
      }),
      await refused({ status: 302, body: "", headers: { location: "https://elsewhere.example/" } }),
      await refused({ status: 200, body: "x".repeat(6000) }),
    ];
    expect(new Set(texts).size).toBe(1);
    expect(texts[0]).toContain(CIMD_REFUSED);
    // Its redirect_uri must be one the document lists.
    expect(
      await refused({
        status: 200,
        body: { client_id: "https://app.example/oauth/other.json", client_name: "x", redirect_uris: ["https://app.example/other-callback"] },
      }),
    ).toContain("redirect_uri");
  });

  it("an http loopback client id (a local fake) is accepted only when the relay itself is served on localhost", async () => {
    const id = "http://127.0.0.1:9/client.json";
    vi.spyOn(globalThis, "fetch").mockImplementation(
      async () => new Response(JSON.stringify({ client_id: id, client_name: "Local Fake", redirect_uris: ["http://127.0.0.1:9/cb"] })),
    );
    const { challenge } = await pkce();
    const q = { redirect_uri: "http://127.0.0.1:9/cb" };
    const remote = await worker(authorizeUrl(id, challenge, q), { redirect: "manual" });
    expect(remote.status).toBe(400);
    expect(await remote.text()).toContain("https");
    const local = await worker(authorizeUrl(id, challenge, q, "http://localhost:8787"), { redirect: "manual" });
    expect(local.status).toBe(303);
  });
});

describe("the authorization request", () => {
  it("before the human decides nothing is redirected (no open redirector): an unregistered redirect_uri, plain or no PKCE, another response type or resource are shown on the relay's page", async () => {
    const { client_id } = await registerClient();
    const { challenge } = await pkce();
    const shown = async (extra: Record<string, string>, words: string) => {
      const r = await worker(authorizeUrl(client_id, challenge, extra), { redirect: "manual" });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(r.headers.get("location")).toBeNull();
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await r.text()).toContain(words);
    };
    await shown({ redirect_uri: "https://attacker.example/cb" }, "not one it registered");
    await shown({ code_challenge_method: "plain" }, "invalid_request");
    await shown({ code_challenge_method: "", code_challenge: "" }, "invalid_request");
    await shown({ response_type: "token" }, "unsupported_response_type");
    await shown({ resource: "https://other.example/mcp" }, "invalid_target");
  });

  it("one address may hold 10 open requests; the 11th is refused on the relay's page as temporarily_unavailable, not redirected", async () => {
    const { client_id } = await registerClient();
    const { challenge } = await pkce();
    const addr = `203.0.113.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 10; i++) await startAuthorization(authorizeUrl(client_id, challenge), addr);
    const r = await worker(authorizeUrl(client_id, challenge), { redirect: "manual", headers: { "cf-connecting-ip": addr } });
    expect(r.status).toBe(503);
    expect(r.headers.get("location")).toBeNull();
    expect(await r.text()).toContain("temporarily_unavailable");
  });

  it("escapes the client's name on the page, which carries no inline script", async () => {
    const { client_id } = await registerClient({ client_name: `<img src=x onerror=alert(1)>"'&` });
    const { challenge } = await pkce();
    const { html } = await startAuthorization(authorizeUrl(client_id, challenge));
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;");
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/<[^>]*\son[a-z]+=/i);
  });

  it("a denial sends the client access_denied; the code cannot be decided twice; lookups need a device and the right code", async () => {
    const { m, d } = await pairedDevice();
    const { client_id } = await registerClient();
    const { challenge } = await pkce();
    const { rid, code } = await startAuthorization(authorizeUrl(client_id, challenge));
    expect((await postJson("/api/inbox/oauth/lookup", m.machine_credential, { code })).status).toBe(403);
    expect((await postJson("/api/inbox/oauth/lookup", undefined, { code })).status).toBe(401);
    expect((await postJson("/api/inbox/oauth/lookup", d.device_credential, { code: "BBBB-BBBB" })).status).toBe(404);
    const info = (await (
      await postJson("/api/inbox/oauth/lookup", d.device_credential, { code: code.toLowerCase().replace("-", " ") })
    ).json()) as ConnectRequestInfo;
    expect(info.client_name).toBe("Test Connector");
    const { redirect } = await decide(d, code, false, rid);
    expect([redirect.searchParams.get("error"), redirect.searchParams.get("state"), redirect.searchParams.get("code")]).toEqual([
      "access_denied",
      "st-1",
      null,
    ]);
    expect((await postJson("/api/inbox/oauth/decide", d.device_credential, { code, allow: true })).status).toBe(404);
    // The waiting page, reloaded, goes to the decision as well.
    const again = await worker(`/oauth/authorize?rid=${rid}`, { redirect: "manual" });
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe(redirect.toString());
  });
});

describe("tokens", () => {
  it("Allow creates a session in the device's inbox labelled with the client's name; the access token acts as its agent token on /mcp", async () => {
    const { tokens, d, grant } = await connected();
    expect(OAuthTokensSchema.safeParse(tokens).success).toBe(true);
    expect(tokens.token_type).toBe("Bearer");
    expect(tokens.expires_in).toBeGreaterThan(3500);
    expect(tokens.expires_in).toBeLessThanOrEqual(3600);
    const st = (await (await worker("/api/inbox", { headers: { authorization: `Bearer ${d.device_credential}` } })).json()) as InboxState;
    expect(st.sessions.find((s) => s.session_id === grant.session_id)?.label).toBe("Test Connector");
    // The human: a device connection into that session, answering a question from the connector.
    const human: Client = await connect(grant.session_id, d.device_credential, { clientId: d.device_id });
    cleanups.push(() => human.close());
    await human.next("tool.list");
    human.send({ type: "tool.list", tools: BUILTIN_TOOLS });
    const c = await mcp(tokens.access_token);
    expect((await c.listTools()).tools.map((t) => t.name)).toContain("ask_question");
    const p = c.callTool({ name: "ask_question", arguments: { project_directory: "/connector", question: "Ship it?" } });
    const call = await human.next((f) => f.type === "tool.call");
    human.send({ type: "tool.result", call_id: call.call_id, result: { message: "Yes, ship it." } });
    expect(((await p) as CallToolResult).content[0]).toMatchObject({ type: "text", text: "Yes, ship it." });
    const listed = (await (await worker("/api/inbox/oauth/grants", { headers: { authorization: `Bearer ${d.device_credential}` } })).json()) as {
      grants: GrantInfo[];
    };
    expect(listed.grants).toEqual([
      expect.objectContaining({ id: grant.id, client_name: "Test Connector", approved_by: "phone", session_id: grant.session_id }),
    ]);
    expect(listed.grants[0]!.last_used).toBeGreaterThan(0);
  });

  it("refuses a wrong PKCE verifier, a wrong redirect_uri, another client and a wrong resource; the rightful request still works once; a reused code revokes the grant", async () => {
    const { d } = await pairedDevice();
    const client = (await registerClient()).client_id;
    const other = (await registerClient()).client_id;
    const { verifier, challenge } = await pkce();
    const { rid, code: user } = await startAuthorization(authorizeUrl(client, challenge));
    const code = (await decide(d, user, true, rid)).redirect.searchParams.get("code")!;
    const good = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: client, resource: `${BASE}/mcp` };
    const refused = async (form: Record<string, string>, error: string) => {
      const r = await postForm("/oauth/token", form);
      expect(r.status, JSON.stringify(form)).toBe(400);
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect(((await r.json()) as Json).error).toBe(error);
    };
    await refused({ ...good, code_verifier: (await pkce()).verifier }, "invalid_grant");
    await refused({ ...good, code_verifier: "short" }, "invalid_request");
    await refused({ ...good, redirect_uri: "https://app.example/other" }, "invalid_grant");
    await refused({ ...good, client_id: other }, "invalid_grant");
    await refused({ ...good, resource: "https://other.example/mcp" }, "invalid_target");
    await refused({ ...good, grant_type: "password" }, "unsupported_grant_type");
    const r = await postForm("/oauth/token", good);
    expect(r.status).toBe(200);
    const tokens = (await r.json()) as Tokens;
    expect((await mcpPost(tokens.access_token)).status).toBe(200);
    // The same code again: refused, and the tokens it gave are revoked (RFC 6749 §4.1.2).
    await refused(good, "invalid_grant");
    expect((await mcpPost(tokens.access_token)).status).toBe(401);
    await refused({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client }, "invalid_grant");
  });

  it("refresh rotates both tokens; the old refresh token works again only within the retry grace, after it the replay revokes the grant", async () => {
    const { tokens, client } = await connected();
    const refresh = (t: string) => postForm("/oauth/token", { grant_type: "refresh_token", refresh_token: t, client_id: client, resource: `${BASE}/mcp` });
    const r1 = await refresh(tokens.refresh_token);
    expect(r1.status).toBe(200);
    const t1 = (await r1.json()) as Tokens;
    expect(t1.refresh_token).not.toBe(tokens.refresh_token);
    expect(t1.access_token).not.toBe(tokens.access_token);
    expect((await mcpPost(t1.access_token)).status).toBe(200);
    // A client whose refresh answer was lost retries with the old token at once: served again.
    const retry = await refresh(tokens.refresh_token);
    expect(retry.status).toBe(200);
    // Later the old token is a replay: the grant goes (tested at the object with a clock 61 s on).
    const inbox = tokens.refresh_token.split(".")[1]!;
    const late = await oauthStub(`inbox:${inbox}`).refresh(
      await sha256(tokens.refresh_token),
      client,
      undefined,
      { access: randomId(), refresh: randomId() },
      Date.now() + 61_000,
    );
    expect(late).toMatchObject({ ok: false, error: "invalid_grant" });
    expect((await mcpPost(t1.access_token)).status).toBe(401);
    expect((await refresh(t1.refresh_token)).status).toBe(400);
  });

  it("an access token ends after an hour; the refresh token outlives it", async () => {
    const { tokens } = await connected();
    const inbox = tokens.access_token.split(".")[1]!;
    const o = oauthStub(`inbox:${inbox}`);
    expect(await o.check(await sha256(tokens.access_token))).toBeTruthy();
    expect(await o.check(await sha256(tokens.access_token), Date.now() + 3601_000)).toBeUndefined();
  });

  it("a confidential client authenticates with its secret (Basic or in the body); without it the token endpoint answers 401 invalid_client", async () => {
    const { d } = await pairedDevice();
    const reg = await registerClient({ token_endpoint_auth_method: "client_secret_basic" });
    const { verifier, challenge } = await pkce();
    const { rid, code: user } = await startAuthorization(authorizeUrl(reg.client_id, challenge));
    const code = (await decide(d, user, true, rid)).redirect.searchParams.get("code")!;
    const form = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK };
    const noSecret = await postForm("/oauth/token", { ...form, client_id: reg.client_id });
    expect(noSecret.status).toBe(401);
    expect(((await noSecret.json()) as Json).error).toBe("invalid_client");
    const wrong = await postForm("/oauth/token", { ...form, client_id: reg.client_id, client_secret: "nope" });
    expect(wrong.status).toBe(401);
    const basic = btoa(`${encodeURIComponent(reg.client_id)}:${encodeURIComponent(reg.client_secret!)}`);
    const ok = await postForm("/oauth/token", form, { authorization: `Basic ${basic}` });
    expect(ok.status, await ok.clone().text()).toBe(200);
  });
});

describe("revocation", () => {
  it("revoking the grant in the PWA refuses its tokens at once, fails its refresh and ends its session", async () => {
    const { tokens, client, d, grant } = await connected();
    const c = await mcp(tokens.access_token);
    expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    const auth = { authorization: `Bearer ${d.device_credential}` };
    const del = await worker(`/api/inbox/oauth/grants/${grant.id}`, { method: "DELETE", headers: auth });
    expect(del.status).toBe(204);
    const r = await mcpPost(tokens.access_token);
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const refresh = await postForm("/oauth/token", { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client });
    expect(((await refresh.json()) as Json).error).toBe("invalid_grant");
    expect(((await (await worker("/api/inbox/oauth/grants", { headers: auth })).json()) as { grants: GrantInfo[] }).grants).toEqual([]);
    const st = (await (await worker("/api/inbox", { headers: auth })).json()) as InboxState;
    expect(st.sessions.some((s) => s.session_id === grant.session_id)).toBe(false);
    expect((await worker(`/api/inbox/oauth/grants/${grant.id}`, { method: "DELETE", headers: auth })).status).toBe(404);
  });

  it("the agent machine lists and revokes connected apps too (lineup's machine credential), with the same effect", async () => {
    const { tokens, m, grant } = await connected();
    const auth = { authorization: `Bearer ${m.machine_credential}` };
    const list = (await (await worker("/api/inbox/oauth/grants", { headers: auth })).json()) as { grants: GrantInfo[] };
    expect(list.grants.map((g) => g.id)).toEqual([grant.id]);
    expect(list.grants[0]).toMatchObject({ client_name: "Test Connector", redirect_host: "app.example" });
    expect((await mcpPost(tokens.access_token)).status).toBe(200);
    expect((await worker(`/api/inbox/oauth/grants/${grant.id}`, { method: "DELETE", headers: auth })).status).toBe(204);
    expect((await mcpPost(tokens.access_token)).status).toBe(401);
    // Another inbox's machine sees none of them and cannot revoke them.
    const other = (await (await postJson("/api/inboxes", RELAY_KEY, { machine_name: "other" })).json()) as MachineCreated;
    const otherList = (await (await worker("/api/inbox/oauth/grants", { headers: { authorization: `Bearer ${other.machine_credential}` } })).json()) as {
      grants: GrantInfo[];
    };
    expect(otherList.grants).toEqual([]);
  });

  it("another inbox cannot revoke a grant; revoking the device that approved it keeps the app connected (grants are their own credential)", async () => {
    const { tokens, d, m, grant } = await connected();
    const other = await pairedDevice();
    expect(
      (await worker(`/api/inbox/oauth/grants/${grant.id}`, { method: "DELETE", headers: { authorization: `Bearer ${other.d.device_credential}` } })).status,
    ).toBe(404);
    expect((await mcpPost(tokens.access_token)).status).toBe(200);
    const rv = await worker(`/api/inbox/devices/${d.device_id}`, { method: "DELETE", headers: { authorization: `Bearer ${m.machine_credential}` } });
    expect(rv.status).toBe(204);
    expect((await worker("/api/inbox", { headers: { authorization: `Bearer ${d.device_credential}` } })).status).toBe(401);
    expect((await mcpPost(tokens.access_token)).status).toBe(200);
    const c = await mcp(tokens.access_token);
    expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    const listed = (await (await worker("/api/inbox/oauth/grants", { headers: { authorization: `Bearer ${m.machine_credential}` } })).json()) as {
      grants: GrantInfo[];
    };
    expect(listed.grants.map((g) => g.id)).toEqual([grant.id]);
  });

  it("the client's own revocation (RFC 7009) of its refresh token ends the grant; another client's request changes nothing", async () => {
    const { tokens, client } = await connected();
    const other = (await registerClient()).client_id;
    expect((await postForm("/oauth/revoke", { token: tokens.refresh_token, client_id: other })).status).toBe(200);
    expect((await mcpPost(tokens.access_token)).status).toBe(200);
    expect((await postForm("/oauth/revoke", { token: tokens.refresh_token, client_id: client })).status).toBe(200);
    expect((await mcpPost(tokens.access_token)).status).toBe(401);
  });
});

beforeEach(() => clearClientCache());
