// `npm run deploy` runs this first. It refuses to deploy a relay that would not work or not be safe:
// RELAY_KEY not set as a secret of the Worker, or a [vars] override in wrangler.toml that the relay would
// refuse (a typo in a limit answers 503 bad_config to every request — better caught here).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { parseConfig } from "../shared/edge/config.js";

const toml = parse(readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8")) as { vars?: Record<string, unknown> };
const vars = Object.fromEntries(Object.entries(toml.vars ?? {}).map(([k, v]) => [k, String(v)]));
const cfg = parseConfig(vars);
if (!cfg.ok) {
  console.error("predeploy: wrangler.toml [vars] has values the relay would refuse:");
  for (const p of cfg.problems) console.error(`  - ${p}`);
  process.exit(1);
}

// Wrangler never shows a secret's value, so its length can only be checked here when it is given to this
// command (RELAY_KEY=… npm run deploy); the relay itself refuses a short one (503 bad_config).
const given = process.env.RELAY_KEY;
if (given !== undefined && given.length < 32) {
  console.error("predeploy: RELAY_KEY is shorter than 32 characters. `npm run set-relay-key` makes and stores a long one.");
  process.exit(1);
}

const r = spawnSync("npx", ["wrangler", "secret", "list", "--format", "json"], { encoding: "utf8" });
if (r.status !== 0) {
  console.error("predeploy: could not list secrets (are you logged in? `npx wrangler login`).");
  process.exit(1);
}
let names: string[] = [];
try {
  names = (JSON.parse(r.stdout) as { name: string }[]).map((s) => s.name);
} catch {
  /* first deploy: the Worker does not exist yet */
}
if (!names.includes("RELAY_KEY")) {
  console.error("predeploy: RELAY_KEY is not set. Run `npm run set-relay-key` (or `npx wrangler secret put RELAY_KEY` with 32+ random characters) first.");
  console.error("Without it the deployed relay refuses to create sessions (503 not_configured).");
  process.exit(1);
}
