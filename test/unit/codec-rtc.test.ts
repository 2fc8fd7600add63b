// Issue 32 (docs/direct.md): the direct path's handshake through the client codec. Plaintext sessions pass
// `rtc.signal` as it is; sealed ones seal `{signal, for}` so the relay can neither read the SDP (and its DTLS
// fingerprint) nor hand a signal to another device of the inbox: the receiver opens it and checks `for`.
import { describe, expect, it } from "vitest";
import { Codec, type CodecKeys, type Decoded } from "../../shared/client/codec.js";
import type { HelloFrame } from "../../shared/contract/protocol.js";
import { generateContentKey, type ContentKey } from "../../shared/crypto/e2e/index.js";

const OFFER = { kind: "offer", sdp: "v=0\r\na=fingerprint:sha-256 AA:BB\r\n" } as const;
const hello = (role: "agent" | "app", client_id: string, sealed?: { epoch: number }): HelloFrame => ({
  type: "hello",
  protocol: "lineup/1",
  session_id: "s1234567",
  role,
  client_id,
  peers: { agent: { online: true }, apps: 1 },
  ...(sealed ? { sealed } : {}),
});
const keysOf = (ck: ContentKey): CodecKeys => ({ keyOf: (e) => (e === ck.epoch ? ck : undefined), current: () => ck, refresh: async () => {} });

function rig(sender: string, keys?: CodecKeys) {
  const wire: Record<string, unknown>[] = [];
  const got: Decoded[] = [];
  const logs: string[] = [];
  const codec = new Codec({
    sessionId: "s1234567",
    sender: () => sender,
    keys,
    write: (w) => (wire.push({ ...w }), true),
    deliver: (d) => got.push(d),
    log: (l) => logs.push(l),
  });
  return { codec, wire, got, logs };
}

/** What the relay makes of a client's rtc.signal for its recipient (shared/session/signal.ts). */
const relayed = (w: Record<string, unknown>, from: { role: string; client_id: string }): Record<string, unknown> => {
  const { to: _to, ...rest } = w;
  return { ...rest, from, ...(w.sealed ? { sender: `${from.role}:${from.client_id}` } : {}) };
};

describe("rtc.signal through the codec", () => {
  it("in a plaintext session goes out as it is and comes in as a signal from its sender", () => {
    const agent = rig("agent:a1");
    const phone = rig("app:phone");
    agent.codec.hello(hello("agent", "a1"));
    phone.codec.hello(hello("app", "phone"));
    agent.codec.signal("phone", "app:phone", "h1", OFFER);
    expect(agent.wire).toEqual([{ type: "rtc.signal", id: "h1", to: "phone", signal: OFFER }]);
    phone.codec.in(relayed(agent.wire[0]!, { role: "agent", client_id: "a1" }));
    expect(phone.got).toEqual([{ rtc: { id: "h1", from: { role: "agent", client_id: "a1" }, signal: OFFER } }]);
    // A malformed one is not delivered.
    phone.codec.in({ type: "rtc.signal", id: "h2", from: { role: "agent", client_id: "a1" }, signal: { kind: "offer" } });
    expect(phone.got).toHaveLength(1);
  });

  it("in a sealed session is sealed with its recipient, opens for that device, and not for another device the relay hands it to", async () => {
    const ck = await generateContentKey(1);
    const agent = rig("agent:a1", keysOf(ck));
    const phone = rig("app:phone", keysOf(ck));
    const tablet = rig("app:tablet", keysOf(ck));
    agent.codec.hello(hello("agent", "a1", { epoch: 1 }));
    phone.codec.hello(hello("app", "phone", { epoch: 1 }));
    tablet.codec.hello(hello("app", "tablet", { epoch: 1 }));
    agent.codec.signal("phone", "app:phone", "h1", OFFER);
    await agent.codec.idle();
    const w = agent.wire[0]!;
    expect(w).toMatchObject({ type: "rtc.signal", id: "h1", to: "phone" });
    expect(w).not.toHaveProperty("signal");
    expect(w).not.toHaveProperty("for");
    expect(JSON.stringify(w)).not.toContain("fingerprint");
    const frame = relayed(w, { role: "agent", client_id: "a1" });
    phone.codec.in(frame);
    tablet.codec.in(frame);
    await Promise.all([phone.codec.idle(), tablet.codec.idle()]);
    expect(phone.got).toEqual([{ rtc: { id: "h1", from: { role: "agent", client_id: "a1" }, signal: OFFER } }]);
    expect(tablet.got).toEqual([]);
    expect(tablet.logs.join("\n")).toContain("not this client");
  });

  it("in a sealed session drops a plaintext signal and one whose envelope was tampered with or re-attributed", async () => {
    const ck = await generateContentKey(1);
    const agent = rig("agent:a1", keysOf(ck));
    const phone = rig("app:phone", keysOf(ck));
    agent.codec.hello(hello("agent", "a1", { epoch: 1 }));
    phone.codec.hello(hello("app", "phone", { epoch: 1 }));
    agent.codec.signal("phone", "app:phone", "h1", OFFER);
    await agent.codec.idle();
    const frame = relayed(agent.wire[0]!, { role: "agent", client_id: "a1" });
    const env = frame.sealed as { c: string };
    const flipped = env.c.startsWith("A") ? `B${env.c.slice(1)}` : `A${env.c.slice(1)}`;
    phone.codec.in({ type: "rtc.signal", id: "h1", from: { role: "agent", client_id: "a1" }, signal: OFFER });
    phone.codec.in({ ...frame, sealed: { ...env, c: flipped } });
    phone.codec.in({ ...frame, id: "h9" });
    phone.codec.in({ ...frame, sender: "agent:other" });
    await phone.codec.idle();
    expect(phone.got).toEqual([]);
  });
});
