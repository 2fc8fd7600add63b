// What the inbox commands share: their options, where they work (relay and state directory), how a failure
// of the relay or the state becomes an exit code (`Exit`), and the table and time formats of listings.
import type { ParseArgsConfig } from "node:util";
import type { InboxState } from "../../shared/contract/inbox.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { InboxApi } from "../client/inbox.js";
import { defaultRelayUrl, defaultStateDir, findInbox, forgetInbox, normalizeUrl, type SavedInbox } from "../client/state.js";
import { checkKeyTransport } from "../client/ensure.js";
import { err, out, parseOptions, str, type Values } from "./common.js";
import { LineUpError } from "../../shared/client/errors.js";

/** An answer that ends the command with this exit code (the message is already printed). */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export function parse(argv: string[], options: ParseArgsConfig["options"]): { values: Values; positionals: string[] } {
  return parseOptions(argv, { help: { type: "boolean", short: "h" }, relay: { type: "string" }, "state-dir": { type: "string" }, ...options });
}

export interface Where {
  relayUrl: string;
  stateDir: string;
}
/** Where the command works; the machine credential and codes get the relay key's rule for plain http. */
export function whereOf(v: Values): Where {
  const w = { relayUrl: normalizeUrl(str(v, "relay") ?? defaultRelayUrl()), stateDir: str(v, "state-dir") ?? defaultStateDir() };
  try {
    checkKeyTransport(w.relayUrl, "the machine credential or a code");
  } catch (e) {
    fail(e, w);
  }
  return w;
}

/** Prints a failure of the relay or the state and turns it into the exit code. */
export function fail(e: unknown, w: Where, inbox?: SavedInbox): never {
  if (e instanceof Exit) throw e;
  if (e instanceof LineUpError && e.status === 401 && inbox) {
    forgetInbox(w.stateDir, w.relayUrl, inbox.machineCredential);
    err(
      `lineup: the relay refused this machine's inbox credential (${inbox.machineId}: revoked, or the relay's storage was reset); it is forgotten. \`lineup pair\` creates a new inbox, \`lineup join CODE\` joins one.`,
    );
    throw new Exit(2);
  }
  if (e instanceof LineUpError) {
    err(`lineup: ${forTerminal(e.status ? `${e.status} ${e.code}: ${e.message}` : e.message)}`);
    // 1: the thing asked for is not there or not in that state (404, 409), or nobody answered in time; 2: anything else.
    throw new Exit(e.status === 404 || e.status === 409 || e.code === "timeout" || e.code === "e2e_no_key" ? 1 : 2);
  }
  throw e;
}

/** The saved inbox, or `undefined` after saying there is none. */
export function savedInbox(w: Where): SavedInbox | undefined {
  const inbox = findInbox(w.stateDir, w.relayUrl);
  if (!inbox) err(`lineup: this machine has no inbox on ${w.relayUrl} yet (\`lineup pair\` creates one, \`lineup join CODE\` joins one)`);
  return inbox;
}

/** Listing without an inbox: nothing to list (already said on stderr); `--json` prints an empty array. */
export function noInbox(v: Values): number {
  if (v.json) out("[]");
  return 0;
}

export async function inboxState(w: Where, inbox: SavedInbox): Promise<InboxState> {
  try {
    return await new InboxApi(w.relayUrl).state(inbox.machineCredential);
  } catch (e) {
    fail(e, w, inbox);
  }
}

// ------------------------------------------------------------------ output helpers

export const clock = (ms: number) => new Date(ms).toTimeString().slice(0, 5);

export function when(ms: number): string {
  if (!ms) return "never";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ago(ms: number): string {
  if (!ms) return "never";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  // last_seen is written once a minute: finer is noise.
  if (s < 120) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

export function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join("  ")).join("\n");
}

/** Names come from the other side (a device names itself): no escape sequences, one line. */
export const shown = (s: string) => forTerminal(s).replace(/\s+/g, " ");
