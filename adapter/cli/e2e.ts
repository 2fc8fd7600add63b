// `lineup e2e on|off|status`: end-to-end encryption for this machine's inbox (docs/e2e.md).
import { InboxApi } from "../client/inbox.js";
import { defaultRelayKey, findInbox, normalizeUrl, type SavedInbox } from "../client/state.js";
import { ensureInbox } from "../client/ensure.js";
import { Keyring } from "../e2e/keyring.js";
import { livePending } from "../e2e/saved.js";
import { turnOff, turnOn } from "../e2e/switch.js";
import { sealPolicyAtTurnOn } from "../permissions/policy-store.js";
import { err, out, str, UsageError } from "./common.js";
import { clock, fail, inboxState, parse, whereOf } from "./inbox-common.js";
import { INBOX_HELP } from "./inbox-help.js";
import { LineUpError } from "../../shared/client/errors.js";

export async function cmdE2E(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, key: { type: "string" } });
  if (values.help) return (out(INBOX_HELP.e2e!), 0);
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
      if (e instanceof LineUpError && e.status === 404) {
        err(`lineup e2e: the relay at ${w.relayUrl} does not support end-to-end encryption (no /api/inbox/e2e)`);
        return 2;
      }
      fail(e, w, inbox);
    }
    // Issue 26: the plaintext inbox policy is sealed under the first key (docs/e2e.md "The inbox policy").
    if (r.created)
      await sealPolicyAtTurnOn(w.stateDir, { relayUrl: normalizeUrl(w.relayUrl), credential: inbox.machineCredential, inboxId: inbox.inboxId }).then(
        (n) => n && err(`lineup e2e: ${n}`),
      );
    if (values.json) return (out(JSON.stringify({ on: true, inbox_id: inbox.inboxId, epoch: r.epoch, created: r.created })), 0);
    out(
      `end-to-end encryption is on for inbox ${inbox.inboxId} (key epoch ${r.epoch}${r.created ? ", made now" : ""}): sessions created from now on are sealed`,
    );
    // A running `lineup connect` / `lineup mcp` keeps the plaintext session it opened (a session's sealing is
    // fixed for its life): it must be restarted to get a sealed one (docs/e2e.md "Switching on").
    err("lineup e2e: a `lineup connect` or `lineup mcp` already running keeps its plaintext session: restart it to seal its project's session");
    const st = await inboxState(w, inbox);
    if (st.devices.length && r.created)
      err(
        `lineup e2e: the ${st.devices.length} device(s) paired before do not have the key: pair each again with \`lineup pair\` (until then they cannot read sealed sessions)`,
      );
    return 0;
  }
  const inbox = findInbox(w.stateDir, w.relayUrl);
  if (sub === "off") {
    const was = inbox ? turnOff(w, inbox) : false;
    if (values.json) return (out(JSON.stringify({ on: false, was_on: was, ...(inbox ? { inbox_id: inbox.inboxId } : {}) })), 0);
    out(was ? `end-to-end encryption is off: new sessions are plaintext; sealed sessions stay sealed and the keys stay` : "end-to-end encryption was not on");
    return 0;
  }
  // status
  if (!inbox?.e2e) {
    if (values.json)
      return (out(JSON.stringify({ on: false, inbox_id: inbox?.inboxId ?? null, epoch: 0, holders: [], pending_pairings: [], rekey_needed: false })), 0);
    out(
      inbox
        ? `end-to-end encryption is off for inbox ${inbox.inboxId} (\`lineup e2e on\` turns it on)`
        : `end-to-end encryption is off; this machine has no inbox on ${w.relayUrl} yet`,
    );
    return 0;
  }
  let relay: Awaited<ReturnType<InboxApi["e2eState"]>>;
  try {
    // Like every other command, status completes a pending pairing first (a device that opened the link gets
    // the key now; the comparison code is printed on stderr), and takes a newer key or re-keys when due.
    const k = await Keyring.open({ ...w, log: (s) => err(`lineup: ${s}`) });
    try {
      await k?.sync();
    } finally {
      k?.close();
    }
    relay = await new InboxApi(w.relayUrl).e2eState(inbox.machineCredential);
  } catch (e) {
    fail(e, w, inbox);
  }
  // Read again: the sync above may have answered a pairing (pending) or taken a newer key.
  const now = findInbox(w.stateDir, w.relayUrl) ?? inbox;
  const e2e = now.e2e ?? inbox.e2e;
  const held = Object.keys(e2e.keys)
    .map(Number)
    .sort((a, b) => b - a);
  const pending = livePending(e2e).map((p) => ({ code_id: p.code_id, expires_at: p.expires_at }));
  const status = {
    on: e2e.on,
    inbox_id: inbox.inboxId,
    machine_id: inbox.machineId,
    epoch: relay.epoch,
    held_epochs: held,
    has_current_key: held.includes(relay.epoch),
    holders: relay.holders,
    trusted: e2e.roster.map((h) => h.id),
    pending_pairings: pending,
    relay_pairings: relay.pairings.map((p) => ({ code_id: p.code_id, state: p.state, expires_at: p.expires_at })),
    rekey_needed: relay.rekey_needed,
  };
  if (values.json) return (out(JSON.stringify(status)), 0);
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
