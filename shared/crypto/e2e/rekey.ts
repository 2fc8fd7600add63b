// Re-keying (docs/e2e.md "Re-keying"): revoking a holder moves the inbox to the next epoch — a fresh
// content key, wrapped for each remaining holder by whichever holder acts first — and open calls are
// re-sealed (envelope.ts reseal). The revoked holder gets no wrap, so it cannot open anything sealed
// under the new epoch. The holder roster (who holds which public key) travels sealed under the
// current epoch, so every holder can authenticate the next re-keyer's wraps.
import { E2EError } from "./errors.js";
import { openJson, sealJson, type Envelope, type FrameAad } from "./envelope.js";
import { HOLDER_ID_RE, MAX_EPOCH, generateContentKey, importPublicKey, type ContentKey } from "./keys.js";
import { wrapContentKey, type HolderPublic, type HolderSelf, type WrappedKey } from "./wrap.js";

export interface Rekeyed {
  key: ContentKey;
  /** One wrap per holder given, in their order. */
  wraps: WrappedKey[];
}

/**
 * A new epoch: `current.epoch + 1`, a new random key, wrapped for every holder in `holders` (include the
 * re-keyer itself when it keeps the key at rest in wrapped form). The caller leaves the revoked holder out.
 */
export async function rekey(opts: { inboxId: string; current: ContentKey; sender: HolderSelf; holders: readonly HolderPublic[] }): Promise<Rekeyed> {
  if (opts.current.epoch >= MAX_EPOCH) throw new E2EError("wrong_epoch", "no epoch after 2^32-1");
  const ids = new Set<string>();
  for (const h of opts.holders) {
    if (ids.has(h.id)) throw new E2EError("bad_format", `holder ${h.id} listed twice`);
    ids.add(h.id);
  }
  const key = await generateContentKey(opts.current.epoch + 1);
  const wraps: WrappedKey[] = [];
  for (const h of opts.holders) wraps.push(await wrapContentKey({ inboxId: opts.inboxId, sender: opts.sender, recipient: h, key }));
  return { key, wraps };
}

/** Where a roster is sealed: the inbox (a `:` keeps it apart from every session id), type "e2e.roster". */
export const rosterAad = (inboxId: string, senderId: string): FrameAad => ({
  session_id: `inbox:${inboxId}`,
  type: "e2e.roster",
  call_id: "",
  sender: `holder:${senderId}`,
});

/** The holder roster, sealed under `ck` by holder `senderId`. */
export function sealRoster(ck: ContentKey, inboxId: string, senderId: string, holders: readonly HolderPublic[]): Promise<Envelope> {
  return sealJson(ck, rosterAad(inboxId, senderId), { holders: holders.map((h) => ({ id: h.id, publicKey: h.publicKey })) });
}

/** Opens a roster: every entry a holder id with a valid P-256 public key, no id twice. */
export async function openRoster(ck: ContentKey, inboxId: string, senderId: string, envelope: unknown): Promise<HolderPublic[]> {
  const v = await openJson(ck, rosterAad(inboxId, senderId), envelope);
  const list = (v as { holders?: unknown } | null)?.holders;
  if (!Array.isArray(list)) throw new E2EError("bad_format", "roster: no holders list");
  const out: HolderPublic[] = [];
  const seen = new Set<string>();
  for (const h of list as unknown[]) {
    const o = h as Record<string, unknown> | null;
    if (typeof o !== "object" || o === null || typeof o.id !== "string" || typeof o.publicKey !== "string" || !HOLDER_ID_RE.test(o.id) || seen.has(o.id)) {
      throw new E2EError("bad_format", "roster: bad entry");
    }
    await importPublicKey(o.publicKey);
    seen.add(o.id);
    out.push({ id: o.id, publicKey: o.publicKey });
  }
  return out;
}
