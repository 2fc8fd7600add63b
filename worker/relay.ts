// The relay's own singleton Durable Object: relay-wide secrets it generates on first use, so a self-hoster
// sets nothing but RELAY_KEY. Session tokens are signed with `token_secret`, never with RELAY_KEY (every
// agent machine holds that key; it must create sessions, not enter them). The Worker reads the secrets
// once per isolate; this object is not on any session's path.
import { DurableObject } from "cloudflare:workers";
import { randomId } from "../shared/tokens.js";
import type { Env } from "./env.js";

export interface RelaySecrets {
  /** Signs session tokens (unless the operator configured TOKEN_SECRET). */
  token_secret: string;
  /** Keys the derivation of IM-bound session ids from their channel; never rotated. */
  id_salt: string;
}

export class Relay extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS secrets (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  }

  private secret(k: string): string {
    const sql = this.ctx.storage.sql;
    const row = sql.exec<{ v: string }>("SELECT v FROM secrets WHERE k = ?", k).toArray()[0];
    if (row) return row.v;
    const v = randomId(32);
    sql.exec("INSERT INTO secrets (k, v) VALUES (?, ?)", k, v);
    return v;
  }

  async secrets(): Promise<RelaySecrets> {
    return { token_secret: this.secret("token_secret"), id_salt: this.secret("id_salt") };
  }
}

let cached: Promise<RelaySecrets> | undefined;

/** The relay's secrets, fetched once per isolate (a failed fetch is retried by the next request). */
export function relaySecrets(env: Env): Promise<RelaySecrets> {
  cached ??= env.RELAY.get(env.RELAY.idFromName("relay"))
    .secrets()
    .catch((e: unknown) => {
      cached = undefined;
      throw e;
    });
  return cached;
}
