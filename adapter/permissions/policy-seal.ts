// The inbox policy under end-to-end encryption (issue 26 items 3–4; docs/e2e.md "The inbox policy",
// docs/permissions.md §10). While this machine holds content keys of its inbox, the relay is not trusted
// with the policy: a copy counts only when it opens under the inbox's current key (shared/crypto/e2e/policy.ts),
// anything else — plaintext, an envelope that does not open, one of an older epoch, an older version than
// the one this machine trusts — is "unauthenticated" and may only add ask and deny rules. Writes ("always
// allow", the migration when E2E is turned on) leave this machine sealed, never in plaintext.
// Node only; the storage of the cache is policy-store.ts.
import { importContentKey, isE2EError, openPolicy, sealPolicy, unb64u, type ContentKey, type Envelope } from "../../shared/crypto/e2e/index.js";
import { parseCredential, type InboxPolicy } from "../../shared/contract/inbox.js";
import { findInbox } from "../client/state.js";

export type Lists = { allow: string[]; ask: string[]; deny: string[] };

/** What the adapter needs to read and write the sealed policy: who it is (the AAD's author) and its keys. */
export interface HeldKeys {
  holderId: string;
  keys: Map<number, ContentKey>;
  current: ContentKey;
}

interface Where {
  relayUrl: string;
  inboxId: string;
  credential: string;
}

const savedE2E = (stateDir: string, w: Where) => {
  const saved = findInbox(stateDir, w.relayUrl);
  return saved && saved.inboxId === w.inboxId && saved.e2e && Object.keys(saved.e2e.keys).length > 0 ? saved.e2e : undefined;
};

/** Whether this machine holds content keys of the inbox (disk only, synchronous: PreToolUse asks it). */
export const holdsKeys = (stateDir: string, w: Where): boolean => savedE2E(stateDir, w) !== undefined;

/** This machine's content keys of the inbox, from the state file; undefined when it holds none. */
export async function loadKeys(stateDir: string, w: Where): Promise<HeldKeys | undefined> {
  const e2e = savedE2E(stateDir, w);
  const holderId = parseCredential(w.credential)?.id;
  if (!e2e || !holderId) return undefined;
  const keys = new Map<number, ContentKey>();
  for (const [e, raw] of Object.entries(e2e.keys)) {
    try {
      keys.set(Number(e), await importContentKey(unb64u(raw), Number(e)));
    } catch {
      /* a key that does not import opens nothing */
    }
  }
  const current = [...keys.values()].sort((a, b) => b.epoch - a.epoch)[0];
  return current ? { holderId, keys, current } : undefined;
}

/** How a copy served by the relay reads on this machine. */
export type Reading =
  /** this machine holds no keys: the plaintext policy, trusted as before E2E */
  | { kind: "plain"; version: number; lists: Lists }
  /** opened under the inbox's current key: every rule applies */
  | { kind: "sealed"; version: number; epoch: number; lists: Lists }
  /** anything else: `lists` when it could be read (plaintext, or sealed under an older epoch), else none */
  | { kind: "unauth"; version: number; reason: string; lists?: Lists };

const listsOf = (p: InboxPolicy["permissions"]): Lists => ({ allow: p.allow ?? [], ask: p.ask ?? [], deny: p.deny ?? [] });

/**
 * Reads the relay's answer of `GET /api/inbox/policy`. `sync` fetches this machine's wrap of a newer epoch
 * once (adapter/e2e/keyring.ts) when the envelope names an epoch above the keys held.
 */
export async function readServed(
  served: InboxPolicy,
  keys: HeldKeys | undefined,
  inboxId: string,
  sync?: () => Promise<HeldKeys | undefined>,
): Promise<Reading> {
  const version = served.version;
  if (!keys) return { kind: "plain", version, lists: listsOf(served.permissions) };
  const env = served.sealed as Envelope | undefined;
  if (env === undefined || env === null) {
    return { kind: "unauth", version, reason: "the relay served it in plaintext while this inbox is end-to-end encrypted", lists: listsOf(served.permissions) };
  }
  const e = typeof (env as { e?: unknown }).e === "number" ? (env as { e: number }).e : 0;
  if (e > keys.current.epoch && sync) keys = (await sync()) ?? keys;
  const ck = keys.keys.get(e);
  if (!ck) return { kind: "unauth", version, reason: `it is sealed under key epoch ${e}, which this machine does not hold` };
  let lists: Lists;
  try {
    lists = await openPolicy(ck, inboxId, version, String(served.sealed_by ?? ""), env);
  } catch (err) {
    const why = isE2EError(err, "bad_format")
      ? "it is not a sealed policy"
      : "it does not open: changed on the way, moved from another version or author, or not sealed by a holder";
    return { kind: "unauth", version, reason: why };
  }
  if (e < keys.current.epoch)
    return { kind: "unauth", version, reason: `it is sealed under an older key epoch (${e}; this machine is at ${keys.current.epoch})`, lists };
  return { kind: "sealed", version, epoch: e, lists };
}

const uniq = (xs: string[]) => [...new Set(xs)];

/**
 * What this machine re-seals from a readable but unauthenticated copy (plaintext from before E2E, or an
 * older epoch): allow rules only where the copy and this machine's trusted copy agree, ask and deny rules
 * of both (never fewer restrictions than either).
 */
export function mergeUnauthenticated(readable: Lists, trusted: Lists | undefined): Lists {
  const mine = trusted ?? { allow: [], ask: [], deny: [] };
  return {
    allow: readable.allow.filter((r) => mine.allow.includes(r)),
    ask: uniq([...mine.ask, ...readable.ask]),
    deny: uniq([...mine.deny, ...readable.deny]),
  };
}

/** The body of a sealed `PUT /api/inbox/policy`: the lists sealed for `baseVersion + 1` by this holder. */
export async function sealedBody(keys: HeldKeys, inboxId: string, lists: Lists, baseVersion: number): Promise<{ sealed: Envelope; base_version: number }> {
  return { sealed: await sealPolicy(keys.current, inboxId, baseVersion + 1, keys.holderId, lists), base_version: baseVersion };
}

/** Fetches this machine's wrap of a newer epoch (adapter/e2e/switch.ts syncOnce), then its keys again; gives up
 * (undefined) after `timeoutMs`. */
export function syncer(stateDir: string, w: Where, timeoutMs: () => number): () => Promise<HeldKeys | undefined> {
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs())));
    const work = (async () => {
      const { syncOnce } = await import("../e2e/switch.js");
      (await syncOnce({ relayUrl: w.relayUrl, stateDir }))?.close();
      return loadKeys(stateDir, w);
    })();
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}
