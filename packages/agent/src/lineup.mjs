#!/usr/bin/env node
// The installed `lineup` command (package lineup-agent, issue 30): the bundled CLI in ../lib, plain JavaScript —
// no TypeScript loader. Inside the repository adapter/bin/lineup.mjs runs the same sources through tsx.
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 6)) {
  process.stderr.write(`lineup needs Node.js 20.6 or newer (this is ${process.versions.node}).\n`);
  process.exit(2);
}
// Node >= 22.1 keeps the compiled code of these modules between runs (module.enableCompileCache). The cache lives
// in this user's state directory (created 0700, as the adapter creates it), never in the shared temp directory,
// where another user could plant code for the hook every tool call runs. NODE_DISABLE_COMPILE_CACHE=1 turns it
// off; older Node has no such function and nothing happens.
const { enableCompileCache } = await import("node:module");
if (enableCompileCache) {
  const [{ mkdirSync }, { homedir }, { join }] = await Promise.all([import("node:fs"), import("node:os"), import("node:path")]);
  try {
    const stateDir = process.env.LINEUP_STATE_DIR || join(homedir(), ".lineup");
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    enableCompileCache(join(stateDir, "compile-cache"));
  } catch {
    /* an unwritable state directory: run without the cache */
  }
}
const { main } = await import("../lib/cli.js");
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Long-running commands resolve only when they are done; nothing else should keep the process alive.
setTimeout(() => process.exit(code), 300).unref();
