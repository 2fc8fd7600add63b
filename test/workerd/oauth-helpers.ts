// Helpers of the workerd OAuth suites (oauth.test.ts, oauth-limits.test.ts): requests into the real Worker, an
// inbox with a paired device, registered clients, PKCE, the authorization request's waiting page, consent.
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import { pkceS256, type GrantInfo } from "../../shared/contract/oauth.js";
import { randomId } from "../../shared/edge/tokens.js";
import { RELAY_KEY } from "./helpers.js";

export const BASE = "http://relay.test";
export const CALLBACK = "https://app.example/callback";
export type Json = Record<string, unknown>;

export const worker = (url: string, init?: RequestInit) => exports.default.fetch(new Request(url.startsWith("http") ? url : BASE + url, init));
export const postJson = (path: string, token: string | undefined, body: unknown = {}) =>
  worker(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
export const postForm = (path: string, form: Record<string, string>, headers: Record<string, string> = {}, base = BASE) =>
  worker(base + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });

/** An inbox with one paired device (the human's phone). */
export async function pairedDevice(): Promise<{ m: MachineCreated; d: DevicePaired }> {
  const m = (await (await postJson("/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json()) as MachineCreated;
  const c = (await (await postJson("/api/inbox/pairings", m.machine_credential)).json()) as CodeIssued;
  const r = await postJson("/api/pair", undefined, { code: c.code, name: "phone" });
  expect(r.status).toBe(201);
  return { m, d: (await r.json()) as DevicePaired };
}

export async function registerClient(meta: Json = {}): Promise<Json & { client_id: string; client_secret?: string }> {
  const r = await postJson("/oauth/register", undefined, {
    client_name: "Test Connector",
    redirect_uris: [CALLBACK],
    token_endpoint_auth_method: "none",
    ...meta,
  });
  expect(r.status, await r.clone().text()).toBe(201);
  return (await r.json()) as Json & { client_id: string };
}

export const pkce = async () => {
  const verifier = randomId(48);
  return { verifier, challenge: await pkceS256(verifier) };
};

export function authorizeUrl(clientId: string, challenge: string, extra: Record<string, string> = {}, base = BASE): string {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st-1",
    resource: `${base}/mcp`,
    scope: "mcp",
    ...extra,
  });
  for (const [k, v] of Object.entries(extra)) if (v === "") q.delete(k);
  return `${base}/oauth/authorize?${q}`;
}

/** GET /oauth/authorize → the waiting page; answers the page's request id and the code it shows. */
export async function startAuthorization(
  url: string,
  addr = `198.51.100.${Math.floor(Math.random() * 250)}`,
): Promise<{ rid: string; code: string; html: string }> {
  const r = await worker(url, { redirect: "manual", headers: { "cf-connecting-ip": addr } });
  expect(r.status, await r.clone().text()).toBe(303);
  const page = new URL(r.headers.get("location")!, url);
  const rid = page.searchParams.get("rid")!;
  const p = await worker(page.toString());
  expect(p.status).toBe(200);
  const html = await p.text();
  const code = /<p class="code" id="code"[^>]*>([A-Z]{4}-[A-Z]{4})<\/p>/.exec(html)?.[1];
  expect(code).toBeTruthy();
  return { rid, code: code!, html };
}

/** The device decides; the waiting page's status then carries the redirect back to the client. */
export async function decide(d: DevicePaired, code: string, allow: boolean, rid: string): Promise<{ redirect: URL; res: Json }> {
  const r = await postJson("/api/inbox/oauth/decide", d.device_credential, { code, allow });
  expect(r.status, await r.clone().text()).toBe(allow ? 201 : 200);
  const s = (await (await worker(`/oauth/authorize/status?rid=${rid}`)).json()) as { state: string; redirect: string };
  expect(s.state).toBe("done");
  return { redirect: new URL(s.redirect), res: (await r.json()) as Json };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: string;
  scope: string;
}

/** The whole consent flow for a public registered client (in a new inbox, or the one given): tokens, the grant, and the device. */
export async function connected(inbox?: {
  m: MachineCreated;
  d: DevicePaired;
}): Promise<{ tokens: Tokens; client: string; d: DevicePaired; m: MachineCreated; grant: GrantInfo }> {
  const { m, d } = inbox ?? (await pairedDevice());
  const client = (await registerClient()).client_id;
  const { verifier, challenge } = await pkce();
  const { rid, code } = await startAuthorization(authorizeUrl(client, challenge));
  const { redirect, res } = await decide(d, code, true, rid);
  const r = await postForm("/oauth/token", {
    grant_type: "authorization_code",
    code: redirect.searchParams.get("code")!,
    code_verifier: verifier,
    redirect_uri: CALLBACK,
    client_id: client,
    resource: `${BASE}/mcp`,
  });
  expect(r.status, await r.clone().text()).toBe(200);
  return { tokens: (await r.json()) as Tokens, client, d, m, grant: res.grant as GrantInfo };
}

export const mcpPost = (token?: string) =>
  worker("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

export const oauthStub = (name: string) => env.OAUTH.get(env.OAUTH.idFromName(name));
