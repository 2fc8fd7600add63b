// What the OAuth routes share (worker/oauth/routes.ts, worker/oauth/authorize.ts): the relay's OAuth identity,
// the OAuth object's two roles, the context clients are resolved in, and the pages' response helpers.
import type { Context } from "hono";
import type { EdgeEnv, EdgeHost } from "../../shared/edge/app.js";
import type { Env } from "../env.js";
import type { ClientContext } from "./clients.js";
import type { OAuth } from "./object.js";
import { PAGE_HEADERS } from "./page.js";

export type C = Context<EdgeEnv<Env>>;

/** The relay's OAuth identity is the origin the client talks to: the issuer must be the URL it fetched. */
export const baseOf = (c: Context): string => new URL(c.req.url).origin;
const isLocal = (url: string) => ["localhost", "127.0.0.1", "[::1]", "::1"].includes(new URL(url).hostname);

const stub = (env: Env, name: string): DurableObjectStub<OAuth> => env.OAUTH.get(env.OAUTH.idFromName(name));
/** The relay's open authorization requests. */
export const pending = (env: Env) => stub(env, "pending");
/** The grants of one inbox. */
export const grantsOf = (env: Env, inbox: string) => stub(env, `inbox:${inbox}`);

export async function clientContext(c: Context, h: EdgeHost): Promise<ClientContext> {
  return { secret: await h.tokenSecret(), base: baseOf(c), local: isLocal(c.req.url), addr: h.clientAddr };
}

/** A page of the authorization endpoint, with its CSP and no-referrer headers. */
export function html(c: C, body: string, status: 200 | 400 | 404 | 429 | 503 = 200): Response {
  for (const [k, v] of Object.entries(PAGE_HEADERS)) c.header(k, v);
  return c.html(body, status);
}

export function withParams(uri: string, params: Record<string, string | undefined>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}
