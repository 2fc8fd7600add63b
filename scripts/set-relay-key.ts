// `npm run set-relay-key`: makes a long random RELAY_KEY, stores it as the Worker's secret, and prints it
// once (agent machines need it: LINEUP_RELAY_KEY). The relay refuses keys shorter than 32 characters.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";

const key = randomBytes(32).toString("base64url");
const r = spawnSync("npx", ["wrangler", "secret", "put", "RELAY_KEY"], { input: key, stdio: ["pipe", "inherit", "inherit"] });
if (r.status !== 0) {
  console.error("set-relay-key: `wrangler secret put RELAY_KEY` failed (are you logged in? `npx wrangler login`).");
  process.exit(1);
}
console.log(`\nRELAY_KEY is set. Give agent machines this key (it is shown only now):\n\n  LINEUP_RELAY_KEY=${key}\n`);
