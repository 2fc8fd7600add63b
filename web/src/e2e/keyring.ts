// This device as a holder of an inbox's content key (docs/e2e.md "Wiring", "Pairing", "Re-keying"):
// unwraps the wraps kept in IndexedDB at load (content keys live in memory only), follows the relay's key
// state (GET /api/inbox/e2e), joins a pairing (hello → reply), sponsors one (answers a hello with a
// wrap and the roster) and re-keys after a revocation. Loaded lazily: plaintext users never fetch it.
import { signal } from "@preact/signals";
import {
  acceptPairReply,
  generateHolderKeyPair,
  holderSelf,
  isE2EError,
  makePairHello,
  makePairReply,
  openRoster,
  pairingCodeId,
  parseWrappedKey,
  rekey,
  sealRoster,
  unwrapContentKey,
  type ContentKey,
  type Envelope,
  type HolderPublic,
  type HolderSelf,
  type PairReply,
  type WrappedKey,
} from "../../../shared/crypto/e2e/index.js";
import {} from "../inbox.js";
import { deleteJoin, deleteSponsor, getKeys, joinPending, putJoin, putKeys, putSponsor, recordId, sponsorSecrets, type DeviceKeys } from "./store.js";
import { LineUpError } from "../../../shared/client/errors.js";
import { needsPairing } from "../state.js";

/** What the keyring needs of its inbox: ids and the device credential's requests (InboxConn). */
export interface InboxLink {
  saved: { origin: string; inbox_id: string; device_id: string };
  request<T>(method: string, path: string, body?: unknown): Promise<T>;
}

/** `GET /api/inbox/e2e` (docs/e2e.md "The inbox's key state"). */
export interface E2EState {
  epoch: number;
  rekey_needed: boolean;
  holders: string[];
  wrap: WrappedKey | null;
  roster: Envelope | null;
  hellos: unknown[];
  replies: unknown[];
  pairings: { code_id: string; joiner?: string; state: string; expires_at: number }[];
}

/** Comparison codes of pairings this device completed (as joiner or sponsor), shown until dismissed. */
export const comparisons = signal<{ inbox: string; code: string; role: "joiner" | "sponsor" }[]>([]);

export class Keyring {
  readonly keys = new Map<number, ContentKey>();
  /** Bumped whenever a key arrives: sessions waiting for one re-open what they hold. */
  readonly version = signal(0);
  /** The relay's current epoch, as last seen. */
  epoch = 0;
  private refreshing: Promise<E2EState | undefined> | undefined;

  private constructor(
    readonly ib: InboxLink,
    public rec: DeviceKeys,
    readonly self: HolderSelf,
  ) {}

  static async open(ib: InboxLink, rec: DeviceKeys): Promise<Keyring> {
    const kr = new Keyring(ib, rec, await holderSelf(rec.device_id, rec.pair));
    for (const w of Object.values(rec.wraps)) await kr.unwrap(w).catch(() => undefined);
    return kr;
  }

  get inboxId(): string {
    return this.ib.saved.inbox_id;
  }

  keyOf = (epoch: number): ContentKey | undefined => this.keys.get(epoch);

  /** The newest key this device holds (it seals under it). */
  current(): ContentKey | undefined {
    let best: ContentKey | undefined;
    for (const k of this.keys.values()) if (!best || k.epoch > best.epoch) best = k;
    return best;
  }

  private async unwrap(w: unknown): Promise<ContentKey> {
    const ck = await unwrapContentKey({ inboxId: this.inboxId, recipient: this.self, wrapped: w, trusted: this.rec.trusted });
    this.keys.set(ck.epoch, ck);
    this.version.value++;
    return ck;
  }

  private async save(): Promise<void> {
    await putKeys(this.rec);
  }

  /** Keeps a wrap at rest (one per epoch) once it opened. */
  private async keepWrap(w: WrappedKey): Promise<void> {
    this.rec = { ...this.rec, wraps: { ...this.rec.wraps, [String(w.e)]: w } };
    await this.save();
  }

  /** A roster opens only under the current epoch; it names its author (`holder:<id>`) in the AAD, which
   * the key state does not say, so every listed holder is tried (a few AES-GCM attempts). */
  private async takeRoster(st: E2EState): Promise<boolean> {
    const env = st.roster;
    const ck = env ? this.keys.get(env.e) : undefined;
    if (!env || !ck || env.e !== st.epoch) return false;
    const candidates = new Set([...(st.holders ?? []), ...Object.keys(this.rec.trusted), this.self.id]);
    for (const id of candidates) {
      try {
        const holders = await openRoster(ck, this.inboxId, id, env);
        const trusted: Record<string, string> = {};
        for (const h of holders) trusted[h.id] = h.publicKey;
        trusted[this.self.id] = this.self.publicKey;
        this.rec = { ...this.rec, trusted, holders };
        await this.save();
        return true;
      } catch {
        /* not this author */
      }
    }
    return false;
  }

  /** Follows the relay's key state: my wrap of the current epoch and the roster. */
  refresh(): Promise<E2EState | undefined> {
    this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async doRefresh(): Promise<E2EState | undefined> {
    let st: E2EState;
    try {
      st = await this.ib.request<E2EState>("GET", "/api/inbox/e2e");
    } catch {
      return undefined;
    }
    this.epoch = st.epoch;
    // The roster of the current epoch may be needed to trust the re-keyer's wrap, and the new key to
    // open that roster: roster, wrap, roster.
    await this.takeRoster(st);
    if (st.wrap && !this.keys.has(st.wrap.e)) {
      try {
        const w = parseWrappedKey(st.wrap);
        await this.unwrap(w);
        await this.keepWrap(w);
      } catch {
        /* untrusted or not for us: this device stays on what it holds */
      }
    }
    await this.takeRoster(st);
    return st;
  }

  /** The holders to wrap for: those I trust that still have a place in the inbox, and me. */
  private holdersFor(ids: Iterable<string>, extra: HolderPublic[] = []): HolderPublic[] {
    const out = new Map<string, HolderPublic>();
    for (const id of ids) {
      const pub = this.rec.trusted[id];
      if (pub) out.set(id, { id, publicKey: pub });
    }
    for (const h of extra) out.set(h.id, h);
    out.set(this.self.id, { id: this.self.id, publicKey: this.self.publicKey });
    return [...out.values()];
  }

  // ------------------------------------------------------------------ sponsor

  /** A pairing (or join) code this device shows: its secret stays here until the hello is answered. */
  async sponsor(code: string, secret: string, expires_at: number, kind: "device" | "machine"): Promise<void> {
    await putSponsor({ code_id: await pairingCodeId(code), inbox: recordId(this.ib.saved.origin, this.inboxId), secret, expires_at, kind });
  }

  /** Answers every waiting hello whose code this device made (makePairReply + the new roster). */
  async answerHellos(): Promise<number> {
    const mine = (await sponsorSecrets()).filter((s) => s.inbox === recordId(this.ib.saved.origin, this.inboxId));
    const now = Date.now();
    for (const s of mine) if (s.expires_at < now) await deleteSponsor(s.code_id);
    const live = mine.filter((s) => s.expires_at >= now);
    if (!live.length) return 0;
    const st = await this.refresh();
    const ck = st ? this.keys.get(st.epoch) : undefined;
    if (!st || !ck) return 0;
    let n = 0;
    for (const hello of st.hellos ?? []) {
      const codeId = (hello as { code_id?: unknown } | null)?.code_id;
      const s = live.find((x) => x.code_id === codeId);
      if (!s) continue;
      try {
        const { reply, comparisonCode, joiner } = await makePairReply({
          secret: s.secret,
          inboxId: this.inboxId,
          codeId: s.code_id,
          hello,
          sponsor: this.self,
          key: ck,
        });
        const holders = this.holdersFor(st.holders, [joiner]);
        const roster = await sealRoster(ck, this.inboxId, this.self.id, holders);
        await this.ib.request("POST", "/api/inbox/e2e/reply", { reply, roster });
        this.rec = { ...this.rec, trusted: { ...this.rec.trusted, [joiner.id]: joiner.publicKey }, holders };
        await this.save();
        comparisons.value = [...comparisons.value, { inbox: this.inboxId, code: comparisonCode, role: "sponsor" }];
        n++;
      } catch {
        /* a hello that does not verify (bad_mac: a substituted key) is never answered */
      }
      await deleteSponsor(s.code_id);
    }
    return n;
  }

  /** Whether any pairing this device sponsors is still waiting (the Devices screen polls then). */
  async sponsoring(): Promise<boolean> {
    const id = recordId(this.ib.saved.origin, this.inboxId);
    return (await sponsorSecrets()).some((s) => s.inbox === id && s.expires_at >= Date.now());
  }

  // ------------------------------------------------------------------ re-key

  /**
   * A new epoch wrapped for the holders that are still members (`members`: the inbox's devices and
   * machines now). "conflict": another holder re-keyed first (its wrap is fetched instead).
   */
  async rekey(members: Iterable<string>): Promise<"done" | "conflict" | "no_key"> {
    const st = await this.refresh();
    const cur = st ? this.keys.get(st.epoch) : undefined;
    if (!st || !cur) return "no_key";
    const stillHere = new Set(members);
    const holders = this.holdersFor([...st.holders, ...Object.keys(this.rec.trusted)].filter((id) => stillHere.has(id)));
    const rk = await rekey({ inboxId: this.inboxId, current: cur, sender: this.self, holders });
    const roster = await sealRoster(rk.key, this.inboxId, this.self.id, holders);
    const wraps: Record<string, WrappedKey> = {};
    for (const w of rk.wraps) wraps[w.to] = w;
    try {
      await this.ib.request("PUT", "/api/inbox/e2e", { base_epoch: st.epoch, epoch: rk.key.epoch, wraps, roster });
    } catch (e) {
      if (e instanceof LineUpError && e.status === 409) {
        await this.refresh();
        return "conflict";
      }
      throw e;
    }
    this.keys.set(rk.key.epoch, rk.key);
    this.epoch = rk.key.epoch;
    const trusted: Record<string, string> = {};
    for (const h of holders) trusted[h.id] = h.publicKey;
    this.rec = { ...this.rec, trusted, holders };
    await this.keepWrap(wraps[this.self.id]!);
    this.version.value++;
    return "done";
  }
}

// ------------------------------------------------------------------ registry

const rings = new Map<string, Promise<Keyring | undefined>>();

/** This device's keyring for an inbox, or undefined when it never paired its key there. */
export function keyringFor(ib: InboxLink): Promise<Keyring | undefined> {
  const id = recordId(ib.saved.origin, ib.saved.inbox_id);
  let p = rings.get(id);
  if (!p) {
    p = getKeys(id).then((rec) => (rec && rec.device_id === ib.saved.device_id ? Keyring.open(ib, rec) : undefined));
    // Not kept when missing or failed: a pairing that completes later must be seen.
    p.then(
      (k) => k || rings.delete(id),
      () => rings.delete(id),
    );
    rings.set(id, p);
  }
  return p;
}

/** Whether this device holds a key record for the inbox (without unwrapping anything). */
export async function hasKeys(origin: string, inboxId: string, deviceId: string): Promise<boolean> {
  const rec = await getKeys(recordId(origin, inboxId)).catch(() => undefined);
  return !!rec && rec.device_id === deviceId && Object.keys(rec.wraps).length > 0;
}

// ------------------------------------------------------------------ joiner

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Pairs this device's key (step 2 and 4 of docs/e2e.md "Pairing"): a non-extractable key pair kept in
 * IndexedDB, the hello, then the sponsor's reply — polled until the code expires. Returns the comparison code.
 */
export async function joinPairing(ib: InboxLink, code: string, secret: string, expiresAt = Date.now() + 10 * 60_000): Promise<string> {
  const { origin, inbox_id, device_id } = ib.saved;
  const id = recordId(origin, inbox_id);
  let rec = await getKeys(id);
  if (!rec || rec.device_id !== device_id) {
    const pair = await generateHolderKeyPair({ extractable: false });
    const self = await holderSelf(device_id, pair);
    rec = { id, origin, inbox_id, device_id, pair, publicKey: self.publicKey, wraps: {}, trusted: {}, holders: [] };
    await putKeys(rec);
  }
  const codeId = await pairingCodeId(code);
  await putJoin({ code_id: codeId, inbox: id, secret, expires_at: expiresAt });
  const hello = await makePairHello({ secret, inboxId: inbox_id, codeId, joiner: { id: device_id, publicKey: rec.publicKey } });
  try {
    await ib.request("POST", "/api/inbox/e2e/hello", hello);
  } catch (e) {
    // 409: our hello is already there (a reload while waiting); anything else is final.
    if (!(e instanceof LineUpError && e.status === 409)) throw e;
  }
  return awaitReply(ib, rec, codeId, secret, expiresAt);
}

async function awaitReply(ib: InboxLink, rec: DeviceKeys, codeId: string, secret: string, expiresAt: number): Promise<string> {
  let wait = 700;
  while (Date.now() < expiresAt) {
    const st = await ib.request<E2EState>("GET", "/api/inbox/e2e").catch((e: unknown) => {
      if (e instanceof LineUpError && e.status === 401) throw e;
      return undefined;
    });
    const reply = st?.replies?.find((r) => (r as PairReply | null)?.code_id === codeId);
    if (reply) {
      const self = await holderSelf(rec.device_id, rec.pair);
      const got = await acceptPairReply({ secret, inboxId: rec.inbox_id, codeId, joiner: self, reply });
      const w = parseWrappedKey((reply as PairReply).wrap);
      const next: DeviceKeys = {
        ...rec,
        wraps: { ...rec.wraps, [String(w.e)]: w },
        trusted: { ...rec.trusted, [got.sponsor.id]: got.sponsor.publicKey, [self.id]: self.publicKey },
      };
      await putKeys(next);
      await deleteJoin(codeId);
      rings.delete(next.id); // the next keyringFor unwraps the new wrap
      void ib.request("DELETE", `/api/inbox/e2e/pairings/${encodeURIComponent(codeId)}`).catch(() => undefined);
      const kr = await keyringFor(ib);
      await kr?.refresh(); // the roster the sponsor published
      comparisons.value = [...comparisons.value, { inbox: rec.inbox_id, code: got.comparisonCode, role: "joiner" }];
      // The key is here: the "pair again" banner of this inbox goes now, not at the next inbox state.
      const gone = `${ib.saved.origin} ${rec.inbox_id}`;
      needsPairing.value = new Set([...needsPairing.value].filter((x) => x !== gone));
      return got.comparisonCode;
    }
    await sleep(wait);
    wait = Math.min(wait * 1.5, 5_000);
  }
  await deleteJoin(codeId);
  throw new LineUpError("timeout", "the pairing code expired before a holder of the key answered");
}

/** Pairings left waiting by a reload: resumed for the inboxes this device still has. */
export async function resumeJoins(find: (recId: string) => InboxLink | undefined): Promise<void> {
  for (const j of await joinPending().catch(() => [])) {
    const ib = find(j.inbox);
    if (!ib || j.expires_at < Date.now()) {
      await deleteJoin(j.code_id).catch(() => undefined);
      continue;
    }
    const rec = await getKeys(j.inbox);
    if (rec) void awaitReply(ib, rec, j.code_id, j.secret, j.expires_at).catch(() => undefined);
  }
}

export { isE2EError };
