import type { Inbox } from "./inbox.js";
import type { OAuth } from "./oauth/object.js";
import type { Relay } from "./relay.js";
import type { Session } from "./session.js";

/** Bindings, vars and secrets of the Worker (wrangler.toml and `wrangler secret put`). */
export interface Env {
  SESSIONS: DurableObjectNamespace<Session>;
  RELAY: DurableObjectNamespace<Relay>;
  INBOXES: DurableObjectNamespace<Inbox>;
  /** OAuth for MCP connectors (worker/oauth): open authorization requests and each inbox's grants. */
  OAUTH: DurableObjectNamespace<OAuth>;
  ASSETS?: Fetcher;
  /** Secret: the key that creates sessions. Local development falls back to DEV_RELAY_KEY on localhost only. */
  RELAY_KEY?: string;
  /** Optional secret that signs session tokens instead of the relay's generated one (must differ from RELAY_KEY). */
  TOKEN_SECRET?: string;
  /** Comma-separated browser origins allowed besides the relay's own. */
  ALLOWED_ORIGINS?: string;
  /** Public base URL used in `app_url`/`ws_url` (default: the request's origin). */
  PUBLIC_URL?: string;
  /** The VAPID `sub` of Web Push (mailto: or https:); default: the relay's https origin (docs/push.md). */
  VAPID_SUBJECT?: string;
  RATE_LIMIT_PER_S?: string;
  RATE_LIMIT_BURST?: string;
  WUKONGIM_API_URL?: string;
  WUKONGIM_MANAGER_TOKEN?: string;
  WUKONGIM_WEBHOOK_SECRET?: string;
  WUKONGIM_BOT_UID?: string;
  WUKONGIM_FORWARD_URL?: string;
}
