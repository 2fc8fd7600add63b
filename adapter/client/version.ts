// The agent side's version (issue 30): the one number is the agent package's own (packages/agent/package.json),
// inlined by the bundler, read through tsx inside the repository. And the one warning when the relay speaks a
// newer protocol than this adapter knows.
import { name, version } from "../../packages/agent/package.json";
import { PROTOCOL } from "../../shared/contract/limits.js";

export const AGENT_PACKAGE: string = name;
export const AGENT_VERSION: string = version;
/** What the newer-protocol warning tells the user to run. */
export const UPGRADE_COMMAND = `npm install -g ${AGENT_PACKAGE}@latest`;

/** `lineup/N` → N; undefined for anything else. */
export function protocolNumber(p: unknown): number | undefined {
  const m = typeof p === "string" ? /^lineup\/([1-9][0-9]{0,5})$/.exec(p) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * A check of the protocol each `hello` names: the first time it is a newer `lineup/N` than this adapter's,
 * it returns the warning (with the upgrade command); every other time, undefined. One per process and
 * relay URL in practice (the adapter keeps one), so reconnects and calls never repeat it.
 */
export function protocolWarner(): (relayProtocol: unknown, relayUrl: string) => string | undefined {
  const warned = new Set<string>();
  const ours = protocolNumber(PROTOCOL) ?? 1;
  return (relayProtocol, relayUrl) => {
    const theirs = protocolNumber(relayProtocol);
    if (theirs === undefined || theirs <= ours || warned.has(relayUrl)) return undefined;
    warned.add(relayUrl);
    return `the relay at ${relayUrl} speaks ${String(relayProtocol)}, newer than this lineup ${AGENT_VERSION} knows (${PROTOCOL}); calls keep working where the protocols agree — upgrade with: ${UPGRADE_COMMAND}`;
  };
}
