// The OAuth server's caps and the metadata-document fetch's edges, in workerd: 32 connected apps per inbox,
// 4 live access tokens per grant, 1000 open connection requests in all; a document that times out, cannot be
// fetched or is not JSON; and how long a fetched document is believed (Cache-Control, clamped to 1 min … 1 h).
// Its own file: the open requests this fills would make every other OAuth test "busy" (storage is per file).
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { InboxState } from "../../shared/contract/inbox.js";
import { OAUTH_LIMITS, type GrantInfo } from "../../shared/contract/oauth.js";
import { CIMD_REFUSED, clearClientCache, resolveClient } from "../../worker/oauth/clients.js";
import type { PendingRequest } from "../../worker/oauth/object.js";
import {
  authorizeUrl,
  BASE,
  CALLBACK,
  connected,
  mcpPost,
  oauthStub,
  pairedDevice,
  pkce,
  postForm,
  postJson,
  registerClient,
  startAuthorization,
  worker,
  type Tokens,
} from "./oauth-helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
  clearClientCache();
});

describe("caps", () => {
  it("an inbox holds 32 connected apps; the 33rd Allow answers 409 too_many, sends the client access_denied and leaves no session", async () => {
    const inbox = await pairedDevice();
    for (let i = 0; i < OAUTH_LIMITS.maxGrantsPerInbox; i++) await connected(inbox);
    const before = (await (await worker("/api/inbox", { headers: { authorization: `Bearer ${inbox.d.device_credential}` } })).json()) as InboxState;
    const client = (await registerClient()).client_id;
    const { challenge } = await pkce();
    const { rid, code } = await startAuthorization(authorizeUrl(client, challenge));
    const r = await postJson("/api/inbox/oauth/decide", inbox.d.device_credential, { code, allow: true });
    expect(r.status).toBe(409);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("too_many");
    const s = (await (await worker(`/oauth/authorize/status?rid=${rid}`)).json()) as { state: string; redirect: string };
    expect(s.state).toBe("done");
    const back = new URL(s.redirect);
    expect([`${back.origin}${back.pathname}`, back.searchParams.get("error"), back.searchParams.get("code")]).toEqual([CALLBACK, "access_denied", null]);
    const after = (await (await worker("/api/inbox", { headers: { authorization: `Bearer ${inbox.d.device_credential}` } })).json()) as InboxState;
    expect(after.sessions.map((x) => x.session_id).sort()).toEqual(before.sessions.map((x) => x.session_id).sort());
    const grants = (await (await worker("/api/inbox/oauth/grants", { headers: { authorization: `Bearer ${inbox.d.device_credential}` } })).json()) as {
      grants: GrantInfo[];
    };
    expect(grants.grants).toHaveLength(OAUTH_LIMITS.maxGrantsPerInbox);
    // Revoking one makes room again.
    expect(
      (await worker(`/api/inbox/oauth/grants/${grants.grants[0]!.id}`, { method: "DELETE", headers: { authorization: `Bearer ${inbox.d.device_credential}` } }))
        .status,
    ).toBeLessThan(300);
    await connected(inbox);
  }, 60_000);

  it("a grant keeps its 4 newest access tokens: refreshing a fifth time retires the oldest (401), the newest 4 still work", async () => {
    const { tokens, client } = await connected();
    const access = [tokens.access_token];
    let refresh = tokens.refresh_token;
    for (let i = 0; i < OAUTH_LIMITS.maxAccessPerGrant; i++) {
      const r = await postForm("/oauth/token", { grant_type: "refresh_token", refresh_token: refresh, client_id: client, resource: `${BASE}/mcp` });
      expect(r.status, await r.clone().text()).toBe(200);
      const t = (await r.json()) as Tokens;
      access.push(t.access_token);
      refresh = t.refresh_token;
    }
    expect(new Set(access).size).toBe(OAUTH_LIMITS.maxAccessPerGrant + 1);
    expect((await mcpPost(access[0])).status).toBe(401);
    for (const a of access.slice(1)) expect((await mcpPost(a)).status).toBe(200);
  });

  it("1000 open connection requests in all (decided ones included, until their page picks them up): the next one is refused on the relay's page as temporarily_unavailable", async () => {
    const client = (await registerClient()).client_id;
    const { challenge } = await pkce();
    const pending = oauthStub("pending");
    const open = () => runInDurableObject(pending, (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM pending").one().n);
    // The earlier tests' requests still count; fill the rest straight into the object, 10 per address.
    const req: PendingRequest = {
      client: { client_id: client, kind: "registered", client_name: "Filler", redirect_uris: [CALLBACK], auth: "none" },
      redirect_uri: CALLBACK,
      redirect_given: true,
      code_challenge: challenge,
      resource: `${BASE}/mcp`,
      scope: "mcp",
      state: "s",
      issuer: BASE,
    };
    const missing = OAUTH_LIMITS.maxPending - (await open());
    expect(missing).toBeGreaterThan(0);
    for (let i = 0; i < missing; i++) expect(await pending.begin(req, `198.18.${Math.floor(i / OAUTH_LIMITS.maxPendingPerAddr)}.1`)).not.toBe("busy");
    expect(await open()).toBe(OAUTH_LIMITS.maxPending);
    const r = await worker(authorizeUrl(client, challenge), { redirect: "manual", headers: { "cf-connecting-ip": "192.0.2.200" } });
    expect(r.status).toBe(503);
    expect(r.headers.get("location")).toBeNull();
    expect(await r.text()).toContain("temporarily_unavailable");
    expect(await open()).toBe(OAUTH_LIMITS.maxPending);
  }, 60_000);
});

describe("metadata documents (CIMD) at their edges", () => {
  const ID = "https://assistant.example/oauth/client.json";
  const ctx = { secret: "s".repeat(43), base: BASE, local: false, addr: "192.0.2.77" };
  const doc = { client_id: ID, client_name: "Edge Assistant", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" };
  /** A fetcher serving `doc` with these headers, counting its fetches. */
  const serving = (headers: Record<string, string> = {}) => {
    const f: { n: number; fetch: typeof fetch } = {
      n: 0,
      fetch: (async () => new Response(JSON.stringify(doc), { headers: { "content-type": "application/json", ...headers } })) as typeof fetch,
    };
    const inner = f.fetch;
    f.fetch = ((u: RequestInfo | URL, i?: RequestInit) => (f.n++, inner(u, i))) as typeof fetch;
    return f;
  };
  const at = (ms: number) => vi.spyOn(Date, "now").mockReturnValue(ms);

  it("a document that does not answer within 5 s is given up by the fetch's own timeout: refused in the generic words", async () => {
    let signal: AbortSignal | undefined;
    const hang = ((_u: RequestInfo | URL, init?: RequestInit) =>
      new Promise<Response>((_, reject) => {
        signal = init?.signal ?? undefined;
        signal?.addEventListener("abort", () => reject(signal!.reason));
      })) as typeof fetch;
    const a = await resolveClient(ID, ctx, hang);
    expect(a).toEqual({ ok: false, error: "invalid_client", description: CIMD_REFUSED });
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error).name).toBe("TimeoutError");
    expect(OAUTH_LIMITS.cimdTimeoutMs).toBe(5000);
  }, 15_000);

  it("a network failure and a body that is not JSON are refused in the same generic words (no oracle), and nothing is cached", async () => {
    const down = (async () => {
      throw new TypeError("connection refused");
    }) as typeof fetch;
    expect(await resolveClient(ID, ctx, down)).toMatchObject({ ok: false, description: CIMD_REFUSED });
    const html = (async () => new Response("<html>not here</html>", { headers: { "content-type": "text/html" } })) as typeof fetch;
    expect(await resolveClient(ID, ctx, html)).toMatchObject({ ok: false, error: "invalid_client", description: CIMD_REFUSED });
    const ok = serving();
    expect(await resolveClient(ID, ctx, ok.fetch)).toMatchObject({ ok: true, client: { client_name: "Edge Assistant" } });
    expect(ok.n).toBe(1);
  });

  it("believes a document for its max-age, clamped to 1 min … 1 h, 5 min without one; no-store and no-cache are fetched every time", async () => {
    const t0 = 1_800_000_000_000;
    const check = async (headers: Record<string, string>, stillCachedAt: number, refetchedAt: number) => {
      clearClientCache();
      const f = serving(headers);
      at(t0);
      await resolveClient(ID, ctx, f.fetch);
      at(t0 + stillCachedAt);
      await resolveClient(ID, ctx, f.fetch);
      expect(f.n, `${JSON.stringify(headers)} at +${stillCachedAt} ms`).toBe(1);
      at(t0 + refetchedAt);
      await resolveClient(ID, ctx, f.fetch);
      expect(f.n, `${JSON.stringify(headers)} at +${refetchedAt} ms`).toBe(2);
    };
    await check({ "cache-control": "max-age=120" }, 119_000, 121_000);
    await check({}, 299_000, 301_000); // the 300 s default
    await check({ "cache-control": "public, max-age=5" }, 59_000, 61_000); // at least 60 s
    await check({ "cache-control": "max-age=86400" }, 3_599_000, 3_601_000); // at most 1 h
    for (const cc of ["no-store", "max-age=600, no-cache"]) {
      clearClientCache();
      const f = serving({ "cache-control": cc });
      await resolveClient(ID, ctx, f.fetch);
      await resolveClient(ID, ctx, f.fetch);
      expect(f.n, cc).toBe(2);
    }
  });
});
