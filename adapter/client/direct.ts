// Issue 32 (docs/direct.md): one direct path — a WebRTC data channel to the one peer on the same LAN — over
// node-datachannel (libdatachannel). The handshake travels as `rtc.signal` frames through the relay (the
// host sends `signal` out and hands incoming ones to `signal()`); no STUN/TURN unless configured, so only host
// candidates exist and the channel opens exactly when both ends share a network. What crosses the channel is
// the peers' own client frames (calls, results, cancels), each parsed once with the contract's decoder.
// The binding (docs/protocol.md): the answering agent signs its answer with the machine's direct key over both
// DTLS fingerprints (`sign`); an offering side checks that signature against its pin before it takes the answer
// (`verify`, what the PWA does; here for tests and Node devices). Signals go out, and are taken in, in order:
// an answer waits for its signature, and the candidates after it wait for the answer.
import { decodeFrame, type ClientFrame, type RtcSignal } from "../../shared/contract/protocol.js";
import { MULTIPATH_TYPES, type DirectPath } from "../../shared/client/paths.js";
import { sdpFingerprint, signBind, verifyBind, type BindContext, type DirectKey } from "../../shared/client/direct-bind.js";

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
  /** The answering side: sign the answer with this machine's direct key (its `bind`). */
  sign?: { ctx: BindContext; key: () => Promise<DirectKey> };
  /** The offering side: take an answer only when its bind verifies (and names the pinned key, when there is one). */
  verify?: VerifyOptions & { ctx: BindContext };
}

export interface VerifyOptions {
  /** The machine's pinned direct key, if any (from the pairing link, or an earlier first contact). */
  pinned: () => string | undefined;
  /** An answer without a bind is refused (plaintext sessions); else only a bind that is there must verify. */
  required: boolean;
  /** The answer's key verified: `firstContact` when nothing was pinned (the caller pins it now). */
  accepted?: (key: string, firstContact: boolean) => void;
}

/** The data channel's label: both ends must agree. */
export const DIRECT_LABEL = "lineup";

export class DirectPeer implements DirectPath {
  private readonly pc: NdcPeer;
  private dc: NdcChannel | undefined;
  private done = false;
  private readonly log: (line: string) => void;
  /** The offer's SDP: the device's (answering side) or our own (offering side), for the bind. */
  private offerSdp: string | undefined;
  /** Outgoing and incoming signals, each in order (an answer's signature and check are asynchronous). */
  private outChain: Promise<void> = Promise.resolve();
  private inChain: Promise<void> = Promise.resolve();

  constructor(private readonly o: DirectOptions) {
    this.log = o.log ?? (() => {});
    const cfg = { iceServers: o.iceServers ?? [], ...(o.bindAddress !== undefined ? { bindAddress: o.bindAddress } : {}) };
    this.pc = new o.ndc.PeerConnection(`lineup-${o.role}`, cfg);
    this.pc.onLocalDescription((sdp, type) => {
      if (type === "offer") {
        this.offerSdp = sdp;
        this.out(async () => ({ kind: "offer", sdp }));
      } else if (type === "answer") this.out(() => this.signedAnswer(sdp));
    });
    this.pc.onLocalCandidate((candidate, mid) => {
      if (this.allowed(candidate)) this.out(async () => ({ kind: "candidate", candidate, mid }));
    });
    this.pc.onDataChannel((dc) => this.adopt(dc));
    if (o.role === "offer") this.adopt(this.pc.createDataChannel(DIRECT_LABEL));
  }

  /** An incoming signal of this handshake (taken in order, after the ones before it). */
  signal(s: RtcSignal): void {
    if (this.done) return;
    this.inChain = this.inChain.then(() => this.take(s));
  }

  private async take(s: RtcSignal): Promise<void> {
    if (this.done) return;
    try {
      if (s.kind === "offer" && this.o.role === "answer") {
        const fp = sdpFingerprint(s.sdp);
        if (!fp.ok) return this.refuse(`the device's offer has ${fp.reason}`);
        this.offerSdp = s.sdp;
        this.pc.setRemoteDescription(s.sdp, "offer");
      } else if (s.kind === "answer" && this.o.role === "offer") {
        if (!(await this.answerBound(s))) return;
        this.pc.setRemoteDescription(s.sdp, "answer");
      } else if (s.kind === "candidate" && this.allowed(s.candidate)) this.pc.addRemoteCandidate(s.candidate, s.mid);
      else if (s.kind === "bye") this.close();
    } catch (e) {
      this.refuse(`the peer's ${s.kind} was refused (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  /** Whether the answer may be taken: its bind verifies over our own offer's fingerprint and its own. */
  private async answerBound(s: Extract<RtcSignal, { kind: "answer" }>): Promise<boolean> {
    const v = this.o.verify;
    if (!v || (!v.required && !s.bind)) return true;
    const verdict = await verifyBind(s.bind, v.ctx, this.offerSdp ?? "", s.sdp, v.pinned());
    if (this.done) return false;
    if (!verdict.ok) return (this.refuse(`the agent's answer was refused: ${verdict.reason}`), false);
    v.accepted?.(verdict.key, verdict.firstContact);
    return true;
  }

  private async signedAnswer(sdp: string): Promise<RtcSignal> {
    const sign = this.o.sign;
    if (!sign) return { kind: "answer", sdp };
    return { kind: "answer", sdp, bind: await signBind(await sign.key(), sign.ctx, this.offerSdp ?? "", sdp) };
  }

  /** Sends a signal after the ones before it; one that cannot be made (an answer that cannot be signed) ends the attempt. */
  private out(make: () => Promise<RtcSignal>): void {
    this.outChain = this.outChain.then(async () => {
      if (this.done) return;
      let s: RtcSignal;
      try {
        s = await make();
      } catch (e) {
        return this.refuse(`cannot answer (${e instanceof Error ? e.message : String(e)})`);
      }
      if (!this.done) this.o.signal(s);
    });
  }

  private refuse(why: string): void {
    this.log(`direct: ${why}; staying on the relay`);
    this.close();
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
export interface DirectSideOptions extends Omit<DirectOptions, "ndc" | "role" | "signal" | "frame" | "open" | "closed" | "sign" | "verify"> {
  /** The library, or its loader (adapter/client/ndc.ts: import()ed at the first offer; undefined: relay only,
   * and each offer is answered `bye`). */
  ndc: NdcModule | (() => Promise<NdcModule | undefined>);
  /** Answering: sign each answer with this machine's direct key (the device's id is the offer's sender). */
  sign?: { sessionId: string; key: () => Promise<DirectKey> };
  /** Offering: check each answer's bind (the device's id is `selfId`, this client). */
  verify?: VerifyOptions & { sessionId: string; selfId: string };
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
  /** Signals in arrival order: the first offer waits for the library to load, and the rest wait for it. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly o: DirectSideOptions) {}

  /** Offers a direct path to `to` (the device's side). */
  offer(to: string): void {
    const id = `d${Date.now().toString(36)}.${++this.attempts}`;
    this.after(async (lib) => lib && this.begin(lib, "offer", to, id));
  }

  /** A signal from the relay: an offer starts (or replaces) an attempt; the rest belongs to the current one. */
  signal(from: string, id: string, s: RtcSignal): void {
    this.after(async (lib) => {
      if (!lib) {
        if (s.kind === "offer") this.o.send(from, id, { kind: "bye" });
        return;
      }
      if (s.kind === "offer") this.begin(lib, "answer", from, id);
      const c = this.current;
      if (!c || c.with !== from || c.id !== id) return;
      c.peer.signal(s);
    });
  }

  private after(step: (lib: NdcModule | undefined) => Promise<unknown>): void {
    const ndc = this.o.ndc;
    this.chain = this.chain
      .then(async () => {
        await step(typeof ndc === "function" ? await ndc() : ndc);
      })
      .catch((e: unknown) => this.o.log?.(`direct: ${e instanceof Error ? e.message : String(e)}; staying on the relay`));
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

  private begin(ndc: NdcModule, role: "offer" | "answer", peerId: string, id: string): void {
    this.close(false);
    const { send, frame, state, sign, verify, ndc: _lib, ...rest } = this.o;
    const deviceId = role === "answer" ? peerId : (verify?.selfId ?? "");
    const ctx = (sessionId: string) => ({ sessionId, signalId: id, deviceId });
    const me: { peer: DirectPeer; with: string; id: string } = {
      with: peerId,
      id,
      peer: new DirectPeer({
        ...rest,
        ndc,
        role,
        ...(role === "answer" && sign ? { sign: { key: sign.key, ctx: ctx(sign.sessionId) } } : {}),
        ...(role === "offer" && verify ? { verify: { ...verify, ctx: ctx(verify.sessionId) } } : {}),
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
