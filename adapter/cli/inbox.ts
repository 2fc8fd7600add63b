// The inbox commands of the `lineup` CLI (docs/inbox.md, docs/adapter.md "Pairing once: the inbox"):
// `pair`, `join`, `devices`, `machines`, and what `connect` and `mcp` say about pairing when they start.
// Exit codes as the rest of the CLI: 0 ok, 1 an error result (unknown id, used code), 2 usage, auth or
// connection failures. Machine output (`--json`) is one JSON document on stdout; text for humans goes to
// stdout for listings and to stderr for links (they are credentials until used).
// The commands are in pairing.ts (pair, join, and announceSession for connect and mcp), devices.ts (devices,
// machines), e2e.ts; what they share in inbox-common.ts, their help in inbox-help.ts.
import { cmdDevices, cmdMachines } from "./devices.js";
import { cmdE2E } from "./e2e.js";
import { Exit } from "./inbox-common.js";
import { cmdJoin, cmdPair } from "./pairing.js";

export { UsageError } from "./common.js";
export { INBOX_HELP } from "./inbox-help.js";
export { announceSession, pairingText, type AnnounceOptions } from "./pairing.js";

export const INBOX_COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  e2e: cmdE2E,
  pair: cmdPair,
  join: cmdJoin,
  devices: cmdDevices,
  machines: cmdMachines,
};

/** Runs an inbox command: `Exit` carries its exit code out of the helpers above. */
export async function runInboxCommand(name: string, argv: string[]): Promise<number> {
  try {
    return await INBOX_COMMANDS[name]!(argv);
  } catch (e) {
    if (e instanceof Exit) return e.code;
    throw e;
  }
}
