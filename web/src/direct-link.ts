// Issue 32 (docs/direct.md "PWA side"): one session's direct path, as its connection (web/src/conn.ts) uses it.
// Small and in the initial bundle; the WebRTC part (web/src/direct/rtc.ts) is a lazily loaded chunk, loaded at
// the first attempt. An attempt starts after `hello` when the agent is connected, again when the agent comes
// back, when the browser is back online or the page visible again (conn.poke), and once more when an open
// channel drops. It offers to the agent the relay names (`agent_clients` of the session's status), through the
// codec (sealed in a sealed session). Nothing opens within DIRECT_DEFAULTS.openTimeoutMs: it gives up quietly,
// and the session stays on the relay. The path seam (shared/client/paths.ts) puts calls, results and cancels on
// every open path and lets a direct copy through only the first time its (type, call_id) is seen.
import { signal } from "@preact/signals";
import type { RtcIn } from "../../shared/client/codec.js";
import { fromPeer, Paths, type PathName } from "../../shared/client/paths.js";
import type { RawFrame } from "../../shared/client/socket.js";
import type { ClientFrame, RelayFrame, RtcSignal } from "../../shared/contract/protocol.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { readStatus } from "./session-status.js";
import type { SavedSession } from "./storage.js";
import type { Pin } from "./direct-pins.js";

type RtcModule = typeof import("./direct/rtc.js");
type Attempt = InstanceType<RtcModule["RtcAttempt"]>;

export const DIRECT_DEFAULTS = {
  /** An attempt that has not opened by then is closed: the session stays on the relay. */
  openTimeoutMs: 5000,
  /** No STUN/TURN: only host candidates, so the channel opens exactly when both ends share a network. */
  iceServers: [] as RTCIceServer[],
} as const;

export interface DirectHost {
  readonly saved: SavedSession;
  /** This device's client id in the session (the binding covers it). */
  readonly clientId: string;
  /** The agent machine's pinned direct key (web/src/direct-pins.ts). */
  readonly pin: Pin;
  /** A sealed session: the handshake travelled sealed, so the answer needs no binding. */
  sealed(): boolean;
  /** Past `hello` on the relay (signals can go). */
  online(): boolean;
  /** One `rtc.signal` to the agent `to`, through the codec (sealed in a sealed session). */
  signal(to: string, id: string, s: RtcSignal): void;
  /** A call or cancel from the agent on the direct path, as the relay would have delivered it; `bad`: why its
   * arguments do not fit the tool (the relay checks a plaintext session's calls; nobody checked this copy). */
  deliver(f: RelayFrame, bad: string | null): void;
  log(line: string): void;
}

export class DirectLink {
  /** "direct" while the data channel is open, else "relay" (the session screen's mark). */
  readonly path = signal<PathName>("relay");
  /** The agent's answer was signed by another key than the machine's pinned one: no direct path until the
   * person forgets the pin (`forgetPin`). */
  readonly refused = signal<boolean>(false);
  readonly paths = new Paths();
  private mod: Promise<RtcModule> | undefined;
  private m: RtcModule | undefined;
  private cur: { id: string; agentId?: string; a?: Attempt; opened?: boolean } | undefined;
  private n = 0;
  private stopped = false;
  /** The agent's presence as last seen on the relay (undefined: not known yet). */
  private agentOn: boolean | undefined;

  constructor(private readonly h: DirectHost) {}

  /** Try now, when nothing is open or under way (no-op where the browser has no WebRTC). */
  kick(): void {
    if (this.stopped || this.cur || this.refused.value || typeof RTCPeerConnection !== "function" || !this.h.online() || this.agentOn === false) return;
    const me: NonNullable<DirectLink["cur"]> = { id: `p${Date.now().toString(36)}.${++this.n}` };
    this.cur = me;
    void this.begin(me).catch((e: unknown) => {
      this.h.log(`direct: not tried (${e instanceof Error ? e.message : String(e)})`);
      if (this.cur === me) this.cur = undefined;
    });
  }

  /** The agent's presence from the relay: back after being away, an open channel is to a process that is
   * probably gone, so a new attempt replaces it; present, an attempt starts when none is under way. */
  agent(online: boolean): void {
    const back = online && this.agentOn === false;
    this.agentOn = online;
    if (back) this.end(true);
    if (online) this.kick();
  }

  /** A call, result or cancel the PWA sends: also on the direct path when it is open. */
  alsoDirect(f: ClientFrame): boolean {
    return this.paths.alsoDirect(f);
  }

  /** A frame from the relay: whether it goes on to the call book (and the path seam remembers it). */
  acceptRelay(f: RelayFrame): boolean {
    return this.paths.accept("relay", f);
  }

  /** A sealed session's signal, opened and checked by the codec. */
  rtc(r: RtcIn): void {
    const c = this.cur;
    if (r.from.role !== "agent" || !c?.a || r.id !== c.id || r.from.client_id !== c.agentId) return;
    void c.a.signal(r.signal);
  }

  /** A plaintext session's `rtc.signal` as it came (parsed by the chunk, which is loaded when we offered). */
  rtcRaw(f: RawFrame): void {
    const r = this.m?.parseSignal(f);
    if (r) this.rtc(r);
    else this.h.log("direct: a malformed or unexpected rtc.signal; ignored");
  }

  /** Leaving the session (stopped, forgotten): the channel closes and the agent is told. */
  stop(): void {
    this.stopped = true;
    this.end(true);
  }

  /** The person trusts the machine's new key: the pin goes, and the next answer's key is pinned. */
  forgetPin(): void {
    this.h.pin.forget();
    this.refused.value = false;
    this.kick();
  }

  /** The connection starts again. */
  resume(): void {
    this.stopped = false;
  }

  private load(): Promise<RtcModule> {
    const p = (this.mod ??= import("./direct/rtc.js"));
    p.then(
      (m) => (this.m = m),
      () => this.mod === p && (this.mod = undefined),
    );
    return p;
  }

  private async begin(me: NonNullable<DirectLink["cur"]>): Promise<void> {
    const [m, st] = await Promise.all([this.load(), readStatus(this.h.saved)]);
    this.m = m;
    const agentId = st.status?.agent_clients[0];
    if (this.cur !== me) return;
    if (!agentId) {
      this.cur = undefined;
      return;
    }
    me.agentId = agentId;
    me.a = new m.RtcAttempt({
      id: me.id,
      iceServers: DIRECT_DEFAULTS.iceServers,
      openTimeoutMs: DIRECT_DEFAULTS.openTimeoutMs,
      signal: (s) => this.h.online() && this.h.signal(agentId, me.id, s),
      frame: (f) => this.fromAgent(m, f, agentId),
      verify: async (answer, offerSdp) => {
        // Sealed: the answer travelled sealed for this device, the relay could not substitute it.
        if (this.h.sealed()) return true;
        const pinned = this.h.pin.get();
        const ctx = { sessionId: this.h.saved.sid, signalId: me.id, deviceId: this.h.clientId };
        const v = await m.verifyBind(answer.bind, ctx, offerSdp, answer.sdp, pinned);
        if (v.ok) {
          this.h.pin.keep(v.key);
          return true;
        }
        this.h.log(`direct: refused (${v.reason})`);
        // A key other than the pin is what a relay in the middle would show: said, and kept refused.
        if (pinned !== undefined && answer.bind && answer.bind.key !== pinned) this.refused.value = true;
        return false;
      },
      open: () => {
        if (this.cur !== me) return;
        me.opened = true;
        this.paths.setDirect(me.a);
        this.path.value = "direct";
        this.h.log(`direct path to ${agentId} open`);
      },
      closed: (why) => {
        if (this.cur !== me) return;
        this.cur = undefined;
        this.paths.setDirect(undefined);
        this.path.value = "relay";
        this.h.log(`direct path: ${why}; calls go through the relay`);
        // An open channel that dropped is tried once more at once; one that never opened waits for the next reason.
        if (me.opened) this.kick();
      },
      log: (line) => this.h.log(line),
    });
  }

  /** A frame from the agent on the channel: a call of one of this app's tools, with arguments that fit, or a
   * cancel — the first copy on any path only. */
  private fromAgent(m: RtcModule, f: ClientFrame, agentId: string): void {
    if (f.type === "tool.result") return; // this app makes no calls
    if (f.type === "tool.call" && !BUILTIN_TOOLS.some((t) => t.name === f.name))
      return this.h.log(`direct: a call of ${f.name}, not a tool of this app; ignored`);
    const r = fromPeer(f, { role: "agent", clientId: agentId }, Date.now());
    if (!r || !this.paths.accept("direct", r)) return;
    this.h.deliver(r, r.type === "tool.call" ? m.checkCall(r.name, r.action, r.arguments) : null);
  }

  /** Ends the current attempt (the agent is told `bye` when the relay carries it). */
  private end(bye: boolean): void {
    const c = this.cur;
    if (!c) return;
    if (bye && c.agentId && this.h.online()) this.h.signal(c.agentId, c.id, { kind: "bye" });
    this.cur = undefined;
    this.paths.setDirect(undefined);
    this.path.value = "relay";
    c.a?.close("ended here");
  }
}
