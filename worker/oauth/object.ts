// The OAuth Durable Object (docs/mcp.md "OAuth connectors"), in two roles by name:
// - "pending": the relay's open authorization requests, waiting for a human's consent on a paired device
//   (found by the page's request id and by the short code the human types);
// - "inbox:<id>": the grants of one inbox — the connected apps, their authorization codes and tokens.
// Every method is synchronous SQL (no await between read and write), so a code or refresh token is spent
// exactly once even under concurrent requests. Secrets never reach it: the Worker passes SHA-256 hashes.
import { DurableObject } from "cloudflare:workers";
import { OAUTH_LIMITS, redirectHost, USER_CODE_ALPHABET, type GrantInfo, type OAuthClient } from "../../shared/contract/oauth.js";
import { randomId } from "../../shared/edge/tokens.js";
import type { Env } from "../env.js";

/** An authorization request, checked by the Worker, waiting for consent. */
export interface PendingRequest {
  client: OAuthClient;
  redirect_uri: string;
  /** Whether the request named redirect_uri (then the token request must name it too). */
  redirect_given: boolean;
  state?: string;
  code_challenge: string;
  resource: string;
  scope: string;
  issuer: string;
}

export type PendingStatus =
  | { state: "pending" | "claimed"; code: string; expires_at: number; client_name: string; redirect_host: string; base: string }
  | { state: "done"; redirect: string };

export interface GrantRecord extends GrantInfo {
  redirect_uri: string;
  resource: string;
  scope: string;
  epoch: number;
}

export interface CodeData {
  client_id: string;
  redirect_uri: string;
  redirect_given: boolean;
  code_challenge: string;
  resource: string;
}

/** A new access and refresh token (hashes) and when they end, minted by the Worker. */
export interface NewTokens {
  access: string;
  refresh: string;
}

export type TokenAnswer =
  | { ok: true; grant: GrantRecord; access_expires_at: number; refresh_expires_at: number }
  | { ok: false; error: "invalid_grant" | "invalid_target"; description: string; revoked?: { session_id: string; epoch: number } };

export interface AccessCheck {
  grant_id: string;
  session_id: string;
  epoch: number;
  resource: string;
  expires_at: number;
}

export class OAuth extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS pending (rid TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, addr TEXT NOT NULL,
      req TEXT NOT NULL, state TEXT NOT NULL, redirect TEXT, expires INTEGER NOT NULL)`);
    this.sql.exec("CREATE TABLE IF NOT EXISTS grants (id TEXT PRIMARY KEY, data TEXT NOT NULL)");
    // kind: code | access | refresh. used_at: a code's redemption, a refresh token's rotation.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS secrets (hash TEXT PRIMARY KEY, kind TEXT NOT NULL, grant_id TEXT NOT NULL,
      expires INTEGER NOT NULL, used_at INTEGER, data TEXT)`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS secrets_grant ON secrets (grant_id, kind)");
  }

  // ------------------------------------------------------------ "pending"

  /** Opens an authorization request; "busy" past the caps (requests need no credential). */
  async begin(req: PendingRequest, addr: string, now = Date.now()): Promise<{ rid: string; code: string; expires_at: number } | "busy"> {
    this.sql.exec("DELETE FROM pending WHERE expires <= ?", now);
    // Only undecided requests count: a decided one is just waiting for its page to pick up the redirect.
    const mine = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM pending WHERE addr = ? AND state != 'done'", addr).one().n;
    const all = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM pending").one().n;
    if (mine >= OAUTH_LIMITS.maxPendingPerAddr || all >= OAUTH_LIMITS.maxPending) return "busy";
    const rid = randomId(18);
    let code = userCode();
    while (this.sql.exec("SELECT 1 FROM pending WHERE code = ?", code).toArray().length) code = userCode();
    const expires = now + OAUTH_LIMITS.pendingTtlMs;
    this.sql.exec(
      "INSERT INTO pending (rid, code, addr, req, state, expires) VALUES (?, ?, ?, ?, 'pending', ?)",
      rid,
      code,
      addr,
      JSON.stringify(req),
      expires,
    );
    return { rid, code, expires_at: expires };
  }

  /** What the desktop page shows (and, once decided, where it goes). */
  async status(rid: string, now = Date.now()): Promise<PendingStatus | undefined> {
    const row = this.sql
      .exec<{ code: string; req: string; state: string; redirect: string | null; expires: number }>(
        "SELECT code, req, state, redirect, expires FROM pending WHERE rid = ?",
        rid,
      )
      .toArray()[0];
    if (!row || row.expires <= now) return undefined;
    if (row.state === "done" && row.redirect) return { state: "done", redirect: row.redirect };
    const req = JSON.parse(row.req) as PendingRequest;
    return {
      state: row.state === "claimed" ? "claimed" : "pending",
      code: row.code,
      expires_at: row.expires,
      client_name: req.client.client_name,
      redirect_host: redirectHost(req.redirect_uri).host,
      base: req.issuer,
    };
  }

  /** An open request by its code (the consent screen's lookup); it stays open. */
  async peek(code: string, now = Date.now()): Promise<(PendingRequest & { expires_at: number }) | undefined> {
    const row = this.sql
      .exec<{ req: string; expires: number }>("SELECT req, expires FROM pending WHERE code = ? AND state = 'pending' AND expires > ?", code, now)
      .toArray()[0];
    return row && { ...(JSON.parse(row.req) as PendingRequest), expires_at: row.expires };
  }

  /** Takes an open request for a decision, once: a second device deciding the same code gets undefined. */
  async claim(code: string, now = Date.now()): Promise<(PendingRequest & { rid: string }) | undefined> {
    const row = this.sql
      .exec<{ rid: string; req: string }>("SELECT rid, req FROM pending WHERE code = ? AND state = 'pending' AND expires > ?", code, now)
      .toArray()[0];
    if (!row) return undefined;
    this.sql.exec("UPDATE pending SET state = 'claimed' WHERE rid = ?", row.rid);
    return { ...(JSON.parse(row.req) as PendingRequest), rid: row.rid };
  }

  /** The decision is made: the desktop page goes to `redirect` (the code, or the error, for the client). */
  async finish(rid: string, redirect: string): Promise<void> {
    this.sql.exec("UPDATE pending SET state = 'done', redirect = ? WHERE rid = ?", redirect, rid);
  }

  // ------------------------------------------------------------ "inbox:<id>"

  /** A new grant and its authorization code; "full" past the per-inbox cap. */
  async addGrant(g: GrantRecord, codeHash: string, code: CodeData, now = Date.now()): Promise<"ok" | "full"> {
    this.sweep(now);
    if (this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM grants").one().n >= OAUTH_LIMITS.maxGrantsPerInbox) return "full";
    this.sql.exec("INSERT INTO grants (id, data) VALUES (?, ?)", g.id, JSON.stringify(g));
    this.sql.exec(
      "INSERT INTO secrets (hash, kind, grant_id, expires, data) VALUES (?, 'code', ?, ?, ?)",
      codeHash,
      g.id,
      now + OAUTH_LIMITS.codeTtlMs,
      JSON.stringify(code),
    );
    return "ok";
  }

  /**
   * Spends an authorization code (RFC 6749 §4.1.3, OAuth 2.1 §4.1.3): the same client, the same redirect
   * URI, the PKCE verifier's S256 (`challenge`, computed by the Worker) and the same resource. A failed check
   * leaves the code for the rightful client; a code presented again after its use revokes the grant
   * (RFC 6749 §4.1.2: it was stolen, or the tokens were).
   */
  async redeemCode(
    codeHash: string,
    check: { client_id: string; redirect_uri: string | undefined; challenge: string; resource: string | undefined },
    t: NewTokens,
    now = Date.now(),
  ): Promise<TokenAnswer> {
    const row = this.sql
      .exec<{ grant_id: string; expires: number; used_at: number | null; data: string }>(
        "SELECT grant_id, expires, used_at, data FROM secrets WHERE hash = ? AND kind = 'code'",
        codeHash,
      )
      .toArray()[0];
    const bad = (description: string, error: "invalid_grant" | "invalid_target" = "invalid_grant"): TokenAnswer => ({ ok: false, error, description });
    if (!row) return bad("unknown or expired authorization code");
    const g = this.grant(row.grant_id);
    if (row.used_at !== null) {
      const revoked = this.dropGrant(row.grant_id);
      return {
        ok: false,
        error: "invalid_grant",
        description: "this authorization code was already used: the grant is revoked",
        ...(revoked ? { revoked } : {}),
      };
    }
    if (row.expires <= now || !g) return bad("unknown or expired authorization code");
    const c = JSON.parse(row.data ?? "{}") as CodeData;
    if (c.client_id !== check.client_id) return bad("the code was issued to another client");
    if (check.redirect_uri !== undefined ? check.redirect_uri !== c.redirect_uri : c.redirect_given)
      return bad("redirect_uri is not the one of the authorization request");
    if (check.challenge !== c.code_challenge) return bad("code_verifier does not match the code_challenge (PKCE)");
    if (check.resource !== undefined && check.resource !== c.resource) return bad("resource is not the one of the authorization request", "invalid_target");
    this.sql.exec("UPDATE secrets SET used_at = ? WHERE hash = ?", now, codeHash);
    return this.issue(g, t, now);
  }

  /**
   * Rotates a refresh token (OAuth 2.1 §4.3.1): the old one is spent and a new pair issued. The old one used
   * again within the grace time is a client retrying a lost answer (it gets another pair); later, a replay:
   * the grant is revoked.
   */
  async refresh(refreshHash: string, clientId: string, resource: string | undefined, t: NewTokens, now = Date.now()): Promise<TokenAnswer> {
    const row = this.sql
      .exec<{ grant_id: string; expires: number; used_at: number | null }>(
        "SELECT grant_id, expires, used_at FROM secrets WHERE hash = ? AND kind = 'refresh'",
        refreshHash,
      )
      .toArray()[0];
    const g = row && this.grant(row.grant_id);
    if (!row || !g || row.expires <= now) return { ok: false, error: "invalid_grant", description: "unknown, expired or revoked refresh token" };
    if (g.client_id !== clientId) return { ok: false, error: "invalid_grant", description: "the refresh token was issued to another client" };
    if (resource !== undefined && resource !== g.resource) return { ok: false, error: "invalid_target", description: "resource is not the one of the grant" };
    const since = row.used_at === null ? 0 : Math.round((now - row.used_at) / 1000);
    if (row.used_at !== null && now - row.used_at > OAUTH_LIMITS.refreshGraceMs) {
      console.warn(`oauth: grant ${g.id} (${g.redirect_host}) revoked: a refresh token rotated ${since} s ago was replayed`);
      const revoked = this.dropGrant(row.grant_id);
      return {
        ok: false,
        error: "invalid_grant",
        description: "this refresh token was already rotated: the grant is revoked",
        ...(revoked ? { revoked } : {}),
      };
    }
    if (row.used_at === null) this.sql.exec("UPDATE secrets SET used_at = ? WHERE hash = ?", now, refreshHash);
    // Within the grace a client retrying a lost answer looks exactly like a thief racing it: answered, and logged.
    else
      console.warn(
        `oauth: grant ${g.id} (${g.redirect_host}): a refresh token rotated ${since} s ago was used again within the ${OAUTH_LIMITS.refreshGraceMs / 1000} s grace; answered with another pair`,
      );
    return this.issue(g, t, now);
  }

  /** The session an access token acts for, or undefined (unknown, expired, revoked). */
  async check(accessHash: string, now = Date.now()): Promise<AccessCheck | undefined> {
    const row = this.sql
      .exec<{ grant_id: string; expires: number }>("SELECT grant_id, expires FROM secrets WHERE hash = ? AND kind = 'access'", accessHash)
      .toArray()[0];
    const g = row && row.expires > now ? this.grant(row.grant_id) : undefined;
    if (!g || g.expires_at <= now) return undefined;
    if (now - g.last_used >= OAUTH_LIMITS.lastUsedEveryMs) {
      g.last_used = now;
      this.sql.exec("UPDATE grants SET data = ? WHERE id = ?", JSON.stringify(g), g.id);
    }
    return { grant_id: g.id, session_id: g.session_id, epoch: g.epoch, resource: g.resource, expires_at: g.expires_at };
  }

  async grants(now = Date.now()): Promise<GrantInfo[]> {
    this.sweep(now);
    return this.sql
      .exec<{ data: string }>("SELECT data FROM grants")
      .toArray()
      .map((r) => info(JSON.parse(r.data) as GrantRecord))
      .sort((a, b) => b.created_at - a.created_at);
  }

  /** Revokes a grant: its tokens and codes are gone at once. Answers its session, for the Worker to end. */
  async revoke(grantId: string): Promise<{ session_id: string; epoch: number } | undefined> {
    return this.dropGrant(grantId);
  }

  /**
   * RFC 7009 revocation by a token of the client's: a refresh token revokes its grant, an access token only
   * itself. Another client's token, or an unknown one, changes nothing (the endpoint answers 200 anyway).
   */
  async revokeToken(hash: string, clientId: string): Promise<{ session_id: string; epoch: number } | undefined> {
    const row = this.sql.exec<{ grant_id: string; kind: string }>("SELECT grant_id, kind FROM secrets WHERE hash = ? AND kind != 'code'", hash).toArray()[0];
    const g = row && this.grant(row.grant_id);
    if (!row || !g || g.client_id !== clientId) return undefined;
    if (row.kind === "refresh") return this.dropGrant(g.id);
    this.sql.exec("DELETE FROM secrets WHERE hash = ?", hash);
    return undefined;
  }

  // ------------------------------------------------------------ internals

  private grant(id: string): GrantRecord | undefined {
    const row = this.sql.exec<{ data: string }>("SELECT data FROM grants WHERE id = ?", id).toArray()[0];
    return row && (JSON.parse(row.data) as GrantRecord);
  }

  private issue(g: GrantRecord, t: NewTokens, now: number): TokenAnswer {
    const access_expires_at = Math.min(now + OAUTH_LIMITS.accessTtlS * 1000, g.expires_at);
    this.sql.exec("INSERT INTO secrets (hash, kind, grant_id, expires) VALUES (?, 'access', ?, ?)", t.access, g.id, access_expires_at);
    this.sql.exec("INSERT INTO secrets (hash, kind, grant_id, expires) VALUES (?, 'refresh', ?, ?)", t.refresh, g.id, g.expires_at);
    // A client refreshing often must not pile up live access tokens: the oldest go.
    this.sql.exec(
      `DELETE FROM secrets WHERE kind = 'access' AND grant_id = ? AND hash NOT IN
        (SELECT hash FROM secrets WHERE kind = 'access' AND grant_id = ? ORDER BY expires DESC LIMIT ?)`,
      g.id,
      g.id,
      OAUTH_LIMITS.maxAccessPerGrant,
    );
    // Rotated refresh tokens are kept only to notice a replay; the last few are enough.
    this.sql.exec(
      `DELETE FROM secrets WHERE kind = 'refresh' AND grant_id = ? AND used_at IS NOT NULL AND hash NOT IN
        (SELECT hash FROM secrets WHERE kind = 'refresh' AND grant_id = ? AND used_at IS NOT NULL ORDER BY used_at DESC LIMIT 8)`,
      g.id,
      g.id,
    );
    return { ok: true, grant: g, access_expires_at, refresh_expires_at: g.expires_at };
  }

  private dropGrant(id: string): { session_id: string; epoch: number } | undefined {
    const g = this.grant(id);
    this.sql.exec("DELETE FROM secrets WHERE grant_id = ?", id);
    this.sql.exec("DELETE FROM grants WHERE id = ?", id);
    return g && { session_id: g.session_id, epoch: g.epoch };
  }

  /** Expired secrets go, and grants whose session has ended (their refresh tokens end with it). */
  private sweep(now: number): void {
    this.sql.exec("DELETE FROM secrets WHERE expires <= ?", now - OAUTH_LIMITS.refreshGraceMs);
    for (const r of this.sql.exec<{ id: string; data: string }>("SELECT id, data FROM grants").toArray()) {
      if ((JSON.parse(r.data) as GrantRecord).expires_at <= now) this.dropGrant(r.id);
    }
  }
}

/** 8 characters of USER_CODE_ALPHABET, uniformly (bytes ≥ 240 are dropped: 240 is a multiple of 20). */
function userCode(): string {
  let s = "";
  while (s.length < 8) {
    for (const b of crypto.getRandomValues(new Uint8Array(16))) {
      if (b < 240 && s.length < 8) s += USER_CODE_ALPHABET[b % USER_CODE_ALPHABET.length];
    }
  }
  return s;
}

function info(g: GrantRecord): GrantInfo {
  const { redirect_uri: _r, resource: _s, scope: _c, epoch: _e, ...rest } = g;
  return rest;
}
