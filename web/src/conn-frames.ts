// What one session's connection (web/src/conn.ts) does with each frame from the relay, plaintext (opened by
// the codec in a sealed session, web/src/wire.ts): calls, cancels and errors to the call book's host
// (web/src/provider.ts), messages to the thread, presence and the agent's tools to their signals; a sealed
// frame that does not open becomes a card or message that says so, never the ciphertext.
import type { Signal } from "@preact/signals";
import type { Decoded, RtcIn } from "../../shared/client/codec.js";
import type { PeerState, RelayFrame, ToolDef } from "../../shared/contract/protocol.js";
import type { Provider } from "./provider.js";
import type { Thread } from "./thread.js";
import { unopenable, type SealedWire, type Wire } from "./wire.js";

export interface FrameView {
  calls: Provider;
  thread: Thread;
  presence: Signal<PeerState | null>;
  agentTools: Signal<ToolDef[]>;
  noKey: Signal<boolean>;
  sealedWire: SealedWire;
  wire(): Wire;
  /** Issue 32: a handshake signal for the direct path (web/src/direct-link.ts). */
  rtc(r: RtcIn): void;
  /** Whether a relay frame goes on to the call book (the path seam remembers it: a later direct copy is dropped). */
  acceptRelay(f: RelayFrame): boolean;
}

export function showDecoded(v: FrameView, d: Decoded): void {
  if ("placeholder" in d) {
    // The history budget's placeholder of an old sealed message: nothing to open, nothing lost here.
    v.thread.add(d.placeholder);
    v.thread.markElided(d.placeholder.id);
    return;
  }
  if ("badCall" in d) return v.calls.receive(d.badCall, { invalid: d.why });
  if ("rtc" in d) return v.rtc(d.rtc);
  if ("unopenable" in d) {
    const has = v.sealedWire.hasKey();
    if (has !== undefined) v.noKey.value = !has;
    const u = unopenable(d.unopenable);
    if (u && "call" in u) v.calls.receive(u.call, { unreadable: true });
    else if (u && "message" in u) v.thread.add(u.message, false, true);
    else if (u && "cancel" in u) v.calls.receive(u.cancel);
    else if (u) v.wire().out({ type: "tool.ack", call_id: u.ack });
    return;
  }
  const f = d.frame;
  switch (f.type) {
    case "hello":
      return;
    case "tool.list":
      v.agentTools.value = f.tools;
      return v.calls.receive(f);
    case "message":
      if ("content" in f) v.thread.add(f);
      return;
    case "presence":
      v.presence.value = { agent: f.agent, apps: f.apps };
      return;
    case "tool.call": {
      v.acceptRelay(f);
      // Validation moved to the receiver in a sealed session (docs/e2e.md rule 2): refused before anything is rendered.
      const bad = v.wire().sealed ? v.sealedWire.check(f) : null;
      return v.calls.receive(f, bad !== null ? { invalid: bad } : undefined, d.resealed === true);
    }
    default:
      if (v.acceptRelay(f)) v.calls.receive(f);
  }
}
