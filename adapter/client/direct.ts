// Issue 32 (docs/direct.md): one direct path — a WebRTC data channel to the one peer on the same LAN — over
// node-datachannel (libdatachannel). The handshake travels as `rtc.signal` frames through the relay (the
// host sends `signal` out and hands incoming ones to `signal()`); no STUN/TURN unless configured, so only host
// candidates exist and the channel opens exactly when both ends share a network. What crosses the channel is
// the peers' own client frames (calls, results, cancels), each parsed once with the contract's decoder.
// The library is passed in (a devDependency for now; packages/agent decides later whether it is optional).
import { decodeFrame, type ClientFrame, type RtcSignal } from "../../shared/contract/protocol.js";
import { MULTIPATH_TYPES, type DirectPath } from "../../shared/client/paths.js";

/** What this module needs of node-datachannel's `DataChannel`. */
export interface NdcChannel {
  sendMessage(msg: string): boolean;
  isOpen(): boolean;
  close(): void;
  onOpen(cb: () => void): void;
  onClosed(cb: () => void): void;
  onMessage(cb: (msg: string | Buffer | ArrayBuffer) => void): void;
}
/** What this module needs of node-datachannel's `PeerConnection`. */
export interface NdcPeer {
  onLocalDescription(cb: (sdp: string, type: string) => void): void;
  onLocalCandidate(cb: (candidate: string, mid: string) => void): void;
  onDataChannel(cb: (dc: NdcChannel) => void): void;
  setRemoteDescription(sdp: string, type: "offer" | "answer"): void;
  addRemoteCandidate(candidate: string, mid: string): void;
  createDataChannel(label: string): NdcChannel;
  close(): void;
}
export interface NdcModule {
  PeerConnection: new (name: string, config: { iceServers: string[]; bindAddress?: string }) => NdcPeer;
}

export interface DirectOptions {
  ndc: NdcModule;
  /** The device offers (the page opens the channel); the agent answers. */
  role: "offer" | "answer";
  /** Bind only to this local address (libdatachannel's `bindAddress`; tests: 127.0.0.1). */
  bindAddress?: string;
  /** STUN/TURN URLs; default none (LAN only). */
  iceServers?: string[];
  /** A candidate line we send or accept; default: all. */
  allowCandidate?: (candidate: string) => boolean;
  /** The handshake's outgoing signals (the host sends them as `rtc.signal` to the peer). */
  signal: (s: RtcSignal) => void;
  /** A call, result or cancel the peer sent on the channel. */
  frame: (f: ClientFrame) => void;
  open?: () => void;
  closed?: () => void;
  log?: (line: string) => void;
}

/** The data channel's label: both ends must agree. */
export const DIRECT_LABEL = "lineup";

export class DirectPeer implements DirectPath {
  private readonly pc: NdcPeer;
  private dc: NdcChannel | undefined;
  private done = false;
  private readonly log: (line: string) => void;

  constructor(private readonly o: DirectOptions) {
    this.log = o.log ?? (() => {});
    const cfg = { iceServers: o.iceServers ?? [], ...(o.bindAddress !== undefined ? { bindAddress: o.bindAddress } : {}) };
    this.pc = new o.ndc.PeerConnection(`lineup-${o.role}`, cfg);
    this.pc.onLocalDescription((sdp, type) => {
      if (type === "offer" || type === "answer") o.signal({ kind: type, sdp });
    });
    this.pc.onLocalCandidate((candidate, mid) => {
      if (this.allowed(candidate)) o.signal({ kind: "candidate", candidate, mid });
    });
    this.pc.onDataChannel((dc) => this.adopt(dc));
    if (o.role === "offer") this.adopt(this.pc.createDataChannel(DIRECT_LABEL));
  }

  /** An incoming signal of this handshake. */
  signal(s: RtcSignal): void {
    if (this.done) return;
    try {
      if (s.kind === "offer" && this.o.role === "answer") this.pc.setRemoteDescription(s.sdp, "offer");
      else if (s.kind === "answer" && this.o.role === "offer") this.pc.setRemoteDescription(s.sdp, "answer");
      else if (s.kind === "candidate" && this.allowed(s.candidate)) this.pc.addRemoteCandidate(s.candidate, s.mid);
      else if (s.kind === "bye") this.close();
    } catch (e) {
      this.log(`direct: the peer's ${s.kind} was refused (${e instanceof Error ? e.message : String(e)}); staying on the relay`);
      this.close();
    }
  }

  isOpen(): boolean {
    return !this.done && this.dc?.isOpen() === true;
  }

  send(frame: ClientFrame): boolean {
    if (!this.isOpen() || !this.dc) return false;
    return this.dc.sendMessage(JSON.stringify(frame));
  }

  /** Ends the path (idempotent): the channel and the connection close; `closed` is called once. */
  close(): void {
    if (this.done) return;
    this.done = true;
    try {
      this.dc?.close();
      this.pc.close();
    } finally {
      this.o.closed?.();
    }
  }

  private allowed(candidate: string): boolean {
    return this.o.allowCandidate?.(candidate) ?? true;
  }

  private adopt(dc: NdcChannel): void {
    this.dc = dc;
    dc.onOpen(() => this.o.open?.());
    dc.onClosed(() => this.close());
    dc.onMessage((msg) => {
      if (typeof msg !== "string") return this.log("direct: a binary message on the channel; ignored");
      const d = decodeFrame(msg);
      if (!d.ok) return this.log(`direct: ${d.error.message}; ignored`);
      if (!MULTIPATH_TYPES.has(d.frame.type)) return this.log(`direct: a ${d.frame.type} frame on the channel; only calls, results and cancels go there`);
      this.o.frame(d.frame);
    });
  }
}

/** The direct path of one client: at most one handshake at a time, with the one peer that offered (or that
 * this side offered to). Signals of any other attempt id are ignored; a new offer replaces the old attempt. */
export interface DirectSideOptions extends Omit<DirectOptions, "role" | "signal" | "frame" | "open" | "closed"> {
  /** Sends one `rtc.signal` through the relay. */
  send: (to: string, id: string, s: RtcSignal) => void;
  /** A frame from the peer on the channel, with the peer's client id. */
  frame: (f: ClientFrame, from: string) => void;
  /** The path opened (the peer's client id) or went (undefined). */
  state: (peer: DirectPeer | undefined, from?: string) => void;
}

export class DirectSide {
  private current: { peer: DirectPeer; with: string; id: string } | undefined;
  private attempts = 0;

  constructor(private readonly o: DirectSideOptions) {}

  /** Offers a direct path to `to` (the device's side). */
  offer(to: string): void {
    this.begin("offer", to, `d${Date.now().toString(36)}.${++this.attempts}`);
  }

  /** A signal from the relay: an offer starts (or replaces) an attempt; the rest belongs to the current one. */
  signal(from: string, id: string, s: RtcSignal): void {
    if (s.kind === "offer") this.begin("answer", from, id);
    const c = this.current;
    if (!c || c.with !== from || c.id !== id) return;
    c.peer.signal(s);
  }

  get open(): boolean {
    return this.current?.peer.isOpen() === true;
  }

  /** Ends the current attempt (the peer is told `bye` when the relay still carries it). */
  close(sayBye = true): void {
    const c = this.current;
    if (!c) return;
    if (sayBye) this.o.send(c.with, c.id, { kind: "bye" });
    c.peer.close();
  }

  private begin(role: "offer" | "answer", peerId: string, id: string): void {
    this.close(false);
    const { send, frame, state, ...rest } = this.o;
    const me: { peer: DirectPeer; with: string; id: string } = {
      with: peerId,
      id,
      peer: new DirectPeer({
        ...rest,
        role,
        signal: (s) => send(peerId, id, s),
        frame: (f) => frame(f, peerId),
        open: () => state(me.peer, peerId),
        closed: () => {
          if (this.current === me) this.current = undefined;
          state(undefined);
        },
      }),
    };
    this.current = me;
  }
}
