// Reconnect policy of every reconnecting client (shared/client/socket.ts: the adapter, the PWA and the Worker's
// MCP links, each with its own timings): by default full-jitter
// exponential backoff (AWS architecture blog, "Exponential Backoff And Jitter"): a uniform delay in
// [0, min(cap, base·2^n)). The attempt counter resets only after a connection stayed up for `minUptimeMs`,
// so a relay that accepts and then drops at once cannot make a client hammer it at the base delay.
export interface BackoffOptions {
  baseMs?: number;
  capMs?: number;
  minUptimeMs?: number;
  random?: () => number;
  /** false: the delay is the ceiling itself, min(cap, base·2^n) (the Worker's MCP links, which retry inside one request). */
  jitter?: boolean;
}

export const BACKOFF_DEFAULTS = { baseMs: 500, capMs: 30_000, minUptimeMs: 10_000 } as const;

export class Backoff {
  private attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly minUptimeMs: number;
  private readonly random: () => number;
  private readonly jitter: boolean;

  constructor(o: BackoffOptions = {}) {
    this.baseMs = o.baseMs ?? BACKOFF_DEFAULTS.baseMs;
    this.capMs = o.capMs ?? BACKOFF_DEFAULTS.capMs;
    this.minUptimeMs = o.minUptimeMs ?? BACKOFF_DEFAULTS.minUptimeMs;
    this.random = o.random ?? Math.random;
    this.jitter = o.jitter ?? true;
  }

  /** Call when a connection closes; `uptimeMs` is how long it was open (0 if it never opened). */
  closed(uptimeMs: number): void {
    if (uptimeMs >= this.minUptimeMs) this.attempt = 0;
  }

  /** The delay before the next attempt; counts the attempt. */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return this.jitter ? Math.floor(this.random() * ceiling) : ceiling;
  }

  get attempts(): number {
    return this.attempt;
  }
}
