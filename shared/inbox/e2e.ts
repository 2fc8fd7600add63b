// The inbox's key state (docs/e2e.md "The inbox's key state"): the epoch, each holder's current wrap, the
// sealed roster, `rekey_needed`, and the pairing mailbox. All opaque to the relay: it checks shapes, who may
// write what, and the epoch arithmetic — never a key. Pure functions over the inbox document, run inside
// InboxCore's read → modify → write (shared/inbox/core.ts) for the Worker and the LAN server alike.
import { z } from "../contract/zod.js";
import { HOLDER_ID_RE, parseWrappedKey, type PairHello, type PairReply, type WrappedKey } from "../crypto/e2e/index.js";
import { EnvelopeSchema, type Envelope } from "../contract/protocol.js";

export const E2E_LIMITS = {
  /** One wrap as JSON. */
  maxWrapBytes: 1024,
  /** The roster envelope as JSON. */
  maxRosterBytes: 16 * 1024,
  /** A request body of the key endpoints. */
  maxBodyBytes: 128 * 1024,
  /** Open mailbox entries per inbox (older ones go first). */
  maxPairings: 32,
} as const;

export interface E2EPairing {
  /** The holder id that redeemed or claimed the code: the only one whose hello is accepted. */
  joiner: string;
  expires_at: number;
  hello?: PairHello;
  reply?: PairReply;
}
export interface E2EData {
  /** 0: E2E never turned on. */
  epoch: number;
  /** Each holder's wrap of the current epoch, by holder id. */
  wraps: Record<string, WrappedKey>;
  roster: Envelope | null;
  /** A holder that had a wrap was revoked: the next holder online re-keys. */
  rekey_needed: boolean;
  /** By code_id. */
  pairings: Record<string, E2EPairing>;
}
export const emptyE2E = (): E2EData => ({ epoch: 0, wraps: {}, roster: null, rekey_needed: false, pairings: {} });

// ---------------------------------------------------------------- bodies

const jsonBytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;
const HolderId = z.string().regex(HOLDER_ID_RE, "a holder id (dv_… or mc_…)");
export const WrapSchema = z.custom<WrappedKey>((v) => {
  try {
    parseWrappedKey(v);
    return jsonBytes(v) <= E2E_LIMITS.maxWrapBytes;
  } catch {
    return false;
  }
}, `not a wrapped key {v:1,i,e,from,k,to,n,c} of at most ${E2E_LIMITS.maxWrapBytes} bytes`);
const Roster = EnvelopeSchema.refine((e) => jsonBytes(e) <= E2E_LIMITS.maxRosterBytes, `the roster is at most ${E2E_LIMITS.maxRosterBytes} bytes`);
const HolderPub = z.object({ id: HolderId, publicKey: z.string().min(1).max(128) }).strict();
const CodeId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
const Mac = z.string().min(1).max(64);

export const E2EPutBody = z
  .object({
    base_epoch: z.number().int().min(0).max(0xfffffffe),
    epoch: z.number().int().min(1).max(0xffffffff),
    wraps: z.record(HolderId, WrapSchema).refine((w) => Object.keys(w).length <= 64, "at most 64 wraps"),
    roster: Roster,
  })
  .strict();
export const PairHelloBody = z
  .object({ v: z.literal(1), t: z.literal("pair.hello"), i: z.string().max(64), code_id: CodeId, joiner: HolderPub, mac: Mac })
  .strict();
const PairReplyShape = z
  .object({ v: z.literal(1), t: z.literal("pair.reply"), i: z.string().max(64), code_id: CodeId, sponsor: HolderPub, wrap: WrapSchema, mac: Mac })
  .strict();
export const PairReplyBody = z.object({ reply: PairReplyShape, roster: Roster.optional() }).strict();
export const ClaimBody = z.object({ code: z.string().max(64) }).strict();

export type E2ERequest =
  | { op: "get" }
  | { op: "put"; body: z.infer<typeof E2EPutBody> }
  | { op: "claim"; codeHash: string; code_id: string }
  | { op: "hello"; body: z.infer<typeof PairHelloBody> }
  | { op: "reply"; body: z.infer<typeof PairReplyBody> }
  | { op: "drop"; code_id: string };

export type E2EAnswer = { status: 200 | 201 | 204; body?: unknown } | { status: 400 | 403 | 404 | 409; code: string; message: string };

export interface E2EState {
  epoch: number;
  rekey_needed: boolean;
  holders: string[];
  wrap: WrappedKey | null;
  roster: Envelope | null;
  hellos: PairHello[];
  replies: PairReply[];
  pairings: { code_id: string; joiner: string; state: "waiting" | "hello" | "replied"; expires_at: number }[];
}

/** The inbox state frame's summary: `pending` = hellos waiting for a sponsor. */
export function e2eSummary(e: E2EData | undefined, now: number): { epoch: number; rekey_needed: boolean; pending: number } {
  if (!e) return { epoch: 0, rekey_needed: false, pending: 0 };
  const pending = Object.values(e.pairings).filter((p) => p.expires_at > now && p.hello && !p.reply).length;
  return { epoch: e.epoch, rekey_needed: e.rekey_needed, pending };
}

/** Drops mailbox entries past their code's life. */
export function prunePairings(e: E2EData, now: number): void {
  for (const [id, p] of Object.entries(e.pairings)) if (p.expires_at <= now) delete e.pairings[id];
}

/** Records `code_id → joiner` (a redemption or a claim); the oldest entries go past the cap. */
export function recordPairing(e: E2EData, code_id: string, joiner: string, expires_at: number, now: number): void {
  prunePairings(e, now);
  e.pairings[code_id] = { joiner, expires_at };
  const all = Object.entries(e.pairings).sort((a, b) => a[1].expires_at - b[1].expires_at);
  for (const [id] of all.slice(0, Math.max(0, all.length - E2E_LIMITS.maxPairings))) delete e.pairings[id];
}

/** A revoked holder: its wrap and mailbox entries go; if it held a wrap, the inbox needs a re-key. */
export function revokeHolder(e: E2EData, id: string): void {
  if (e.wraps[id]) {
    delete e.wraps[id];
    e.rekey_needed = true;
  }
  for (const [cid, p] of Object.entries(e.pairings)) if (p.joiner === id) delete e.pairings[cid];
}

export function e2eState(e: E2EData, me: string, now: number): E2EState {
  const live = Object.entries(e.pairings).filter(([, p]) => p.expires_at > now);
  const holder = e.wraps[me] !== undefined;
  return {
    epoch: e.epoch,
    rekey_needed: e.rekey_needed,
    holders: Object.keys(e.wraps),
    wrap: e.wraps[me] ?? null,
    roster: e.roster,
    hellos: holder ? live.flatMap(([, p]) => (p.hello && !p.reply ? [p.hello] : [])) : [],
    replies: live.flatMap(([, p]) => (p.joiner === me && p.reply ? [p.reply] : [])),
    pairings: live.map(([code_id, p]) => ({ code_id, joiner: p.joiner, state: p.reply ? "replied" : p.hello ? "hello" : "waiting", expires_at: p.expires_at })),
  };
}

const no = (status: 400 | 403 | 404 | 409, code: string, message: string): E2EAnswer => ({ status, code, message });

/**
 * One write of the key state by `who` (a member of the inbox, checked by the edge). Mutates `e` only when it
 * answers 2xx: every refusal is decided before the first write. `members`: the current device and machine ids.
 */
export function e2eWrite(
  e: E2EData,
  inboxId: string,
  who: string,
  members: ReadonlySet<string>,
  req: Exclude<E2ERequest, { op: "get" } | { op: "claim" }>,
  now: number,
): E2EAnswer {
  prunePairings(e, now);
  const holder = e.wraps[who] !== undefined;
  switch (req.op) {
    case "put": {
      const b = req.body;
      if (b.base_epoch !== e.epoch || b.epoch !== b.base_epoch + 1)
        return no(
          409,
          "epoch_conflict",
          `the inbox is at epoch ${e.epoch}: re-key from base_epoch ${e.epoch} to ${e.epoch + 1} (another holder may have re-keyed first)`,
        );
      if (!holder && !(e.epoch === 0 && who.startsWith("mc_")))
        return no(403, "forbidden", "only a holder of the current key (or a machine, to turn E2E on) may re-key");
      for (const [id, w] of Object.entries(b.wraps)) {
        if (w.to !== id || w.i !== inboxId || w.e !== b.epoch || w.from !== who)
          return no(400, "bad_request", `wrap for ${id}: it must have to = ${id}, i = the inbox, e = ${b.epoch}, from = you`);
        if (!members.has(id)) return no(400, "bad_request", `wrap for ${id}: not a device or machine of this inbox`);
      }
      if (!b.wraps[who]) return no(400, "bad_request", "include a wrap for yourself (it keeps your key at rest)");
      if (b.roster.e !== b.epoch) return no(400, "bad_request", `the roster must be sealed under epoch ${b.epoch}`);
      e.epoch = b.epoch;
      e.wraps = { ...b.wraps };
      e.roster = b.roster;
      e.rekey_needed = false;
      return { status: 200, body: { epoch: e.epoch } };
    }
    case "hello": {
      const h = req.body;
      const p = e.pairings[h.code_id];
      if (h.i !== inboxId || h.joiner.id !== who || !p || p.joiner !== who)
        return no(403, "forbidden", "a hello comes from the device or machine that redeemed (or claimed) this code, for this inbox");
      if (p.hello) return no(409, "conflict", "this code already has a hello");
      p.hello = h;
      return { status: 201 };
    }
    case "reply": {
      const r = req.body.reply;
      if (!holder || r.sponsor.id !== who) return no(403, "forbidden", "a reply comes from a holder of the current key, as its sponsor");
      const p = e.pairings[r.code_id];
      if (r.i !== inboxId || !p?.hello) return no(404, "not_found", "no hello is waiting for this code");
      if (p.reply) return no(409, "conflict", "this code was already answered");
      if (!members.has(p.joiner)) return no(404, "not_found", "the joiner is no longer a member of this inbox");
      if (r.wrap.to !== p.joiner || r.wrap.i !== inboxId || r.wrap.from !== who)
        return no(400, "bad_request", `the wrap must go from you to the joiner ${p.joiner} of this inbox`);
      if (r.wrap.e !== e.epoch || (req.body.roster && req.body.roster.e !== e.epoch))
        return no(409, "epoch_conflict", `the inbox is at epoch ${e.epoch}: wrap (and seal the roster) under it`);
      p.reply = r;
      e.wraps[p.joiner] = r.wrap;
      if (req.body.roster) e.roster = req.body.roster;
      return { status: 201 };
    }
    case "drop": {
      const p = e.pairings[req.code_id];
      if (!p) return no(404, "not_found", "no such pairing");
      if (p.joiner !== who && !holder) return no(403, "forbidden", "only its joiner or a holder may drop a pairing");
      delete e.pairings[req.code_id];
      return { status: 204 };
    }
  }
}
