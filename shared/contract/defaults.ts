// Local-development defaults shared by the Worker and the CLI, so a fresh clone runs with no setup.
// The Worker accepts DEV_RELAY_KEY only for requests to localhost; production needs
// `wrangler secret put RELAY_KEY` (see README "Deploy").
export const DEV_RELAY_KEY = "lineup-dev-relay-key";
export const DEV_RELAY_URL = "http://127.0.0.1:8787";
export const LAN_PORT = 9527;
