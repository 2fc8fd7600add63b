// Pairing: `lineup pair` (a single-use link and QR code for a device), `lineup join CODE[#SECRET]` (this
// machine joins an inbox, and its end-to-end key with the secret), and what `connect` and `mcp` say about
// pairing when they start (announceSession).
import { hostname } from "node:os";
import qrcode from "qrcode-terminal";
import { INBOX_LIMITS, parseCode, RenameBody, type CodeIssued, type MachineCreated } from "../../shared/contract/inbox.js";
import { isPairingSecret, pairingCodeId } from "../../shared/crypto/e2e/index.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { InboxApi, machineNameOf } from "../client/inbox.js";
import { defaultRelayKey, findInbox, forgetInbox, loadState, normalizeUrl, saveInbox, type SavedInbox } from "../client/state.js";
import { ensureInbox, withInbox } from "../client/ensure.js";
import { joinKeys, splitJoinCode } from "../e2e/join.js";
import { armPairing } from "../e2e/switch.js";
import { Keyring } from "../e2e/keyring.js";
import { livePending } from "../e2e/saved.js";
import { distrustPlaintextCache } from "../permissions/policy-store.js";
import { err, out, str, UsageError } from "./common.js";
import { clock, fail, parse, shown, whereOf } from "./inbox-common.js";
import { CODE_MINUTES, INBOX_HELP } from "./inbox-help.js";
import { LineUpError } from "../../shared/client/errors.js";

function printQr(url: string, write: (s: string) => void): void {
  qrcode.generate(url, { small: true }, (code) => write(code));
}

/** The pairing link block (stderr): the link is a credential until it is used or expires. */
export function pairingText(url: string, expiresAt: number): string {
  return `Pair your phone or browser with this machine's inbox — open this link on it (or scan the QR code):

  ${forTerminal(url)}

The code in it is single-use and valid ${CODE_MINUTES} minutes (until ${clock(expiresAt)}): until then it pairs
whoever opens it first, so open it only on your own device. A paired device sees every session of this
inbox, including later ones, and can be revoked on its own (\`lineup devices\`, \`lineup devices revoke ID\`).`;
}

// ------------------------------------------------------------------ pair

export async function cmdPair(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    json: { type: "boolean" },
    "no-qr": { type: "boolean" },
    key: { type: "string" },
    wait: { type: "boolean" },
    "no-wait": { type: "boolean" },
  });
  if (values.help) return (out(INBOX_HELP.pair!), 0);
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
  if (values.json) return (out(JSON.stringify({ url, expires_at })), 0);
  err(`\n${pairingText(url, expires_at)}\n`);
  // With E2E on, in a terminal (or with --wait), pair stays until the device opened the link, hands it the key
  // and prints the comparison code; otherwise the next `lineup` command of this machine does it.
  const wait = sealed && values["no-wait"] !== true && (values.wait === true || process.stderr.isTTY === true);
  if (sealed)
    err(
      `End-to-end encryption is on: the link also carries the key exchange's secret (after "&k="; the relay never sees it). ${
        wait
          ? "Waiting for the device to open it, to hand it the key and show the comparison code (Ctrl-C stops; any later `lineup` command completes it)."
          : "The device gets the key when this machine's next `lineup` command runs (`lineup e2e status` will do), or a running one notices."
      }\n`,
    );
  if (!values["no-qr"]) printQr(url, err);
  err(`(inbox ${issued.inbox.inboxId} on ${w.relayUrl}, machine ${issued.inbox.machineId})`);
  if (wait) return waitForDevice(w, await pairingCodeId(issued.value.code), expires_at);
  return 0;
}

/** Completes this link's pairing as soon as the device's hello is there (the keyring prints the comparison
 * code); 0 once done, 1 when the code expired unused, 130 on Ctrl-C. Polls every 1.5 s. */
async function waitForDevice(w: ReturnType<typeof whereOf>, codeId: string, expiresAt: number): Promise<number> {
  let stop = false;
  const onSig = () => (stop = true);
  process.once("SIGINT", onSig);
  try {
    const k = await Keyring.open({ ...w, log: (s) => err(`lineup: ${s}`) });
    if (!k) return 0;
    try {
      for (;;) {
        await k.sync().catch((e: unknown) => err(`lineup: end-to-end: ${e instanceof Error ? e.message : String(e)}`));
        const saved = findInbox(w.stateDir, w.relayUrl)?.e2e;
        if (!saved || !livePending(saved).some((p) => p.code_id === codeId)) {
          if (Date.now() < expiresAt) return (err("lineup: the device holds the key: compare the code above with the one on its screen"), 0);
          err("lineup: the pairing code expired before a device opened it: run `lineup pair` again");
          return 1;
        }
        if (stop) return 130;
        await new Promise((r) => setTimeout(r, 1500));
        if (stop) return 130;
      }
    } finally {
      k.close();
    }
  } finally {
    process.off("SIGINT", onSig);
  }
}

// ------------------------------------------------------------------ join

export async function cmdJoin(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { name: { type: "string" }, json: { type: "boolean" } });
  if (values.help) return (out(INBOX_HELP.join!), 0);
  const [arg, ...rest] = positionals;
  if (!arg) throw new UsageError("missing CODE (the join code the app shows)");
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  // CODE#SECRET: the secret is for the key exchange only; it never goes to the relay.
  const { code, secret } = splitJoinCode(arg);
  if (!parseCode(code)) throw new UsageError("that is not a join code (it looks like <12 characters>.<16 characters>, as the app shows it)");
  if (secret !== undefined && !isPairingSecret(secret))
    throw new UsageError("the pairing secret after # is not 43 characters of base64url (copy the whole command the app shows)");
  const name = str(values, "name") ?? machineNameOf(hostname());
  if (!RenameBody.safeParse({ name }).success) throw new UsageError(`--name must be 1-${INBOX_LIMITS.maxName} characters`);
  const w = whereOf(values);
  let m: MachineCreated;
  try {
    m = await new InboxApi(w.relayUrl).redeemJoin(code.trim(), name);
  } catch (e) {
    if (e instanceof LineUpError && e.status === 404) {
      err(
        `lineup join: ${e.code === "invalid_code" ? `the code is unknown, used or expired (codes are single-use and valid ${CODE_MINUTES} minutes): make a new one in the app` : `the relay at ${w.relayUrl} has no inboxes (an older relay)`}`,
      );
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
    err(
      `lineup join: this machine was already in inbox ${inbox.inboxId} as ${before.machineId}; it is now ${inbox.machineId} (\`lineup machines revoke ${before.machineId}\` removes the old one)`,
    );
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
  if (values.json)
    return (
      out(JSON.stringify({ relay_url: w.relayUrl, inbox_id: inbox.inboxId, machine_id: inbox.machineId, name, ...(e2e ? { e2e_epoch: e2e.epoch } : {}) })), 0
    );
  out(`joined inbox ${inbox.inboxId} on ${w.relayUrl} as machine ${inbox.machineId} ("${shown(name)}"); its sessions from now on are attached to this inbox`);
  return 0;
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
  if (!saved?.inboxId || !inbox || inbox.inboxId !== saved.inboxId) return (o.v1(), "v1");
  const guest = () => {
    if (o.appUrl && (o.guestLink || process.env.LINEUP_GUEST_LINK === "1"))
      o.log(`guest link (anyone who has it is in this session; it cannot be revoked): ${o.appUrl}`);
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
    if (e instanceof LineUpError && e.status === 401) {
      forgetInbox(o.stateDir, relayUrl, inbox.machineCredential);
      o.log(
        `the relay refused this machine's inbox credential (${inbox.machineId}: revoked, or the relay's storage was reset); it is forgotten, the next new session creates a new inbox. This session's app link still works:`,
      );
    } else o.log(`cannot read the inbox (${e instanceof Error ? e.message : String(e)}); this session's app link still works:`);
    o.v1();
    return "v1";
  }
}
