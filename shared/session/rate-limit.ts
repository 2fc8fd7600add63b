// The per-connection token bucket of the contract's rate limit, shared by the Durable Object and the
// LAN server. Memory only: a hibernated connection is idle, so losing a bucket is harmless.
export class TokenBucket {
  private tokens: number;
  private at = 0;
  constructor(
    private readonly perS: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  take(now: number): boolean {
    if (this.at) this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perS);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
