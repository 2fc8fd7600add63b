// The inbox commands of the `lineup` CLI (docs/inbox.md, docs/adapter.md "Pairing once: the inbox"):
// `pair`, `join`, `devices`, `machines`, and what `connect` and `mcp` say about pairing when they start.
// Exit codes as the rest of the CLI: 0 ok, 1 an error result (unknown id, used code), 2 usage, auth or
// connection failures. Machine output (`--json`) is one JSON document on stdout; text for humans goes to
// stdout for listings and to stderr for links (they are credentials until used).
import { hostname } from "node:os";
import { parseArgs, type ParseArgsConfig } from "node:util";
import qrcode from "qrcode-terminal";
import { DEVICE_ID_RE, INBOX_LIMITS, MACHINE_ID_RE, parseCode, RenameBody, type CodeIssued, type InboxState, type MachineCreated } from "../../shared/contract/inbox.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { InboxApi, InboxHttpError, machineNameOf } from "../client/inbox.js";
import { isPairingSecret } from "../../shared/crypto/e2e/index.js";
import { armPairing, E2EFailure, joinKeys, Keyring, livePending, splitJoinCode, turnOff, turnOn } from "../e2e/keyring.js";
import { distrustPlaintextCache, sealPolicyAtTurnOn } from "../permissions/policy-store.js";
import {
  checkKeyTransport,
  defaultRelayKey,
  defaultRelayUrl,
  defaultStateDir,
  ensureInbox,
  findInbox,
  forgetInbox,
  loadState,
  normalizeUrl,
  saveInbox,
  StateError,
  withInbox,
  type SavedInbox,
} from "../client/state.js";

const out = (s: string) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
const err = (s: string) => process.stderr.write(s.endsWith("\n") ? s : `${s}\n`);

export class UsageError extends Error {}

/** An answer that ends the command with this exit code (the message is already printed). */
class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

const CODE_MINUTES = INBOX_LIMITS.codeTtlMs / 60_000;

const OPTIONS_HELP = `Options:
  --relay URL      relay base URL (LINEUP_RELAY_URL; default http://127.0.0.1:8787)
  --state-dir DIR  state directory (LINEUP_STATE_DIR; default ~/.lineup)
  -h, --help       this help`;

export const INBOX_HELP: Record<string, string> = {
  e2e: `Usage: lineup e2e on|off|status [--json] [--relay URL] [--key K] [--state-dir DIR]

End-to-end encryption for this machine's inbox (docs/e2e.md): the relay routes what it cannot read.
on       makes this machine's key and, the first time, the inbox's content key (the relay never has it);
         sessions created from now on are sealed (a plaintext session of a directory is replaced by a
         sealed one the next time it starts). Creates the inbox first (with the relay key) if needed.
         Devices paired before must pair again (\`lineup pair\`) to receive the key.
off      new sessions are plaintext again; sealed sessions stay sealed and the keys stay.
status   on/off, the key epoch, the holders (devices and machines with the key), pending pairings and
         whether a re-key is due; --json prints one JSON object.

Options:
  --json           machine-readable output (one JSON document on stdout)
  --key K          relay key, only needed to create the inbox (LINEUP_RELAY_KEY)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  pair: `Usage: lineup pair [--json] [--no-qr] [--relay URL] [--key K] [--state-dir DIR]

Pairs a phone or browser with this machine's inbox: prints a pairing link and its QR code (stderr). Open it
once on the device; from then on it sees every session of the inbox — every project directory, \`lineup
connect\`, \`lineup call\`, \`lineup mcp\` — including sessions created later, and can be revoked on its own
(\`lineup devices revoke ID\`). The code in the link is single-use and valid ${CODE_MINUTES} minutes.
Creates the inbox first (with the relay key) if this machine has none on the relay.

Options:
  --json           print exactly one JSON line {"url","expires_at"} on stdout, nothing else there
  --no-qr          do not print the QR code
  --key K          relay key, only needed to create the inbox (LINEUP_RELAY_KEY)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  join: `Usage: lineup join CODE [--name NAME] [--relay URL] [--state-dir DIR]

Makes this machine a machine of an existing inbox, with a join code the app shows (devices screen, "add a
machine"; single-use, valid ${CODE_MINUTES} minutes). No relay key needed. The machine credential is saved in the
state file and replaces any other inbox this machine had on the relay: sessions of that inbox are replaced
by new ones in this inbox the next time they start.

Options:
  --name NAME      this machine's name in the inbox (default: the host name)
${OPTIONS_HELP.slice("Options:\n".length)}`,
  devices: `Usage: lineup devices [list] [--json]
       lineup devices rename ID NAME
       lineup devices revoke ID

list     the human devices paired with this machine's inbox (id, name, paired, last seen);
         --json prints one JSON array of {id, name, paired_at, last_seen} (epoch ms)
rename   names a device (1-${INBOX_LIMITS.maxName} characters)
revoke   removes a device: its credential is refused from now on and its open connections close at
         once; other devices are not affected. Exit 1 if there is no such device.

${OPTIONS_HELP}`,
  machines: `Usage: lineup machines [list] [--json]
       lineup machines revoke ID

list     the agent machines of this machine's inbox (this one is marked);
         --json prints one JSON array of {id, name, joined_at, last_seen, this_machine}
revoke   removes a machine: its credential is refused and every session it created ends (sockets close
         with 4004). Revoking this machine forgets its credential here too. Exit 1 if no such machine.

${OPTIONS_HELP}`,
};

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

function parse(argv: string[], options: ParseArgsConfig["options"]): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args: argv, options: { help: { type: "boolean", short: "h" }, relay: { type: "string" }, "state-dir": { type: "string" }, ...options }, allowPositionals: true, strict: true });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

const str = (v: Values, k: string) => (typeof v[k] === "string" ? (v[k] as string) : undefined);

interface Where {
  relayUrl: string;
  stateDir: string;
}
/** Where the command works; the machine credential and codes get the relay key's rule for plain http. */
function whereOf(v: Values): Where {
  const w = { relayUrl: normalizeUrl(str(v, "relay") ?? defaultRelayUrl()), stateDir: str(v, "state-dir") ?? defaultStateDir() };
  try {
    checkKeyTransport(w.relayUrl, "the machine credential or a code");
  } catch (e) {
    fail(e, w);
  }
  return w;
}

/** Prints a failure of the relay or the state and turns it into the exit code. */
function fail(e: unknown, w: Where, inbox?: SavedInbox): never {
  if (e instanceof Exit) throw e;
  if (e instanceof InboxHttpError && e.status === 401 && inbox) {
    forgetInbox(w.stateDir, w.relayUrl, inbox.machineCredential);
    err(`lineup: the relay refused this machine's inbox credential (${inbox.machineId}: revoked, or the relay's storage was reset); it is forgotten. \`lineup pair\` creates a new inbox, \`lineup join CODE\` joins one.`);
    throw new Exit(2);
  }
  if (e instanceof InboxHttpError) {
    err(`lineup: ${forTerminal(e.status ? `${e.status} ${e.code}: ${e.message}` : e.message)}`);
    throw new Exit(e.status === 404 || e.status === 409 ? 1 : 2);
  }
  if (e instanceof E2EFailure) {
    err(`lineup: ${forTerminal(e.message)}`);
    throw new Exit(e.code === "timeout" || e.code === "e2e_no_key" ? 1 : 2);
  }
  if (e instanceof StateError) {
    err(`lineup: ${forTerminal(e.message)}`);
    throw new Exit(2);
  }
  throw e;
}

/** The saved inbox, or `undefined` after saying there is none. */
function savedInbox(w: Where): SavedInbox | undefined {
  const inbox = findInbox(w.stateDir, w.relayUrl);
  if (!inbox) err(`lineup: this machine has no inbox on ${w.relayUrl} yet (\`lineup pair\` creates one, \`lineup join CODE\` joins one)`);
  return inbox;
}

/** Listing without an inbox: nothing to list (already said on stderr); `--json` prints an empty array. */
function noInbox(v: Values): number {
  if (v.json) out("[]");
  return 0;
}

async function inboxState(w: Where, inbox: SavedInbox): Promise<InboxState> {
  try {
    return await new InboxApi(w.relayUrl).state(inbox.machineCredential);
  } catch (e) {
    fail(e, w, inbox);
  }
}

// ------------------------------------------------------------------ output helpers

function printQr(url: string, write: (s: string) => void): void {
  qrcode.generate(url, { small: true }, (code) => write(code));
}

const clock = (ms: number) => new Date(ms).toTimeString().slice(0, 5);

/** The pairing link block (stderr): the link is a credential until it is used or expires. */
export function pairingText(url: string, expiresAt: number): string {
  return `Pair your phone or browser with this machine's inbox — open this link on it (or scan the QR code):

  ${forTerminal(url)}

The code in it is single-use and valid ${CODE_MINUTES} minutes (until ${clock(expiresAt)}): until then it pairs
whoever opens it first, so open it only on your own device. A paired device sees every session of this
inbox, including later ones, and can be revoked on its own (\`lineup devices\`, \`lineup devices revoke ID\`).`;
}

function when(ms: number): string {
  if (!ms) return "never";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function ago(ms: number): string {
  if (!ms) return "never";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  // last_seen is written once a minute: finer is noise.
  if (s < 120) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join("  ")).join("\n");
}

/** Names come from the other side (a device names itself): no escape sequences, one line. */
const shown = (s: string) => forTerminal(s).replace(/\s+/g, " ");

// ------------------------------------------------------------------ pair

async function cmdPair(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, "no-qr": { type: "boolean" }, key: { type: "string" } });
  if (values.help) return out(INBOX_HELP.pair!), 0;
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const w = whereOf(values);
  const relayKey = str(values, "key") ?? defaultRelayKey();
  if (str(values, "key") !== undefined) err("lineup: warning: --key puts a secret in your shell history and the process list; prefer LINEUP_RELAY_KEY");
  let issued: Awaited<ReturnType<typeof withInbox<CodeIssued & { url: string }>>>;
  try {
    // Under the state lock first, so that two commands starting at once create ONE inbox.
    await ensureInbox({ ...w, relayKey });
    issued = await withInbox({ ...w, relayKey, log: (s) => err(`lineup: ${s}`) }, (inbox) => new InboxApi(w.relayUrl).createPairing(inbox.machineCredential));
  } catch (e) {
    fail(e, w);
  }
  if (!issued) {
    err(`lineup: the relay at ${w.relayUrl} has no inboxes (an older relay): pair with the app link \`lineup connect\` prints`);
    return 2;
  }
  const { expires_at } = issued.value;
  let url: string;
  let sealed: boolean;
  try {
    ({ url, sealed } = await armPairing(w, issued.inbox, issued.value));
  } catch (e) {
    fail(e, w);
  }
  if (values.json) return out(JSON.stringify({ url, expires_at })), 0;
  err(`\n${pairingText(url, expires_at)}\n`);
  if (sealed) err(`End-to-end encryption is on: the link also carries the key exchange's secret (after "&k="; the relay never sees it). The device gets the key when this machine's next \`lineup connect\`, \`call\` or \`mcp\` runs (or a running one notices).\n`);
  if (!values["no-qr"]) printQr(url, err);
  err(`(inbox ${issued.inbox.inboxId} on ${w.relayUrl}, machine ${issued.inbox.machineId})`);
  return 0;
}

// ------------------------------------------------------------------ join

async function cmdJoin(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { name: { type: "string" }, json: { type: "boolean" } });
  if (values.help) return out(INBOX_HELP.join!), 0;
  const [arg, ...rest] = positionals;
  if (!arg) throw new UsageError("missing CODE (the join code the app shows)");
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  // CODE#SECRET: the secret is for the key exchange only; it never goes to the relay.
  const { code, secret } = splitJoinCode(arg);
  if (!parseCode(code)) throw new UsageError("that is not a join code (it looks like <12 characters>.<16 characters>, as the app shows it)");
  if (secret !== undefined && !isPairingSecret(secret)) throw new UsageError("the pairing secret after # is not 43 characters of base64url (copy the whole command the app shows)");
  const name = str(values, "name") ?? machineNameOf(hostname());
  if (!RenameBody.safeParse({ name }).success) throw new UsageError(`--name must be 1-${INBOX_LIMITS.maxName} characters`);
  const w = whereOf(values);
  let m: MachineCreated;
  try {
    m = await new InboxApi(w.relayUrl).redeemJoin(code.trim(), name);
  } catch (e) {
    if (e instanceof InboxHttpError && e.status === 404) {
      err(`lineup join: ${e.code === "invalid_code" ? `the code is unknown, used or expired (codes are single-use and valid ${CODE_MINUTES} minutes): make a new one in the app` : `the relay at ${w.relayUrl} has no inboxes (an older relay)`}`);
      return 1;
    }
    fail(e, w);
  }
  const inbox: SavedInbox = { relayUrl: w.relayUrl, inboxId: m.inbox_id, machineId: m.machine_id, machineCredential: m.machine_credential };
  const before = findInbox(w.stateDir, w.relayUrl);
  saveInbox(w.stateDir, inbox);
  if (before && before.inboxId !== inbox.inboxId) {
    err(
      `lineup join: replaced inbox ${before.inboxId} (machine ${before.machineId}) of ${w.relayUrl} in ${w.stateDir}: its sessions are replaced by new ones in inbox ${inbox.inboxId} the next time they start. The old machine credential is forgotten here but not revoked: remove ${before.machineId} in the old inbox's app if it should go.`,
    );
  } else if (before) {
    err(`lineup join: this machine was already in inbox ${inbox.inboxId} as ${before.machineId}; it is now ${inbox.machineId} (\`lineup machines revoke ${before.machineId}\` removes the old one)`);
  }
  let e2e: { epoch: number; sponsor: string; comparisonCode: string } | undefined;
  if (secret !== undefined) {
    try {
      e2e = await joinKeys(w, inbox, code.trim(), secret, { progress: (s) => err(`lineup join: ${s}`) });
    } catch (e) {
      err(`lineup join: joined inbox ${inbox.inboxId} as machine ${inbox.machineId}, but did not get its end-to-end key:`);
      fail(e, w, inbox);
    }
    err(`lineup join: got the inbox's end-to-end key (epoch ${e2e.epoch}) from ${e2e.sponsor}; comparison code ${e2e.comparisonCode} (the app shows the same)`);
    distrustPlaintextCache(w.stateDir, inbox.inboxId); // issue 26: from now on only a sealed policy allows
  }
  if (values.json) return out(JSON.stringify({ relay_url: w.relayUrl, inbox_id: inbox.inboxId, machine_id: inbox.machineId, name, ...(e2e ? { e2e_epoch: e2e.epoch } : {}) })), 0;
  out(`joined inbox ${inbox.inboxId} on ${w.relayUrl} as machine ${inbox.machineId} ("${shown(name)}"); its sessions from now on are attached to this inbox`);
  return 0;
}

// ------------------------------------------------------------------ devices, machines

async function cmdDevices(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return out(INBOX_HELP.devices!), 0;
  const [sub = "list", id, name, ...rest] = positionals;
  const w = whereOf(values);
  if (sub === "list") {
    if (id !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(id)}`);
    const inbox = savedInbox(w);
    if (!inbox) return noInbox(values);
    const st = await inboxState(w, inbox);
    if (values.json) return out(JSON.stringify(st.devices.map((d) => ({ id: d.id, name: d.name, paired_at: d.paired_at, last_seen: d.last_seen })))), 0;
    if (!st.devices.length) return out(`no paired devices in inbox ${st.inbox_id} (\`lineup pair\` pairs one)`), 0;
    out(table(["ID", "NAME", "PAIRED", "LAST SEEN"], st.devices.map((d) => [d.id, shown(d.name), when(d.paired_at), ago(d.last_seen)])));
    return 0;
  }
  if (sub !== "revoke" && sub !== "rename") throw new UsageError(`unknown devices command ${JSON.stringify(sub)} (list | rename | revoke)`);
  if (!id) throw new UsageError(`missing the device ID (\`lineup devices\` lists them)`);
  if (sub === "revoke" && name !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(name)}`);
  if (sub === "rename" && (name === undefined || rest.length)) throw new UsageError(name === undefined ? "missing NAME" : `unexpected argument ${JSON.stringify(rest[0])} (quote a name with spaces)`);
  if (sub === "rename" && !RenameBody.safeParse({ name }).success) throw new UsageError(`NAME must be 1-${INBOX_LIMITS.maxName} characters`);
  const inbox = savedInbox(w);
  if (!inbox) return 2;
  const st = await inboxState(w, inbox);
  const dev = DEVICE_ID_RE.test(id) ? st.devices.find((d) => d.id === id) : undefined;
  if (!dev) {
    err(`lineup devices: no device ${JSON.stringify(shown(id))} in inbox ${st.inbox_id} (${st.devices.length ? `its devices: ${st.devices.map((d) => d.id).join(", ")}` : "it has no devices"})`);
    return 1;
  }
  const api = new InboxApi(w.relayUrl);
  try {
    if (sub === "rename") {
      const d = await api.renameDevice(inbox.machineCredential, id, name!);
      out(`renamed device ${d.id} from "${shown(dev.name)}" to "${shown(d.name)}"`);
    } else {
      await api.revokeDevice(inbox.machineCredential, id);
      out(`revoked device ${id} ("${shown(dev.name)}"): its credential is refused from now on and its connections were closed; other devices are not affected`);
      await rekeyAfterRevoke(w, (s) => out(s));
    }
  } catch (e) {
    if (e instanceof InboxHttpError && e.status === 404) {
      err(`lineup devices: no device ${id} in inbox ${st.inbox_id} (revoked meanwhile?)`);
      return 1;
    }
    fail(e, w, inbox);
  }
  return 0;
}

async function cmdMachines(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return out(INBOX_HELP.machines!), 0;
  const [sub = "list", id, ...rest] = positionals;
  if (rest.length || (sub === "list" && id !== undefined)) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0] ?? id)}`);
  const w = whereOf(values);
  const inbox = savedInbox(w);
  if (sub === "list") {
    if (!inbox) return noInbox(values);
    const st = await inboxState(w, inbox);
    const self = st.you.kind === "machine" ? st.you.id : inbox.machineId;
    if (values.json) return out(JSON.stringify(st.machines.map((m) => ({ id: m.id, name: m.name, joined_at: m.joined_at, last_seen: m.last_seen, this_machine: m.id === self })))), 0;
    out(table(["ID", "NAME", "JOINED", "LAST SEEN"], st.machines.map((m) => [m.id, `${shown(m.name)}${m.id === self ? " (this machine)" : ""}`, when(m.joined_at), ago(m.last_seen)])));
    return 0;
  }
  if (sub !== "revoke") throw new UsageError(`unknown machines command ${JSON.stringify(sub)} (list | revoke)`);
  if (!id) throw new UsageError("missing the machine ID (`lineup machines` lists them)");
  if (!inbox) return 2;
  const st = await inboxState(w, inbox);
  const mc = MACHINE_ID_RE.test(id) ? st.machines.find((m) => m.id === id) : undefined;
  if (!mc) {
    err(`lineup machines: no machine ${JSON.stringify(shown(id))} in inbox ${st.inbox_id} (its machines: ${st.machines.map((m) => m.id).join(", ")})`);
    return 1;
  }
  try {
    await new InboxApi(w.relayUrl).revokeMachine(inbox.machineCredential, id);
    if (id !== inbox.machineId) await rekeyAfterRevoke(w, (s) => out(s));
  } catch (e) {
    if (e instanceof InboxHttpError && e.status === 404) {
      err(`lineup machines: no machine ${id} in inbox ${st.inbox_id} (revoked meanwhile?)`);
      return 1;
    }
    fail(e, w, inbox);
  }
  if (id === inbox.machineId) {
    forgetInbox(w.stateDir, w.relayUrl, inbox.machineCredential);
    out(`revoked this machine (${id}, "${shown(mc.name)}") from inbox ${st.inbox_id} and forgot its credential; the sessions it created have ended, new ones need a new inbox (relay key) or \`lineup join CODE\``);
  } else out(`revoked machine ${id} ("${shown(mc.name)}"): its credential is refused from now on and the sessions it created have ended`);
  return 0;
}

/**
 * A revoked holder that had the key leaves the inbox needing a new epoch (docs/e2e.md "Re-keying"): this
 * machine makes it at once when it holds the key; otherwise the next holder that notices does.
 */
async function rekeyAfterRevoke(w: Where, say: (s: string) => void): Promise<void> {
  let k: Keyring | undefined;
  try {
    k = await Keyring.open({ ...w, log: (s) => err(`lineup: ${s}`) });
    if (!k) return;
    // Always synced: a running adapter of this machine may have re-keyed first (then it says so).
    const r = await k.sync();
    if (r.rekeyed) say(`end-to-end: re-keyed the inbox to epoch ${r.epoch}: the revoked holder cannot open anything sent from now on`);
    else if (r.changed) say(`end-to-end: another holder re-keyed the inbox first (epoch ${r.epoch})`);
  } catch (e) {
    err(`lineup: end-to-end: re-keying after the revocation failed (${e instanceof Error ? e.message : String(e)}); the next adapter process or paired device that holds the key does it`);
  } finally {
    k?.close();
  }
}

// ------------------------------------------------------------------ e2e

async function cmdE2E(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, key: { type: "string" } });
  if (values.help) return out(INBOX_HELP.e2e!), 0;
  const [sub = "status", ...rest] = positionals;
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  if (sub !== "on" && sub !== "off" && sub !== "status") throw new UsageError(`unknown e2e command ${JSON.stringify(sub)} (on | off | status)`);
  const w = whereOf(values);
  if (sub === "on") {
    const relayKey = str(values, "key") ?? defaultRelayKey();
    if (str(values, "key") !== undefined) err("lineup: warning: --key puts a secret in your shell history and the process list; prefer LINEUP_RELAY_KEY");
    let inbox: SavedInbox | undefined;
    try {
      inbox = await ensureInbox({ ...w, relayKey });
    } catch (e) {
      fail(e, w);
    }
    if (!inbox) {
      err(`lineup e2e: the relay at ${w.relayUrl} has no inboxes (an older relay): end-to-end encryption needs one`);
      return 2;
    }
    let r: { epoch: number; created: boolean };
    try {
      r = await turnOn({ ...w, log: (s) => err(`lineup: ${s}`) }, inbox);
    } catch (e) {
      if (e instanceof InboxHttpError && e.status === 404) {
        err(`lineup e2e: the relay at ${w.relayUrl} does not support end-to-end encryption (no /api/inbox/e2e)`);
        return 2;
      }
      fail(e, w, inbox);
    }
    // Issue 26: the plaintext inbox policy is sealed under the first key (docs/e2e.md "The inbox policy").
    if (r.created) await sealPolicyAtTurnOn(w.stateDir, { relayUrl: normalizeUrl(w.relayUrl), credential: inbox.machineCredential, inboxId: inbox.inboxId }).then((n) => n && err(`lineup e2e: ${n}`));
    if (values.json) return out(JSON.stringify({ on: true, inbox_id: inbox.inboxId, epoch: r.epoch, created: r.created })), 0;
    out(`end-to-end encryption is on for inbox ${inbox.inboxId} (key epoch ${r.epoch}${r.created ? ", made now" : ""}): sessions created from now on are sealed`);
    const st = await inboxState(w, inbox);
    if (st.devices.length && r.created) err(`lineup e2e: the ${st.devices.length} device(s) paired before do not have the key: pair each again with \`lineup pair\` (until then they cannot read sealed sessions)`);
    return 0;
  }
  const inbox = findInbox(w.stateDir, w.relayUrl);
  if (sub === "off") {
    const was = inbox ? turnOff(w, inbox) : false;
    if (values.json) return out(JSON.stringify({ on: false, was_on: was, ...(inbox ? { inbox_id: inbox.inboxId } : {}) })), 0;
    out(was ? `end-to-end encryption is off: new sessions are plaintext; sealed sessions stay sealed and the keys stay` : "end-to-end encryption was not on");
    return 0;
  }
  // status
  if (!inbox?.e2e) {
    if (values.json) return out(JSON.stringify({ on: false, inbox_id: inbox?.inboxId ?? null, epoch: 0, holders: [], pending_pairings: [], rekey_needed: false })), 0;
    out(inbox ? `end-to-end encryption is off for inbox ${inbox.inboxId} (\`lineup e2e on\` turns it on)` : `end-to-end encryption is off; this machine has no inbox on ${w.relayUrl} yet`);
    return 0;
  }
  let relay: Awaited<ReturnType<InboxApi["e2eState"]>>;
  try {
    relay = await new InboxApi(w.relayUrl).e2eState(inbox.machineCredential);
  } catch (e) {
    fail(e, w, inbox);
  }
  const held = Object.keys(inbox.e2e.keys).map(Number).sort((a, b) => b - a);
  const pending = livePending(inbox.e2e).map((p) => ({ code_id: p.code_id, expires_at: p.expires_at }));
  const status = {
    on: inbox.e2e.on,
    inbox_id: inbox.inboxId,
    machine_id: inbox.machineId,
    epoch: relay.epoch,
    held_epochs: held,
    has_current_key: held.includes(relay.epoch),
    holders: relay.holders,
    trusted: inbox.e2e.roster.map((h) => h.id),
    pending_pairings: pending,
    relay_pairings: relay.pairings.map((p) => ({ code_id: p.code_id, state: p.state, expires_at: p.expires_at })),
    rekey_needed: relay.rekey_needed,
  };
  if (values.json) return out(JSON.stringify(status)), 0;
  out(
    [
      `end-to-end encryption: ${status.on ? "on (new sessions are sealed)" : "off (new sessions are plaintext; the keys are kept)"}`,
      `inbox ${status.inbox_id}, this machine ${status.machine_id}`,
      `key epoch: ${status.epoch}${status.has_current_key ? "" : " — this machine does NOT hold it (\`lineup join CODE#SECRET\` from a device gets it)"}`,
      `holders (${status.holders.length}): ${status.holders.join(", ") || "none"}`,
      `pending pairings: ${pending.length ? pending.map((p) => `${p.code_id} (until ${clock(p.expires_at)})`).join(", ") : "none"}`,
      `re-key needed: ${status.rekey_needed ? "yes (a holder was revoked; the next adapter process or device with the key does it)" : "no"}`,
    ].join("\n"),
  );
  return 0;
}

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

// ------------------------------------------------------------------ connect and mcp

export interface AnnounceOptions {
  relayUrl: string;
  stateDir: string;
  sessionId: string;
  qr: boolean;
  /** Also print the session's v1 app link ("guest link"); also LINEUP_GUEST_LINK=1. */
  guestLink: boolean;
  appUrl?: string;
  /** One human line (stderr). */
  log: (line: string) => void;
  /** A block as is (the QR code), to stderr. */
  write?: (block: string) => void;
  /** What to print for a session outside this machine's inbox: its app link, as before the inbox. */
  v1: () => void;
}

/**
 * What `lineup connect` and `lineup mcp` say when they start: a pairing link while the inbox has no device,
 * else how many devices are paired; the app link only for v1 sessions or with --guest-link. Never throws:
 * the agent works whatever the inbox answers. "v1": the session's app link was printed (`o.v1`).
 */
export async function announceSession(o: AnnounceOptions): Promise<"inbox" | "v1"> {
  const write = o.write ?? err;
  const relayUrl = normalizeUrl(o.relayUrl);
  const saved = loadState(o.stateDir).sessions.find((s) => s.sessionId === o.sessionId && s.relayUrl === relayUrl);
  const inbox = findInbox(o.stateDir, relayUrl);
  if (!saved?.inboxId || !inbox || inbox.inboxId !== saved.inboxId) return o.v1(), "v1";
  const guest = () => {
    if (o.appUrl && (o.guestLink || process.env.LINEUP_GUEST_LINK === "1")) o.log(`guest link (anyone who has it is in this session; it cannot be revoked): ${o.appUrl}`);
  };
  const api = new InboxApi(relayUrl);
  try {
    const st = await api.state(inbox.machineCredential);
    if (st.devices.length) {
      o.log(`paired devices: ${st.devices.length} — answer on your phone (inbox ${st.inbox_id}; \`lineup pair\` adds a device)`);
    } else {
      const p = await api.createPairing(inbox.machineCredential);
      const { url } = await armPairing({ relayUrl, stateDir: o.stateDir }, inbox, p);
      write(`\n${pairingText(url, p.expires_at)}\n`);
      if (o.qr) printQr(url, write);
    }
    guest();
    return "inbox";
  } catch (e) {
    if (e instanceof InboxHttpError && e.status === 401) {
      forgetInbox(o.stateDir, relayUrl, inbox.machineCredential);
      o.log(`the relay refused this machine's inbox credential (${inbox.machineId}: revoked, or the relay's storage was reset); it is forgotten, the next new session creates a new inbox. This session's app link still works:`);
    } else o.log(`cannot read the inbox (${e instanceof Error ? e.message : String(e)}); this session's app link still works:`);
    o.v1();
    return "v1";
  }
}
