// A brake on guessing a key: after `perMin` wrong guesses from one address within a minute, that address
// gets 429 without the key being compared. Memory of one isolate or process (a brake, not a quota). The
// map is bounded by evicting the least recently failing addresses, never by clearing it: a flood of
// addresses must not wipe the count of the one that is guessing.
export class AuthBrake {
  private readonly failures = new Map<string, { n: number; since: number }>();

  constructor(
    readonly perMin = 60,
    private readonly maxAddresses = 10_000,
  ) {}

  blocked(addr: string, now: number): boolean {
    const f = this.failures.get(addr);
    return f !== undefined && now - f.since < 60_000 && f.n >= this.perMin;
  }

  failed(addr: string, now: number): void {
    const f = this.failures.get(addr);
    this.failures.delete(addr); // re-inserted last: Map order is the eviction order
    this.failures.set(addr, f && now - f.since < 60_000 ? { n: f.n + 1, since: f.since } : { n: 1, since: now });
    while (this.failures.size > this.maxAddresses) this.failures.delete(this.failures.keys().next().value as string);
  }

  get size(): number {
    return this.failures.size;
  }
}
