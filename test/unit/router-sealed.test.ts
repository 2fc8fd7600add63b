// The router's one dispatch table over sealed frames (issue 27 §2): a sealed session's frames are decoded into the
// same internal frame as plain ones and meet the same handler per type; the epoch guard runs before any of them.
import { describe, expect, it } from "vitest";
import { decodeInbound } from "../../shared/contract/protocol.js";
import { Harness } from "../helpers/router-harness.js";

/** A well-formed envelope (docs/e2e.md "Envelope"): a 12-byte nonce, a ciphertext as long as its 16-byte tag. */
const ENV = (e: number, fill = "A") => ({ v: 1, e, n: fill.repeat(16), c: `${fill.repeat(21)}A` });

function sealedSession(epoch = 2) {
  const h = new Harness({ sealedEpoch: epoch });
  const ag = h.connect("agent", "ag");
  const ph = h.connect("app", "ph");
  h.send(ph, { type: "tool.list", tools: [{ name: "confirm", type: "action", sealed: ENV(epoch) }] });
  h.take(ag);
  h.take(ph);
  return { h, ag, ph };
}

describe("sealed frames through the one dispatch table", () => {
  it("decode turns a sealed and a plain frame of the same type into the one internal frame, payload plain or sealed", () => {
    const plain = decodeInbound(JSON.stringify({ type: "message", content: [{ type: "text", text: "hi" }] }), false);
    const sealed = decodeInbound(JSON.stringify({ type: "message", id: "m1", sealed: ENV(1) }), true);
    expect(plain).toEqual({ ok: true, frame: { type: "message", body: { plain: [{ type: "text", text: "hi" }] } } });
    expect(sealed).toEqual({ ok: true, frame: { type: "message", id: "m1", body: { sealed: ENV(1) } } });
  });

  it("a sealed call reaches its provider with its envelopes and its author as sender, and the sealed result goes back", () => {
    const { h, ag, ph } = sealedSession();
    h.send(ag, { type: "tool.call", call_id: "c1", name: "confirm", sealed: ENV(2), preview: ENV(2, "B") });
    const got = h.one(ph, (f) => f.type === "tool.call");
    expect(got).toMatchObject({ call_id: "c1", sealed: ENV(2), preview: ENV(2, "B"), sender: "agent:ag" });
    expect(got).not.toHaveProperty("arguments");
    h.send(ph, { type: "tool.result", call_id: "c1", sealed: ENV(2, "C"), instance_id: "i1" });
    expect(h.one(ag, (f) => f.type === "tool.result")).toMatchObject({
      call_id: "c1",
      sealed: ENV(2, "C"),
      sender: "app:ph",
      answered_by: "ph",
      instance_id: "i1",
    });
  });

  it("an envelope under an older epoch is refused with stale_epoch before its handler runs, whatever the frame type", () => {
    const { h, ag } = sealedSession(3);
    for (const f of [
      { type: "tool.call", call_id: "c2", name: "confirm", sealed: ENV(2) },
      { type: "message", id: "m2", sealed: ENV(1) },
      { type: "status", state: "busy", sealed: ENV(2) },
    ]) {
      const out = h.send(ag, f);
      expect(out.map((o) => o.frame)).toEqual([expect.objectContaining({ type: "error", code: "stale_epoch" })]);
    }
    expect(h.store.openCalls()).toHaveLength(0);
  });

  it("a sealed status keeps its envelope and author; a re-seal is a frame of its own for the caller only", () => {
    const { h, ag, ph } = sealedSession();
    h.send(ag, { type: "status", state: "busy", sealed: ENV(2) });
    expect(h.router.agentStatus()).toEqual({ state: "busy", sealed: ENV(2), sender: "agent:ag" });
    h.send(ag, { type: "tool.call", call_id: "c3", name: "confirm", sealed: ENV(2) });
    h.take(ph);
    expect(h.send(ph, { type: "tool.reseal", call_id: "c3", sealed: ENV(2, "D") }).map((o) => o.frame)).toEqual([
      expect.objectContaining({ code: "unknown_call" }),
    ]);
    h.send(ag, { type: "tool.reseal", call_id: "c3", sealed: ENV(2, "D") });
    expect(h.one(ph, (f) => f.type === "tool.call")).toMatchObject({ call_id: "c3", sealed: ENV(2, "D"), resealed: true });
  });
});

describe("who won in a sealed session (issue 28 item 4)", () => {
  it("the other devices' cancel carries the winning answer's envelope and its author, never a plaintext answer", () => {
    const { h, ag, ph } = sealedSession();
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [{ name: "confirm", type: "action", sealed: ENV(2) }] });
    h.take(ag);
    h.send(ag, { type: "tool.call", call_id: "c1", name: "confirm", sealed: ENV(2), preview: ENV(2, "B") });
    h.take(ph);
    h.take(p2);
    h.send(ph, { type: "tool.result", call_id: "c1", sealed: ENV(2, "C") });
    const cancel = h.one(p2, (f) => f.type === "tool.cancel");
    expect(cancel).toMatchObject({ call_id: "c1", reason: "answered", answer_sealed: ENV(2, "C"), answer_sender: "app:ph" });
    expect(cancel).not.toHaveProperty("answer");
    expect(h.take(ph, (f) => f.type === "tool.cancel")).toEqual([]);
  });

  it("a winning envelope over 8 KiB is left out of the cancel", () => {
    const { h, ag, ph } = sealedSession();
    const p2 = h.connect("app", "p2");
    h.send(p2, { type: "tool.list", tools: [{ name: "confirm", type: "action", sealed: ENV(2) }] });
    h.send(ag, { type: "tool.call", call_id: "c1", name: "confirm", sealed: ENV(2), preview: ENV(2, "B") });
    h.take(p2);
    const big = { v: 1, e: 2, n: "A".repeat(16), c: "A".repeat(12_000) };
    h.send(ph, { type: "tool.result", call_id: "c1", sealed: big });
    const cancel = h.one(p2, (f) => f.type === "tool.cancel");
    expect(cancel).toMatchObject({ call_id: "c1", reason: "answered" });
    expect(cancel).not.toHaveProperty("answer_sealed");
  });
});
