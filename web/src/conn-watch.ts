// The standing effects of a session's connection (web/src/conn.ts), each a function of what it reads.
import { effect, type ReadonlySignal, type Signal, untracked } from "@preact/signals";
import type { ClosedCall } from "../../shared/contract/push.js";
import type { PeerState } from "../../shared/contract/protocol.js";
import type { Provider } from "./provider.js";

/** Runs `fn` once a frame was painted (or after PAINT_FALLBACK_MS, where frames are not painted: a hidden tab). */
const PAINT_FALLBACK_MS = 500;
export function afterPaint(fn: () => void): void {
  let done = false;
  const go = () => {
    if (done) return;
    done = true;
    fn();
  };
  if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => setTimeout(go, 0));
  setTimeout(go, PAINT_FALLBACK_MS);
}

/**
 * The agent's presence on the relay starts (or, when it came back, replaces) the direct path's attempt — once the
 * relay's catch-up is over and a frame was painted: its chunk, a status fetch and the offer would otherwise take a
 * slow phone's main thread while the waiting cards arrive (issue 33, docs/benchmarks.md). `link` is the connection's
 * number: an attempt for a connection that ended meanwhile is dropped.
 */
export function watchDirect(o: {
  ready: ReadonlySignal<boolean>;
  presence: ReadonlySignal<PeerState | null>;
  link: () => number;
  start: (agentOnline: boolean) => void;
}): void {
  effect(() => {
    const p = o.ready.value ? o.presence.value : null;
    const link = o.link();
    if (p) afterPaint(() => link === o.link() && o.start(p.agent.online));
  });
}

/**
 * Who won a call this device lost or found closed while away: the inbox's recent list says (issue 28 item 4). Both
 * orders: the list may come before the card is lost (its refusal arrives after the inbox's state). A card that
 * names the winner now takes the banner for a loss it could not explain (`lostRace`) away.
 */
export function watchRecent(recentOf: () => readonly ClosedCall[] | undefined, calls: Provider, notice: Signal<{ key: string } | null>): void {
  effect(() => {
    const recent = recentOf();
    const cards = calls.log.calls.value;
    if (!recent?.length || !cards.some((c) => (c.state === "lost" || c.state === "gone") && !c.answeredBy)) return;
    untracked(() => {
      if (calls.fromRecent(recent) && notice.value?.key === "lostRace") notice.value = null;
    });
  });
}
