// `npm run dev`: builds the PWA, then runs the relay (wrangler dev, workerd) on http://127.0.0.1:8787
// serving the PWA, and rebuilds the PWA on change. No secrets needed: on localhost the relay accepts
// the documented dev key (shared/defaults.ts).
import { spawn, spawnSync } from "node:child_process";

process.env.WRANGLER_SEND_METRICS = "false";
const port = process.env.PORT ?? "8787";
const build = spawnSync("npx", ["vite", "build", "--logLevel", "warn"], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);

const children = [
  spawn("npx", ["vite", "build", "--watch", "--logLevel", "warn"], { stdio: "inherit" }),
  spawn("npx", ["wrangler", "dev", "--ip", "127.0.0.1", "--port", port, ...process.argv.slice(2)], { stdio: "inherit" }),
];
console.log(`\nLineUp relay + PWA: http://127.0.0.1:${port}  (dev RELAY_KEY: lineup-dev-relay-key)\n`);
const stop = () => {
  for (const c of children) c.kill("SIGTERM");
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
for (const c of children) c.on("exit", (code) => code && code !== 0 && stop());
