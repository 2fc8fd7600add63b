// Entry point for running the MCP server directly: `npx tsx adapter/mcp/main.ts [options]`
// (the CLI's `lineup mcp` calls runMcp the same way).
import { runMcp } from "./server.js";

runMcp(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`lineup mcp: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
