// One live connection per paired session, a thin shell over the clients' core: the one socket
// (shared/client/socket.ts), the one call book (web/src/provider.ts hosts shared/client/call-book.ts) and the
// one codec — plaintext frames pass as they are; a sealed session's go through shared/client/codec.ts, loaded
// with the lazy e2e chunk (web/src/e2e/codec.ts). Also the thread and the automatic tools. UI components only
// read the signals and call answer/send.
import { batch, computed, signal } from "@preact/signals";
import type { ClientFrame, ContentBlock, HelloFrame, PeerState, ToolDef } from "../../shared/contract/protocol.js";
import { ReconnectingSocket, type RawFrame, type Terminal, isRelayFrame } from "../../shared/client/socket.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import type { Answer } from "./tools/calculator.js";
import { AUTOMATIC, AutoTools } from "./tools/auto.js";
import { deviceId, randomId, type SavedSession } from "./storage.js";
import { answeredBy, type CallEntry, type CallLog } from "./calls.js";
import { Provider } from "./provider.js";
import { Thread } from "./thread.js";
import { SealPin } from "./conn-pin.js";
import { plainWire, SealedWire, type Wire, type WireHost } from "./wire.js";
import { showDecoded, type FrameView } from "./conn-frames.js";
import { readStatus } from "./session-status.js";
import { DirectLink } from "./direct-link.js";
import { pinOf } from "./direct-pins.js";
import { dialSession } from "./early.js";
import { watchDirect, watchRecent } from "./conn-watch.js";

export type { ConnHooks, Phase } from "./conn-hooks.js";
import { type ConnHooks, notices, type Phase, refusedStop, type StopReason, terminalStop } from "./conn-hooks.js";

export { AUTOMATIC } from "./tools/auto.js";
export type { CallEntry, CallState } from "./calls.js";
export type { ThreadMessage } from "./thread.js";
/** Heartbeat: a `ping` this often; no frame at all for DEAD_MS means the socket is dead. */
const PING_MS = 20_000;
const DEAD_MS = 45_000;
/** An agent status without its plaintext detail (a sealed session's detail is sealed). */
const plainAgent = (a: PeerState["agent"]): PeerState["agent"] => (a.status?.detail !== undefined ? { ...a, status: { state: a.status.state } } : a);

export class SessionConn {
  readonly sid: string;
  readonly phase = signal<Phase>("connecting");
  readonly stopReason = signal<StopReason | null>(null);
  readonly presence = signal<PeerState | null>(null);
  /** The calls (web/src/provider.ts: the call book, the log and the outbox) and the chat thread (web/src/thread.ts). */
  private readonly calls_: Provider;
  readonly calls: CallLog["calls"];
  private readonly thread: Thread;
  readonly messages: Thread["messages"];
  readonly unsent: Thread["unsent"];
  /** The calculator and canvas, answered here without a human (web/src/tools/auto.ts); its boards are drawn. */
  private readonly auto: AutoTools;
  readonly boards: AutoTools["boards"];
  readonly agentTools = signal<ToolDef[]>([]);
  /** A one-off notice on the session screen (conn-hooks.ts notices: it clears itself). */
  private readonly notices = notices();
  readonly notice = this.notices.notice;
  readonly remotePending = signal<number | null>(null);
  /** False while the relay cannot be reached at all (a network error, not an HTTP answer): the browser's
   * own online flag misses a dead Wi-Fi, a captive portal or a relay that is down. */
  readonly reachable = signal<boolean>(true);
  /** This browser's id, or for a session of an inbox the device id (the relay binds the credential to it). */
  readonly clientId: string;
  /** The session's label: from pairing, then from the relay's status. */
  readonly label = signal<string>("");
  /** A sealed session (its hello says so): frames are opened and sealed with the inbox's key. */
  readonly sealed = signal<boolean>(false);
  /** Sealed, and this device holds no key of the inbox (paired before E2E, or not yet): it must pair again. */
  readonly noKey = signal<boolean>(false);
  /** Issue 32: the direct path to the agent on the same network (web/src/direct-link.ts); `path` is its mark. */
  readonly direct: DirectLink;
  readonly path: DirectLink["path"];

  /** The clients' one reconnecting socket (shared/client/socket.ts: backoff, heartbeat, terminal closes), new per start. */
  private sock: ReconnectingSocket | undefined;
  /** Bumped whenever a connection ends: what was opened for an older one is not handled. */
  private link = 0;
  /** The current connection's `hello` was handled (a sealed one's after it opened). */
  private helloed = false;
  private stopped = false;
  /** Plaintext frames pass as they are; a sealed session's codec comes with the lazy e2e chunk (web/src/wire.ts). */
  private readonly plain: Wire;
  private readonly sealedWire: SealedWire;
  private wire: Wire;
  private readonly view: FrameView;
  /** The seal pin (issue 26, web/src/conn-pin.ts): the socket's events wait for its read. */
  private readonly pin: SealPin;
  /** This connection's catch-up is over (the call book's word, after the frame that ended it was shown). */
  private readonly caughtUp = signal(false);
  /** Nothing more to wait for on opening: caught up, or not connected (offline, stopped). */
  readonly settled = computed(() => this.caughtUp.value || this.phase.value === "offline" || this.phase.value === "stopped");

  constructor(
    readonly saved: SavedSession,
    private readonly hooks: ConnHooks = {},
  ) {
    this.sid = saved.sid;
    this.clientId = saved.clientId ?? deviceId();
    this.label.value = saved.label;
    this.thread = new Thread(this.clientId);
    this.messages = this.thread.messages;
    this.unsent = this.thread.unsent;
    this.auto = new AutoTools(this.sid, () => !this.sealed.value);
    this.boards = this.auto.boards;
    const host: WireHost = {
      sid: this.sid,
      clientId: this.clientId,
      inbox: hooks.inbox,
      write: (w) => !!this.sock?.send(w),
      deliver: (d) => showDecoded(this.view, d),
      rtcRaw: (f) => this.direct.rtcRaw(f),
      noKey: (missing) => (this.noKey.value = missing),
      link: () => this.link,
    };
    this.wire = this.plain = plainWire(host);
    this.sealedWire = new SealedWire(host);
    this.direct = new DirectLink({
      saved,
      clientId: this.clientId,
      pin: pinOf(saved, () => hooks.machineOf?.() ?? { machines: 0 }),
      sealed: () => this.sealed.value,
      online: () => this.helloed && !!this.sock,
      signal: (to, id, s) => this.wire.signal(to, `agent:${to}`, id, s),
      deliver: (f, bad) => this.calls_.receive(f, bad !== null ? { invalid: bad } : undefined),
      log: (line) => console.debug(`[${this.sid}] ${line}`),
    });
    this.path = this.direct.path;
    this.calls_ = new Provider(
      this.sid,
      {
        send: (f, unsent, fresh) => this.out(f, unsent, fresh),
        refresh: () => this.wire.refresh(),
        lost: () => this.notices.flash("lostRace"),
        sent: (id) => this.thread.markSent(id),
        auto: (c) =>
          void this.auto.answer(c, this.sealed.value, () => this.find(c.call_id)?.state === "pending").then((a) => a && this.answer(c.call_id, a, "auto")),
        sealed: () => this.sealed.value,
        alsoDirect: (f) => this.direct.alsoDirect(f),
        keepSealed: (frames) =>
          void this.sealedWire.sealAll(frames).then(
            (env) => this.calls_.writeSealed(env),
            () => this.notices.flash("e2eCannotSeal"),
          ),
      },
      (name) => AUTOMATIC.has(name),
    );
    this.view = {
      calls: this.calls_,
      thread: this.thread,
      presence: this.presence,
      agentTools: this.agentTools,
      noKey: this.noKey,
      sealedWire: this.sealedWire,
      wire: () => this.wire,
      rtc: (r) => this.direct.rtc(r),
      acceptRelay: (f) => this.direct.acceptRelay(f),
    };
    const ready = computed(() => this.phase.value === "online" && this.caughtUp.value); // then the direct path may start
    watchDirect({ ready, presence: this.presence, link: () => this.link, start: (on) => this.direct.agent(on) });
    watchRecent(() => this.hooks.recentOf?.(), this.calls_, this.notice);
    this.calls = this.calls_.log.calls;
    this.calls_.book.provide(BUILTIN_TOOLS);
    this.pin = new SealPin(saved.origin, this.sid, () => this.markSealed());
  }

  start(): void {
    this.stopped = false;
    this.direct.resume();
    this.stopReason.value = null;
    this.connect();
    void this.refreshStatus();
  }

  /** Stops for good (forget, or a 4xxx close). */
  stop(reason?: StopReason): void {
    this.direct.stop();
    this.stopped = true;
    const sock = this.sock;
    this.sock = undefined;
    this.ended();
    void sock?.stop();
    batch(() => {
      this.phase.value = "stopped";
      if (reason) this.stopReason.value = reason;
    });
  }

  forget(): void {
    this.stop();
    this.calls_.forget();
    this.auto.forget();
  }

  /** Reconnect now (the network came back, the page became visible, or the user asked). */
  poke(): void {
    if (this.stopped && this.phase.value !== "stopped") return;
    if (this.phase.value === "stopped") this.start();
    else this.sock?.poke();
    this.direct.kick();
  }

  /** A fresh connection now: the relay takes a device's name when it connects (after a rename). */
  renew(): void {
    if (this.stopped || !this.sock) return;
    this.ended();
    this.phase.value = this.sock.attempts === 0 ? "connecting" : "offline";
    this.sock.renew();
  }

  /** Treats the socket as dead (the browser went offline): close it and retry with backoff. */
  drop(): void {
    this.sock?.drop();
  }

  private connect(): void {
    if (this.stopped || this.sock) return;
    this.phase.value = "connecting";
    // No hello timeout (the heartbeat drops a silent socket). WebSocket is looked up at each dial (a test's
    // routeWebSocket replaces it in the page); the first may take the one web/src/early.ts dialled at the start.
    const sock = new ReconnectingSocket({
      dial: () => dialSession(this.saved, this.clientId),
      heartbeatMs: PING_MS,
      deadMs: DEAD_MS,
      helloTimeoutMs: 0,
    });
    this.sock = sock;
    sock.on("frame", (f) => this.pin.run(() => this.sock === sock && this.onRaw(f)));
    sock.on("close", () => this.pin.run(() => this.sock === sock && this.onClose()));
    sock.on("terminal", (t) => this.pin.run(() => this.sock === sock && this.onTerminal(t)));
    sock.start();
  }

  private onRaw(f: RawFrame): void {
    // A sealed session's frames wait for its codec, one after another, so their order stays.
    if (this.sealedWire.active || this.sealed.value || (f.type === "hello" && f.sealed)) this.sealedWire.in(f, (w, g) => this.decode(w, g));
    else this.decode(this.plain, f);
  }

  private decode(w: Wire, f: RawFrame): void {
    if (f.type === "hello" && isRelayFrame(f) && f.type === "hello") this.onHello(w, f);
    else w.in(f);
    if (!this.caughtUp.peek() && this.calls_.book.caughtUp) this.caughtUp.value = true;
  }

  /** The connection ended: frames still being opened for it are dropped, and nothing is sent until the next hello. */
  private ended(): void {
    this.link++;
    this.helloed = false;
    this.caughtUp.value = false;
    this.calls_.book.down();
  }

  private onClose(): void {
    const hadHello = this.helloed;
    this.ended();
    this.phase.value = "offline";
    if (!hadHello) void this.diagnose();
  }

  /** Close codes 4000–4999 mean "do not reconnect" (contract §5). */
  private onTerminal(t: Terminal): void {
    this.ended();
    const s = terminalStop(t.code, t.reason, !!this.saved.inbox);
    this.stop(s === "revoked" ? { key: "stoppedRevoked" } : s);
    if (s === "revoked") this.hooks.onRevoked?.();
  }

  /** A socket that failed before `hello` may have been refused (401/403/404 before the upgrade): ask over HTTP. */
  private async diagnose(): Promise<void> {
    const s = refusedStop(await this.refreshStatus());
    if (s) this.stop(s === "auth" ? { key: "stoppedAuth" } : s);
    if (s === "auth") this.hooks.onAuthFail?.();
  }

  /** GET /api/sessions/:sid with the token as a Bearer header: label, presence, pending count, message history. */
  async refreshStatus(): Promise<number> {
    await this.pin.read;
    const { code, status: s, sealed } = await readStatus(this.saved);
    this.reachable.value = code !== 0;
    if (s) {
      batch(() => {
        // A sealed session's status detail is sealed: a plaintext one would be the relay's.
        if (!this.helloed) this.presence.value = { agent: this.sealed.value || sealed ? plainAgent(s.agent) : s.agent, apps: s.apps };
        this.remotePending.value = s.pending_calls;
        if (s.label && s.label !== this.label.value) {
          this.label.value = s.label;
          this.hooks.onLabel?.(s.label); // remembered, so the app shows it offline too
        }
        if (sealed) this.markSealed();
        // Sealed: opened once the hello said which epoch (the codec's), in order with the rest.
        if (this.sealed.value) for (const m of s.messages ?? []) this.wire.sealed ? this.wire.in({ ...m }) : this.sealedWire.keep({ ...m });
        else for (const m of s.messages ?? []) if ("content" in m) this.thread.add(m);
      });
    }
    return code;
  }

  /** Sends through the codec (sealed in a sealed session); a sealed answer or message without a key cannot go. */
  private out(f: ClientFrame, unsent: (() => void) | undefined, fresh: boolean): void {
    if (this.wire.sealed && this.sealedWire.hasKey() === false && (f.type === "tool.result" || f.type === "message")) {
      this.noKey.value = true;
      this.notices.flash("e2eCannotSeal");
      return;
    }
    this.wire.out(f, unsent, fresh);
    this.direct.alsoDirect(f);
  }

  /** New keys for the inbox: the keyring is read again and a new connection brings the catch-up. */
  keysChanged(): void {
    // Frames of the new connection open only after the keyring was read again.
    this.sealedWire.reset();
    if (!this.sealed.value) return;
    this.calls_.dropUnreadable();
    this.thread.dropUnreadable();
    this.renew();
  }

  /** The session is sealed (its hello, its status or its inbox said so): from now on nothing of it is written
   * to localStorage in plaintext, and it is pinned sealed (issue 26) — a relay's later word cannot unseal it. */
  markSealed(): void {
    this.pin.pin();
    if (this.sealed.value) return;
    this.sealed.value = true;
    this.calls_.log.forget();
    this.calls_.persist();
    this.auto.forget();
    void this.sealedWire.load().catch(() => undefined);
  }

  /** A `hello` (opened, in a sealed session): the codec's verdict, then the call book re-sends what is owed. */
  private onHello(w: Wire, h: HelloFrame): void {
    const v = w.hello(h);
    if (!v.ok) {
      // Pinned sealed, and the relay says plaintext: refused before anything is sent (issue 26).
      this.stop({ key: "stoppedDowngrade" });
      return;
    }
    if (w.sealed) this.markSealed();
    this.wire = w;
    this.calls_.book.sealed = w.sealed;
    this.helloed = true;
    this.reachable.value = true;
    batch(() => {
      this.phase.value = "online";
      this.presence.value = v.frame.peers;
    });
    // The registration, a catalog query (its answer ends the relay's catch-up), then the outbox.
    this.calls_.hello((f) => !!this.sock?.send(f));
    if (w.sealed) this.sealedWire.flush(w);
  }

  /** Answers a call (human or automatic). Sent now, or queued in localStorage until the next `hello`. */
  answer(callId: string, a: Answer, by: "me" | "auto" = "me"): boolean {
    // Stopped (replaced by another tab, refused, ended): this connection will not come back by itself, so an
    // answer kept here would say "sent when back online" and never be. Refuse it; the card says why.
    if (this.phase.value === "stopped") return false;
    return this.calls_.answer(callId, a, by);
  }

  /** Replaced by another tab of this device (4409): connect again here, which replaces that tab in turn. */
  takeOver(): void {
    if (this.phase.value === "stopped") this.start();
  }

  /** Answers and messages are refused: the connection stopped for good (see stopReason). */
  get refused(): boolean {
    return this.phase.value === "stopped";
  }

  /** Sends a chat message (text and attachments); queued like answers while offline. */
  sendMessage(content: ContentBlock[]): boolean {
    if (this.phase.value === "stopped") return false;
    const id = randomId("m-", 14);
    const sent = this.calls_.message({ type: "message", id, content });
    this.thread.add({ type: "message", id, from: { role: "app", client_id: this.clientId }, content, ts: Date.now() }, !sent);
    return true;
  }

  find(callId: string): CallEntry | undefined {
    return this.calls_.find(callId);
  }

  /** Expires pending calls whose deadline passed while the relay could not tell us (we were offline). */
  sweep(now = Date.now()): void {
    // Online, the relay's own tool.cancel{timeout} is the authority (our clock may be ahead of its).
    if (this.phase.value !== "online") this.calls_.sweep(now);
  }

  /** A device's name in its inbox, when known (reading it follows renames). */
  deviceName(clientId: string): string | undefined {
    return this.hooks.nameOf?.(clientId);
  }

  /** Who answered elsewhere, as a person reads it: a device's name when its inbox knows the id. */
  whoAnswered(c: CallEntry): string | undefined {
    return answeredBy(c, this.hooks.nameOf);
  }

  pendingCount(): number {
    return this.calls.value.filter((c) => c.state === "pending" && !AUTOMATIC.has(c.name)).length;
  }
}
