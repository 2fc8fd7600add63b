// Holding one MCP request while the human thinks: wait for the call's end, the wait budget, or the request's
// abort — whichever comes first — and send `notifications/progress` meanwhile when the client asked for it.
// Timers only; the transports decide what "done" means (adapter call, or a socket into the session object).

export interface ProgressUpdate {
  progress: number;
  total?: number;
  message: string;
}

export interface HoldOptions {
  /** When the budget runs out (ms from now). */
  budgetMs: number;
  /** The MCP request's own abort (client gone, transport closed, cancellation). */
  signal: AbortSignal;
  /** Progress period; progress is only sent when `progress` is given. */
  progressMs: number;
  progress?: (p: ProgressUpdate) => void;
  /** Line shown with each progress notification. */
  text: (waitedS: number) => string;
  /** `total` of the progress notifications (the call's timeout), when known. */
  totalS?: number | undefined;
}

export type Held<T> = { kind: "done"; value: T } | { kind: "budget"; waitedS: number } | { kind: "aborted" };

export function hold<T>(done: Promise<T>, o: HoldOptions): Promise<Held<T>> {
  const started = Date.now();
  let last = -1;
  const tick = () => {
    if (!o.progress || o.signal.aborted) return;
    // `progress` must grow with every notification (MCP spec), even two in the same 100 ms.
    const value = Math.max(last + 0.001, Math.round((Date.now() - started) / 100) / 10);
    last = value;
    const waited = (Date.now() - started) / 1000;
    o.progress(o.totalS !== undefined ? { progress: value, total: o.totalS, message: o.text(waited) } : { progress: value, message: o.text(waited) });
  };
  return new Promise<Held<T>>((resolve, reject) => {
    let settled = false;
    const stop = () => {
      settled = true;
      clearTimeout(budget);
      clearInterval(ticker);
      o.signal.removeEventListener("abort", onAbort);
    };
    const finish = (h: Held<T>) => {
      if (settled) return;
      stop();
      resolve(h);
    };
    const onAbort = () => finish({ kind: "aborted" });
    const budget = setTimeout(() => finish({ kind: "budget", waitedS: (Date.now() - started) / 1000 }), Math.max(0, o.budgetMs));
    const ticker = setInterval(tick, o.progressMs);
    if (o.signal.aborted) return finish({ kind: "aborted" });
    o.signal.addEventListener("abort", onAbort, { once: true });
    tick();
    done.then(
      (value) => finish({ kind: "done", value }),
      (e: unknown) => {
        if (settled) return;
        stop();
        reject(e);
      },
    );
  });
}

/**
 * A `notifications/cancelled` whose reason says the request timed out is the client's own timer, not the user:
 * the SDK clients send exactly that when their request timeout fires. We keep the human's card open then (a
 * retry joins it, await_answer collects it) instead of losing the answer to the client's clock.
 */
export function isClientTimeout(reason: unknown): boolean {
  const s = reason instanceof Error ? `${reason.name} ${reason.message}` : typeof reason === "string" ? reason : "";
  return /timed?\s*out|timeout/i.test(s);
}
