// Web Push of sealed sessions (docs/e2e.md "Push", docs/push.md) in workerd: the payload carries the sealed
// preview and what the service worker needs to open it — never text; an answer from the notification is an
// envelope the service worker sealed (an action is refused); the "answered elsewhere" update names the device
// only. The fake push service (test/helpers/fake-push.ts) decrypts every payload, as push.test.ts does.
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  openFrame,
  openPreview,
  sealFrame,
  sealPreview,
  sealRoster,
  wrapContentKey,
  type Frame as E2EFrame,
} from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { PushCallMessage, PushUpdateMessage } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { FakePushService } from "../helpers/fake-push.js";
import { connect, fetchWorker, RELAY_KEY } from "./helpers.js";

let fake: FakePushService;
beforeEach(() => {
  fake = new FakePushService("https://push.test");
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation((input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    return new URL(req.url).host === "push.test" ? fake.handle(req) : real(input, init);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

const json = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(inboxId: string, pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await runDurableObjectAlarm(env.INBOXES.get(env.INBOXES.idFromName(inboxId))).catch(() => false);
    if (pred()) return;
    if (Date.now() > end)
      throw new Error(`timed out: ${what}; received ${JSON.stringify(fake.received.map((r) => r.msg))}; problems ${JSON.stringify(fake.problems)}`);
    await sleep(20);
  }
}

describe("Web Push of a sealed session", () => {
  it("pushes the sealed preview, never text; takes a sealed answer (not an action); the update names the device only", async () => {
    const m: MachineCreated = await (await json("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wraps = { [machine.id]: await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck }) };
    expect(
      (await json("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps, roster: await sealRoster(ck, m.inbox_id, machine.id, []) }))
        .status,
    ).toBe(200);
    const s: SessionCreated = await (await json("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/api", sealed: true })).json();
    const key = ((await (await fetchWorker("/api/push/key")).json()) as { public_key: string }).public_key;
    const devices: (DevicePaired & { endpoint: string })[] = [];
    for (const name of ["Pixel", "iPad"]) {
      const c: CodeIssued = await (await json("POST", "/api/inbox/pairings", m.machine_credential)).json();
      const d: DevicePaired = await (await json("POST", "/api/pair", undefined, { code: c.code, name })).json();
      const sub = fake.subscriber(`${name}-${d.device_id}`);
      expect((await json("PUT", "/api/inbox/push", d.device_credential, { subscription: sub, application_server_key: key, lang: "en" })).status).toBe(200);
      devices.push({ ...d, endpoint: sub.endpoint });
    }
    const [pixel, ipad] = devices as [DevicePaired & { endpoint: string }, DevicePaired & { endpoint: string }];
    const agent = await connect(s.session_id, s.agent_token, { clientId: "agent-1" });
    const actx = { session_id: s.session_id, sender: "agent:agent-1" };
    const call = await sealFrame(ck, actx, {
      type: "tool.call",
      call_id: "c1",
      name: "confirm",
      arguments: { question: "SECRET: deploy?", yes_label: "SECRET yes" },
    });
    call.preview = await sealPreview(ck, actx, "c1", { text: "SECRET: deploy?", yes_label: "SECRET yes" });
    agent.send(call);
    await until(m.inbox_id, () => fake.received.length >= 2, "two pushes");
    expect(fake.problems).toEqual([]);
    const msg = fake.for(pixel.endpoint)[0]!.msg as PushCallMessage;
    expect(JSON.stringify(msg)).not.toContain("SECRET");
    expect(msg).toMatchObject({
      kind: "call",
      sid: s.session_id,
      call: "c1",
      tool: "confirm",
      body: "",
      sealed: { session_id: s.session_id, call_id: "c1", name: "confirm", from: "agent:agent-1", epoch: 1, preview: call.preview },
    });
    expect(msg).not.toHaveProperty("options");
    expect((await openPreview((e) => (e === 1 ? ck : undefined), s.session_id, "c1", msg.sealed!.from, msg.sealed!.preview)).text).toBe("SECRET: deploy?");
    // An action cannot answer a sealed call: the relay would have to make (and read) the result.
    const tapped = await json("POST", "/api/push/answer", undefined, { token: msg.token, action: "yes" });
    expect(tapped.status).toBe(400);
    // The service worker seals the tool.result's part as the device, and sends that.
    const part = await sealFrame(
      ck,
      { session_id: s.session_id, sender: `app:${pixel.device_id}` },
      { type: "tool.result", call_id: "c1", name: "confirm", result: { message: "SECRET yes", confirmed: true } },
    );
    const ok = await json("POST", "/api/push/answer", undefined, { token: msg.token, sealed: part.sealed });
    expect(ok.status, await ok.clone().text()).toBe(200);
    const res = await agent.next("tool.result");
    expect(res).toMatchObject({ call_id: "c1", answered_by: pixel.device_id, sender: `app:${pixel.device_id}` });
    expect((await openFrame((e) => (e === 1 ? ck : undefined), s.session_id, res as unknown as E2EFrame)).result).toEqual({
      message: "SECRET yes",
      confirmed: true,
    });
    // The same envelope again is idempotent.
    expect((await json("POST", "/api/push/answer", undefined, { token: msg.token, sealed: part.sealed })).status).toBe(200);
    await until(m.inbox_id, () => fake.for(ipad.endpoint).some((r) => (r.msg as PushUpdateMessage).kind === "update"), "the update to the iPad");
    const update = fake.for(ipad.endpoint).find((r) => (r.msg as PushUpdateMessage).kind === "update")!.msg as PushUpdateMessage;
    expect(update).toMatchObject({ outcome: "answered", by: "Pixel" });
    expect(update).not.toHaveProperty("answer");
    expect(JSON.stringify(update)).not.toContain("SECRET");
    agent.close();
  });
});
