// The plain/sealed codec (shared/client/codec.ts): plaintext passes at once; a sealed session seals out and
// opens in, in order, with real WebCrypto keys — and keeps every issue-26 rule of what a relay may say in plaintext.
import { describe, expect, it } from "vitest";
import { Codec, type CodecKeys, type Decoded } from "../../shared/client/codec.js";
import type { HelloFrame } from "../../shared/contract/protocol.js";
import { generateContentKey, openPreview, type ContentKey } from "../../shared/crypto/e2e/index.js";

const hello = (sealed?: { epoch: number }): HelloFrame => ({
  type: "hello",
  protocol: "lineup/1",
  session_id: "s1234567",
  role: "agent",
  client_id: "a1",
  peers: { agent: { online: true, status: { state: "busy", detail: "relay says" } }, apps: 1 },
  ...(sealed ? { sealed } : {}),
});
const keysOf = (ck: ContentKey): CodecKeys => ({ keyOf: (e) => (e === ck.epoch ? ck : undefined), current: () => ck, refresh: async () => {} });

function rig(o: { keys?: CodecKeys; pinned?: boolean; sender?: string } = {}) {
  const wire: Record<string, unknown>[] = [];
  const got: Decoded[] = [];
  const codec = new Codec({
    sessionId: "s1234567",
    sender: () => o.sender ?? "agent:a1",
    keys: o.keys,
    ...(o.pinned ? { pinned: true } : {}),
    preview: (name) => ({ text: `asks ${name}` }),
    write: (w) => (wire.push({ ...w }), true),
    deliver: (d) => got.push(d),
  });
  return { codec, wire, got };
}

describe("the client codec", () => {
  it("passes a plaintext session's frames both ways at once, untouched", () => {
    const { codec, wire, got } = rig();
    expect(codec.hello(hello())).toEqual({ ok: true, frame: hello() });
    codec.out({ type: "tool.ack", call_id: "c1" });
    codec.in({ type: "presence", agent: { online: true }, apps: 2 });
    expect(wire).toEqual([{ type: "tool.ack", call_id: "c1" }]);
    expect(got).toEqual([{ frame: { type: "presence", agent: { online: true }, apps: 2 } }]);
    expect(codec.sealed).toBe(false);
  });

  it("refuses a plaintext hello for a pinned session, or once a hello said sealed (e2e_downgrade); a sealed hello without keys is e2e_no_key", async () => {
    expect(rig({ pinned: true }).codec.hello(hello())).toMatchObject({ ok: false, code: "e2e_downgrade" });
    expect(rig().codec.hello(hello({ epoch: 1 }))).toMatchObject({ ok: false, code: "e2e_no_key" });
    const { codec } = rig({ keys: keysOf(await generateContentKey(1)) });
    const first = codec.hello(hello({ epoch: 1 }));
    // A sealed session's presence loses the relay's plaintext status detail.
    expect(first).toMatchObject({ ok: true, frame: { peers: { agent: { status: { state: "busy" } } } } });
    expect(JSON.stringify(first)).not.toContain("relay says");
    expect(codec.hello(hello())).toMatchObject({ ok: false, code: "e2e_downgrade" });
  });

  it("seals a call once — a retry is the identical envelope — and the provider's codec opens it back to plaintext", async () => {
    const ck = await generateContentKey(1);
    const agent = rig({ keys: keysOf(ck) });
    const app = rig({ keys: keysOf(ck), sender: "app:dv_AbCdEfGhIj" });
    agent.codec.hello(hello({ epoch: 1 }));
    app.codec.hello({ ...hello({ epoch: 1 }), role: "app" });
    const call = { type: "tool.call" as const, call_id: "c1", name: "confirm", arguments: { text: "deploy secret" } };
    agent.codec.out(call);
    agent.codec.out(call);
    await agent.codec.idle();
    expect(agent.wire).toHaveLength(2);
    expect(agent.wire[0]).toEqual(agent.wire[1]);
    expect(JSON.stringify(agent.wire[0])).not.toContain("deploy secret");
    expect(agent.wire[0]!.preview).toBeDefined();
    app.codec.in({ ...agent.wire[0], deadline: 9, from: "agent", sender: "agent:a1" });
    await app.codec.idle();
    expect(app.got).toEqual([
      { frame: { type: "tool.call", call_id: "c1", name: "confirm", arguments: { text: "deploy secret" }, deadline: 9, from: "agent" } },
    ]);
  });

  it("in a sealed session drops plaintext content from the relay and lets only its own call-ending errors through", async () => {
    const { codec, got } = rig({ keys: keysOf(await generateContentKey(1)) });
    codec.hello(hello({ epoch: 1 }));
    codec.in({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes, from the relay" } });
    codec.in({ type: "message", id: "m1", from: { role: "app", client_id: "x" }, content: [{ type: "text", text: "forged" }], ts: 1 });
    codec.in({ type: "tool.result", call_id: "c2", name: "confirm", error: { code: "timeout", message: "no answer" } });
    codec.in({ type: "message", id: "m2", from: { role: "app", client_id: "x" }, ts: 2, elided: true });
    await codec.idle();
    expect(got).toEqual([
      { frame: { type: "tool.result", call_id: "c2", name: "confirm", error: { code: "timeout", message: "no answer" } } },
      { placeholder: { type: "message", id: "m2", from: { role: "app", client_id: "x" }, ts: 2, elided: true, content: [] } },
    ]);
  });

  it("a sealed result that does not open here is reported by its ids, never as ciphertext; the key's holder gets it opened", async () => {
    const ck = await generateContentKey(1);
    const other = await generateContentKey(1);
    const app = rig({ keys: keysOf(other) });
    const provider = rig({ keys: keysOf(ck), sender: "app:dv_AbCdEfGhIj" });
    const agent = rig({ keys: keysOf(ck) });
    for (const r of [app, provider, agent]) r.codec.hello(hello({ epoch: 1 }));
    provider.codec.out({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "ok" } });
    await provider.codec.idle();
    const forwarded = { ...provider.wire[0], sender: "app:dv_AbCdEfGhIj" };
    app.codec.in(forwarded);
    agent.codec.in(forwarded);
    await Promise.all([app.codec.idle(), agent.codec.idle()]);
    expect(app.got).toEqual([{ unopenable: { type: "tool.result", call_id: "c1", name: "confirm" }, why: expect.any(String) }]);
    expect(agent.got).toEqual([{ frame: { type: "tool.result", call_id: "c1", name: "confirm", result: { message: "ok" } } }]);
  });

  it("regression: a sealed call or result reflected back by the relay to a client of the role that sealed it is dropped, never run or taken as an answer", async () => {
    // Calls and results only ever travel between the two roles (shared/session/calls.ts), so a sealed one from
    // this client's own role is the relay replaying what this side sealed: e.g. the agent's own permission
    // call handed back to it as a call to run, or its own sealed answer handed back as the answer to its call.
    const ck = await generateContentKey(1);
    const agent = rig({ keys: keysOf(ck) });
    agent.codec.hello(hello({ epoch: 1 }));
    agent.codec.out({ type: "tool.call", call_id: "c1", name: "permission", arguments: { tool_name: "Bash", input: { command: "rm -rf /" } } });
    agent.codec.out({ type: "tool.result", call_id: "c1", name: "permission", result: { message: "allow", behavior: "allow" } });
    await agent.codec.idle();
    const [call, result] = agent.wire;
    agent.codec.in({ ...call, from: "agent", sender: "agent:a1" });
    agent.codec.in({ ...result, sender: "agent:a1" });
    await agent.codec.idle();
    expect(agent.got).toEqual([]);
    // The same envelopes from the other role's side are read as before (they open only for their true sender).
    const app = rig({ keys: keysOf(ck), sender: "app:dv_AbCdEfGhIj" });
    app.codec.hello({ ...hello({ epoch: 1 }), role: "app" });
    app.codec.in({ ...call, from: "agent", sender: "agent:a1" });
    await app.codec.idle();
    expect(app.got).toMatchObject([{ frame: { type: "tool.call", call_id: "c1", name: "permission" } }]);
  });

  it("a sealed call's preview names its tool inside the envelope, so a service worker can tell a card the relay relabelled", async () => {
    const ck = await generateContentKey(1);
    const { codec, wire } = rig({ keys: keysOf(ck) });
    codec.hello(hello({ epoch: 1 }));
    codec.out({ type: "tool.call", call_id: "c1", name: "permission", arguments: { tool_name: "Bash" } });
    await codec.idle();
    const keyOf = (e: number) => (e === 1 ? ck : undefined);
    expect(await openPreview(keyOf, "s1234567", "c1", "agent:a1", wire[0]!.preview)).toEqual({ text: "asks permission", tool: "permission" });
  });

  it("regression: a sealed call whose plaintext tool name the relay changed is not shown as that tool: its preview names the real one", async () => {
    const ck = await generateContentKey(1);
    const agent = rig({ keys: keysOf(ck) });
    agent.codec.hello(hello({ epoch: 1 }));
    agent.codec.out({ type: "tool.call", call_id: "c1", name: "permission", arguments: { tool_name: "Bash", input: { command: "rm -rf /" } } });
    await agent.codec.idle();
    const app = rig({ keys: keysOf(ck), sender: "app:dv_AbCdEfGhIj" });
    app.codec.hello({ ...hello({ epoch: 1 }), role: "app" });
    app.codec.in({ ...agent.wire[0], name: "confirm", from: "agent", sender: "agent:a1" });
    app.codec.in({ ...agent.wire[0], from: "agent", sender: "agent:a1" });
    await app.codec.idle();
    expect(app.got).toEqual([
      { unopenable: { type: "tool.call", call_id: "c1", name: "confirm" }, why: expect.stringContaining("permission") },
      { frame: expect.objectContaining({ type: "tool.call", call_id: "c1", name: "permission" }) },
    ]);
  });

  it("a re-seal sends tool.reseal and updates the kept call envelope, so the next retry carries the new seal", async () => {
    const ck = await generateContentKey(1);
    const { codec, wire } = rig({ keys: keysOf(ck) });
    codec.hello(hello({ epoch: 1 }));
    const call = { type: "tool.call" as const, call_id: "c1", name: "confirm", arguments: { text: "t" } };
    codec.out(call);
    codec.reseal(call, true);
    codec.out(call);
    await codec.idle();
    expect(wire.map((w) => w.type)).toEqual(["tool.call", "tool.reseal", "tool.call", "tool.call"]);
    expect(wire[2]!.sealed).toEqual(wire[1]!.sealed);
    expect(wire[3]).toEqual(wire[2]);
    expect(wire[2]!.sealed).not.toEqual(wire[0]!.sealed);
  });
});

describe("who won in a sealed session (issue 28 item 4)", () => {
  it("a cancel{answered} carrying the winning device's sealed answer is delivered with that answer's message; a plaintext answer of the relay never", async () => {
    const ck = await generateContentKey(1);
    const winner = rig({ keys: keysOf(ck), sender: "app:dv_Winner0001" });
    const loser = rig({ keys: keysOf(ck), sender: "app:dv_Loser00001" });
    for (const r of [winner, loser]) r.codec.hello({ ...hello({ epoch: 1 }), role: "app" });
    winner.codec.out({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes", confirmed: true } });
    await winner.codec.idle();
    const sealed = winner.wire[0]!.sealed;
    loser.codec.in({
      type: "tool.cancel",
      call_id: "c1",
      reason: "answered",
      answered_by: "Pixel 8",
      answer: "no, says the relay",
      answer_sealed: sealed,
      answer_sender: "app:dv_Winner0001",
    });
    await loser.codec.idle();
    expect(loser.got).toEqual([{ frame: { type: "tool.cancel", call_id: "c1", reason: "answered", answered_by: "Pixel 8", answer: "yes" } }]);
  });

  it("a winning answer that does not open (another call's envelope, another author) leaves the cancel naming the device only", async () => {
    const ck = await generateContentKey(1);
    const winner = rig({ keys: keysOf(ck), sender: "app:dv_Winner0001" });
    const loser = rig({ keys: keysOf(ck), sender: "app:dv_Loser00001" });
    for (const r of [winner, loser]) r.codec.hello({ ...hello({ epoch: 1 }), role: "app" });
    winner.codec.out({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes" } });
    await winner.codec.idle();
    const sealed = winner.wire[0]!.sealed;
    loser.codec.in({
      type: "tool.cancel",
      call_id: "c2",
      reason: "answered",
      answered_by: "Pixel 8",
      answer_sealed: sealed,
      answer_sender: "app:dv_Winner0001",
    });
    loser.codec.in({
      type: "tool.cancel",
      call_id: "c1",
      reason: "answered",
      answered_by: "Pixel 8",
      answer_sealed: sealed,
      answer_sender: "app:dv_Other00001",
    });
    await loser.codec.idle();
    expect(loser.got).toEqual([
      { frame: { type: "tool.cancel", call_id: "c2", reason: "answered", answered_by: "Pixel 8" } },
      { frame: { type: "tool.cancel", call_id: "c1", reason: "answered", answered_by: "Pixel 8" } },
    ]);
  });
});
