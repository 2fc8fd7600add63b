// The relay side of end-to-end encryption (issue 19, docs/e2e.md "Wiring") in workerd: sealed sessions,
// their frames, the inbox's key state and pairing mailbox. The tests act as agent and devices with the real
// crypto core (shared/e2e), so every envelope the relay forwards is checked to still open for its receiver.
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ASK_QUESTION } from "../../shared/contract/builtin-tools.js";
import {
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  makePairHello,
  makePairReply,
  newPairingSecret,
  openFrame,
  openPreview,
  pairingCodeId,
  sealFrame,
  sealPreview,
  sealReseal,
  sealRoster,
  wrapContentKey,
  type ContentKey,
  type Frame as E2EFrame,
  type HolderSelf,
} from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { authed } from "./contract-fixtures.js";
import { connect, fetchWorker, RELAY_KEY, stubOf, type Client } from "./helpers.js";

const send = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const post = (path: string, token: string | undefined, body: unknown = {}) => send("POST", path, token, body);
const getJson = async <T = Record<string, unknown>>(path: string, token: string): Promise<T> => {
  const r = await fetchWorker(path, authed(token));
  expect(r.status).toBe(200);
  return (await r.json()) as T;
};
type E2EGet = {
  epoch: number;
  rekey_needed: boolean;
  holders: string[];
  wrap: unknown;
  hellos: unknown[];
  replies: unknown[];
  pairings: { code_id: string; joiner: string; state: string }[];
};

interface World {
  m: MachineCreated;
  machine: HolderSelf;
  ck: ContentKey;
}

/** An inbox with E2E on: the machine published epoch 1, wrapped for itself. */
async function world(): Promise<World> {
  const m: MachineCreated = await (await post("/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
  const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
  const ck = await generateContentKey(1);
  const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
  const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
  const r = await send("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster });
  expect(r.status).toBe(200);
  expect(await r.json()).toEqual({ epoch: 1 });
  return { m, machine, ck };
}

async function sealedSession(w: World): Promise<SessionCreated & { sealed?: boolean }> {
  const r = await post("/api/inbox/sessions", w.m.machine_credential, { project_dir: "/p/secret", sealed: true });
  expect(r.status).toBe(201);
  return r.json();
}

/** A device paired through the relay, with its own key and the content key from the machine's reply. */
async function pairDevice(w: World, name = "phone"): Promise<{ d: DevicePaired; self: HolderSelf; codeId: string; secret: string }> {
  const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
  const d: DevicePaired = await (await post("/api/pair", undefined, { code: code.code, name })).json();
  const self = await holderSelf(d.device_id, await generateHolderKeyPair({ extractable: false }));
  const secret = newPairingSecret();
  const codeId = await pairingCodeId(code.code);
  const hello = await makePairHello({ secret, inboxId: w.m.inbox_id, codeId, joiner: { id: self.id, publicKey: self.publicKey } });
  expect((await post("/api/inbox/e2e/hello", d.device_credential, hello)).status).toBe(201);
  const mine = await getJson<E2EGet>("/api/inbox/e2e", w.m.machine_credential);
  expect(mine.hellos).toContainEqual(hello);
  const { reply } = await makePairReply({ secret, inboxId: w.m.inbox_id, codeId, hello, sponsor: w.machine, key: w.ck });
  expect((await post("/api/inbox/e2e/reply", w.m.machine_credential, { reply })).status).toBe(201);
  return { d, self, codeId, secret };
}

const keys =
  (...ks: ContentKey[]) =>
  (e: number) =>
    ks.find((k) => k.epoch === e);

describe("sealed sessions: the flag", () => {
  it("is refused while the inbox's epoch is 0, and only a machine makes one", async () => {
    const m: MachineCreated = await (await post("/api/inboxes", RELAY_KEY, {})).json();
    const r = await post("/api/inbox/sessions", m.machine_credential, { sealed: true });
    expect(r.status).toBe(409);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("e2e_off");
    const w = await world();
    const { d } = await pairDevice(w);
    expect((await post("/api/inbox/sessions", d.device_credential, { sealed: true })).status).toBe(403);
  });

  it("shows in hello, the session status and the inbox state; plaintext sessions say sealed: false", async () => {
    const w = await world();
    const s = await sealedSession(w);
    expect(s.sealed).toBe(true);
    const plain: SessionCreated = await (await post("/api/inbox/sessions", w.m.machine_credential, { project_dir: "/p/open" })).json();
    const agent = await connect(s.session_id, s.agent_token, { clientId: "agent-1" });
    expect(agent.hello).toMatchObject({ type: "hello", sealed: { epoch: 1 } });
    const open = await connect(plain.session_id, plain.agent_token);
    expect(open.hello).not.toHaveProperty("sealed");
    expect((await getJson(`/api/sessions/${s.session_id}`, s.agent_token)).sealed).toBe(true);
    expect((await getJson(`/api/sessions/${plain.session_id}`, plain.agent_token)).sealed).toBe(false);
    const st = await getJson<InboxState>("/api/inbox", w.m.machine_credential);
    expect(Object.fromEntries(st.sessions.map((x) => [x.session_id, x.sealed]))).toEqual({ [s.session_id]: true, [plain.session_id]: false });
    expect(st.e2e).toEqual({ epoch: 1, rekey_needed: false, pending: 0 });
    agent.close();
    open.close();
  });
});

describe("sealed sessions: frames", () => {
  it("a sealed session refuses plaintext content, a plaintext session refuses sealed parts", async () => {
    const w = await world();
    const s = await sealedSession(w);
    const plain: SessionCreated = await (await post("/api/inbox/sessions", w.m.machine_credential, {})).json();
    const a = await connect(s.session_id, s.agent_token, { clientId: "agent-1" });
    const ctx = { session_id: s.session_id, sender: "agent:agent-1" };
    const env = (await sealFrame(w.ck, ctx, { type: "tool.call", call_id: "x", name: "input", arguments: {} })).sealed;
    const refused = async (c: Client, frame: unknown, what: string) => {
      c.send(frame);
      const e = await c.next("error");
      expect(e.code, what).toBe("bad_frame");
    };
    await refused(a, { type: "tool.call", call_id: "c1", name: "input", arguments: { prompt: "PLAIN" } }, "plaintext arguments");
    await refused(a, { type: "tool.call", call_id: "c1", name: "input", sealed: env, arguments: {} }, "sealed and arguments");
    await refused(a, { type: "message", content: [{ type: "text", text: "hi" }] }, "plaintext message");
    await refused(a, { type: "message", sealed: env }, "sealed message without id");
    await refused(a, { type: "tool.list", tools: [{ ...ASK_QUESTION }] }, "plaintext tool list");
    await refused(
      a,
      { type: "tool.list", tools: [{ name: "ask_question", type: "action", sealed: env, description: "x" }] },
      "a description beside the envelope",
    );
    await refused(a, { type: "status", state: "working", detail: "PLAIN" }, "plaintext status detail");
    await refused(a, { type: "tool.call", call_id: "c1", name: "input", sealed: { ...(env as object), extra: 1 } }, "an envelope with an extra key");
    await refused(a, { type: "tool.result", call_id: "c1", error: { code: "x", message: "y" } }, "plaintext error");
    const p = await connect(plain.session_id, plain.agent_token);
    await refused(p, { type: "tool.call", call_id: "c1", name: "input", arguments: {}, sealed: env }, "sealed in plaintext");
    await refused(p, { type: "tool.call", call_id: "c1", name: "input", arguments: {}, preview: env }, "preview in plaintext");
    await refused(p, { type: "tool.reseal", call_id: "c1", sealed: env }, "reseal in plaintext");
    await refused(p, { type: "tool.list", tools: [{ name: "t", type: "action", sealed: env }] }, "a sealed tool in plaintext");
    // HTTP calls carry plaintext arguments: a sealed session refuses them.
    const h = await post(`/api/sessions/${s.session_id}/calls?wait=0`, s.agent_token, { name: "input", arguments: { prompt: "PLAIN" } });
    expect(h.status).toBe(400);
    a.close();
    p.close();
  });

  it("routes a sealed call: sender on every forwarded frame, no arguments, waiting entry without text, the cancel with the winner's envelope and no plaintext answer", async () => {
    const w = await world();
    const phone = await pairDevice(w, "phone");
    const tablet = await pairDevice(w, "tablet");
    const s = await sealedSession(w);
    const agent = await connect(s.session_id, s.agent_token, { clientId: "agent-1" });
    const dev1 = await connect(s.session_id, phone.d.device_credential, { via: "subprotocol" });
    const dev2 = await connect(s.session_id, tablet.d.device_credential, { via: "subprotocol" });
    const sid = s.session_id;
    // The app side registers its tools sealed; the agent gets entries that name their author.
    dev1.send(await sealFrame(w.ck, { session_id: sid, sender: `app:${phone.d.device_id}` }, { type: "tool.list", tools: [ASK_QUESTION] }));
    const list = await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.length > 0);
    dev2.send(await sealFrame(w.ck, { session_id: sid, sender: `app:${tablet.d.device_id}` }, { type: "tool.list", tools: [ASK_QUESTION] }));
    const entry = (list.tools as unknown as Record<string, unknown>[])[0]!;
    expect(entry).toMatchObject({ name: "ask_question", type: "action", sender: `app:${phone.d.device_id}` });
    expect(entry).not.toHaveProperty("description");
    expect((await openFrame(keys(w.ck), sid, list as unknown as E2EFrame)).tools).toEqual([
      expect.objectContaining({ name: "ask_question", description: ASK_QUESTION.description }),
    ]);
    // The call: sealed arguments and a sealed preview.
    const actx = { session_id: sid, sender: "agent:agent-1" };
    const call = await sealFrame(w.ck, actx, {
      type: "tool.call",
      call_id: "q1",
      name: "ask_question",
      arguments: { question: "SECRET QUESTION", no_such_field: 1 },
    });
    call.preview = await sealPreview(w.ck, actx, "q1", { text: "SECRET QUESTION" });
    agent.send(call);
    const got = await dev1.next("tool.call");
    expect(got).toMatchObject({ call_id: "q1", name: "ask_question", sender: "agent:agent-1", from: "agent", sealed: call.sealed, preview: call.preview });
    expect(got).not.toHaveProperty("arguments");
    // Schema validation is the receiver's: a field the schema does not know passed the relay.
    expect((await openFrame(keys(w.ck), sid, got as unknown as E2EFrame)).arguments).toEqual({ question: "SECRET QUESTION", no_such_field: 1 });
    await dev2.next("tool.call");
    // The inbox lists it without text, with the preview and the caller.
    let waiting: InboxState["sessions"][number]["waiting"] = [];
    for (let i = 0; i < 50 && waiting.length === 0; i++) {
      waiting = (await getJson<InboxState>("/api/inbox", w.m.machine_credential)).sessions.find((x) => x.session_id === sid)?.waiting ?? [];
      if (waiting.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(waiting[0]).toMatchObject({ call_id: "q1", name: "ask_question", text: "", sealed: true, from: "agent:agent-1", preview: call.preview });
    expect(waiting[0]).not.toHaveProperty("options");
    expect((await openPreview(keys(w.ck), sid, "q1", waiting[0]!.from!, waiting[0]!.preview)).text).toBe("SECRET QUESTION");
    // The phone answers sealed; the agent gets the envelope and its author, the tablet a cancel without the answer.
    const pctx = { session_id: sid, sender: `app:${phone.d.device_id}` };
    dev1.send({
      ...(await sealFrame(w.ck, pctx, { type: "tool.result", call_id: "q1", name: "ask_question", result: { message: "SECRET ANSWER" } })),
      instance_id: "inst-1",
    });
    const res = await agent.next("tool.result");
    expect(res).toMatchObject({ call_id: "q1", sender: `app:${phone.d.device_id}`, answered_by: phone.d.device_id, instance_id: "inst-1" });
    expect(res).not.toHaveProperty("result");
    expect((await openFrame(keys(w.ck), sid, res as unknown as E2EFrame)).result).toEqual({ message: "SECRET ANSWER" });
    const cancel = await dev2.next("tool.cancel");
    expect(cancel).toMatchObject({ call_id: "q1", reason: "answered", answered_by: "phone" });
    expect(cancel).not.toHaveProperty("answer");
    // … but the phone's sealed answer as it sent it, which the tablet opens (issue 28 item 4) and the relay cannot.
    expect(cancel).toMatchObject({ answer_sealed: res.sealed, answer_sender: `app:${phone.d.device_id}` });
    const won = await openFrame(keys(w.ck), sid, { type: "tool.result", call_id: "q1", sealed: cancel.answer_sealed, sender: cancel.answer_sender });
    expect(won.result).toEqual({ message: "SECRET ANSWER" });
    // Chat: the message keeps its envelope, in the live frame and in the history.
    dev1.send(await sealFrame(w.ck, pctx, { type: "message", id: "m1", content: [{ type: "text", text: "SECRET CHAT" }] }));
    const msg = await agent.next("message");
    expect(msg).not.toHaveProperty("content");
    expect((await openFrame(keys(w.ck), sid, msg as unknown as E2EFrame)).content).toEqual([{ type: "text", text: "SECRET CHAT" }]);
    const page = await getJson<{ messages: Record<string, unknown>[] }>(`/api/sessions/${sid}/messages`, s.agent_token);
    expect(page.messages[0]).toMatchObject({ id: "m1", sealed: msg.sealed });
    for (const c of [agent, dev1, dev2]) c.close();
  });

  // Issue 28 item 7: a connected device without the key cannot register sealed tools; the relay answered
  // unknown_tool at once instead of letting the call wait for a device that can open it.
  it("a sealed call made while only a keyless device is connected waits, and reaches the first device that registers", async () => {
    const w = await world();
    const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
    const old: DevicePaired = await (await post("/api/pair", undefined, { code: code.code, name: "old phone" })).json();
    const s = await sealedSession(w);
    const sid = s.session_id;
    const agent = await connect(sid, s.agent_token, { clientId: "agent-1" });
    const keyless = await connect(sid, old.device_credential, { via: "subprotocol" });
    const actx = { session_id: sid, sender: "agent:agent-1" };
    agent.send(await sealFrame(w.ck, actx, { type: "tool.call", call_id: "early", name: "ask_question", arguments: { question: "Q?" } }));
    const phone = await pairDevice(w, "phone");
    const dev = await connect(sid, phone.d.device_credential, { via: "subprotocol" });
    dev.send(await sealFrame(w.ck, { session_id: sid, sender: `app:${phone.d.device_id}` }, { type: "tool.list", tools: [ASK_QUESTION] }));
    const got = await dev.next("tool.call");
    expect(got).toMatchObject({ call_id: "early", name: "ask_question", sender: "agent:agent-1" });
    const pctx = { session_id: sid, sender: `app:${phone.d.device_id}` };
    dev.send(await sealFrame(w.ck, pctx, { type: "tool.result", call_id: "early", name: "ask_question", result: { message: "yes" } }));
    const res = await agent.next("tool.result");
    expect(res).not.toHaveProperty("error");
    expect((await openFrame(keys(w.ck), sid, res as unknown as E2EFrame)).result).toEqual({ message: "yes" });
    for (const c of [agent, keyless, dev]) c.close();
  });

  it("after a re-key the old epoch is stale, and the caller re-seals its open call for the peers that got it", async () => {
    const w = await world();
    const phone = await pairDevice(w, "phone");
    const s = await sealedSession(w);
    const sid = s.session_id;
    const agent = await connect(sid, s.agent_token, { clientId: "agent-1" });
    const dev = await connect(sid, phone.d.device_credential, { via: "subprotocol" });
    dev.send(await sealFrame(w.ck, { session_id: sid, sender: `app:${phone.d.device_id}` }, { type: "tool.list", tools: [ASK_QUESTION] }));
    await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.length > 0);
    const actx = { session_id: sid, sender: "agent:agent-1" };
    agent.send(await sealFrame(w.ck, actx, { type: "tool.call", call_id: "q1", name: "ask_question", arguments: { question: "v1" } }));
    await dev.next("tool.call");
    // Someone else than the caller cannot re-seal; nor can anyone re-seal a call that is not open.
    const ck2 = await generateContentKey(2);
    const wraps = {
      [w.machine.id]: await wrapContentKey({ inboxId: w.m.inbox_id, sender: w.machine, recipient: w.machine, key: ck2 }),
      [phone.self.id]: await wrapContentKey({ inboxId: w.m.inbox_id, sender: w.machine, recipient: phone.self, key: ck2 }),
    };
    const roster = await sealRoster(
      ck2,
      w.m.inbox_id,
      w.machine.id,
      [w.machine, phone.self].map((h) => ({ id: h.id, publicKey: h.publicKey })),
    );
    expect((await send("PUT", "/api/inbox/e2e", w.m.machine_credential, { base_epoch: 1, epoch: 2, wraps, roster })).status).toBe(200);
    // Epoch 1 is refused from now on.
    agent.send(await sealFrame(w.ck, actx, { type: "message", id: "old", content: [{ type: "text", text: "x" }] }));
    expect(await agent.next("error")).toMatchObject({ code: "stale_epoch" });
    const fresh = await connect(sid, s.agent_token, { clientId: "agent-2" });
    expect(fresh.hello).toMatchObject({ sealed: { epoch: 2 } });
    fresh.close();
    dev.send(await sealReseal(ck2, { session_id: sid, sender: `app:${phone.d.device_id}` }, "q1", { question: "x" }));
    expect(await dev.next("error")).toMatchObject({ code: "unknown_call" });
    agent.send(await sealReseal(ck2, actx, "q1", { question: "v2" }, { text: "v2" }));
    const again = await dev.next("tool.call");
    expect(again).toMatchObject({ call_id: "q1", resealed: true, sender: "agent:agent-1" });
    expect((await openFrame(keys(ck2), sid, again as unknown as E2EFrame)).arguments).toEqual({ question: "v2" });
    agent.close();
    dev.close();
  });
});

describe("sealed sessions: state survives evictions", () => {
  it("the sealed flag and the epoch a re-key set are the session's storage, not its memory", async () => {
    const w = await world();
    const s = await sealedSession(w);
    const sid = s.session_id;
    const ck2 = await generateContentKey(2);
    const wraps = { [w.machine.id]: await wrapContentKey({ inboxId: w.m.inbox_id, sender: w.machine, recipient: w.machine, key: ck2 }) };
    expect(
      (
        await send("PUT", "/api/inbox/e2e", w.m.machine_credential, {
          base_epoch: 1,
          epoch: 2,
          wraps,
          roster: await sealRoster(ck2, w.m.inbox_id, w.machine.id, []),
        })
      ).status,
    ).toBe(200);
    await evictDurableObject(stubOf(sid));
    const agent = await connect(sid, s.agent_token, { clientId: "agent-1" });
    expect(agent.hello).toMatchObject({ sealed: { epoch: 2 } });
    const actx = { session_id: sid, sender: "agent:agent-1" };
    agent.send(await sealFrame(w.ck, actx, { type: "message", id: "m1", content: [{ type: "text", text: "old" }] }));
    expect(await agent.next("error")).toMatchObject({ code: "stale_epoch" });
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    agent.send({ type: "message", id: "m2", content: [{ type: "text", text: "plain" }] });
    expect(await agent.next("error")).toMatchObject({ code: "bad_frame" });
    agent.send(await sealFrame(ck2, actx, { type: "message", id: "m3", content: [{ type: "text", text: "new" }] }));
    expect(await agent.none("error")).toBe(true);
    agent.close();
  });

  // The eviction variant of "a sealed call made while only a keyless device is connected waits": the waiting
  // call is the session's storage, so a hibernation between the call and the keyed device loses nothing.
  it("a sealed call waiting for a keyed device survives a hibernation and reaches the device that registers after it", async () => {
    const w = await world();
    const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
    const old: DevicePaired = await (await post("/api/pair", undefined, { code: code.code, name: "old phone" })).json();
    const s = await sealedSession(w);
    const sid = s.session_id;
    const agent = await connect(sid, s.agent_token, { clientId: "agent-1" });
    const keyless = await connect(sid, old.device_credential, { via: "subprotocol" });
    const actx = { session_id: sid, sender: "agent:agent-1" };
    agent.send(await sealFrame(w.ck, actx, { type: "tool.call", call_id: "early", name: "ask_question", arguments: { question: "Q?" } }));
    expect(await agent.none("tool.result")).toBe(true);
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    const phone = await pairDevice(w, "phone");
    const dev = await connect(sid, phone.d.device_credential, { via: "subprotocol" });
    dev.send(await sealFrame(w.ck, { session_id: sid, sender: `app:${phone.d.device_id}` }, { type: "tool.list", tools: [ASK_QUESTION] }));
    const got = await dev.next("tool.call");
    expect(got).toMatchObject({ call_id: "early", name: "ask_question", sender: "agent:agent-1" });
    expect((await openFrame(keys(w.ck), sid, got as unknown as E2EFrame)).arguments).toEqual({ question: "Q?" });
    const pctx = { session_id: sid, sender: `app:${phone.d.device_id}` };
    dev.send(await sealFrame(w.ck, pctx, { type: "tool.result", call_id: "early", name: "ask_question", result: { message: "yes" } }));
    const res = await agent.next("tool.result");
    expect(res).not.toHaveProperty("error");
    expect((await openFrame(keys(w.ck), sid, res as unknown as E2EFrame)).result).toEqual({ message: "yes" });
    for (const c of [agent, keyless, dev]) c.close();
  });
});

describe("the inbox's key state", () => {
  it("key endpoints need a credential of the inbox; the first re-keyer wins; only holders re-key", async () => {
    const w = await world();
    const phone = await pairDevice(w, "phone");
    expect((await fetchWorker("/api/inbox/e2e")).status).toBe(401);
    const st = await getJson<E2EGet>("/api/inbox/e2e", phone.d.device_credential);
    expect(st).toMatchObject({ epoch: 1, rekey_needed: false, holders: expect.arrayContaining([w.machine.id, phone.self.id]) });
    expect(st.wrap).toMatchObject({ to: phone.self.id, e: 1 });
    // A device without a wrap (paired, never given the key) may not re-key.
    const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
    const bare: DevicePaired = await (await post("/api/pair", undefined, { code: code.code, name: "bare" })).json();
    const bareSelf = await holderSelf(bare.device_id, await generateHolderKeyPair({ extractable: false }));
    const ck2 = await generateContentKey(2);
    const put = async (who: HolderSelf, cred: string, base: number) =>
      send("PUT", "/api/inbox/e2e", cred, {
        base_epoch: base,
        epoch: base + 1,
        wraps: { [who.id]: await wrapContentKey({ inboxId: w.m.inbox_id, sender: who, recipient: who, key: await generateContentKey(base + 1) }) },
        roster: await sealRoster(ck2, w.m.inbox_id, who.id, []),
      });
    expect((await put(bareSelf, bare.device_credential, 1)).status).toBe(403);
    expect((await put(phone.self, phone.d.device_credential, 0)).status).toBe(409);
    // Two holders race from epoch 1: the first wins, the second gets epoch_conflict.
    expect((await put(phone.self, phone.d.device_credential, 1)).status).toBe(200);
    const lost = await put(w.machine, w.m.machine_credential, 1);
    expect(lost.status).toBe(409);
    expect(((await lost.json()) as { error: { code: string } }).error.code).toBe("epoch_conflict");
    // A malformed body changes nothing.
    expect((await send("PUT", "/api/inbox/e2e", phone.d.device_credential, { base_epoch: 2, epoch: 3, wraps: { x: 1 }, roster: {} })).status).toBe(400);
    expect((await getJson<E2EGet>("/api/inbox/e2e", phone.d.device_credential)).epoch).toBe(2);
  });

  it("revoking a device deletes its wrap and sets rekey_needed (also in the inbox state frame)", async () => {
    const w = await world();
    const phone = await pairDevice(w, "phone");
    expect((await send("DELETE", `/api/inbox/devices/${phone.d.device_id}`, w.m.machine_credential)).status).toBe(204);
    const st = await getJson<E2EGet>("/api/inbox/e2e", w.m.machine_credential);
    expect(st.holders).toEqual([w.machine.id]);
    expect(st.rekey_needed).toBe(true);
    expect((await getJson<InboxState>("/api/inbox", w.m.machine_credential)).e2e).toMatchObject({ rekey_needed: true });
  });

  it("pairing mailbox: a hello only from the recorded joiner, once; the reply sets the joiner's wrap", async () => {
    const w = await world();
    const other = await pairDevice(w, "other");
    const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
    const d: DevicePaired = await (await post("/api/pair", undefined, { code: code.code, name: "phone" })).json();
    const self = await holderSelf(d.device_id, await generateHolderKeyPair({ extractable: false }));
    const secret = newPairingSecret();
    const codeId = await pairingCodeId(code.code);
    const hello = await makePairHello({ secret, inboxId: w.m.inbox_id, codeId, joiner: { id: self.id, publicKey: self.publicKey } });
    // Another device posting this hello (or its own key under this code) is refused.
    expect((await post("/api/inbox/e2e/hello", other.d.device_credential, hello)).status).toBe(403);
    const forged = await makePairHello({ secret, inboxId: w.m.inbox_id, codeId, joiner: { id: other.self.id, publicKey: other.self.publicKey } });
    expect((await post("/api/inbox/e2e/hello", other.d.device_credential, forged)).status).toBe(403);
    expect((await post("/api/inbox/e2e/hello", d.device_credential, hello)).status).toBe(201);
    expect((await post("/api/inbox/e2e/hello", d.device_credential, hello)).status).toBe(409);
    expect((await getJson<InboxState>("/api/inbox", w.m.machine_credential)).e2e).toMatchObject({ pending: 1 });
    // A joiner without the key sees no hellos; the holders do.
    expect((await getJson<E2EGet>("/api/inbox/e2e", d.device_credential)).hellos).toEqual([]);
    const { reply } = await makePairReply({ secret, inboxId: w.m.inbox_id, codeId, hello, sponsor: w.machine, key: w.ck });
    // A reply from someone else than its sponsor is refused.
    expect((await post("/api/inbox/e2e/reply", other.d.device_credential, { reply })).status).toBe(403);
    expect((await post("/api/inbox/e2e/reply", w.m.machine_credential, { reply })).status).toBe(201);
    expect((await post("/api/inbox/e2e/reply", w.m.machine_credential, { reply })).status).toBe(409);
    const mine = await getJson<E2EGet>("/api/inbox/e2e", d.device_credential);
    expect(mine.wrap).toEqual(reply.wrap);
    expect(mine.replies).toEqual([reply]);
    expect(mine.pairings).toContainEqual(expect.objectContaining({ code_id: codeId, joiner: d.device_id, state: "replied" }));
    // The joiner drops its entry; a stranger cannot drop others'.
    expect((await send("DELETE", `/api/inbox/e2e/pairings/${other.codeId}`, d.device_credential)).status).toBe(204); // d holds a wrap now
    expect((await send("DELETE", `/api/inbox/e2e/pairings/${codeId}`, d.device_credential)).status).toBe(204);
    expect((await send("DELETE", `/api/inbox/e2e/pairings/${codeId}`, d.device_credential)).status).toBe(404);
  });

  it("an already paired device claims a code instead of redeeming it, and becomes its joiner", async () => {
    const w = await world();
    const phone = await pairDevice(w, "phone");
    const code: CodeIssued = await (await post("/api/inbox/pairings", w.m.machine_credential)).json();
    const r = await post("/api/inbox/e2e/claim", phone.d.device_credential, { code: code.code });
    expect(r.status).toBe(200);
    const codeId = await pairingCodeId(code.code);
    expect(await r.json()).toEqual({ code_id: codeId });
    expect((await post("/api/pair", undefined, { code: code.code, name: "late" })).status).toBe(404);
    expect((await post("/api/inbox/e2e/claim", phone.d.device_credential, { code: code.code })).status).toBe(404);
    expect((await getJson<E2EGet>("/api/inbox/e2e", w.m.machine_credential)).pairings).toContainEqual(
      expect.objectContaining({ code_id: codeId, joiner: phone.d.device_id, state: "waiting" }),
    );
  });
});
