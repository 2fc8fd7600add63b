#!/usr/bin/env node
// The installed `lineup` command (package lineup-agent, issue 30): the bundled CLI in ../lib, plain JavaScript —
// no TypeScript loader. Inside the repository adapter/bin/lineup.mjs runs the same sources through tsx.
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 6)) {
  process.stderr.write(`lineup needs Node.js 20.6 or newer (this is ${process.versions.node}).\n`);
  process.exit(2);
}
// Node >= 22.1 keeps the compiled code of these modules between runs (module.enableCompileCache: a cache in the
// OS temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off). Older Node has no such function: nothing happens.
const { enableCompileCache } = await import("node:module");
try {
  enableCompileCache?.();
} catch {
  /* an unwritable temp directory: run without the cache */
}
const { main } = await import("../lib/cli.js");
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Long-running commands resolve only when they are done; nothing else should keep the process alive.
setTimeout(() => process.exit(code), 300).unref();
