// The relay's own singleton Durable Object: relay-wide secrets it generates on first use, so a self-hoster
// sets nothing but RELAY_KEY. Session tokens are signed with `token_secret`, never with RELAY_KEY (every
// agent machine holds that key; it must create sessions, not enter them). The Worker reads the secrets
// once per isolate; this object is not on any session's path.
import { DurableObject } from "cloudflare:workers";
import { randomId } from "../shared/edge/tokens.js";
import { generateVapidKeys, type VapidKeys } from "../shared/crypto/webpush/index.js";
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

  /** The relay's VAPID key pair (docs/push.md), made on first use; `rotate` replaces it (devices re-subscribe). */
  async vapid(rotate = false): Promise<VapidKeys> {
    const sql = this.ctx.storage.sql;
    const read = () => sql.exec<{ v: string }>("SELECT v FROM secrets WHERE k = 'vapid'").toArray()[0];
    const row = rotate ? undefined : read();
    if (row) return JSON.parse(row.v) as VapidKeys;
    const keys = await generateVapidKeys();
    // Two first uses at once both generate (crypto does not close the input gate): the first insert wins.
    sql.exec(`INSERT INTO secrets (k, v) VALUES ('vapid', ?) ON CONFLICT (k) DO ${rotate ? "UPDATE SET v = excluded.v" : "NOTHING"}`, JSON.stringify(keys));
    return JSON.parse(read()!.v) as VapidKeys;
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

let vapidCached: { at: number; keys: Promise<VapidKeys> } | undefined;
/** Kept per isolate for a minute, so a rotation reaches every isolate soon (a stale key only skips a push). */
const VAPID_CACHE_MS = 60_000;

/** The relay's VAPID keys, from its singleton object. */
export function relayVapid(env: Env): Promise<VapidKeys> {
  if (vapidCached && Date.now() - vapidCached.at < VAPID_CACHE_MS) return vapidCached.keys;
  const keys = env.RELAY.get(env.RELAY.idFromName("relay")).vapid();
  vapidCached = { at: Date.now(), keys };
  keys.catch(() => (vapidCached = undefined));
  return keys;
}

/** Makes a new VAPID key pair (`POST /api/push/rotate-key` with RELAY_KEY). */
export async function rotateVapid(env: Env): Promise<VapidKeys> {
  const keys = await env.RELAY.get(env.RELAY.idFromName("relay")).vapid(true);
  vapidCached = { at: Date.now(), keys: Promise.resolve(keys) };
  return keys;
}
