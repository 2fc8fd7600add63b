// A session's seal pin (issue 26) as its connection reads it: one IndexedDB read at start, the socket's events
// held until it is read and then replayed in order (issue 33: the socket dials meanwhile), and the pin written
// once when the session is found sealed.
import { isPinned, pinSealed } from "./e2e/store.js";

export class SealPin {
  /** Pinned sealed in IndexedDB: undefined until read. */
  private pinned: boolean | undefined;
  /** The socket's events that came before the pin was read, in order. */
  private early: (() => void)[] | undefined;
  /** Settles once the pin was read (and `onPinned` ran for a pinned session). */
  readonly read: Promise<void>;

  constructor(
    private readonly origin: string,
    private readonly sid: string,
    onPinned: () => void,
  ) {
    this.read = isPinned(origin, sid).then((p) => {
      this.pinned = p;
      if (p) onPinned();
    });
  }

  /**
   * A pinned session's first frame must already be read as sealed, so the socket's events wait for the pin (one
   * IndexedDB read) — but the socket dials meanwhile: under a slow phone the read took about as long as the dial
   * (issue 33, docs/benchmarks.md). Events that came before it are replayed in order once it is read.
   */
  run(fn: () => void): void {
    if (this.pinned !== undefined && !this.early) return fn();
    if (!this.early) {
      const q: (() => void)[] = (this.early = []);
      void this.read.then(() => {
        this.early = undefined;
        for (const f of q) f();
      });
    }
    this.early.push(fn);
  }

  /** Pins the session sealed (once): a relay's later word cannot unseal it. */
  pin(): void {
    if (this.pinned) return;
    this.pinned = true;
    void pinSealed(this.origin, this.sid);
  }
}
