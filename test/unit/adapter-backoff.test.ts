// Reconnect delays: full jitter under an exponential ceiling capped at 30 s; the attempt counter resets
// only after a connection stayed up for the minimum uptime.
import { describe, expect, it } from "vitest";
import { Backoff, BACKOFF_DEFAULTS, isTerminalClose, TERMINAL_CLOSE, terminalCodeName } from "../../shared/client/backoff.js";
import { CLOSE } from "../../shared/contract/protocol.js";
import { CLOSE_REVOKED } from "../../shared/contract/inbox.js";

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
    expect([CLOSE.sessionEnded, CLOSE_REVOKED, CLOSE.replaced]).toEqual([TERMINAL_CLOSE.sessionEnded, TERMINAL_CLOSE.revoked, TERMINAL_CLOSE.replaced]);
    expect([4004, 4401, 4409].map(terminalCodeName)).toEqual(["session_ended", "revoked", "replaced"]);
    expect(terminalCodeName(4999)).toBe("closed_4999");
    expect(Object.values(TERMINAL_CLOSE).every(isTerminalClose)).toBe(true);
    expect([1000, 1006, 1011, 3999, 5000].some(isTerminalClose)).toBe(false);
  });
});
