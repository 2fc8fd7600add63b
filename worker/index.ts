// The Worker: the shared edge (shared/edge/app.ts) over Durable Object sessions (worker/host.ts), plus the
// Worker-only routes. WebSocket upgrades are routed in Hono and handed raw to the session's object.
import { createEdge } from "../shared/edge/app.js";
import type { Env } from "./env.js";
import { workerHost } from "./host.js";
import { hooksRoutes } from "./hooks/routes.js";
import { mcpRoutes } from "./mcp/routes.js";
import { oauthRoutes } from "./oauth/routes.js";
import { wukongimRoutes } from "./wukongim/routes.js";

export { Inbox } from "./inbox.js";
export { OAuth } from "./oauth/object.js";
export { Relay } from "./relay.js";
export { Session } from "./session.js";

const app = createEdge<Env>(workerHost, (app) => {
  app.route("/mcp", mcpRoutes);
  // Claude Code's http hooks (issue 29 item 6, docs/permissions.md §7.12): the machine credential, the inbox policy, a held card.
  app.route("/api/hooks", hooksRoutes);
  // OAuth for MCP connectors: discovery, /oauth/*, and the PWA's /api/inbox/oauth/* (worker/oauth/routes.ts).
  oauthRoutes(app);
  app.route("/webhooks/wukongim", wukongimRoutes);
});

export default app satisfies ExportedHandler<Env>;
