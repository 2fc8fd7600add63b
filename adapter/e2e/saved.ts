// The adapter's end-to-end keys as the state file keeps them (docs/e2e.md, docs/adapter.md "End-to-end
// encryption"): the limits and defaults, the E2E error, the machine key, content keys by epoch, the roster
// of trusted holders and pending pairing secrets — pure transformations of the saved section.
import {
  b64u,
  exportPrivateJwk,
  generateHolderKeyPair,
  holderSelf,
  importContentKey,
  importPrivateJwk,
  pairingFragment,
  unb64u,
  type ContentKey,
  type HolderPublic,
  type HolderSelf,
} from "../../shared/crypto/e2e/index.js";
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";
import type { SavedE2E } from "../client/state.js";

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

export const httpText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

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
