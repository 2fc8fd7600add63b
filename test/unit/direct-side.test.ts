// The agent's direct side (adapter/client/direct.ts, issue 32) when node-datachannel is loaded lazily: the library
// is asked for only when a device offers, and without it each offer is answered `bye` (the device stops waiting)
// and nothing else happens — the adapter runs relay only. The relay-only line itself is said by the loader
// (adapter/client/ndc.ts); scripts/pack-check.mjs checks it once on an install without the package.
import { describe, expect, it } from "vitest";
import { DirectSide } from "../../adapter/client/direct.js";
import type { RtcSignal } from "../../shared/contract/protocol.js";

const OFFER: RtcSignal = { kind: "offer", sdp: `v=0\r\na=fingerprint:sha-256 ${Array(32).fill("AB").join(":")}\r\n` };

describe("the agent's direct side without node-datachannel", () => {
  it("asks for the library only when a device offers, answers each offer bye, and never opens", async () => {
    let asked = 0;
    const sent: { to: string; id: string; s: RtcSignal }[] = [];
    const states: unknown[] = [];
    const side = new DirectSide({
      ndc: async () => (asked++, undefined),
      send: (to, id, s) => sent.push({ to, id, s }),
      frame: () => {
        throw new Error("no frame can arrive");
      },
      state: (p) => states.push(p),
    });
    expect(asked).toBe(0);
    side.signal("phone", "d1.1", OFFER);
    side.signal("phone", "d1.1", { kind: "candidate", candidate: "candidate:1 1 UDP 1 127.0.0.1 5000 typ host", mid: "0" });
    side.signal("tablet", "d2.1", OFFER);
    await expect.poll(() => sent.length).toBe(2);
    expect(sent).toEqual([
      { to: "phone", id: "d1.1", s: { kind: "bye" } },
      { to: "tablet", id: "d2.1", s: { kind: "bye" } },
    ]);
    expect(asked).toBeGreaterThan(0);
    expect(side.open).toBe(false);
    expect(states).toEqual([]);
  });
});
