// Issue 32, the PWA's side of the direct path (docs/direct.md "PWA side"), in its own lazily loaded chunk: one
// attempt at a WebRTC data channel to the session's agent. The page offers: `RTCPeerConnection` with no ICE
// servers (LAN only: host candidates), the channel `lineup`, the offer and our candidates out as `rtc.signal`
// through the relay (sealed in a sealed session, by the codec), the agent's answer and candidates in. Nothing
// open within `openTimeoutMs` → closed quietly (the session stays on the relay). What crosses the channel is the
// peers' own client frames; only calls, results and cancels are taken, each parsed once with the contract's decoder.
import { MULTIPATH_TYPES, type DirectPath } from "../../../shared/client/paths.js";
import { decodeFrame, RtcSignal, type ClientFrame, type RtcSignal as Signal } from "../../../shared/contract/protocol.js";
import type { RtcIn } from "../../../shared/client/codec.js";
import type { RawFrame } from "../../../shared/client/socket.js";

export { checkCall } from "../e2e/session.js";
export { verifyBind } from "../../../shared/client/direct-bind.js";

/** The data channel's label (the agent's `DIRECT_LABEL`: both ends must agree). */
export const DIRECT_LABEL = "lineup";

export interface AttemptOptions {
  /** This attempt's signal id (one per attempt: stale signals of an earlier one are told apart). */
  id: string;
  /** STUN/TURN servers: none by default (LAN only). */
  iceServers: RTCIceServer[];
  /** Closed quietly when the channel is not open by then. */
  openTimeoutMs: number;
  /** One signal out to the agent (through the relay; the host seals it in a sealed session). */
  signal(s: Signal): void;
  /** A call, result or cancel the agent sent on the channel. */
  frame(f: ClientFrame): void;
  /** The channel opened. */
  open(): void;
  /** The agent's answer may be taken (the binding check; our own offer's SDP beside it): false refuses it. */
  verify(answer: Extract<Signal, { kind: "answer" }>, offerSdp: string): Promise<boolean>;
  /** The attempt ended (never opened, or the channel closed); called once. */
  closed(why: string): void;
  log(line: string): void;
}

/** One attempt: an `RTCPeerConnection` and its channel. It is the direct path (paths.ts) while open. */
export class RtcAttempt implements DirectPath {
  private readonly pc: RTCPeerConnection;
  private readonly dc: RTCDataChannel;
  private done = false;
  private answered = false;
  private readonly early: RTCIceCandidateInit[] = [];
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(private readonly o: AttemptOptions) {
    this.pc = new RTCPeerConnection({ iceServers: o.iceServers });
    this.dc = this.pc.createDataChannel(DIRECT_LABEL);
    this.timer = setTimeout(() => this.close(`nothing opened within ${o.openTimeoutMs / 1000} s`), o.openTimeoutMs);
    this.pc.onicecandidate = (e) => {
      const c = e.candidate;
      if (c?.candidate) o.signal({ kind: "candidate", candidate: c.candidate, mid: c.sdpMid ?? "0" });
    };
    this.pc.onconnectionstatechange = () => {
      if (this.pc.connectionState === "failed" || this.pc.connectionState === "closed") this.close(`the connection ${this.pc.connectionState}`);
    };
    this.dc.onopen = () => {
      if (this.done) return;
      clearTimeout(this.timer);
      o.open();
    };
    this.dc.onclose = () => this.close("the channel closed");
    this.dc.onmessage = (e: MessageEvent) => {
      if (typeof e.data !== "string") return o.log("direct: a binary message on the channel; ignored");
      const d = decodeFrame(e.data);
      if (!d.ok) return o.log(`direct: ${d.error.message}; ignored`);
      if (!MULTIPATH_TYPES.has(d.frame.type)) return o.log(`direct: a ${d.frame.type} frame on the channel; only calls, results and cancels go there`);
      o.frame(d.frame);
    };
    void this.offer();
  }

  private async offer(): Promise<void> {
    try {
      const offer = await this.pc.createOffer();
      await this.pc.setLocalDescription(offer);
      if (!this.done && offer.sdp) this.o.signal({ kind: "offer", sdp: offer.sdp });
    } catch (e) {
      this.close(`the offer failed (${errText(e)})`);
    }
  }

  /** A signal of this attempt from the agent (the host checked sender and id; an answer is already verified). */
  async signal(s: Signal): Promise<void> {
    if (this.done) return;
    try {
      if (s.kind === "answer" && !this.answered) {
        this.answered = true;
        // Checked BEFORE the answer is set: a refused one never reaches the DTLS stack.
        if (!(await this.o.verify(s, this.pc.localDescription?.sdp ?? ""))) return this.close("the agent's answer failed the binding check");
        if (this.done) return;
        await this.pc.setRemoteDescription({ type: "answer", sdp: s.sdp });
        for (const c of this.early.splice(0)) await this.pc.addIceCandidate(c);
      } else if (s.kind === "candidate") {
        const c = { candidate: s.candidate, sdpMid: s.mid };
        if (this.answered) await this.pc.addIceCandidate(c);
        else this.early.push(c);
      } else if (s.kind === "bye") this.close("the agent ended it");
    } catch (e) {
      this.close(`the agent's ${s.kind} was refused (${errText(e)})`);
    }
  }

  isOpen(): boolean {
    return !this.done && this.dc.readyState === "open";
  }

  send(frame: ClientFrame): boolean {
    if (!this.isOpen()) return false;
    try {
      this.dc.send(JSON.stringify(frame));
      return true;
    } catch {
      return false;
    }
  }

  /** Ends the attempt (idempotent): the channel and the connection close; `closed` is called once. */
  close(why: string): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    try {
      this.dc.close();
      this.pc.close();
    } finally {
      this.o.closed(why);
    }
  }
}

/** A plaintext session's `rtc.signal` from the relay, checked as the codec checks a sealed one's (shared/client/codec.ts). */
export function parseSignal(f: RawFrame): RtcIn | undefined {
  const from = f.from as { role?: unknown; client_id?: unknown } | undefined;
  const s = RtcSignal.safeParse(f.signal);
  if (!s.success || typeof f.id !== "string" || from?.role !== "agent" || typeof from.client_id !== "string") return undefined;
  return { id: f.id, from: { role: "agent", client_id: from.client_id }, signal: s.data };
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
