// The inbox policy over HTTP (docs/inbox.md): GET / PUT /api/inbox/policy with this device's credential.
// The credential comes from the inboxes the PWA stored at pairing (storage.ts loadInboxes).
import type { InboxPolicy } from "../../../shared/contract/inbox.js";
import { loadInboxes, type SavedInbox } from "../storage.js";
import { LineUpError } from "../../../shared/client/errors.js";

export type Lists = { allow: string[]; ask: string[]; deny: string[] };

/** The inboxes this device can edit the policy of. */
export const policyInboxes = (): SavedInbox[] => loadInboxes();

async function call(inbox: SavedInbox, method: "GET" | "PUT", body?: unknown): Promise<InboxPolicy> {
  const r = await fetch(new URL("/api/inbox/policy", inbox.origin), {
    method,
    headers: { authorization: `Bearer ${inbox.device_credential}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    cache: "no-store",
  });
  if (!r.ok) {
    const e = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    throw new LineUpError(e?.error?.code ?? `http_${r.status}`, e?.error?.message ?? `HTTP ${r.status}`, r.status);
  }
  const p = (await r.json()) as InboxPolicy;
  const out: InboxPolicy = {
    version: p.version,
    permissions: { allow: p.permissions.allow ?? [], ask: p.permissions.ask ?? [], deny: p.permissions.deny ?? [] },
  };
  // docs/e2e.md "The inbox policy": sealed, it is opened by the E2E chunk (web/src/e2e/policy.ts).
  if (p.sealed) Object.assign(out, { sealed: p.sealed, ...(p.sealed_by !== undefined ? { sealed_by: p.sealed_by } : {}) });
  return out;
}

export const getPolicy = (inbox: SavedInbox) => call(inbox, "GET");
/** Replaces all three lists; 409 `conflict` when somebody saved since `baseVersion`. */
export const putPolicy = (inbox: SavedInbox, lists: Lists, baseVersion: number) => call(inbox, "PUT", { permissions: lists, base_version: baseVersion });
/** Replaces the policy with a sealed one (E2E on): `{sealed, base_version}` from web/src/e2e/policy.ts. */
export const putSealedPolicy = (inbox: SavedInbox, body: { sealed: unknown; base_version: number }) => call(inbox, "PUT", body);
