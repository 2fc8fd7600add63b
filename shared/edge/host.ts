// What the edge (shared/edge/app.ts) needs of the server it runs in, and what its middleware hands its routes: types
// only, imported by every edge module and by both hosts (worker/host.ts, adapter/lan/server.ts), so none of them imports
// another's runtime code to learn a shape.
import type { AuthBrake } from "./auth-brake.js";
import type { InboxService } from "../inbox/service.js";
import type { AuthAnswer } from "../inbox/core.js";
import type { ParsedCredential } from "../contract/inbox.js";
import type { HistoryPage, HttpCallAnswer, HttpCallBody as EngineCallBody, HttpCancelAnswer, SessionMeta } from "../session/engine.js";
import type { Role, SessionStatus } from "../contract/protocol.js";
import type { SocketIdentity } from "../session/identity.js";

/** How the edge hands a checked WebSocket upgrade to a session: the one typed socket identity (shared/session/identity.ts). */
export type SocketAuth = SocketIdentity;

/** One session as the edge sees it (a Durable Object stub, or an in-memory engine). */
export interface EdgeSession {
  init(meta: SessionMeta): Promise<SessionMeta | "exists">;
  status(epoch: number): Promise<SessionStatus | null>;
  history(epoch: number, before: number | undefined, limit: number): Promise<HistoryPage | null>;
  destroy(epoch: number): Promise<boolean>;
  httpCall(epoch: number, body: EngineCallBody, waitS: number): Promise<HttpCallAnswer>;
  httpResult(epoch: number, callId: string, waitS: number): Promise<HttpCallAnswer>;
  /** DELETE of an open HTTP call (docs/protocol.md §7). */
  httpCancel(epoch: number, callId: string): Promise<HttpCancelAnswer>;
  connect(req: Request, auth: SocketAuth): Promise<Response>;
  /** A sealed session learns the inbox's new epoch (docs/e2e.md); only ever forward. */
  setE2eEpoch(epoch: number): Promise<boolean>;
}

export interface EdgeHost {
  /** The key that creates sessions (RELAY_KEY; the LAN server's pre-shared token), if configured. */
  relayKey: string | undefined;
  /** Why there is no key, for the 503. */
  unconfigured: string;
  /** A configuration error (e.g. a typo in a limit), answered as 503 to every request. */
  configError: string | undefined;
  /** The secret that signs session tokens: never the relay key. */
  tokenSecret(): Promise<string>;
  /** Browser origins allowed besides the request's own. */
  origins: readonly string[];
  /** Base of the links handed out, when it is not the request's origin. */
  publicBase: string | undefined;
  /** The caller's address, for the auth brake. */
  clientAddr: string;
  brake: AuthBrake;
  session(sid: string): EdgeSession;
  /** Where IM-bound sessions live, or why this server has none. */
  im: { sessionId(ch: { channel_id: string; channel_type: number }): Promise<string> } | { status: 400 | 503; message: string };
  /** Everything that is not the API: the PWA. */
  assets(req: Request): Promise<Response>;
  /** The `Host` values this server answers (DNS rebinding); undefined: any (the Worker's hosts are Cloudflare's). */
  hostAllowed?(host: string): boolean;
  /** Inboxes (docs/inbox.md); a server without them answers their endpoints 404. `connect`: a checked device's inbox socket
   * (the edge has answered 426 to a plain GET already). */
  inboxes?: { inbox(id: string): InboxService; connect(inbox: string, req: Request, deviceId: string, subprotocol: boolean): Promise<Response> };
  /** Web Push (docs/push.md, shared/edge/push.ts); a server without it answers its endpoints 404. */
  push?: EdgePush;
  /** Live sessions the key created, outside any inbox, newest first: the LAN server lists them so the app's
   * "Direct LAN agent" form joins the session `lineup serve` made. The Worker has none: RELAY_KEY only creates. */
  keySessions?(): Promise<SessionMeta[]>;
}

/** What a server offers for push: its VAPID public key, and whether http://127.0.0.1 endpoints are fine here. */
export interface EdgePush {
  publicKey(): Promise<string>;
  /** Makes a new key pair (devices re-subscribe on their next open); a server may not offer it. */
  rotate?(): Promise<string>;
  /**
   * http://127.0.0.1|localhost|[::1] endpoints (a local fake push service) are fine for this request: the Worker
   * when it is served on localhost (the dev key's rule); the LAN server only with its test-only `allowLocalPush`
   * and a request whose socket peer is loopback — never because of the Host header.
   */
  allowLocalHttp: boolean;
}

/** A credential of the request, checked in its inbox. */
export type Holder = ParsedCredential & { name: string; session?: NonNullable<Extract<AuthAnswer, { ok: true }>["session"]> };

/** A checked session token (or a paired device's credential standing for an app token). */
export type Authed = { sid: string; role: Role; epoch: number; viaSubprotocol: boolean; device?: { id: string; name: string } };

/** What the edge's first middleware sets for every request: its server's host, made once. */
export type HostVars = { Variables: { host: EdgeHost } };
/** The edge app's environment: the server's bindings, and the host. */
export type EdgeEnv<B> = { Bindings: B; Variables: { host: EdgeHost } };
