// The agent side's version (issue 30): the one number is the agent package's own (packages/agent/package.json),
// inlined by the bundler, read through tsx inside the repository. And the one warning when the relay speaks a
// newer protocol than this adapter knows: once per relay and protocol on this machine, remembered in the state
// directory, so neither a reconnect nor another process (each `lineup call`, each hook) repeats it.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { name, version } from "../../packages/agent/package.json";
import { PROTOCOL } from "../../shared/contract/limits.js";

export const AGENT_PACKAGE: string = name;
export const AGENT_VERSION: string = version;
/** What the newer-protocol warning tells the user to run. */
export const UPGRADE_COMMAND = `npm install -g ${AGENT_PACKAGE}@latest`;
/** In the state directory: relay URL → the newest protocol already warned about (`{"https://r.example":"lineup/2"}`). */
export const PROTOCOL_WARNED_FILE = "protocol-warned.json";

/** `lineup/N` → N; undefined for anything else. */
export function protocolNumber(p: unknown): number | undefined {
  const m = typeof p === "string" ? /^lineup\/([1-9][0-9]{0,5})$/.exec(p) : null;
  return m ? Number(m[1]) : undefined;
}

/** Where the warnings already given are remembered beyond this process (protocolMemory), or not at all. */
export interface ProtocolMemory {
  /** The newest protocol number already warned about for this relay (0: none). */
  warned(relayUrl: string): number;
  remember(relayUrl: string, protocol: number): void;
}

/**
 * The warnings given, in `<stateDir>/protocol-warned.json` (0600, written whole and renamed). A file that is
 * missing, unreadable or not such an object counts as empty (the warning then comes once more); a write that
 * fails is ignored — the warning is advice, never a reason to refuse a connection.
 */
export function protocolMemory(stateDir: string): ProtocolMemory {
  const file = join(stateDir, PROTOCOL_WARNED_FILE);
  const read = (): Record<string, unknown> => {
    try {
      const v: unknown = JSON.parse(readFileSync(file, "utf8"));
      return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  return {
    warned: (relayUrl) => protocolNumber(read()[relayUrl]) ?? 0,
    remember: (relayUrl, protocol) => {
      try {
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, `${JSON.stringify({ ...read(), [relayUrl]: `lineup/${protocol}` })}\n`, { mode: 0o600 });
        renameSync(tmp, file);
      } catch {
        /* unwritable state directory: this process still warns only once */
      }
    },
  };
}

/**
 * A check of the protocol each `hello` names: the first time it is a newer `lineup/N` than this adapter's (and
 * newer than any `memory` says was warned about for this relay), it returns the warning with the upgrade command;
 * every other time, undefined. Within the process it remembers by itself, per relay URL; `memory` carries that
 * to the next process.
 */
export function protocolWarner(): (relayProtocol: unknown, relayUrl: string, memory?: ProtocolMemory) => string | undefined {
  const warned = new Map<string, number>();
  const ours = protocolNumber(PROTOCOL) ?? 1;
  return (relayProtocol, relayUrl, memory) => {
    const theirs = protocolNumber(relayProtocol);
    if (theirs === undefined || theirs <= ours || (warned.get(relayUrl) ?? 0) >= theirs) return undefined;
    warned.set(relayUrl, theirs);
    if (memory && memory.warned(relayUrl) >= theirs) return undefined;
    memory?.remember(relayUrl, theirs);
    return `the relay at ${relayUrl} speaks ${String(relayProtocol)}, newer than this lineup ${AGENT_VERSION} knows (${PROTOCOL}); calls keep working where the protocols agree — upgrade with: ${UPGRADE_COMMAND}`;
  };
}
