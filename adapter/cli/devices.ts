// `lineup devices` and `lineup machines`: list, rename and revoke the inbox's devices and machines; after a
// revocation this machine re-keys the inbox when it holds the end-to-end key.
import { DEVICE_ID_RE, INBOX_LIMITS, MACHINE_ID_RE, RenameBody } from "../../shared/contract/inbox.js";
import { InboxApi } from "../client/inbox.js";
import { forgetInbox } from "../client/state.js";
import { Keyring } from "../e2e/keyring.js";
import { err, out, UsageError } from "./common.js";
import { ago, fail, inboxState, noInbox, parse, savedInbox, shown, table, when, whereOf, type Where } from "./inbox-common.js";
import { INBOX_HELP } from "./inbox-help.js";
import { LineUpError } from "../../shared/client/errors.js";

// ------------------------------------------------------------------ devices, machines

export async function cmdDevices(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return (out(INBOX_HELP.devices!), 0);
  const [sub = "list", id, name, ...rest] = positionals;
  const w = whereOf(values);
  if (sub === "list") {
    if (id !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(id)}`);
    const inbox = savedInbox(w);
    if (!inbox) return noInbox(values);
    const st = await inboxState(w, inbox);
    if (values.json) return (out(JSON.stringify(st.devices.map((d) => ({ id: d.id, name: d.name, paired_at: d.paired_at, last_seen: d.last_seen })))), 0);
    if (!st.devices.length) return (out(`no paired devices in inbox ${st.inbox_id} (\`lineup pair\` pairs one)`), 0);
    out(
      table(
        ["ID", "NAME", "PAIRED", "LAST SEEN"],
        st.devices.map((d) => [d.id, shown(d.name), when(d.paired_at), ago(d.last_seen)]),
      ),
    );
    return 0;
  }
  if (sub !== "revoke" && sub !== "rename") throw new UsageError(`unknown devices command ${JSON.stringify(sub)} (list | rename | revoke)`);
  if (!id) throw new UsageError(`missing the device ID (\`lineup devices\` lists them)`);
  if (sub === "revoke" && name !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(name)}`);
  if (sub === "rename" && (name === undefined || rest.length))
    throw new UsageError(name === undefined ? "missing NAME" : `unexpected argument ${JSON.stringify(rest[0])} (quote a name with spaces)`);
  if (sub === "rename" && !RenameBody.safeParse({ name }).success) throw new UsageError(`NAME must be 1-${INBOX_LIMITS.maxName} characters`);
  const inbox = savedInbox(w);
  if (!inbox) return 2;
  const st = await inboxState(w, inbox);
  const dev = DEVICE_ID_RE.test(id) ? st.devices.find((d) => d.id === id) : undefined;
  if (!dev) {
    err(
      `lineup devices: no device ${JSON.stringify(shown(id))} in inbox ${st.inbox_id} (${st.devices.length ? `its devices: ${st.devices.map((d) => d.id).join(", ")}` : "it has no devices"})`,
    );
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
    if (e instanceof LineUpError && e.status === 404) {
      err(`lineup devices: no device ${id} in inbox ${st.inbox_id} (revoked meanwhile?)`);
      return 1;
    }
    fail(e, w, inbox);
  }
  return 0;
}

export async function cmdMachines(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return (out(INBOX_HELP.machines!), 0);
  const [sub = "list", id, ...rest] = positionals;
  if (rest.length || (sub === "list" && id !== undefined)) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0] ?? id)}`);
  const w = whereOf(values);
  const inbox = savedInbox(w);
  if (sub === "list") {
    if (!inbox) return noInbox(values);
    const st = await inboxState(w, inbox);
    const self = st.you.kind === "machine" ? st.you.id : inbox.machineId;
    if (values.json)
      return (
        out(JSON.stringify(st.machines.map((m) => ({ id: m.id, name: m.name, joined_at: m.joined_at, last_seen: m.last_seen, this_machine: m.id === self })))),
        0
      );
    out(
      table(
        ["ID", "NAME", "JOINED", "LAST SEEN"],
        st.machines.map((m) => [m.id, `${shown(m.name)}${m.id === self ? " (this machine)" : ""}`, when(m.joined_at), ago(m.last_seen)]),
      ),
    );
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
    if (e instanceof LineUpError && e.status === 404) {
      err(`lineup machines: no machine ${id} in inbox ${st.inbox_id} (revoked meanwhile?)`);
      return 1;
    }
    fail(e, w, inbox);
  }
  if (id === inbox.machineId) {
    forgetInbox(w.stateDir, w.relayUrl, inbox.machineCredential);
    out(
      `revoked this machine (${id}, "${shown(mc.name)}") from inbox ${st.inbox_id} and forgot its credential; the sessions it created have ended, new ones need a new inbox (relay key) or \`lineup join CODE\``,
    );
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
    err(
      `lineup: end-to-end: re-keying after the revocation failed (${e instanceof Error ? e.message : String(e)}); the next adapter process or paired device that holds the key does it`,
    );
  } finally {
    k?.close();
  }
}
