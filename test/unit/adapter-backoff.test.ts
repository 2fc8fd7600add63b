// Reconnect delays: full jitter under an exponential ceiling capped at 30 s; the attempt counter resets
// only after a connection stayed up for the minimum uptime.
import { describe, expect, it } from "vitest";
import { Backoff, BACKOFF_DEFAULTS } from "../../shared/client/backoff.js";
import { CLOSE, isTerminalClose, terminalCodeName } from "../../shared/contract/close.js";
import { CLOSE as PROTOCOL_CLOSE } from "../../shared/contract/protocol.js";

describe("reconnect backoff", () => {
  it("draws each delay uniformly below min(cap, base·2^n)", () => {
    const top = new Backoff({ random: () => 0.999999 });
    const ceilings = Array.from({ length: 10 }, () => top.next() + 1);
    expect(ceilings).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]);
    const bottom = new Backoff({ random: () => 0 });
    expect(Array.from({ length: 5 }, () => bottom.next())).toEqual([0, 0, 0, 0, 0]);
    expect(BACKOFF_DEFAULTS).toEqual({ baseMs: 500, capMs: 30_000, minUptimeMs: 10_000 });
  });

  it("keeps growing after short-lived connections and resets after the minimum uptime", () => {
    const b = new Backoff({ random: () => 0.999999 });
    b.next();
    b.next();
    b.next();
    b.closed(9_999); // up for less than 10 s: a flapping relay does not reset the counter
    expect(b.next() + 1).toBe(4000);
    b.closed(10_000);
    expect(b.attempts).toBe(0);
    expect(b.next() + 1).toBe(500);
  });

  it("one table of terminal close codes: the relay's codes are its entries, each has its name, others are closed_<code>", () => {
    expect(PROTOCOL_CLOSE).toBe(CLOSE);
    expect([CLOSE.sessionEnded, CLOSE.revoked, CLOSE.replaced]).toEqual([4004, 4401, 4409]);
    expect([4004, 4401, 4409].map(terminalCodeName)).toEqual(["session_ended", "revoked", "replaced"]);
    expect(terminalCodeName(4999)).toBe("closed_4999");
    expect([CLOSE.sessionEnded, CLOSE.revoked, CLOSE.replaced].every(isTerminalClose)).toBe(true);
    expect([1000, 1006, 1011, 3999, 5000].some(isTerminalClose)).toBe(false);
  });
});
