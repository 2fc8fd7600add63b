// Entry point for running the MCP server directly: `npx tsx adapter/mcp/main.ts [options]`
// (`lineup mcp` — adapter/bin/lineup.mjs — calls runMcp the same way).
import { runMcp } from "./server.js";

runMcp(process.argv.slice(2)).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`lineup mcp: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  },
);
