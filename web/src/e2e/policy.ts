// The inbox policy of an end-to-end encrypted inbox in the app (issue 26; docs/e2e.md "The inbox policy"):
// opened with this device's content keys for the policy screen, sealed under the current key when saved.
// Part of the lazy E2E chunk: the screen loads it only when the inbox has E2E on or the policy is sealed.
import { openPolicy, sealPolicy, type Envelope, type PolicyLists } from "../../../shared/crypto/e2e/index.js";
import type { InboxPolicy } from "../../../shared/contract/inbox.js";
import { keyringFor, type InboxLink } from "./keyring.js";

/**
 * How this device reads the inbox's policy:
 * - `sealed`: opened under the inbox's current key — what agents apply;
 * - `older`: opened, but sealed under an older key epoch — agents apply only its ask and deny rules until a
 *   holder seals it again (saving here does);
 * - `unsealed`: plaintext while the inbox is end-to-end encrypted (from before E2E, or a relay's invention) —
 *   agents apply only its ask and deny rules; saving seals what is shown;
 * - `no_key` / `unreadable`: this device cannot open it (a key epoch it does not hold; changed on the way):
 *   nothing is shown and nothing can be saved over it from here.
 */
export type PolicyState = "sealed" | "older" | "unsealed" | "no_key" | "unreadable";

export interface PolicyView {
  state: PolicyState;
  lists?: PolicyLists;
  epoch?: number;
}

const plainLists = (p: InboxPolicy): PolicyLists => ({ allow: p.permissions.allow ?? [], ask: p.permissions.ask ?? [], deny: p.permissions.deny ?? [] });

export async function openInboxPolicy(ib: InboxLink, p: InboxPolicy): Promise<PolicyView> {
  if (!p.sealed) return { state: "unsealed", lists: plainLists(p) };
  const kr = await keyringFor(ib);
  if (!kr) return { state: "no_key", epoch: p.sealed.e };
  if (!kr.keyOf(p.sealed.e) || (kr.current()?.epoch ?? 0) < p.sealed.e) await kr.refresh();
  const ck = kr.keyOf(p.sealed.e);
  if (!ck) return { state: "no_key", epoch: p.sealed.e };
  try {
    const lists = await openPolicy(ck, ib.saved.inbox_id, p.version, String(p.sealed_by ?? ""), p.sealed);
    return { state: ck.epoch < (kr.current()?.epoch ?? 0) ? "older" : "sealed", lists, epoch: ck.epoch };
  } catch {
    return { state: "unreadable", epoch: p.sealed.e };
  }
}

/** The body of `PUT /api/inbox/policy` sealed by this device for `baseVersion + 1`; undefined without a key. */
export async function sealInboxPolicy(ib: InboxLink, lists: PolicyLists, baseVersion: number): Promise<{ sealed: Envelope; base_version: number } | undefined> {
  const kr = await keyringFor(ib);
  await kr?.refresh(); // the relay refuses any epoch but the current one (409 stale_epoch)
  const ck = kr?.current();
  if (!ck) return undefined;
  return { sealed: await sealPolicy(ck, ib.saved.inbox_id, baseVersion + 1, ib.saved.device_id, lists), base_version: baseVersion };
}
