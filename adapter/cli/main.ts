// The `lineup` CLI. Exit codes: 0 ok / a result, 1 an error result (from the provider or the relay),
// 2 usage, auth or connection failures, 130 interrupted. Human progress goes to stderr; `call` prints
// exactly one JSON document on stdout.
// The command table is here; each command is in its own file (call.ts, connect.ts, status.ts, serve.ts,
// the inbox commands behind inbox.ts), what they share in common.ts, the help texts in help.ts.
// Every command is loaded on demand (issue 30): `lineup --version` and `lineup hook pre-tool-use` must not
// pay for `ws`, the MCP SDK, the LAN server or the QR code; the package's bundle splits at each import().
import { LineUpError } from "../../shared/client/errors.js";
import { PROTOCOL } from "../../shared/contract/limits.js";
import { AGENT_VERSION } from "../client/version.js";

const write = (s: string, to: NodeJS.WriteStream) => to.write(s.endsWith("\n") ? s : `${s}\n`);

/** The inbox commands (inbox.ts INBOX_COMMANDS), named here so the table loads none of them. */
export const INBOX_COMMAND_NAMES = ["e2e", "pair", "join", "devices", "machines"] as const;

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  connect: async (argv) => (await import("./connect.js")).cmdConnect(argv),
  call: async (argv) => (await import("./call.js")).cmdCall(argv),
  status: async (argv) => (await import("./status.js")).cmdStatus(argv),
  sessions: async (argv) => (await import("./status.js")).cmdSessions(argv),
  serve: async (argv) => (await import("./serve.js")).cmdServe(argv),
  mcp: async (argv) => {
    await (await import("../mcp/server.js")).runMcp(argv);
    return 0;
  },
  // Issue 17 (permissions): loaded on demand, so other commands do not pay for them.
  hook: async (argv) => (await import("../permissions/hooks.js")).runHook(argv),
  // i29-defer: resumes deferred headless Claude Code runs without a `lineup connect` (docs/permissions.md §9.2).
  daemon: async (argv) => (await import("./daemon.js")).cmdDaemon(argv),
  setup: async (argv) => (await import("../setup/index.js")).runSetup(argv),
  permissions: async (argv) => (await import("../permissions/log.js")).runPermissionsLog(argv),
  ...Object.fromEntries(INBOX_COMMAND_NAMES.map((name) => [name, async (argv: string[]) => (await import("./inbox.js")).runInboxCommand(name, argv)])),
};

/** What `lineup --version` prints: the package's version and the protocol it speaks. */
export const VERSION_LINE = `lineup ${AGENT_VERSION} (protocol ${PROTOCOL})`;

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === "--version" || cmd === "-v" || cmd === "version") return (write(VERSION_LINE, process.stdout), 0);
  if (!cmd || cmd === "--help" || cmd === "-h" || cmd === "help") {
    const { HELP } = await import("./help.js");
    const topic = cmd === "help" ? rest[0] : undefined;
    write(topic && HELP[topic] ? HELP[topic] : HELP.main!, process.stdout);
    return cmd ? 0 : 2;
  }
  const run = COMMANDS[cmd];
  if (!run) {
    const { HELP } = await import("./help.js");
    write(`lineup: unknown command ${JSON.stringify(cmd)}\n\n${HELP.main}`, process.stderr);
    return 2;
  }
  try {
    return await run(rest);
  } catch (e) {
    const { UsageError, failConnect } = await import("./common.js");
    if (e instanceof UsageError) {
      write(`lineup ${cmd}: ${e.message}\n(see \`lineup ${cmd} --help\`)`, process.stderr);
      return 2;
    }
    if (e instanceof LineUpError) return failConnect(e);
    write(`lineup ${cmd}: ${(e as Error).stack ?? String(e)}`, process.stderr);
    return 2;
  }
}
