#!/usr/bin/env node
// The `lineup` command. The adapter is TypeScript; `tsx` loads it in-process (Node >= 20.6).
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 6)) {
  process.stderr.write(`lineup needs Node.js 20.6 or newer (this is ${process.versions.node}).\n`);
  process.exit(2);
}
let register;
try {
  ({ register } = await import("tsx/esm/api"));
} catch {
  process.stderr.write("lineup: the `tsx` package is missing; run `npm install` in the lineup-relay package.\n");
  process.exit(2);
}
register();
const { main } = await import("../cli/main.ts");
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Long-running commands resolve only when they are done; nothing else should keep the process alive.
setTimeout(() => process.exit(code), 300).unref();
