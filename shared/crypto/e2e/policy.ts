// The inbox's permission policy sealed under the inbox content key (issue 26 items 3–4; docs/e2e.md
// "The inbox policy"): only holders can read it, only holders can write one that opens. The associated
// data binds it to the inbox, the epoch, its version (so a relay cannot serve an older copy under a
// newer number) and its author (`holder:<id>`, as the relay recorded who stored it).
import { E2EError } from "./errors.js";
import { openJson, sealJson, type Envelope, type FrameAad } from "./envelope.js";
import type { ContentKey } from "./keys.js";

export const POLICY_AAD_TYPE = "inbox.policy";

export interface PolicyLists {
  allow: string[];
  ask: string[];
  deny: string[];
}

/** fields("lineup-e2e/1 frame", "inbox:<inbox id>", epoch, "inbox.policy", "<version>", "holder:<author id>"). */
export const policyAad = (inboxId: string, version: number, authorId: string): FrameAad => {
  if (!Number.isInteger(version) || version < 1) throw new E2EError("bad_format", "policy: version is not an integer ≥ 1");
  return { session_id: `inbox:${inboxId}`, type: POLICY_AAD_TYPE, call_id: String(version), sender: `holder:${authorId}` };
};

/** Seals the three lists as `{"permissions":{allow,ask,deny}}` for `version` (the one the relay will give it). */
export function sealPolicy(ck: ContentKey, inboxId: string, version: number, authorId: string, lists: PolicyLists): Promise<Envelope> {
  return sealJson(ck, policyAad(inboxId, version, authorId), { permissions: { allow: [...lists.allow], ask: [...lists.ask], deny: [...lists.deny] } });
}

const strings = (v: unknown, what: string): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new E2EError("bad_format", `policy: ${what} is not a list of strings`);
  return [...(v as string[])];
};

/** Opens a sealed policy; its shape is checked here, its rules by the caller's policy parser. */
export async function openPolicy(ck: ContentKey, inboxId: string, version: number, authorId: string, envelope: unknown): Promise<PolicyLists> {
  const v = await openJson(ck, policyAad(inboxId, version, authorId), envelope);
  const p = (v as { permissions?: unknown } | null)?.permissions;
  if (typeof p !== "object" || p === null || Array.isArray(p)) throw new E2EError("bad_format", "policy: no permissions object");
  const o = p as Record<string, unknown>;
  if (!Object.keys(o).every((k) => k === "allow" || k === "ask" || k === "deny")) throw new E2EError("bad_format", "policy: only allow, ask and deny lists");
  return { allow: strings(o.allow, "allow"), ask: strings(o.ask, "ask"), deny: strings(o.deny, "deny") };
}
