// Issue 32 (docs/direct.md): the direct path's handshake through the session object. `rtc.signal` frames go
// between the agent and ONE named device of the other role, never kept, never to anyone else, within their
// size and rate; in a sealed session the signal travels sealed and the relay forwards the envelope it cannot open.
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { generateContentKey, generateHolderKeyPair, holderSelf, openFrame, sealFrame, sealRoster, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import type { Frame as E2EFrame } from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import { RTC_LIMITS, type SessionCreated } from "../../shared/contract/protocol.js";
import { connect, createSession, fetchWorker, RELAY_KEY, stubOf } from "./helpers.js";

const OFFER = { kind: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\na=fingerprint:sha-256 AA:BB\r\n" } as const;

const post = async <T>(path: string, token: string | undefined, body: unknown = {}): Promise<T> => {
  const r = await fetchWorker(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  expect(r.status, `${path}: ${r.status}`).toBeLessThan(300);
  return (await r.json()) as T;
};

async function plainSession() {
  const s = await createSession();
  const agent = await connect(s.session_id, s.agent_token, { clientId: "agent-1" });
  const phone = await connect(s.session_id, s.app_token, { clientId: "phone" });
  const tablet = await connect(s.session_id, s.app_token, { clientId: "tablet" });
  return { s, agent, phone, tablet };
}

describe("rtc.signal in a plaintext session", () => {
  it("goes from the agent to the one device it names and back, with its sender, and to no one else", async () => {
    const { agent, phone, tablet } = await plainSession();
    agent.send({ type: "rtc.signal", id: "h1:1", to: "phone", signal: OFFER });
    expect(await phone.next("rtc.signal")).toEqual({ type: "rtc.signal", id: "h1:1", from: { role: "agent", client_id: "agent-1" }, signal: OFFER });
    phone.send({
      type: "rtc.signal",
      id: "h1:2",
      to: "agent-1",
      signal: { kind: "candidate", candidate: "candidate:1 1 UDP 1 127.0.0.1 5000 typ host", mid: "0" },
    });
    expect(await agent.next("rtc.signal")).toMatchObject({ id: "h1:2", from: { role: "app", client_id: "phone" }, signal: { kind: "candidate", mid: "0" } });
    expect(await tablet.none("rtc.signal")).toBe(true);
    for (const c of [agent, phone, tablet]) c.close();
  });

  it("is refused with peer_offline when the named client is not connected or is of the sender's own role, and relays nothing", async () => {
    const { agent, phone, tablet } = await plainSession();
    agent.send({ type: "rtc.signal", id: "h1:1", to: "laptop", signal: OFFER });
    expect(await agent.next("error")).toMatchObject({ code: "peer_offline" });
    phone.send({ type: "rtc.signal", id: "h1:1", to: "tablet", signal: OFFER });
    expect(await phone.next("error")).toMatchObject({ code: "peer_offline" });
    expect(await tablet.none("rtc.signal")).toBe(true);
    for (const c of [agent, phone, tablet]) c.close();
  });

  it("refuses a malformed, oversized or sealed signal with bad_frame", async () => {
    const { agent, phone, tablet } = await plainSession();
    const bad = [
      { type: "rtc.signal", id: "h1:1", to: "phone", signal: { kind: "offer" } },
      { type: "rtc.signal", id: "h1:1", to: "phone", signal: { kind: "offer", sdp: "x".repeat(RTC_LIMITS.maxSignalBytes + 1) } },
      { type: "rtc.signal", id: "bad id!", to: "phone", signal: OFFER },
      { type: "rtc.signal", id: "h1:1", to: "phone", sealed: { v: 1, e: 1, n: "AAAAAAAAAAAAAAAA", c: "AAAA" } },
    ];
    for (const f of bad) {
      agent.send(f);
      expect((await agent.next("error")).code).toBe("bad_frame");
    }
    expect(await phone.none("rtc.signal")).toBe(true);
    for (const c of [agent, phone, tablet]) c.close();
  });

  it("limits one sender to its burst of signals, then rate_limited", async () => {
    const { agent, phone, tablet } = await plainSession();
    for (let i = 0; i < RTC_LIMITS.signalBurst + 5; i++) agent.send({ type: "rtc.signal", id: `h1:${i}`, to: "phone", signal: { kind: "bye" } });
    expect(await agent.next("error")).toMatchObject({ code: "rate_limited" });
    let got = 0;
    while (!(await phone.none("rtc.signal", 300))) got++;
    expect(got).toBeGreaterThanOrEqual(RTC_LIMITS.signalBurst);
    expect(got).toBeLessThan(RTC_LIMITS.signalBurst + 5);
    for (const c of [agent, phone, tablet]) c.close();
  });

  it("still reaches the named device after the session object was evicted (peers come from the sockets)", async () => {
    const { s, agent, phone, tablet } = await plainSession();
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    agent.send({ type: "rtc.signal", id: "h2:1", to: "phone", signal: OFFER });
    expect(await phone.next("rtc.signal")).toMatchObject({ id: "h2:1", from: { role: "agent", client_id: "agent-1" }, signal: OFFER });
    // Nothing of it was kept: a device connecting afterwards gets no signal.
    const late = await connect(s.session_id, s.app_token, { clientId: "late" });
    expect(await late.none("rtc.signal")).toBe(true);
    for (const c of [agent, phone, tablet, late]) c.close();
  });
});

describe("rtc.signal in a sealed session", () => {
  async function sealedWorld() {
    const m = await post<MachineCreated>("/api/inboxes", RELAY_KEY, { machine_name: "laptop" });
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
    const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
    const put = await fetchWorker("/api/inbox/e2e", {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Bearer ${m.machine_credential}` },
      body: JSON.stringify({ base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster }),
    });
    expect(put.status).toBe(200);
    const pair = async (name: string) => {
      const code = await post<CodeIssued>("/api/inbox/pairings", m.machine_credential);
      return post<DevicePaired>("/api/pair", undefined, { code: code.code, name });
    };
    const phone = await pair("phone");
    const tablet = await pair("tablet");
    const s = await post<SessionCreated>("/api/inbox/sessions", m.machine_credential, { sealed: true });
    return { m, ck, s, phone, tablet };
  }

  it("forwards the sealed signal with its author to the named device only; it opens there, for that device", async () => {
    const w = await sealedWorld();
    const sid = w.s.session_id;
    const agent = await connect(sid, w.s.agent_token, { clientId: "agent-1" });
    const dev = await connect(sid, w.phone.device_credential, { via: "subprotocol" });
    const other = await connect(sid, w.tablet.device_credential, { via: "subprotocol" });
    const wire = await sealFrame(
      w.ck,
      { session_id: sid, sender: "agent:agent-1" },
      { type: "rtc.signal", id: "h1:1", to: w.phone.device_id, signal: OFFER, for: `app:${w.phone.device_id}` },
    );
    expect(wire).not.toHaveProperty("signal");
    agent.send(wire);
    const got = await dev.next("rtc.signal");
    expect(got).toEqual({ type: "rtc.signal", id: "h1:1", from: { role: "agent", client_id: "agent-1" }, sealed: wire.sealed, sender: "agent:agent-1" });
    const opened = await openFrame((e) => (e === 1 ? w.ck : undefined), sid, got as unknown as E2EFrame);
    expect(opened).toMatchObject({ signal: OFFER, for: `app:${w.phone.device_id}` });
    expect(await other.none("rtc.signal")).toBe(true);
    // A plaintext signal would put the SDP (and its DTLS fingerprint) in the relay's hands: refused.
    agent.send({ type: "rtc.signal", id: "h1:2", to: w.phone.device_id, signal: OFFER });
    expect((await agent.next("error")).code).toBe("bad_frame");
    for (const c of [agent, dev, other]) c.close();
  });
});
