// `npm run deploy` runs this first: refuse to deploy while RELAY_KEY is not a secret of the Worker.
// (The Worker itself also refuses the dev default on any host but localhost.)
import { spawnSync } from "node:child_process";

const r = spawnSync("npx", ["wrangler", "secret", "list", "--format", "json"], { encoding: "utf8" });
if (r.status !== 0) {
  console.error("predeploy: could not list secrets (are you logged in? `npx wrangler login`).");
  process.exit(1);
}
let names = [];
try {
  names = JSON.parse(r.stdout).map((s) => s.name);
} catch {
  /* first deploy: the Worker does not exist yet */
}
if (!names.includes("RELAY_KEY")) {
  console.error("predeploy: RELAY_KEY is not set. Run `npx wrangler secret put RELAY_KEY` (a long random string) first.");
  console.error("Without it the deployed relay refuses to create sessions (503 not_configured).");
  process.exit(1);
}
