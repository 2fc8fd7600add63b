// The agent adapter's end-to-end keys (issue 19, docs/e2e.md, docs/adapter.md "End-to-end encryption"):
// the machine's holder key, the inbox content keys by epoch, the roster of holders it trusts and the
// pairing secrets of links it printed — all in the state file (mode 0600). A Keyring is what a running
// adapter process uses: it seals and opens with the keys, completes pairings whose hello arrived, re-keys
// on `rekey_needed` and tells its clients when the epoch moved (they re-seal their open calls).
// The cryptography itself is shared/e2e: this file only moves its values between the state file and the relay.
import {
  E2EError,
  b64u,
  exportPrivateJwk,
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  importContentKey,
  importPrivateJwk,
  acceptPairReply,
  isE2EError,
  isPairingSecret,
  makePairHello,
  makePairReply,
  openRoster,
  pairingCodeId,
  pairingFragment,
  rekey,
  sealRoster,
  unb64u,
  unwrapContentKey,
  wrapContentKey,
  newPairingSecret,
  type ContentKey,
  type HolderPublic,
  type HolderSelf,
} from "../../shared/crypto/e2e/index.js";
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";
import { InboxApi, InboxHttpError, type E2EState } from "../client/inbox.js";
import { findInbox, normalizeUrl, updateE2E, type SavedE2E, type SavedInbox } from "../client/state.js";

/** Every limit and default of the adapter's E2E side (named in docs/adapter.md). */
export const E2E_DEFAULTS = {
  /** A running adapter checks the inbox's key state this often while this machine holds a pairing secret… */
  pollPendingMs: 2_000,
  /** …and this often otherwise (a re-key due, a new epoch made by a device). LINEUP_E2E_POLL_MS overrides both. */
  pollIdleMs: 30_000,
  /** `lineup join CODE#SECRET` asks for the sponsor's reply this often… */
  joinPollMs: 1_000,
  /** …and says it is still waiting this often. It waits at most the code's life (INBOX_LIMITS.codeTtlMs). */
  joinProgressMs: 15_000,
  /** Content keys kept per inbox (the newest epochs): older envelopes need them to open. */
  maxEpochsKept: 64,
  /** Pairing secrets kept at once (the relay keeps as many open codes per inbox). */
  maxPending: INBOX_LIMITS.maxOpenCodes,
} as const;

/** A refusal of the E2E side with a stable code (the CLI prints the message; the library throws it as LineUpError). */
export class E2EFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "E2EFailure";
  }
}

const httpText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The link with the pairing secret in its fragment: `<relay>/#pair=<code>&k=<secret>` (never sent to the relay). */
export function linkWithSecret(url: string, code: string, secret: string): string {
  return `${url.split("#")[0]}#${pairingFragment(code, secret)}`;
}

/** A fresh machine key as the state file keeps it. */
export async function newMachineKey(): Promise<JsonWebKey> {
  const pair = await generateHolderKeyPair({ extractable: true });
  return exportPrivateJwk(pair.privateKey);
}

/** The machine's holder identity from its saved JWK. */
export async function machineSelf(machineId: string, jwk: JsonWebKey): Promise<HolderSelf> {
  return holderSelf(machineId, await importPrivateJwk(jwk, { extractable: true }));
}

/** Epoch → content key, from the state file's base64url form. Keys that do not import are skipped (said once). */
export async function contentKeysOf(saved: SavedE2E, log?: (line: string) => void): Promise<Map<number, ContentKey>> {
  const out = new Map<number, ContentKey>();
  for (const [e, raw] of Object.entries(saved.keys)) {
    try {
      out.set(Number(e), await importContentKey(unb64u(raw), Number(e)));
    } catch (err) {
      log?.(`ignoring the saved content key of epoch ${e}: ${httpText(err)}`);
    }
  }
  return out;
}

/** Adds content keys to a saved section, keeping the newest E2E_DEFAULTS.maxEpochsKept epochs. */
export function withKeys(saved: SavedE2E, keys: readonly ContentKey[]): SavedE2E {
  const all: Record<string, string> = { ...saved.keys };
  for (const k of keys) all[String(k.epoch)] = b64u(k.raw);
  const kept = Object.keys(all)
    .map(Number)
    .sort((a, b) => b - a)
    .slice(0, E2E_DEFAULTS.maxEpochsKept);
  return { ...saved, keys: Object.fromEntries(kept.map((e) => [String(e), all[String(e)]!])) };
}

/** The roster with `h` in it (replacing an older entry of the same id). */
export function withHolder(roster: readonly HolderPublic[], h: HolderPublic): HolderPublic[] {
  return [...roster.filter((x) => x.id !== h.id), { id: h.id, publicKey: h.publicKey }];
}

/** Pending pairings still valid at `now` (expired secrets are worthless: the code is gone). */
export const livePending = (saved: SavedE2E, now = Date.now()): SavedE2E["pending"] => saved.pending.filter((p) => p.expires_at > now);

/**
 * Who a re-key wraps for: the roster minus holders no longer in the inbox (revoked devices and machines),
 * and always this machine itself (it keeps its wrap at rest).
 */
export function remainingHolders(roster: readonly HolderPublic[], self: HolderPublic, liveIds: ReadonlySet<string>): HolderPublic[] {
  const out = roster.filter((h) => h.id !== self.id && liveIds.has(h.id));
  return [{ id: self.id, publicKey: self.publicKey }, ...out];
}

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
      this.log(`end-to-end: cannot take the key of epoch ${st.epoch}: ${httpText(e)}${isE2EError(e, "untrusted_sender") ? " (pair this machine again from a device: `lineup join CODE#SECRET`)" : ""}`);
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
      const next = withHolder(list.filter((h) => h.id !== this.self.id), this.self);
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
        this.log(`end-to-end: REFUSED the pairing hello of ${typeof joinerId === "string" ? joinerId : "a joiner"}: ${httpText(e)}; nothing was sent to it. Pair the device again with a new link (\`lineup pair\`).`);
        this.dropPending(p.code_id);
        await this.api.deletePairing(this.credential, p.code_id).catch(() => {});
        continue;
      }
      const roster = withHolder(this.roster, made.joiner);
      try {
        await this.api.postReply(this.credential, { reply: made.reply, roster: await sealRoster(ck, this.inboxId, this.self.id, roster) });
      } catch (e) {
        // 409: another process of this machine answered first; anything else is tried again next sync.
        if (!(e instanceof InboxHttpError && e.status === 409)) {
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
    if (!current) throw new E2EFailure("e2e_no_key", `the inbox is at key epoch ${state.epoch}, which this machine does not hold: it cannot re-key`);
    const inbox = await this.api.state(this.credential);
    const live = new Set([...inbox.devices.map((d) => d.id), ...inbox.machines.map((m) => m.id)]);
    const holders = remainingHolders(this.roster, this.self, live);
    const next = await rekey({ inboxId: this.inboxId, current, sender: this.self, holders });
    const wraps = Object.fromEntries(holders.map((h, i) => [h.id, next.wraps[i]!]));
    try {
      await this.api.putE2E(this.credential, { base_epoch: current.epoch, epoch: next.key.epoch, wraps, roster: await sealRoster(next.key, this.inboxId, this.self.id, holders) });
    } catch (e) {
      if (e instanceof InboxHttpError && e.status === 409) return false;
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

// ------------------------------------------------------------------ the switch

export interface E2EWhere {
  relayUrl: string;
  stateDir: string;
  log?: (line: string) => void;
}

/**
 * `lineup e2e on` for a saved inbox: the machine key (made once), the epoch-1 content key when the inbox has
 * epoch 0 (published with PUT /api/inbox/e2e, wrapped for this machine), the switch on. Throws E2EFailure or
 * InboxHttpError.
 */
export async function turnOn(w: E2EWhere, inbox: SavedInbox): Promise<{ epoch: number; created: boolean }> {
  if (!inbox.e2e) {
    const machineKey = await newMachineKey();
    updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) => s ?? { on: false, machineKey, keys: {}, roster: [], pending: [] });
  }
  const k = await Keyring.open(w);
  if (!k) throw new E2EFailure("state", `the inbox ${inbox.inboxId} is no longer saved in ${w.stateDir}`);
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
      if (!(e instanceof InboxHttpError && e.status === 409)) throw e;
    }
  }
  const r = await k.sync();
  if (r.epoch === 0 || !k.keyOf(r.epoch)) {
    const now = (await api.e2eState(k.credential)).epoch;
    if (!k.keyOf(now)) {
      throw new E2EFailure(
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
 * with the code's id until the device's hello is answered. Returns the link to show (unchanged when off).
 */
export async function armPairing(w: E2EWhere, inbox: SavedInbox, issued: { code: string; url: string; expires_at: number }): Promise<{ url: string; sealed: boolean }> {
  const e2e = findInbox(w.stateDir, w.relayUrl)?.e2e;
  if (!e2e?.on || findInbox(w.stateDir, w.relayUrl)?.inboxId !== inbox.inboxId) return { url: issued.url, sealed: false };
  const secret = newPairingSecret();
  const code_id = await pairingCodeId(issued.code);
  const now = Date.now();
  updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) =>
    s ? { ...s, pending: [...livePending(s, now).filter((p) => p.code_id !== code_id), { code_id, secret, expires_at: issued.expires_at }].slice(-E2E_DEFAULTS.maxPending) } : s,
  );
  return { url: linkWithSecret(issued.url, issued.code, secret), sealed: true };
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

// ------------------------------------------------------------------ joining (`lineup join CODE#SECRET`)

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
  if (!isPairingSecret(secret)) throw new E2EFailure("usage", "the pairing secret after # is not 43 characters of base64url (copy the whole command the app shows)");
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
    if (o.signal?.aborted) throw new E2EFailure("cancelled", "stopped waiting for the device's answer");
    const st = await api.e2eState(inbox.machineCredential);
    const entry = st.pairings.find((p) => p.code_id === codeId);
    if (entry && o.waitMs === undefined) deadline = Math.min(deadline, entry.expires_at);
    const reply = st.replies.find((r) => typeof r === "object" && r !== null && (r as { code_id?: unknown }).code_id === codeId);
    if (reply !== undefined) {
      // A reply whose MAC fails is a substitution attempt: refused, nothing stored.
      const got = await acceptPairReply({ secret, inboxId: inbox.inboxId, codeId, joiner: self, reply });
      updateE2E(w.stateDir, w.relayUrl, inbox.inboxId, (s) => (s ? { ...withKeys(s, [got.key]), on: true, roster: withHolder(withHolder(s.roster, self), got.sponsor) } : s));
      await api.deletePairing(inbox.machineCredential, codeId).catch(() => {});
      // The roster the sponsor published makes the other holders trusted too (for later re-keys).
      const k = await Keyring.open(w);
      await k?.sync().catch(() => {});
      k?.close();
      return { epoch: got.key.epoch, sponsor: got.sponsor.id, comparisonCode: got.comparisonCode };
    }
    if (Date.now() >= deadline) throw new E2EFailure("timeout", `no answer from a paired device before the code expired: make a new code in the app and run \`lineup join\` again`);
    if (Date.now() - said >= E2E_DEFAULTS.joinProgressMs) {
      said = Date.now();
      o.progress(`still waiting for a paired device to answer (${Math.max(0, Math.round((deadline - Date.now()) / 1000))} s left): keep the app open on a paired device`);
    }
    await new Promise((r) => setTimeout(r, E2E_DEFAULTS.joinPollMs));
  }
}

export { E2EError };
