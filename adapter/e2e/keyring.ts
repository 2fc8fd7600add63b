// The agent adapter's end-to-end keys (issue 19, docs/e2e.md, docs/adapter.md "End-to-end encryption"):
// the machine's holder key, the inbox content keys by epoch, the roster of holders it trusts and the
// pairing secrets of links it printed — all in the state file (mode 0600). A Keyring is what a running
// adapter process uses: it seals and opens with the keys, completes pairings whose hello arrived, re-keys
// on `rekey_needed` and tells its clients when the epoch moved (they re-seal their open calls).
// The cryptography itself is shared/e2e: this file only moves its values between the state file and the relay.
// The parts: saved.ts (the state file's form, limits), this file (the Keyring of a running
// process), switch.ts (`lineup e2e on|off`, pairing links, one sync at start), join.ts (`lineup join CODE#SECRET`).
import {
  E2EError,
  isE2EError,
  makePairReply,
  openRoster,
  rekey,
  sealRoster,
  unwrapContentKey,
  type ContentKey,
  type HolderPublic,
  type HolderSelf,
} from "../../shared/crypto/e2e/index.js";
import { InboxApi, type E2EState } from "../client/inbox.js";
import { findInbox, normalizeUrl, updateE2E, type SavedE2E, type SavedInbox } from "../client/state.js";
import { contentKeysOf, E2E_DEFAULTS, httpText, livePending, machineSelf, remainingHolders, withHolder, withKeys } from "./saved.js";
import { LineUpError } from "../../shared/client/errors.js";

export interface KeyringOptions {
  relayUrl: string;
  stateDir: string;
  inbox: SavedInbox;
  log?: (line: string) => void;
}

export type SyncResult = { epoch: number; changed: boolean; paired: string[]; rekeyed: boolean };

/**
 * One adapter process's view of the inbox's keys. State-file changes made by other processes (a `lineup
 * pair`, a re-key by `lineup devices revoke`) are read again on every sync; what this one learns is merged in.
 */
export class Keyring {
  readonly inboxId: string;
  readonly relayUrl: string;
  private readonly api: InboxApi;
  private readonly log: (line: string) => void;
  private keys = new Map<number, ContentKey>();
  private roster: HolderPublic[] = [];
  private readonly epochListeners = new Set<(ck: ContentKey) => void>();
  private syncing: Promise<SyncResult> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private watching = false;

  private constructor(
    private readonly o: KeyringOptions,
    readonly self: HolderSelf,
  ) {
    this.inboxId = o.inbox.inboxId;
    this.relayUrl = normalizeUrl(o.relayUrl);
    this.api = new InboxApi(this.relayUrl);
    this.log = o.log ?? (() => {});
  }

  /** The keyring of the inbox saved for `relayUrl`, or undefined when this machine has no E2E keys there. */
  static async open(o: { relayUrl: string; stateDir: string; log?: (line: string) => void }): Promise<Keyring | undefined> {
    const inbox = findInbox(o.stateDir, o.relayUrl);
    if (!inbox?.e2e) return undefined;
    const k = new Keyring({ ...o, inbox }, await machineSelf(inbox.machineId, inbox.e2e.machineKey));
    await k.reload();
    return k;
  }

  get credential(): string {
    return this.o.inbox.machineCredential;
  }

  /** The newest content key held (what new envelopes are sealed with). */
  current(): ContentKey | undefined {
    let best: ContentKey | undefined;
    for (const k of this.keys.values()) if (!best || k.epoch > best.epoch) best = k;
    return best;
  }

  readonly keyOf = (epoch: number): ContentKey | undefined => this.keys.get(epoch);

  holders(): HolderPublic[] {
    return [...this.roster];
  }

  /** Called with the new key whenever the current epoch moves (re-keyed here, or a new wrap arrived). */
  onEpoch(cb: (ck: ContentKey) => void): () => void {
    this.epochListeners.add(cb);
    return () => this.epochListeners.delete(cb);
  }

  private saved(): SavedE2E | undefined {
    const inbox = findInbox(this.o.stateDir, this.relayUrl);
    return inbox?.inboxId === this.inboxId ? inbox.e2e : undefined;
  }

  /** Reads the state file again (other processes add keys, pending secrets and holders). */
  private async reload(): Promise<void> {
    const s = this.saved();
    if (!s) return;
    const before = this.current()?.epoch ?? 0;
    for (const [e, k] of await contentKeysOf(s, this.log)) if (!this.keys.has(e)) this.keys.set(e, k);
    // Another process of this machine (e.g. `lineup devices revoke`) re-keyed: our clients re-seal too.
    const now = this.current();
    if (before > 0 && now && now.epoch > before) for (const cb of [...this.epochListeners]) cb(now);
    this.roster = s.roster.map((h) => ({ id: h.id, publicKey: h.publicKey }));
    if (!this.roster.some((h) => h.id === this.self.id)) this.roster = withHolder(this.roster, this.self);
  }

  private persist(fn: (s: SavedE2E) => SavedE2E): void {
    updateE2E(this.o.stateDir, this.relayUrl, this.inboxId, (s) => (s ? fn(s) : s));
  }

  private trusted(): Record<string, string> {
    return Object.fromEntries(this.roster.map((h) => [h.id, h.publicKey]));
  }

  private adopt(ck: ContentKey): void {
    const before = this.current()?.epoch ?? 0;
    this.keys.set(ck.epoch, ck);
    this.persist((s) => withKeys(s, [ck]));
    if (ck.epoch > before) for (const cb of [...this.epochListeners]) cb(ck);
  }

  /** One sync at a time: concurrent callers share it. */
  sync(): Promise<SyncResult> {
    this.syncing ??= this.doSync().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async doSync(): Promise<SyncResult> {
    const before = this.current()?.epoch ?? 0;
    await this.reload();
    let st = await this.api.e2eState(this.credential);
    await this.takeWrap(st);
    await this.takeRoster(st);
    const paired = await this.answerHellos(st);
    let rekeyed = false;
    if (st.rekey_needed && this.current()?.epoch === st.epoch) {
      rekeyed = await this.rekeyNow(st);
      if (!rekeyed) {
        // Someone else re-keyed first (409): take their wrap.
        st = await this.api.e2eState(this.credential);
        await this.takeWrap(st);
        await this.takeRoster(st);
      }
    }
    const epoch = this.current()?.epoch ?? 0;
    return { epoch, changed: epoch !== before, paired, rekeyed };
  }

  /** A wrap of a newer epoch: unwrapped only if it comes from a holder this machine trusts. */
  private async takeWrap(st: E2EState): Promise<void> {
    if (st.wrap === undefined || st.wrap === null || st.epoch === 0 || this.keys.has(st.epoch)) return;
    try {
      this.adopt(await unwrapContentKey({ inboxId: this.inboxId, recipient: this.self, wrapped: st.wrap, trusted: this.trusted(), epoch: st.epoch }));
      this.log(`end-to-end: now at key epoch ${st.epoch}`);
    } catch (e) {
      this.log(
        `end-to-end: cannot take the key of epoch ${st.epoch}: ${httpText(e)}${isE2EError(e, "untrusted_sender") ? " (pair this machine again from a device: `lineup join CODE#SECRET`)" : ""}`,
      );
    }
  }

  /** The roster of the current epoch, sealed by one of its holders: the AAD names the sealer, so try each. */
  private async takeRoster(st: E2EState): Promise<void> {
    const ck = this.keys.get(st.epoch);
    if (!ck || st.roster === undefined || st.roster === null) return;
    const candidates = new Set([...st.holders, ...this.roster.map((h) => h.id)]);
    if (st.wrap && typeof st.wrap === "object" && typeof (st.wrap as { from?: unknown }).from === "string") candidates.add((st.wrap as { from: string }).from);
    for (const id of candidates) {
      let list: HolderPublic[];
      try {
        list = await openRoster(ck, this.inboxId, id, st.roster);
      } catch {
        continue;
      }
      // Our own entry is ours to say: a roster cannot change this machine's key.
      const next = withHolder(
        list.filter((h) => h.id !== this.self.id),
        this.self,
      );
      this.roster = next;
      this.persist((s) => ({ ...s, roster: next }));
      return;
    }
  }

  /** Answers hellos of codes this machine holds a secret for (docs/e2e.md "Pairing", step 3). */
  private async answerHellos(st: E2EState): Promise<string[]> {
    const saved = this.saved();
    if (!saved) return [];
    const now = Date.now();
    const live = livePending(saved, now);
    if (live.length !== saved.pending.length) this.persist((s) => ({ ...s, pending: livePending(s, now) }));
    const ck = this.current();
    const paired: string[] = [];
    if (!ck || ck.epoch !== st.epoch) return paired;
    for (const hello of st.hellos) {
      const codeId = typeof hello === "object" && hello !== null ? (hello as { code_id?: unknown }).code_id : undefined;
      const p = live.find((x) => x.code_id === codeId);
      if (!p) continue; // another holder's pairing (a device sponsoring), or a code we no longer hold
      const joinerId = (hello as { joiner?: { id?: unknown } }).joiner?.id;
      let made: Awaited<ReturnType<typeof makePairReply>>;
      try {
        made = await makePairReply({ secret: p.secret, inboxId: this.inboxId, codeId: p.code_id, hello, sponsor: this.self, key: ck });
      } catch (e) {
        // A MAC that does not verify: the relay (or someone) changed the joiner's key or id. Nothing is
        // wrapped for it; the secret and the mailbox entry go, the human pairs again with a new link.
        this.log(
          `end-to-end: REFUSED the pairing hello of ${typeof joinerId === "string" ? joinerId : "a joiner"}: ${httpText(e)}; nothing was sent to it. Pair the device again with a new link (\`lineup pair\`).`,
        );
        this.dropPending(p.code_id);
        await this.api.deletePairing(this.credential, p.code_id).catch(() => {});
        continue;
      }
      const roster = withHolder(this.roster, made.joiner);
      try {
        await this.api.postReply(this.credential, { reply: made.reply, roster: await sealRoster(ck, this.inboxId, this.self.id, roster) });
      } catch (e) {
        // 409: another process of this machine answered first; anything else is tried again next sync.
        if (!(e instanceof LineUpError && e.status === 409)) {
          this.log(`end-to-end: answering the pairing of ${made.joiner.id} failed: ${httpText(e)}`);
          continue;
        }
      }
      this.roster = roster;
      this.persist((s) => ({ ...s, roster }));
      this.dropPending(p.code_id);
      paired.push(made.joiner.id);
      this.log(`end-to-end: paired ${made.joiner.id} (comparison code ${made.comparisonCode}); it holds the key of epoch ${ck.epoch}`);
    }
    return paired;
  }

  private dropPending(codeId: string): void {
    this.persist((s) => ({ ...s, pending: s.pending.filter((x) => x.code_id !== codeId) }));
  }

  /**
   * A new epoch for the holders still in the inbox (docs/e2e.md "Re-keying"). False when another holder
   * re-keyed first (409 epoch_conflict).
   */
  async rekeyNow(st?: E2EState): Promise<boolean> {
    const state = st ?? (await this.api.e2eState(this.credential));
    const current = this.keys.get(state.epoch);
    if (!current) throw new LineUpError("e2e_no_key", `the inbox is at key epoch ${state.epoch}, which this machine does not hold: it cannot re-key`);
    const inbox = await this.api.state(this.credential);
    const live = new Set([...inbox.devices.map((d) => d.id), ...inbox.machines.map((m) => m.id)]);
    const holders = remainingHolders(this.roster, this.self, live);
    const next = await rekey({ inboxId: this.inboxId, current, sender: this.self, holders });
    const wraps = Object.fromEntries(holders.map((h, i) => [h.id, next.wraps[i]!]));
    try {
      await this.api.putE2E(this.credential, {
        base_epoch: current.epoch,
        epoch: next.key.epoch,
        wraps,
        roster: await sealRoster(next.key, this.inboxId, this.self.id, holders),
      });
    } catch (e) {
      if (e instanceof LineUpError && e.status === 409) return false;
      throw e;
    }
    this.roster = holders;
    this.persist((s) => ({ ...s, roster: holders }));
    this.adopt(next.key);
    const left = [...new Set(state.holders)].filter((id) => !holders.some((h) => h.id === id));
    this.log(`end-to-end: re-keyed to epoch ${next.key.epoch} for ${holders.length} holder(s)${left.length ? `; left out: ${left.join(", ")}` : ""}`);
    return true;
  }

  /** Syncs now and then: often while this machine holds a pairing secret, rarely otherwise. Stopped by close(). */
  watch(): void {
    if (this.watching) return;
    this.watching = true;
    this.schedule();
  }

  private schedule(): void {
    if (!this.watching) return;
    const env = Number(process.env.LINEUP_E2E_POLL_MS);
    const pending = (this.saved()?.pending ?? []).some((p) => p.expires_at > Date.now());
    const ms = Number.isFinite(env) && env > 0 ? env : pending ? E2E_DEFAULTS.pollPendingMs : E2E_DEFAULTS.pollIdleMs;
    this.timer = setTimeout(() => {
      this.sync()
        .catch((e: unknown) => this.log(`end-to-end: checking the inbox's keys failed: ${httpText(e)}`))
        .finally(() => this.schedule());
    }, ms);
    this.timer.unref?.();
  }

  close(): void {
    this.watching = false;
    if (this.timer) clearTimeout(this.timer);
  }
}

export { E2EError };
