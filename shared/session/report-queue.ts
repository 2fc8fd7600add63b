// When a session's report leaves for its inbox (issue 33, docs/inbox.md "Reports"): one in flight at a time, and
// when it returns the latest state goes if it differs from what was sent — so a change made while one is in
// flight costs no call of its own. A change that concerns only calls of automatic tools (`calculator`,
// `canvas`: the app answers them by itself and they are never pushed, shared/contract/push.ts) waits up to
// REPORT_DELAY_MS for company: a call answered before then needs no report at all. Every other change (presence,
// a call a human answers, the session's end) goes at once. Memory only: after a wake nothing is known to have
// been sent, so the first change goes at once; a report owed is due at a time the session's alarm covers
// (`due()`, in the engine's nextDue), so an eviction loses none.
import { AUTOMATIC_TOOLS } from "../contract/push.js";
import type { SessionReport } from "../contract/inbox.js";

/** The longest a change of automatic tools' calls alone waits before its report goes. */
export const REPORT_DELAY_MS = 2000;

/** What the inbox would be told, read cheaply (no argument parsing): presence, the calls the report would list
 * (id, tool, fingerprint: a re-sealed call's changes), how many calls are open. */
export interface Glance {
  online: boolean;
  listed: readonly { id: string; name: string; fp: string }[];
  pending: number;
}

export interface ReportQueuePorts {
  glance(): Glance;
  /** The full report now; it records what it lists (shared/session/report.ts), so it is made only to be sent. */
  summarize(): SessionReport;
  /** Sends to the inbox; settles when the inbox has it or it failed (the next change sends again). */
  send(r: SessionReport): Promise<unknown>;
  /** `due()` changed: re-arm the alarm (or timer). */
  schedule(): void;
}

/** The whole state, or only what must go at once (presence and the calls a human answers). */
function keyOf(g: Glance, all: boolean): string {
  const calls = all ? g.listed : g.listed.filter((c) => !AUTOMATIC_TOOLS.has(c.name));
  return JSON.stringify([g.online, calls.map((c) => [c.id, c.fp]), all ? g.pending : 0]);
}

/** Each glance's two keys, made once: the host hands back the same glance while no call came, went or changed
 * (shared/session/host.ts), and every frame asks. */
const keys = new WeakMap<Glance, { all: string; urgent?: string }>();
function keysOf(g: Glance): { all: string; urgent(): string } {
  let k = keys.get(g);
  if (!k) keys.set(g, (k = { all: keyOf(g, true) }));
  const kept = k;
  return { all: kept.all, urgent: () => (kept.urgent ??= keyOf(g, false)) };
}

export class ReportQueue {
  private sentAll: string | undefined;
  private sentUrgent: string | undefined;
  private inFlight = false;
  /** Since when a report is owed that has not left; undefined: the inbox has the latest state (or it is in flight). */
  private owedSince: number | undefined;
  private stopped = false;

  constructor(
    private readonly ports: ReportQueuePorts,
    private readonly now: () => number = Date.now,
  ) {}

  /** When the owed report must go at the latest (the alarm's concern); undefined when none is owed. */
  due(): number | undefined {
    if (this.owedSince === undefined) return undefined;
    const at = this.owedSince + REPORT_DELAY_MS;
    // One in flight past its time: its return sends the rest; the alarm only backs that up (an eviction).
    return this.inFlight && at <= this.now() ? this.now() + REPORT_DELAY_MS : at;
  }

  /** A report is owed and held back (not in flight, its time not come): a change of automatic tools' calls alone
   * changes nothing then — the report's time reads the state as it will be (SessionHost.report skips the glance). */
  holding(): boolean {
    return !this.stopped && !this.inFlight && this.owedSince !== undefined && this.now() < this.owedSince + REPORT_DELAY_MS;
  }

  /** After any change of calls or presence, and from the alarm: sends now, later, or not at all. */
  changed(): void {
    if (this.stopped) return;
    const g = this.ports.glance();
    const { all, urgent: urgentKey } = keysOf(g);
    if (all === this.sentAll) {
      this.owedSince = undefined; // back to what the inbox has (a call answered before its report left)
      return;
    }
    const now = this.now();
    const urgent =
      this.sentUrgent === undefined || urgentKey() !== this.sentUrgent || (this.owedSince !== undefined && now >= this.owedSince + REPORT_DELAY_MS);
    if (this.inFlight || !urgent) {
      if (this.owedSince === undefined) {
        this.owedSince = now;
        this.ports.schedule();
      }
      return;
    }
    const r = this.ports.summarize();
    this.sentAll = all;
    this.sentUrgent = urgentKey();
    this.owedSince = undefined;
    this.inFlight = true;
    this.ports.send(r).then(
      () => this.returned(),
      () => this.returned(),
    );
  }

  /** The session ended: its last report goes on its own (SessionHost.end); nothing more from this queue. */
  stop(): void {
    this.stopped = true;
    this.owedSince = undefined;
  }

  private returned(): void {
    this.inFlight = false;
    this.changed();
  }
}
