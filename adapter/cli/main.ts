// The `lineup` CLI. Exit codes: 0 ok / a result, 1 an error result (from the provider or the relay),
// 2 usage, auth or connection failures, 130 interrupted. Human progress goes to stderr; `call` prints
// exactly one JSON document on stdout.
// The command table is here; each command is in its own file (call.ts, connect.ts, status.ts, serve.ts,
// the inbox commands behind inbox.ts), what they share in common.ts, the help texts in help.ts.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { LineUpError } from "../client/index.js";
import { cmdCall } from "./call.js";
import { err, failConnect, out, UsageError } from "./common.js";
import { cmdConnect } from "./connect.js";
import { HELP } from "./help.js";
import { INBOX_COMMANDS, runInboxCommand } from "./inbox.js";
import { cmdServe } from "./serve.js";
import { cmdSessions, cmdStatus } from "./status.js";

// ------------------------------------------------------------------ mcp

async function cmdMcp(argv: string[]): Promise<number> {
  const file = fileURLToPath(new URL("../mcp/server.ts", import.meta.url));
  if (!existsSync(file)) {
    err("lineup mcp: the MCP server (adapter/mcp/server.ts) is not part of this build");
    return 2;
  }
  const mod = (await import(pathToFileURL(file).href)) as { runMcp?: (argv: string[]) => Promise<void> };
  if (typeof mod.runMcp !== "function") {
    err("lineup mcp: adapter/mcp/server.ts does not export runMcp(argv)");
    return 2;
  }
  await mod.runMcp(argv);
  return 0;
}

// ------------------------------------------------------------------ main

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  connect: cmdConnect,
  call: cmdCall,
  status: cmdStatus,
  sessions: cmdSessions,
  serve: cmdServe,
  mcp: cmdMcp,
  // Issue 17 (permissions): loaded on demand, so other commands do not pay for them.
  hook: async (argv) => (await import("../permissions/hooks.js")).runHook(argv),
  setup: async (argv) => (await import("./setup.js")).runSetup(argv),
  permissions: async (argv) => (await import("../permissions/log.js")).runPermissionsLog(argv),
  ...Object.fromEntries(Object.keys(INBOX_COMMANDS).map((name) => [name, (argv: string[]) => runInboxCommand(name, argv)])),
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === "--help" || cmd === "-h" || cmd === "help") {
    const topic = cmd === "help" ? rest[0] : undefined;
    out(topic && HELP[topic] ? HELP[topic] : HELP.main!);
    return cmd ? 0 : 2;
  }
  if (cmd === "--version" || cmd === "-v") return (out("lineup 0.1.0 (protocol lineup/1)"), 0);
  const run = COMMANDS[cmd];
  if (!run) {
    err(`lineup: unknown command ${JSON.stringify(cmd)}\n\n${HELP.main}`);
    return 2;
  }
  try {
    return await run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`lineup ${cmd}: ${e.message}\n(see \`lineup ${cmd} --help\`)`);
      return 2;
    }
    if (e instanceof LineUpError) return failConnect(e);
    err(`lineup ${cmd}: ${(e as Error).stack ?? String(e)}`);
    return 2;
  }
}
