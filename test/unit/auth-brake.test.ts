// shared/edge/auth-brake.ts: the brake on guessing RELAY_KEY (the Worker) and the pre-shared token (LAN).
import { describe, expect, it } from "vitest";
import { AuthBrake } from "../../shared/edge/auth-brake.js";

describe("AuthBrake", () => {
  it("blocks an address after 60 wrong guesses within a minute, and lets it try again a minute later", () => {
    const b = new AuthBrake();
    const t = 1_000_000;
    for (let i = 0; i < 59; i++) b.failed("1.2.3.4", t);
    expect(b.blocked("1.2.3.4", t)).toBe(false);
    b.failed("1.2.3.4", t);
    expect(b.blocked("1.2.3.4", t + 59_000)).toBe(true);
    expect(b.blocked("5.6.7.8", t)).toBe(false);
    expect(b.blocked("1.2.3.4", t + 60_001)).toBe(false);
  });

  // Regression (issue 11 §7): the map was cleared whole when it grew past its bound, so a flood of other
  // addresses wiped the count of the one that was guessing.
  it("regression: a flood of other addresses does not wipe the guesser's count (oldest entries are evicted)", () => {
    const b = new AuthBrake(60, 100);
    const t = 1_000_000;
    for (let i = 0; i < 60; i++) b.failed("guesser", t);
    for (let i = 0; i < 50; i++) b.failed(`noise-${i}`, t);
    b.failed("guesser", t); // recently failing: kept at the young end
    for (let i = 50; i < 149; i++) b.failed(`noise-${i}`, t);
    expect(b.size).toBe(100);
    expect(b.blocked("guesser", t)).toBe(true);
    expect(b.blocked("noise-0", t)).toBe(false);
  });
});
