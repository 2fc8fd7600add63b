// Issue 32 (docs/direct.md): the relay's part of the direct path's handshake. An `rtc.signal` goes to the one
// peer it names, of the other role, connected now — never kept, never to a bridge, never from or to the
// relay's own callers — within its size and its sender's rate. Pure: the router calls it with its context.
import { otherRole, RTC_LIMITS, utf8Length, type ErrorCode, type InFrameOf, type RtcSignalOut } from "../contract/protocol.js";
import { TokenBucket } from "./rate-limit.js";
import { isInternal, keyOf, type Ctx, type Out, type Peer } from "./router-state.js";

export type SignalVerdict = { ok: true; out: Out } | { ok: false; code: ErrorCode; message: string };

/** The size a sealed signal may have: its JSON's limit, grown by base64 and the envelope's fields. */
export const MAX_SEALED_SIGNAL_BYTES = Math.ceil((RTC_LIMITS.maxSignalBytes * 4) / 3) + 256;

export class SignalRelay {
  /** Per sending client key. Memory only: an eviction forgets it, which only resets the rate. */
  private readonly buckets = new Map<string, TokenBucket>();

  route(peer: Peer, f: InFrameOf<"rtc.signal">, ctx: Ctx): SignalVerdict {
    if (isInternal(peer) || peer.virtual) return { ok: false, code: "forbidden", message: "rtc.signal: only the agent and a device signal a direct path" };
    const s = f.signal;
    const size = utf8Length(JSON.stringify("sealed" in s ? s.sealed : s.plain));
    const max = "sealed" in s ? MAX_SEALED_SIGNAL_BYTES : RTC_LIMITS.maxSignalBytes;
    if (size > max) return { ok: false, code: "too_large", message: `rtc.signal: a signal is at most ${max} bytes of JSON (this one: ${size}); not relayed` };
    const want = otherRole(peer.role);
    const target = ctx.peers.find((p) => p.role === want && p.clientId === f.to && !p.virtual && !isInternal(p));
    if (!target)
      return { ok: false, code: "peer_offline", message: `rtc.signal: no ${want} ${JSON.stringify(f.to)} is connected to this session; not relayed` };
    const key = keyOf(peer);
    let bucket = this.buckets.get(key);
    if (!bucket) this.buckets.set(key, (bucket = new TokenBucket(RTC_LIMITS.signalsPerS, RTC_LIMITS.signalBurst)));
    if (!bucket.take(ctx.now))
      return {
        ok: false,
        code: "rate_limited",
        message: `rtc.signal: at most ${RTC_LIMITS.signalBurst} signals at once, then ${RTC_LIMITS.signalsPerS} a second`,
      };
    const from = { role: peer.role, client_id: peer.clientId };
    const frame: RtcSignalOut =
      "sealed" in s ? { type: "rtc.signal", id: f.id, from, sealed: s.sealed, sender: key } : { type: "rtc.signal", id: f.id, from, signal: s.plain };
    return { ok: true, out: { to: keyOf(target), frame } };
  }
}
