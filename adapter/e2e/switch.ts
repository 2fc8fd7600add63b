// The E2E switch of an inbox and what starts with it (docs/e2e.md): `lineup e2e on|off`, the pairing secret a
// new pairing link carries while E2E is on, and the one sync a starting `connect`/`call`/`mcp` does.
import { generateContentKey, newPairingSecret, pairingCodeId, sealRoster, wrapContentKey, type HolderPublic } from "../../shared/crypto/e2e/index.js";
import { InboxApi } from "../client/inbox.js";
import { findInbox, updateE2E, type SavedInbox } from "../client/state.js";
import { Keyring } from "./keyring.js";
import { E2E_DEFAULTS, httpText, linkWithSecret, livePending, newMachineKey, withHolder, withKeys } from "./saved.js";
import { LineUpError } from "../../shared/client/errors.js";
import { withDirectKey } from "../../shared/client/direct-bind.js";
import { loadDirectKey } from "../client/direct-key.js";

export interface E2EWhere {
  relayUrl: string;
  stateDir: string;
  log?: (line: string) => void;
}

/**
 * `lineup e2e on` for a saved inbox: the machine key (made once), the epoch-1 content key when the inbox has
 * epoch 0 (published with PUT /api/inbox/e2e, wrapped for this machine), the switch on. Throws LineUpError or
 * LineUpError.
 */
export async function turnOn(w: E2EWhere, inbox: SavedInbox): Promise<{ epoch: number; created: boolean }> {
  if (!inbox.e2e) {
    const machineKey = await newMachineKey();
    updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) => s ?? { on: false, machineKey, keys: {}, roster: [], pending: [] });
  }
  const k = await Keyring.open(w);
  if (!k) throw new LineUpError("state", `the inbox ${inbox.inboxId} is no longer saved in ${w.stateDir}`);
  const api = new InboxApi(k.relayUrl);
  const st = await api.e2eState(k.credential);
  let created = false;
  if (st.epoch === 0) {
    const ck = await generateContentKey(1);
    const self: HolderPublic = { id: k.self.id, publicKey: k.self.publicKey };
    const wrap = await wrapContentKey({ inboxId: k.inboxId, sender: k.self, recipient: self, key: ck });
    try {
      await api.putE2E(k.credential, { base_epoch: 0, epoch: 1, wraps: { [self.id]: wrap }, roster: await sealRoster(ck, k.inboxId, self.id, [self]) });
      updateE2E(w.stateDir, w.relayUrl, k.inboxId, (s) => (s ? withKeys({ ...s, roster: withHolder(s.roster, self) }, [ck]) : s));
      created = true;
    } catch (e) {
      // Another holder (a second machine) turned it on at the same moment: take its key below.
      if (!(e instanceof LineUpError && e.status === 409)) throw e;
    }
  }
  const r = await k.sync();
  if (r.epoch === 0 || !k.keyOf(r.epoch)) {
    const now = (await api.e2eState(k.credential)).epoch;
    if (!k.keyOf(now)) {
      throw new LineUpError(
        "e2e_no_key",
        `the inbox ${k.inboxId} already has end-to-end keys (epoch ${now}) that this machine does not hold: get them from a paired device (in the app, "Add a machine", then \`lineup join CODE#SECRET\`)`,
      );
    }
  }
  updateE2E(w.stateDir, w.relayUrl, k.inboxId, (s) => (s ? { ...s, on: true } : s));
  return { epoch: k.current()?.epoch ?? 0, created };
}

/** `lineup e2e off`: new sessions are plaintext again; keys and sealed sessions stay. False when it was not on. */
export function turnOff(w: E2EWhere, inbox: SavedInbox): boolean {
  let was = false;
  updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) => {
    was = s?.on === true;
    return s ? { ...s, on: false } : s;
  });
  return was;
}

/**
 * A new pairing link carries a pairing secret while E2E is on (docs/e2e.md "Pairing", step 1): it is kept
 * with the code's id until the device's hello is answered. Returns the link to show; it also carries this
 * machine's direct key (`&dk=`, issue 32).
 */
export async function armPairing(
  w: E2EWhere,
  inbox: SavedInbox,
  issued: { code: string; url: string; expires_at: number },
): Promise<{ url: string; sealed: boolean }> {
  const e2e = findInbox(w.stateDir, w.relayUrl)?.e2e;
  if (!e2e?.on || findInbox(w.stateDir, w.relayUrl)?.inboxId !== inbox.inboxId) return { url: await withMachineDirectKey(w, issued.url), sealed: false };
  const secret = newPairingSecret();
  const code_id = await pairingCodeId(issued.code);
  const now = Date.now();
  updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) =>
    s
      ? {
          ...s,
          pending: [...livePending(s, now).filter((p) => p.code_id !== code_id), { code_id, secret, expires_at: issued.expires_at }].slice(
            -E2E_DEFAULTS.maxPending,
          ),
        }
      : s,
  );
  return { url: await withMachineDirectKey(w, linkWithSecret(issued.url, issued.code, secret)), sealed: true };
}

/** Issue 32: the link also carries this machine's direct key (`&dk=`), so the device pins it from the start
 * (docs/protocol.md "The direct path's binding"). A key that cannot be read leaves it out (trust on first use). */
async function withMachineDirectKey(w: E2EWhere, url: string): Promise<string> {
  try {
    return withDirectKey(url, (await loadDirectKey(w.stateDir)).publicKey);
  } catch (e) {
    w.log?.(`the pairing link carries no direct key (${httpText(e)}): the device will trust this machine's key on first direct contact`);
    return url;
  }
}

/** Completes pending pairings and a due re-key once (what a starting `connect`/`call`/`mcp` does). Never throws. */
export async function syncOnce(w: E2EWhere): Promise<Keyring | undefined> {
  let k: Keyring | undefined;
  try {
    k = await Keyring.open(w);
    if (k) await k.sync();
  } catch (e) {
    w.log?.(`end-to-end: checking the inbox's keys failed: ${httpText(e)}`);
  }
  return k;
}
