// Who an OAuth client is. Two kinds, neither kept in storage:
// - Client ID Metadata Documents (CIMD): the client_id is an https URL of a public name (no IP literal,
//   loopback, `.localhost`, single-label or trailing-dot name, no explicit port: shared/edge/public-host.ts); its
//   JSON document is fetched (no redirects, 5 KB, 5 s, at most OAUTH_LIMITS.cimdFetchesPerMin fetches a
//   minute per client address) and kept per isolate as its Cache-Control allows (1 min … 1 h). Every
//   failure reads the same to the requester (CIMD_REFUSED: no oracle of open, closed or slow ports); the
//   detail goes to the log. An http loopback client_id (a test's local fake) is accepted only when the
//   relay itself is served on localhost — the rule of the dev relay key (worker/host.ts).
// - Dynamic Client Registration (RFC 7591): the registered metadata is signed into the client_id itself
//   (`lcd1.<metadata>.<mac>`, HMAC with the relay's token secret), and a confidential client's secret is
//   derived from it. Registration therefore stores nothing: an unauthenticated endpoint cannot fill storage.
import {
  ClientMetadataDocument,
  isLoopbackHost,
  OAUTH_LIMITS,
  redirectUriProblem,
  RegisterBody,
  TOKEN_AUTH_METHODS,
  type OAuthClient,
  type TokenAuthMethod,
} from "../../shared/contract/oauth.js";
import { AuthBrake } from "../../shared/edge/auth-brake.js";
import { readCapped } from "../../shared/edge/app.js";
import { describeIssues } from "../../shared/contract/protocol.js";
import { publicUrlProblem } from "../../shared/edge/public-host.js";
import { plainName } from "../../shared/text/cut.js";
import { b64url, hmac, randomId, safeEqual } from "../../shared/edge/tokens.js";
import type { z } from "zod";

export type ClientAnswer =
  | { ok: true; client: OAuthClient }
  | { ok: false; error: "invalid_client" | "invalid_client_metadata" | "invalid_redirect_uri" | "rate_limited"; description: string };

export interface ClientContext {
  /** The relay's token secret (signs registered client ids). */
  secret: string;
  /** The relay's origin (a metadata document is never fetched from it). */
  base: string;
  /** The relay is served on localhost: http loopback metadata URLs are allowed (local tests and development). */
  local: boolean;
  /** The requester's address (`CF-Connecting-IP`): metadata fetches are counted per address. */
  addr?: string;
}

/** A client's display name: one line, no controls or bidi overrides (shared/text/cut.ts), never empty. */
const displayName = (n: string | undefined): string => plainName(n ?? "") || "Unnamed app";

const DCR_PREFIX = "lcd1.";
const enc = new TextEncoder();

/** The compact form signed into a registered client id. */
interface Signed {
  /** A nonce: two registrations of the same metadata are two clients. */
  j: string;
  n: string;
  r: string[];
  m: TokenAuthMethod;
  u?: string;
  t: number;
}

export const isMetadataDocumentId = (id: string): boolean => /^https?:\/\//i.test(id);

export async function resolveClient(clientId: string, ctx: ClientContext, fetcher: typeof fetch = fetch): Promise<ClientAnswer> {
  if (clientId.startsWith(DCR_PREFIX)) return registered(clientId, ctx.secret);
  if (isMetadataDocumentId(clientId)) return metadataDocument(clientId, ctx, fetcher);
  return { ok: false, error: "invalid_client", description: "unknown client_id: use a client metadata document URL or register (RFC 7591)" };
}

// ---------------------------------------------------------------- RFC 7591

export type Registration =
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; error: "invalid_client_metadata" | "invalid_redirect_uri"; description: string };

/** Registers a client: checks its metadata and answers the RFC 7591 §3.2.1 response. */
export async function register(raw: unknown, ctx: ClientContext, now = Date.now()): Promise<Registration> {
  const p = RegisterBody.safeParse(raw);
  if (!p.success)
    return {
      ok: false,
      error: p.error.issues.some((i) => i.path[0] === "redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata",
      description: describeIssues(p.error),
    };
  const m = p.data;
  const bad = checkMetadata(m);
  if (bad) return { ok: false, ...bad };
  // RFC 7591 §2: without a method the default is client_secret_basic (a confidential client).
  const method = (m.token_endpoint_auth_method ?? "client_secret_basic") as TokenAuthMethod;
  if (!TOKEN_AUTH_METHODS.includes(method))
    return { ok: false, error: "invalid_client_metadata", description: `token_endpoint_auth_method must be one of ${TOKEN_AUTH_METHODS.join(", ")}` };
  const signed: Signed = {
    j: randomId(6),
    n: displayName(m.client_name),
    r: m.redirect_uris,
    m: method,
    t: Math.floor(now / 1000),
    ...(m.client_uri ? { u: m.client_uri } : {}),
  };
  const json = JSON.stringify(signed);
  if (enc.encode(json).byteLength > OAUTH_LIMITS.maxRegisteredJson)
    return { ok: false, error: "invalid_client_metadata", description: `the client metadata is over ${OAUTH_LIMITS.maxRegisteredJson} bytes` };
  const payload = b64url(enc.encode(json));
  const client_id = `${DCR_PREFIX}${payload}.${await mac(ctx.secret, payload)}`;
  const body: Record<string, unknown> = {
    client_id,
    client_id_issued_at: signed.t,
    client_name: signed.n,
    redirect_uris: signed.r,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: method,
    ...(signed.u ? { client_uri: signed.u } : {}),
  };
  if (method !== "none") {
    body.client_secret = await clientSecret(ctx.secret, client_id);
    body.client_secret_expires_at = 0; // never (it is derived, not stored)
  }
  return { ok: true, body };
}

/** A registered client's secret: derived, so nothing is stored. */
export const clientSecret = async (secret: string, clientId: string): Promise<string> => hmac(secret, `oauth-dcr-secret:${clientId}`);

const mac = async (secret: string, payload: string): Promise<string> => (await hmac(secret, `oauth-dcr:${payload}`)).slice(0, 32);

async function registered(clientId: string, secret: string): Promise<ClientAnswer> {
  const unknown: ClientAnswer = {
    ok: false,
    error: "invalid_client",
    description: "unknown client_id (registered clients are signed by this relay; register again)",
  };
  const m = /^lcd1\.([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{32})$/.exec(clientId);
  if (!m || !(await safeEqual(m[2]!, await mac(secret, m[1]!)))) return unknown;
  let s: Signed;
  try {
    const bin = atob(m[1]!.replace(/-/g, "+").replace(/_/g, "/"));
    s = JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0)))) as Signed;
  } catch {
    return unknown;
  }
  return {
    ok: true,
    client: { client_id: clientId, kind: "registered", client_name: displayName(s.n), redirect_uris: s.r, auth: s.m, ...(s.u ? { client_uri: s.u } : {}) },
  };
}

// ---------------------------------------------------------------- CIMD

const cache = new Map<string, { client: OAuthClient; until: number }>();
const CACHE_MAX = 200;

/**
 * What the requester is told for every metadata-document client that cannot be used, whatever went wrong:
 * a refused URL, no answer, a closed port, a timeout, a redirect, another status, an oversized, slow or
 * invalid document all read the same, so the authorization endpoint is no probe of who answers where.
 */
export const CIMD_REFUSED =
  "its client_id is not a usable client metadata document: an https URL of a public host name with a path, on the default port, answering 200 within 5 s with at most 5 KB of JSON that names itself as client_id, with client_name and redirect_uris and no secret";

/** Metadata documents fetched per client address a minute (counted with the auth brake's window; per isolate). */
const fetches = new AuthBrake(OAUTH_LIMITS.cimdFetchesPerMin);

/** Why a URL cannot be a client id of a metadata document (draft §3), or undefined. */
export function metadataUrlProblem(id: string, ctx: Pick<ClientContext, "base" | "local">): string | undefined {
  let u: URL;
  try {
    u = new URL(id);
  } catch {
    return "client_id is not a URL";
  }
  const loopbackHttp = u.protocol === "http:" && isLoopbackHost(u.hostname);
  if (loopbackHttp && ctx.local) {
    // A local fake on a localhost relay (tests, development): loopback only, any port.
  } else if (!ctx.local) {
    const p = publicUrlProblem(u);
    if (p) return `a client_id URL ${p}`;
  } else if (u.protocol !== "https:") return "a client_id URL must use https";
  if (u.pathname === "/" || u.pathname === "") return "a client_id URL must have a path";
  if (u.hash || id.includes("#") || u.username || u.password) return "a client_id URL must not have a fragment or credentials";
  // The parser removes dot segments and normalises: only the canonical form is an identifier.
  if (u.href !== id) return "the client_id URL is not in its canonical form";
  if (u.host === new URL(ctx.base).host) return "a client_id URL must not point at this relay";
  return undefined;
}

/** One answer for every refusal; the detail is logged for the operator (the host only: no query, no path). */
function refused(id: string, detail: string): ClientAnswer {
  let host = "?";
  try {
    host = new URL(id).host;
  } catch {
    /* not a URL */
  }
  console.warn(`oauth: client metadata document of ${host} refused: ${detail}`);
  return { ok: false, error: "invalid_client", description: CIMD_REFUSED };
}

async function metadataDocument(id: string, ctx: ClientContext, fetcher: typeof fetch, now = Date.now()): Promise<ClientAnswer> {
  const problem = metadataUrlProblem(id, ctx);
  if (problem) return refused(id, problem);
  const hit = cache.get(id);
  if (hit && hit.until > now) return { ok: true, client: hit.client };
  const addr = ctx.addr ?? "unknown";
  if (fetches.blocked(addr, now)) {
    return {
      ok: false,
      error: "rate_limited",
      description: `more than ${OAUTH_LIMITS.cimdFetchesPerMin} client metadata documents were fetched for this address in a minute; wait a minute`,
    };
  }
  fetches.failed(addr, now); // counts this fetch
  let res: Response;
  let text: string | undefined;
  try {
    res = await fetcher(id, { redirect: "manual", headers: { accept: "application/json" }, signal: AbortSignal.timeout(OAUTH_LIMITS.cimdTimeoutMs) });
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      return refused(id, `HTTP ${res.status}`);
    }
    // The 5 s signal covers the body too: a document dripped slowly is aborted mid-read, and that is a refusal.
    text = await readCapped(res, OAUTH_LIMITS.cimdMaxBytes);
  } catch (e) {
    return refused(id, `not fetched: ${(e as Error).name} ${(e as Error).message}`);
  }
  if (text === undefined) return refused(id, `over ${OAUTH_LIMITS.cimdMaxBytes} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return refused(id, "not JSON");
  }
  const p = ClientMetadataDocument.safeParse(raw);
  if (!p.success) return refused(id, describeIssues(p.error));
  const d = p.data;
  if (d.client_id !== id) return refused(id, "the document's client_id is not its URL");
  const bad = checkMetadata(d);
  if (bad) return refused(id, bad.description);
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== "none")
    return refused(id, "not a public client (token_endpoint_auth_method)");
  const client: OAuthClient = {
    client_id: id,
    kind: "metadata_document",
    client_name: displayName(d.client_name),
    redirect_uris: d.redirect_uris,
    auth: "none",
    ...(d.client_uri ? { client_uri: d.client_uri } : {}),
  };
  const maxAge = cacheSeconds(res.headers.get("cache-control"));
  if (maxAge > 0) {
    cache.delete(id);
    cache.set(id, { client, until: now + maxAge * 1000 });
    while (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
  }
  return { ok: true, client };
}

/** Cache-Control's max-age within 1 min … 1 h (5 min without one); 0 for no-store / no-cache. */
function cacheSeconds(cc: string | null): number {
  if (cc && /(?:^|,)\s*(?:no-store|no-cache)\b/i.test(cc)) return 0;
  const m = cc ? /max-age=(\d+)/i.exec(cc) : null;
  const s = m ? Number(m[1]) : 300;
  return Math.min(OAUTH_LIMITS.cimdCacheMaxS, Math.max(OAUTH_LIMITS.cimdCacheMinS, s));
}

/** Forgets fetched metadata documents (tests change a fake's document between cases). */
export function clearClientCache(): void {
  cache.clear();
}

function checkMetadata(
  m: Pick<z.infer<typeof RegisterBody>, "redirect_uris" | "grant_types" | "response_types">,
): { error: "invalid_redirect_uri" | "invalid_client_metadata"; description: string } | undefined {
  for (const u of m.redirect_uris) {
    const p = redirectUriProblem(u);
    if (p) return { error: "invalid_redirect_uri", description: `redirect_uri ${u.slice(0, 80)}: ${p}` };
  }
  // Other grant and response types are ignored (RFC 7591 §2 lets the server decide): only these are used.
  if (m.grant_types && !m.grant_types.includes("authorization_code"))
    return { error: "invalid_client_metadata", description: "grant_types must include authorization_code" };
  if (m.response_types && !m.response_types.includes("code")) return { error: "invalid_client_metadata", description: "response_types must include code" };
  return undefined;
}
