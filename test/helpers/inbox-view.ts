// An inbox socket's state as a device sees it: its first frame is the whole InboxState, later frames either the
// whole state again or one session's row (`inbox.session`, shared/inbox/view.ts), folded here as the app folds
// them (shared/inbox/apply.ts). Works over any test client with `next(pred, timeoutMs)` (workerd's and raw-client's).
import type { InboxSessionFrame, InboxState } from "../../shared/contract/inbox.js";
import { applySessionFrame } from "../../shared/inbox/apply.js";

interface Reader {
  next(pred: (f: { type: unknown }) => boolean, timeoutMs?: number): Promise<unknown>;
}

const isInboxFrame = (f: { type: unknown }) => f.type === "inbox" || f.type === "inbox.session";

export class InboxView {
  /** The state after the last frame read. */
  state: InboxState | undefined;
  /** Every state the frames read so far produced, in order. */
  readonly history: InboxState[] = [];
  /** The last frame read, as it came. */
  last: InboxState | InboxSessionFrame | undefined;
  /** Frames of each kind read so far. */
  readonly counts = { whole: 0, session: 0 };
  constructor(private readonly sock: Reader) {}

  /** Reads the socket's inbox frames in order until one yields a state where `pred` holds (default: any state). */
  async next(pred: (s: InboxState) => boolean = () => true, timeoutMs = 10_000): Promise<InboxState> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = (await this.sock.next(isInboxFrame, Math.max(1, deadline - Date.now()))) as InboxState | InboxSessionFrame;
      this.last = f;
      if (f.type === "inbox") {
        this.counts.whole++;
        this.state = f;
      } else {
        this.counts.session++;
        if (!this.state) throw new Error("an inbox.session frame came before the socket's whole state");
        this.state = applySessionFrame(this.state, f);
      }
      this.history.push(this.state);
      if (pred(this.state)) return this.state;
    }
  }
}
