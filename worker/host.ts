// The Worker's side of the shared edge (shared/edge/app.ts): keys and secrets from bindings, sessions as
// Durable Object stubs, the PWA from static assets.
import type { Context } from "hono";
import { parseConfig, type ConfigResult } from "../shared/edge/config.js";
import { DEV_RELAY_KEY } from "../shared/contract/defaults.js";
import { AuthBrake, type EdgeEnv, type EdgeHost, type EdgeSession } from "../shared/edge/app.js";
import { httpApi } from "../shared/session/host.js";
import { withIdentity } from "../shared/session/identity.js";
import { hmac } from "../shared/edge/tokens.js";
import type { Env } from "./env.js";
import { relaySecrets, relayVapid, rotateVapid } from "./relay.js";

const isLocal = (url: string) => ["localhost", "127.0.0.1", "[::1]", "::1"].includes(new URL(url).hostname);

/** RELAY_KEY, or the documented dev default — only for requests to localhost, never in production. */
export function relayKey(env: Env, url: string): string | undefined {
  if (env.RELAY_KEY) return env.RELAY_KEY === DEV_RELAY_KEY && !isLocal(url) ? undefined : env.RELAY_KEY;
  return isLocal(url) ? DEV_RELAY_KEY : undefined;
}

/** TOKEN_SECRET when the operator set one, else the relay's generated secret (worker/relay.ts). */
export async function tokenSecret(env: Env): Promise<string> {
  return env.TOKEN_SECRET || (await relaySecrets(env)).token_secret;
}

/** One IM conversation has one session: its id is derived from the channel, so no directory is needed. */
export async function imSessionId(env: Env, im: { channel_id: string; channel_type: number }): Promise<string> {
  return `im_${(await hmac((await relaySecrets(env)).id_salt, `im:${im.channel_type}:${im.channel_id}`)).slice(0, 24)}`;
}

// Per isolate: the env object is the same for every request of an isolate, so its parse is kept.
const configs = new WeakMap<Env, ConfigResult>();
function configOf(env: Env): ConfigResult {
  let r = configs.get(env);
  if (!r) {
    r = parseConfig(env);
    if (r.ok && env.TOKEN_SECRET && (env.TOKEN_SECRET.length < 32 || env.TOKEN_SECRET === env.RELAY_KEY)) {
      r = { ok: false, problems: ["TOKEN_SECRET must be at least 32 characters and differ from RELAY_KEY"] };
    }
    // A short key can be guessed despite the brake; `npm run set-relay-key` makes a long one.
    if (r.ok && env.RELAY_KEY && env.RELAY_KEY !== DEV_RELAY_KEY && env.RELAY_KEY.length < 32) {
      r = { ok: false, problems: ["RELAY_KEY must be at least 32 characters (npm run set-relay-key makes one)"] };
    }
    if (!r.ok) console.error("worker: refusing requests, bad configuration:", r.problems.join("; "));
    configs.set(env, r);
  }
  return r;
}

const brake = new AuthBrake();

/** Generic over the app's variables: the edge's app and the Worker's own sub-apps (worker/mcp) make hosts alike. */
export function workerHost<E extends { Bindings: Env }>(c: Context<E>): EdgeHost {
  const env: Env = c.env;
  const cfg = configOf(env);
  return {
    relayKey: relayKey(env, c.req.url),
    unconfigured: "RELAY_KEY is not set: run `wrangler secret put RELAY_KEY`",
    configError: cfg.ok ? undefined : cfg.problems.join("; "),
    tokenSecret: () => tokenSecret(env),
    origins: cfg.ok ? [...(cfg.config.publicUrl ? [cfg.config.publicUrl] : []), ...cfg.config.allowedOrigins] : [],
    publicBase: cfg.ok ? cfg.config.publicUrl : undefined,
    clientAddr: c.req.header("cf-connecting-ip") ?? "unknown",
    brake,
    session: (sid) => sessionStub(env, sid),
    // The object's stub is the inbox service itself (shared/inbox/service.ts): no forward per operation.
    inboxes: {
      inbox: (id) => env.INBOXES.get(env.INBOXES.idFromName(id)),
      connect: (id, req, deviceId, subprotocol) => inboxConnect(env, id, req, deviceId, subprotocol),
    },
    // http://127.0.0.1 push endpoints only while the relay itself is on localhost (the dev key's rule).
    push: {
      publicKey: async () => (await relayVapid(env)).publicKey,
      rotate: async () => (await rotateVapid(env)).publicKey,
      allowLocalHttp: isLocal(c.req.url),
    },
    im:
      env.WUKONGIM_API_URL && env.WUKONGIM_BOT_UID
        ? { sessionId: (ch) => imSessionId(env, ch) }
        : { status: 503, message: "IM-bound sessions need WUKONGIM_API_URL and WUKONGIM_BOT_UID (docs/wukongim.md)" },
    assets: async (req) => (env.ASSETS ? env.ASSETS.fetch(req) : new Response("LineUp relay: the PWA is not built (npm run build)", { status: 404 })),
  };
}

function sessionStub(env: Env, sid: string): EdgeSession {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sid));
  return {
    init: (m) => stub.init(m),
    status: (epoch) => stub.status(epoch),
    history: (epoch, before, limit) => stub.history(epoch, before, limit),
    async destroy(epoch) {
      if (!(await stub.destroy(epoch))) return false;
      await stub.reset().catch(() => undefined); // abort() rejects this call by design (see Session.reset)
      return true;
    },
    ...httpApi((epoch, op) => stub.http(epoch, op)),
    setE2eEpoch: (epoch) => stub.setE2eEpoch(epoch),
    connect(req, a) {
      // Only the edge speaks to the object about who a socket is (x-lineup-* headers; a client's own are dropped).
      return stub.fetch(withIdentity(req, a));
    },
  };
}

/** The inbox socket of a device the edge checked: the object reads who it is from x-lineup-* headers only the edge sets. */
function inboxConnect(env: Env, id: string, req: Request, deviceId: string, subprotocol: boolean): Promise<Response> {
  const headers = new Headers();
  for (const [k, v] of req.headers) if (!k.startsWith("x-lineup-")) headers.set(k, v);
  headers.set("x-lineup-device", deviceId);
  if (subprotocol) headers.set("x-lineup-subprotocol", "1");
  return env.INBOXES.get(env.INBOXES.idFromName(id)).fetch(new Request(req, { headers }));
}
