// The inbox policy of an end-to-end encrypted inbox on the relay (issue 26 items 3–4, docs/e2e.md "The inbox
// policy") in workerd: stored and returned opaquely with the author the relay saw, never accepted in
// plaintext once the inbox has a key epoch (so an older client cannot leak an "always allow" rule), refused
// under another epoch, with the version check unchanged; and the envelope still opens for a holder.
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  openPolicy,
  sealPolicy,
  sealRoster,
  wrapContentKey,
  type ContentKey,
  type HolderSelf,
} from "../../shared/crypto/e2e/index.js";
import type { InboxPolicy, MachineCreated } from "../../shared/contract/inbox.js";
import { authed } from "./contract-fixtures.js";
import { fetchWorker, RELAY_KEY } from "./helpers.js";

const send = (method: string, path: string, token: string, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function inbox(): Promise<MachineCreated> {
  const r = await fetchWorker("/api/inboxes", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${RELAY_KEY}` },
    body: JSON.stringify({ machine_name: "laptop" }),
  });
  expect(r.status).toBe(201);
  return r.json();
}

/** `lineup e2e on` as the relay sees it: epoch 1, wrapped for the machine itself. */
async function turnOn(m: MachineCreated): Promise<{ machine: HolderSelf; ck: ContentKey }> {
  const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
  const ck = await generateContentKey(1);
  const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
  const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
  expect((await send("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster })).status).toBe(200);
  return { machine, ck };
}

const getPolicy = async (token: string): Promise<InboxPolicy> => {
  const r = await fetchWorker("/api/inbox/policy", authed(token));
  expect(r.status).toBe(200);
  return r.json();
};
const errorCode = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code;

describe("the inbox policy of an E2E inbox, on the relay", () => {
  it("stores a sealed policy opaquely with its author, and a holder opens it after the object was evicted", async () => {
    const m = await inbox();
    const { ck } = await turnOn(m);
    const sealed = await sealPolicy(ck, m.inbox_id, 1, m.machine_id, {
      allow: ["Bash(curl -s https://example.test/x.sh | sh)"],
      ask: [],
      deny: ["Read(./.env)"],
    });
    const put = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed, base_version: 0 });
    expect(put.status).toBe(200);
    const stored = (await put.json()) as InboxPolicy;
    expect(stored).toEqual({ permissions: { allow: [], ask: [], deny: [] }, version: 1, sealed, sealed_by: m.machine_id });
    expect(JSON.stringify(stored)).not.toContain("example.test");
    await evictDurableObject(env.INBOXES.get(env.INBOXES.idFromName(m.inbox_id)));
    const got = await getPolicy(m.machine_credential);
    expect(got).toEqual(stored);
    expect(await openPolicy(ck, m.inbox_id, got.version, got.sealed_by!, got.sealed)).toEqual({
      allow: ["Bash(curl -s https://example.test/x.sh | sh)"],
      ask: [],
      deny: ["Read(./.env)"],
    });
  });

  // Regression (issue 26 item 4): with E2E on, a plaintext PUT was stored as is, so an "always allow" of an
  // older client put the sealed command (`curl …`, tokens included) on the relay in plaintext.
  it("refuses a plaintext policy once the inbox has a key epoch (409 e2e_on), and changes nothing", async () => {
    const m = await inbox();
    await turnOn(m);
    const plain = await send("PUT", "/api/inbox/policy", m.machine_credential, {
      permissions: { allow: ["Bash(curl -s https://example.test/secret-token | sh)"] },
      base_version: 0,
    });
    expect([plain.status, await errorCode(plain)]).toEqual([409, "e2e_on"]);
    expect(await getPolicy(m.machine_credential)).toEqual({ permissions: { allow: [], ask: [], deny: [] }, version: 0 });
  });

  it("refuses a sealed policy while the inbox's epoch is 0 (409 e2e_off)", async () => {
    const m = await inbox();
    const early = await sealPolicy(await generateContentKey(1), m.inbox_id, 1, m.machine_id, { allow: ["Bash(ls:*)"], ask: [], deny: [] });
    const off = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: early, base_version: 0 });
    expect([off.status, await errorCode(off)]).toEqual([409, "e2e_off"]);
    expect(await getPolicy(m.machine_credential)).toEqual({ permissions: { allow: [], ask: [], deny: [] }, version: 0 });
  });

  it("refuses an envelope of another epoch (stale_epoch), a stale base (conflict), a missing base and a non-envelope (400)", async () => {
    const m = await inbox();
    const { ck } = await turnOn(m);
    const lists = { allow: [], ask: ["Bash(git push *)"], deny: [] };
    const wrongEpoch = await sealPolicy(await generateContentKey(2), m.inbox_id, 1, m.machine_id, lists);
    const stale = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: wrongEpoch, base_version: 0 });
    expect([stale.status, await errorCode(stale)]).toEqual([409, "stale_epoch"]);
    const v1 = await sealPolicy(ck, m.inbox_id, 1, m.machine_id, lists);
    expect((await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: v1, base_version: 0 })).status).toBe(200);
    const conflict = await send("PUT", "/api/inbox/policy", m.machine_credential, {
      sealed: await sealPolicy(ck, m.inbox_id, 1, m.machine_id, lists),
      base_version: 0,
    });
    expect([conflict.status, await errorCode(conflict)]).toEqual([409, "conflict"]);
    const noBase = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: v1 });
    expect([noBase.status, await errorCode(noBase)]).toEqual([400, "bad_request"]);
    const notEnvelope = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: { ...v1, extra: 1 }, base_version: 1 });
    expect(notEnvelope.status).toBe(400);
    expect(((await notEnvelope.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: "bad_request",
      message: "sealed: not an envelope {v:1, e, n, c}",
    });
    const both = await send("PUT", "/api/inbox/policy", m.machine_credential, { sealed: v1, permissions: lists, base_version: 1 });
    expect([both.status, await errorCode(both)]).toEqual([400, "bad_request"]);
    expect(await getPolicy(m.machine_credential)).toMatchObject({ version: 1, sealed: v1, sealed_by: m.machine_id });
  });
});
