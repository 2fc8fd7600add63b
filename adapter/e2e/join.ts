// Joining an inbox's keys from a paired device: `lineup join CODE#SECRET` (docs/e2e.md "Pairing", with the
// roles turned).
import { acceptPairReply, isPairingSecret, makePairHello, pairingCodeId } from "../../shared/crypto/e2e/index.js";
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";
import { InboxApi } from "../client/inbox.js";
import { normalizeUrl, updateE2E, type SavedInbox } from "../client/state.js";
import { Keyring } from "./keyring.js";
import { E2E_DEFAULTS, machineSelf, newMachineKey, withHolder, withKeys } from "./saved.js";
import type { E2EWhere } from "./switch.js";
import { LineUpError } from "../../shared/client/errors.js";

/** `CODE#SECRET` (or `CODE&k=SECRET`, or a whole `…#pair=CODE&k=SECRET` link) → its parts. */
export function splitJoinCode(arg: string): { code: string; secret?: string } {
  const t = arg.trim();
  const frag = t.includes("#") ? t.slice(t.indexOf("#") + 1) : t;
  const params = new URLSearchParams(frag);
  const pair = params.get("pair") ?? params.get("join");
  if (pair) {
    const k = params.get("k");
    return k ? { code: pair, secret: k } : { code: pair };
  }
  const [code, rest] = t.split("#", 2) as [string, string | undefined];
  const amp = code.indexOf("&k=");
  if (amp >= 0) return { code: code.slice(0, amp), secret: code.slice(amp + 3) };
  return rest !== undefined ? { code, secret: rest } : { code };
}

/**
 * Gets the inbox's content key from a paired device after `POST /api/join` (docs/e2e.md "Pairing", with the
 * roles turned): this machine's key, its hello, then the sponsor's reply, waited for at most until the code
 * expires (`progress` says so now and then). Stores the key and trusts the sponsor; E2E is on afterwards.
 */
export async function joinKeys(
  w: E2EWhere,
  inbox: SavedInbox,
  code: string,
  secret: string,
  o: { progress: (line: string) => void; waitMs?: number; signal?: AbortSignal },
): Promise<{ epoch: number; sponsor: string; comparisonCode: string }> {
  if (!isPairingSecret(secret))
    throw new LineUpError("usage", "the pairing secret after # is not 43 characters of base64url (copy the whole command the app shows)");
  const machineKey = inbox.e2e?.machineKey ?? (await newMachineKey());
  updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) => s ?? { on: false, machineKey, keys: {}, roster: [], pending: [] });
  const self = await machineSelf(inbox.machineId, machineKey);
  const api = new InboxApi(normalizeUrl(w.relayUrl));
  const codeId = await pairingCodeId(code);
  const hello = await makePairHello({ secret, inboxId: inbox.inboxId, codeId, joiner: { id: self.id, publicKey: self.publicKey } });
  await api.postHello(inbox.machineCredential, hello);
  let deadline = Date.now() + (o.waitMs ?? INBOX_LIMITS.codeTtlMs);
  let said = Date.now();
  o.progress(`waiting for a paired device to answer (it does so by itself while the app is open; at most until the code expires)`);
  for (;;) {
    if (o.signal?.aborted) throw new LineUpError("cancelled", "stopped waiting for the device's answer");
    const st = await api.e2eState(inbox.machineCredential);
    const entry = st.pairings.find((p) => p.code_id === codeId);
    if (entry && o.waitMs === undefined) deadline = Math.min(deadline, entry.expires_at);
    const reply = st.replies.find((r) => typeof r === "object" && r !== null && (r as { code_id?: unknown }).code_id === codeId);
    if (reply !== undefined) {
      // A reply whose MAC fails is a substitution attempt: refused, nothing stored.
      const got = await acceptPairReply({ secret, inboxId: inbox.inboxId, codeId, joiner: self, reply });
      updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) =>
        s ? { ...withKeys(s, [got.key]), on: true, roster: withHolder(withHolder(s.roster, self), got.sponsor) } : s,
      );
      await api.deletePairing(inbox.machineCredential, codeId).catch(() => {});
      // The roster the sponsor published makes the other holders trusted too (for later re-keys).
      const k = await Keyring.open(w);
      await k?.sync().catch(() => {});
      k?.close();
      return { epoch: got.key.epoch, sponsor: got.sponsor.id, comparisonCode: got.comparisonCode };
    }
    if (Date.now() >= deadline)
      throw new LineUpError("timeout", `no answer from a paired device before the code expired: make a new code in the app and run \`lineup join\` again`);
    if (Date.now() - said >= E2E_DEFAULTS.joinProgressMs) {
      said = Date.now();
      o.progress(
        `still waiting for a paired device to answer (${Math.max(0, Math.round((deadline - Date.now()) / 1000))} s left): keep the app open on a paired device`,
      );
    }
    await new Promise((r) => setTimeout(r, E2E_DEFAULTS.joinPollMs));
  }
}
