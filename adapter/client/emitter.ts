// The client's event listeners (docs/adapter.md "Events"): `on` returns the unsubscribe; a listener that throws is
// logged and does not stop the others.
export class Emitter<Ev extends object> {
  private readonly sets = new Map<keyof Ev, Set<(v: never) => void>>();

  constructor(private readonly log: (line: string) => void) {}

  on<E extends keyof Ev>(event: E, cb: (v: Ev[E]) => void): () => void {
    const set = this.set(event);
    set.add(cb);
    return () => set.delete(cb);
  }

  /** How many listeners `event` has. */
  count(event: keyof Ev): number {
    return this.sets.get(event)?.size ?? 0;
  }

  emit<E extends keyof Ev>(event: E, v: Ev[E]): void {
    for (const cb of [...this.set(event)]) {
      try {
        cb(v);
      } catch (e) {
        this.log(`a ${String(event)} listener threw: ${String(e)}`);
      }
    }
  }

  private set<E extends keyof Ev>(event: E): Set<(v: Ev[E]) => void> {
    let s = this.sets.get(event) as Set<(v: Ev[E]) => void> | undefined;
    if (!s) this.sets.set(event, (s = new Set()));
    return s;
  }
}
