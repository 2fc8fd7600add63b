// OAuth for MCP connectors (docs/mcp.md "OAuth connectors"): the pure parts — limits, the shapes of the
// relay's OAuth secrets, the rules for redirect URIs, resources and PKCE, request bodies, and what the PWA's
// "Connect an app" screen reads. The Worker's server is worker/oauth/; the PWA imports types only (values
// here pull zod into its bundle).
import { z } from "./zod.js";

export const OAUTH_LIMITS = {
  /** Access tokens are short-lived; the refresh token gets a new one (and is rotated). */
  accessTtlS: 3600,
  /** An authorization code is exchanged within this time, once. */
  codeTtlMs: 5 * 60_000,
  /** An authorization request waits this long for the human's consent on a paired device. */
  pendingTtlMs: 10 * 60_000,
  /** A refresh token used again within this time of its rotation is a client's retry, not a theft. */
  refreshGraceMs: 60_000,
  /** The session a grant creates lives this long (the longest a session may); refresh tokens end with it. */
  sessionTtlS: 365 * 24 * 3600,
  maxGrantsPerInbox: 32,
  /** Open authorization requests per client address, and in all (requests need no credential). */
  maxPendingPerAddr: 10,
  maxPending: 1000,
  /** Live access tokens kept per grant (the oldest goes first). */
  maxAccessPerGrant: 4,
  maxClientName: 100,
  maxRedirectUris: 8,
  maxUriChars: 512,
  maxStateChars: 1024,
  /** A registered (DCR) client's metadata, signed into its client_id. */
  maxRegisteredJson: 2048,
  /** Client ID Metadata Documents: size, fetch time, and how long a fetched one is kept. */
  cimdMaxBytes: 5 * 1024,
  cimdTimeoutMs: 5000,
  cimdCacheMinS: 60,
  cimdCacheMaxS: 3600,
  /** Metadata documents fetched (not cached) per client address a minute, per isolate: the endpoint needs no credential. */
  cimdFetchesPerMin: 20,
  /** A grant's last_used is written at most this often. */
  lastUsedEveryMs: 60_000,
} as const;

/** The one scope: everything `/mcp` offers (the human's tools of the grant's session). */
export const OAUTH_SCOPE = "mcp";

// ---------------------------------------------------------------- the relay's OAuth secrets

/**
 * `lua1.<inbox>.<secret>` (access token), `lur1.…` (refresh token), `luc1.…` (authorization code): the
 * inbox names the object that keeps the grant (worker/oauth/object.ts), which stores only SHA-256 of the
 * whole string. Only [A-Za-z0-9._-], like every LineUp credential.
 */
export type OAuthSecretKind = "access" | "refresh" | "code";
const PREFIX: Record<OAuthSecretKind, string> = { access: "lua1", refresh: "lur1", code: "luc1" };

export function formatOAuthSecret(kind: OAuthSecretKind, inbox: string, secret: string): string {
  return `${PREFIX[kind]}.${inbox}.${secret}`;
}

/** The inbox of a well-formed secret of `kind`, else undefined. */
export function oauthSecretInbox(kind: OAuthSecretKind, s: string): string | undefined {
  const m = /^(lu[arc]1)\.([A-Za-z0-9_-]{12})\.[A-Za-z0-9_-]{43}$/.exec(s);
  return m && m[1] === PREFIX[kind] ? m[2] : undefined;
}

export const isOAuthAccessToken = (s: string): boolean => s.startsWith(`${PREFIX.access}.`);

/** The code the desktop page shows and the phone takes: 8 consonants (no words, no 0/O or 1/I), `BCDF-GHJK`. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";

export function normalizeUserCode(s: string): string | undefined {
  const c = s.toUpperCase().replace(/[^A-Z]/g, "");
  return c.length === 8 && [...c].every((ch) => USER_CODE_ALPHABET.includes(ch)) ? c : undefined;
}

export const formatUserCode = (c: string): string => `${c.slice(0, 4)}-${c.slice(4)}`;

export const GRANT_ID_RE = /^ga_[A-Za-z0-9_-]{10}$/;

// ---------------------------------------------------------------- redirect URIs, resource, PKCE

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);
/** Schemes that never take an authorization code (they run code or read local things). */
const BAD_SCHEMES = new Set(["javascript:", "data:", "file:", "vbscript:", "blob:", "about:", "ws:", "wss:", "ftp:"]);

export const isLoopbackHost = (hostname: string): boolean => LOOPBACK.has(hostname.toLowerCase());

/**
 * Why a redirect URI cannot be registered, or undefined: https, http only to a loopback address (RFC 8252
 * §7.3: native apps), or a private-use scheme such as `cursor://…` (RFC 8252 §7.1); never a fragment.
 */
export function redirectUriProblem(u: string): string | undefined {
  if (u.length > OAUTH_LIMITS.maxUriChars) return `longer than ${OAUTH_LIMITS.maxUriChars} characters`;
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return "not an absolute URL";
  }
  if (url.hash || u.includes("#")) return "has a fragment";
  if (url.username || url.password) return "has credentials";
  if (BAD_SCHEMES.has(url.protocol)) return `the ${url.protocol} scheme is not allowed`;
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) return "http is allowed only to a loopback address (127.0.0.1, [::1], localhost)";
  if (url.protocol !== "https:" && url.protocol !== "http:" && !/^[a-z][a-z0-9+.-]*:$/.test(url.protocol)) return "not a valid scheme";
  return undefined;
}

/**
 * Whether `given` is the registered `registered`: exactly (OAuth 2.1 §2.3.1), except that an http loopback
 * redirect may use any port (RFC 8252 §7.3: native apps bind an ephemeral one).
 */
export function redirectMatches(registered: string, given: string): boolean {
  if (registered === given) return true;
  let r: URL;
  let g: URL;
  try {
    r = new URL(registered);
    g = new URL(given);
  } catch {
    return false;
  }
  if (r.protocol !== "http:" || g.protocol !== "http:" || !isLoopbackHost(r.hostname)) return false;
  return r.hostname === g.hostname && r.pathname === g.pathname && r.search === g.search && !g.hash && !g.username && !g.password;
}

/** What the consent screen shows of a redirect URI: its host (with port), or `scheme://host` for an app's own scheme. */
export function redirectHost(u: string): { host: string; loopback: boolean } {
  try {
    const url = new URL(u);
    if (url.protocol === "https:" || url.protocol === "http:") return { host: url.host, loopback: isLoopbackHost(url.hostname) };
    return { host: `${url.protocol}//${url.host}`, loopback: false };
  } catch {
    return { host: u.slice(0, 80), loopback: false };
  }
}

/** The MCP server's canonical URI (RFC 8707 / RFC 9728 `resource`) on a relay whose base is `base`. */
export const mcpResource = (base: string): string => `${base}/mcp`;

/**
 * Whether a `resource` parameter names this relay's MCP server: `<base>/mcp` (what the metadata says) or
 * `<base>` (the resource of the root metadata document); scheme and host in any case, a trailing slash or
 * not, never a fragment.
 */
export function resourceMatches(given: string, base: string): boolean {
  let u: URL;
  try {
    u = new URL(given);
  } catch {
    return false;
  }
  if (u.hash || given.includes("#") || u.search || u.username || u.password) return false;
  const path = u.pathname.replace(/\/+$/, "");
  return u.origin === new URL(base).origin && (path === "" || path === "/mcp");
}

/** The one spelling of a matching resource that is stored and compared: `<origin>` or `<origin>/mcp`. */
export function canonicalResource(given: string): string {
  const u = new URL(given);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

/** RFC 7636 code verifier and S256 challenge shapes. */
export const VERIFIER_RE = /^[A-Za-z0-9._~-]{43,128}$/;
export const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;

/** BASE64URL(SHA256(verifier)), RFC 7636 §4.2. */
export async function pkceS256(verifier: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  let s = "";
  for (const b of d) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// ---------------------------------------------------------------- clients

export type TokenAuthMethod = "none" | "client_secret_basic" | "client_secret_post";
export const TOKEN_AUTH_METHODS: readonly TokenAuthMethod[] = ["none", "client_secret_post", "client_secret_basic"];

/** A client as the server knows it, from its metadata document (CIMD) or its registration (DCR). */
export interface OAuthClient {
  client_id: string;
  /** `metadata_document`: client_id is the https URL of its metadata; `registered`: RFC 7591. */
  kind: "metadata_document" | "registered";
  client_name: string;
  client_uri?: string;
  redirect_uris: string[];
  auth: TokenAuthMethod;
}

const Uri = z.string().min(1).max(OAUTH_LIMITS.maxUriChars);
const RedirectUris = z.array(Uri).min(1).max(OAUTH_LIMITS.maxRedirectUris);
const ClientName = z.string().trim().min(1).max(OAUTH_LIMITS.maxClientName);

/** RFC 7591 §2 client metadata, as far as this server acts on it (other members are ignored, as allowed). */
export const RegisterBody = z.object({
  redirect_uris: RedirectUris,
  client_name: ClientName.optional(),
  client_uri: Uri.optional(),
  grant_types: z.array(z.string().max(64)).max(8).optional(),
  response_types: z.array(z.string().max(64)).max(8).optional(),
  token_endpoint_auth_method: z.string().max(64).optional(),
  scope: z.string().max(1024).optional(),
});

/** A Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document): the MCP-required members. */
export const ClientMetadataDocument = z.object({
  client_id: Uri,
  client_name: ClientName,
  redirect_uris: RedirectUris,
  client_uri: Uri.optional(),
  grant_types: z.array(z.string().max(64)).max(8).optional(),
  response_types: z.array(z.string().max(64)).max(8).optional(),
  token_endpoint_auth_method: z.string().max(64).optional(),
  // A metadata document is public: it must not carry a shared secret (draft §4.1).
  client_secret: z.undefined({ error: "a client metadata document must not contain client_secret" }).optional(),
  client_secret_expires_at: z.undefined({ error: "a client metadata document must not contain client_secret_expires_at" }).optional(),
});

// ---------------------------------------------------------------- the PWA's "Connect an app" API

export const ConnectLookupBody = z.object({ code: z.string().max(32) }).strict();
export const ConnectDecideBody = z.object({ code: z.string().max(32), allow: z.boolean() }).strict();

/** `POST /api/inbox/oauth/lookup`: who is asking, for the consent screen. */
export interface ConnectRequestInfo {
  code: string;
  client_name: string;
  client_id: string;
  client_kind: OAuthClient["kind"];
  /** For a metadata document: the host that published it (the name is that host's claim). */
  client_host?: string;
  redirect_uri: string;
  redirect_host: string;
  /** The code goes to a program on the computer that started the request (a loopback redirect). */
  redirect_loopback: boolean;
  expires_at: number;
}

/** A connected app of an inbox (`GET /api/inbox/oauth/grants`). */
export interface GrantInfo {
  id: string;
  client_name: string;
  client_id: string;
  client_kind: OAuthClient["kind"];
  client_host?: string;
  redirect_host: string;
  /** The session it created (labelled with the client's name); its calls reach the inbox's devices. */
  session_id: string;
  created_at: number;
  /** 0 until the app first uses a token. */
  last_used: number;
  expires_at: number;
  /** The device that allowed it. */
  approved_by: string;
}
