// The LAN server (adapter/lan/server.ts) runs the same relay side of sealed sessions as the Worker
// (docs/e2e.md "Wiring"): the flag, refusal of plaintext, forwarding with `sender`, and the inbox telling its
// sessions a new epoch after a re-key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { CONFIRM } from "../../shared/contract/builtin-tools.js";
import {
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  openFrame,
  sealFrame,
  sealRoster,
  wrapContentKey,
  type Frame as E2EFrame,
} from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { connect, wsUrl } from "../helpers/raw-client.js";
import { freePort } from "../helpers/relay.js";

const TOKEN = "lan-e2e-test-token-0123456";
let lan: LanServer;
beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
});
afterAll(async () => {
  await lan?.close();
});

async function req<T>(method: string, path: string, token: string | undefined, body?: unknown): Promise<{ status: number; body: T }> {
  const r = await fetch(lan.url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (r.status === 204 ? {} : await r.json()) as T };
}

describe("sealed sessions on the LAN server", () => {
  it("refuses plaintext in a sealed session, forwards envelopes with their sender, and refuses a stale epoch after a re-key", async () => {
    const m = (await req<MachineCreated>("POST", "/api/inboxes", TOKEN, {})).body;
    expect((await req<{ error: { code: string } }>("POST", "/api/inbox/sessions", m.machine_credential, { sealed: true })).body.error.code).toBe("e2e_off");
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wraps = { [machine.id]: await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck }) };
    expect(
      (await req("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps, roster: await sealRoster(ck, m.inbox_id, machine.id, []) }))
        .status,
    ).toBe(200);
    const code = (await req<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential, {})).body;
    const d = (await req<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "phone" })).body;
    const s = await req<SessionCreated & { sealed?: boolean }>("POST", "/api/inbox/sessions", m.machine_credential, { sealed: true });
    expect(s.status).toBe(201);
    const sid = s.body.session_id;
    const agent = await connect(wsUrl(lan.url, sid), { token: s.body.agent_token, clientId: "agent-1" });
    const app = await connect(wsUrl(lan.url, sid), { token: d.device_credential, via: "subprotocol" });
    expect(await agent.next("hello")).toMatchObject({ sealed: { epoch: 1 } });
    await app.next("hello");
    agent.send({ type: "tool.call", call_id: "c0", name: "confirm", arguments: { question: "plain?" } });
    expect(await agent.next("error")).toMatchObject({ code: "bad_frame", call_id: "c0" });
    app.send(await sealFrame(ck, { session_id: sid, sender: `app:${d.device_id}` }, { type: "tool.list", tools: [CONFIRM] }));
    await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.length > 0);
    agent.send(
      await sealFrame(
        ck,
        { session_id: sid, sender: "agent:agent-1" },
        { type: "tool.call", call_id: "c1", name: "confirm", arguments: { question: "sealed?" } },
      ),
    );
    const call = await app.next("tool.call");
    expect(call).toMatchObject({ sender: "agent:agent-1" });
    expect(call).not.toHaveProperty("arguments");
    expect((await openFrame((e) => (e === 1 ? ck : undefined), sid, call as unknown as E2EFrame)).arguments).toEqual({ question: "sealed?" });
    // The re-key reaches the LAN session: epoch 1 is refused from then on.
    const ck2 = await generateContentKey(2);
    const wraps2 = { [machine.id]: await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck2 }) };
    expect(
      (
        await req("PUT", "/api/inbox/e2e", m.machine_credential, {
          base_epoch: 1,
          epoch: 2,
          wraps: wraps2,
          roster: await sealRoster(ck2, m.inbox_id, machine.id, []),
        })
      ).status,
    ).toBe(200);
    agent.send(await sealFrame(ck, { session_id: sid, sender: "agent:agent-1" }, { type: "message", id: "m1", content: [{ type: "text", text: "old" }] }));
    expect(await agent.next("error")).toMatchObject({ code: "stale_epoch" });
    agent.ws.close();
    app.ws.close();
  });
});
