// One live connection per paired session: WebSocket with the token as a subprotocol (never in the URL),
// backoff with jitter, ping/pong heartbeat, the built-in tools registered after `hello`, answers queued in
// localStorage while offline, and the call log. UI components only read the signals and call answer/send.
import { batch, signal } from "@preact/signals";
import type {
  ContentBlock,
  MessageOut,
  PeerState,
  RelayFrame,
  SessionStatus,
  ToolCallOut,
  ToolDef,
} from "../../shared/contract/protocol.js";
import { ReconnectingSocket, type RawFrame, type Terminal } from "../../shared/client/socket.js";
import { CLOSE } from "../../shared/contract/close.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import type { Answer } from "./tools/calculator.js";
import { AUTOMATIC, AutoTools } from "./tools/auto.js";
import type { Key } from "./i18n.js";
import { deviceId, randomId, type SavedSession } from "./storage.js";
import { CallLog, type CallEntry, type CallState } from "./calls.js";
import { Thread } from "./thread.js";
import { frameId, Outbox, type Loose, type OutFrame } from "./outbox.js";
import type { InboxLink, SessionCrypto } from "./e2e/index.js";
import { isPinned, pinSealed } from "./e2e/store.js";
import { isRelayFrame } from "./relay-frame.js";

export interface ConnHooks {
  /** The relay's status gave the session a (new) label. */
  onLabel?: (label: string) => void;
  /** The relay refused the credential over HTTP (401): for a device, the inbox decides whether it was revoked. */
  onAuthFail?: () => void;
  /** A socket closed with 4401: this device was removed from its inbox. */
  onRevoked?: () => void;
  /** A human name for a client id (a device's name from its inbox), when known. */
  nameOf?: (clientId: string) => string | undefined;
  /** The inbox this session belongs to: its keyring opens sealed sessions (docs/e2e.md). */
  inbox?: InboxLink;
}

export type Phase = "connecting" | "online" | "offline" | "stopped";

export { AUTOMATIC } from "./tools/auto.js";
export type { CallEntry, CallState } from "./calls.js";
export type { ThreadMessage } from "./thread.js";
/** Heartbeat: a `ping` this often; no frame at all for DEAD_MS means the socket is dead. */
const PING_MS = 20_000;
const DEAD_MS = 45_000;
/** How long a notice ("another device answered first") stays on screen. */
const NOTICE_MS = 10_000;
/** An agent status without its plaintext detail (a sealed session's detail is sealed). */
const plainAgent = (a: PeerState["agent"]): PeerState["agent"] => (a.status?.detail !== undefined ? { ...a, status: { state: a.status.state } } : a);

export class SessionConn {
  readonly sid: string;
  readonly phase = signal<Phase>("connecting");
  readonly stopReason = signal<{ key: Key; reason?: string } | null>(null);
  readonly presence = signal<PeerState | null>(null);
  /** The call log (web/src/calls.ts), the chat thread (web/src/thread.ts) and the outbox (web/src/outbox.ts). */
  private readonly log: CallLog;
  readonly calls: CallLog["calls"];
  private readonly thread: Thread;
  readonly messages: Thread["messages"];
  readonly unsent: Thread["unsent"];
  private readonly outbox: Outbox;
  /** The calculator and canvas, answered here without a human (web/src/tools/auto.ts); its boards are drawn. */
  private readonly auto: AutoTools;
  readonly boards: AutoTools["boards"];
  readonly agentTools = signal<ToolDef[]>([]);
  readonly notice = signal<{ key: Key; at: number } | null>(null);
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

  /** The one reconnecting socket of the clients (shared/client/socket.ts: backoff, heartbeat, terminal closes), new
   * on every start. Its backoff resets only after a connection stayed up, so a relay that accepts and drops at
   * once is not hammered at the base delay. */
  private sock: ReconnectingSocket | undefined;
  /** Bumped whenever a connection ends: what was opened or sealed for an older one is not handled or sent. */
  private link = 0;
  /** The current connection's `hello` was handled (a sealed one's after it opened). */
  private helloed = false;
  private syncLists = 0;
  private seenSinceHello = new Set<string>();
  /** Answers sent on the current connection: the relay's catch-up re-delivers their calls right after
   * hello, and sending them again would only earn an `unknown_call` that looks like a lost race. */
  private answeredSinceHello = new Set<string>();
  private stopped = false;
  /** Sealed sessions: the lazily loaded crypto, and one chain so frames are handled in order after opening. */
  private crypto: Promise<SessionCrypto> | undefined;
  private inChain: Promise<void> = Promise.resolve();
  private outChain: Promise<void> = Promise.resolve();
  /** Plaintext of recent sealed frames sent (memory only): re-sealed after a `stale_epoch`. */
  private recentOut = new Map<string, OutFrame>();
  /** Pinned sealed in IndexedDB (issue 26): undefined until read; nothing connects before. */
  private pinned: boolean | undefined;
  private readonly pinRead: Promise<void>;

  constructor(
    readonly saved: SavedSession,
    private readonly hooks: ConnHooks = {},
  ) {
    this.sid = saved.sid;
    this.clientId = saved.clientId ?? deviceId();
    this.label.value = saved.label;
    this.log = new CallLog(this.sid, () => !this.sealed.value);
    this.calls = this.log.calls;
    this.thread = new Thread(this.clientId);
    this.messages = this.thread.messages;
    this.unsent = this.thread.unsent;
    this.outbox = new Outbox(this.sid);
    this.auto = new AutoTools(this.sid, () => !this.sealed.value);
    this.boards = this.auto.boards;
    this.pinRead = isPinned(saved.origin, this.sid).then((p) => {
      this.pinned = p;
      if (p) this.markSealed();
    });
  }

  // ------------------------------------------------------------------ lifecycle

  start(): void {
    this.stopped = false;
    this.stopReason.value = null;
    this.connect();
    void this.refreshStatus();
  }

  /** Stops for good (forget, or a 4xxx close). */
  stop(reason?: { key: Key; reason?: string }): void {
    this.stopped = true;
    const sock = this.sock;
    this.sock = undefined;
    this.ended();
    void sock?.stop(CLOSE.normal);
    batch(() => {
      this.phase.value = "stopped";
      if (reason) this.stopReason.value = reason;
    });
  }

  forget(): void {
    this.stop();
    this.log.forget();
    this.auto.forget();
    this.outbox.forget();
  }

  /** Reconnect now (the network came back, the page became visible, or the user asked). */
  poke(): void {
    if (this.stopped && this.phase.value !== "stopped") return;
    if (this.phase.value === "stopped") this.start();
    else this.sock?.poke();
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

  private url(): string {
    const u = new URL(`/api/sessions/${encodeURIComponent(this.sid)}/ws`, this.saved.origin);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("client_id", this.clientId);
    return u.toString();
  }

  private connect(): void {
    if (this.stopped || this.sock) return;
    if (this.pinned === undefined) {
      // A pinned session's first frame must already be read as sealed: wait for the pin (one IndexedDB read).
      void this.pinRead.then(() => this.connect());
      return;
    }
    this.phase.value = "connecting";
    // The token travels as a subprotocol: it never appears in a URL, a log line or the Referer. No hello timeout
    // (the heartbeat drops a silent socket).
    // The global WebSocket is looked up at each dial (a test's routeWebSocket replaces it in the page).
    const sock = new ReconnectingSocket({ dial: () => new WebSocket(this.url(), ["lineup.v1", `lineup.token.${this.saved.token}`]), heartbeatMs: PING_MS, deadMs: DEAD_MS, helloTimeoutMs: 0 });
    this.sock = sock;
    sock.on("frame", (f) => this.sock === sock && this.onRaw(f));
    sock.on("close", () => this.sock === sock && this.onClose());
    sock.on("terminal", (t) => this.sock === sock && this.onTerminal(t));
    sock.start();
  }

  private onRaw(f: RawFrame): void {
    // A sealed session's frames are opened first, one after another, so their order stays.
    if (this.sealed.value || (f.type === "hello" && f.sealed)) {
      const link = this.link;
      this.inChain = this.inChain.then(() => (this.link === link ? this.onSealedFrame(f) : undefined)).catch(() => undefined);
    } else if (isRelayFrame(f)) this.onFrame(f);
  }

  /** The connection ended: frames still being opened for it are dropped, and nothing is sent until the next hello. */
  private ended(): void {
    this.link++;
    this.helloed = false;
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
    if (t.code === CLOSE.revoked && this.saved.inbox) {
      this.stop({ key: "stoppedRevoked" });
      this.hooks.onRevoked?.();
      return;
    }
    this.stop({ key: t.code === CLOSE.sessionEnded ? "stopped4004" : t.code === CLOSE.replaced ? "stopped4409" : "stoppedOther", reason: t.reason || String(t.code) });
  }

  /** A socket that failed before `hello` may have been refused (401/403/404 before the upgrade): ask over HTTP. */
  private async diagnose(): Promise<void> {
    const status = await this.refreshStatus();
    if (status === 401) {
      this.stop({ key: "stoppedAuth" });
      this.hooks.onAuthFail?.();
    }
    else if (status === 404) this.stop({ key: "stoppedGone" });
    else if (status === 403) this.stop({ key: "stoppedOrigin" });
  }

  /** GET /api/sessions/:sid with the token as a Bearer header: label, presence, pending count, message history. */
  async refreshStatus(): Promise<number> {
    await this.pinRead;
    try {
      const r = await fetch(new URL(`/api/sessions/${encodeURIComponent(this.sid)}`, this.saved.origin), {
        headers: { authorization: `Bearer ${this.saved.token}` },
        cache: "no-store",
      });
      this.reachable.value = true;
      if (!r.ok) return r.status;
      const s = (await r.json()) as SessionStatus;
      batch(() => {
        // A sealed session's status detail is sealed: a plaintext one would be the relay's.
        if (!this.helloed) this.presence.value = { agent: this.sealed.value || (s as { sealed?: unknown }).sealed === true ? plainAgent(s.agent) : s.agent, apps: s.apps };
        this.remotePending.value = s.pending_calls;
        if (s.label && s.label !== this.label.value) {
          this.label.value = s.label;
          this.hooks.onLabel?.(s.label); // remembered, so the app shows it offline too
        }
        if ((s as { sealed?: unknown }).sealed === true) this.markSealed();
        if (this.sealed.value) {
          for (const m of s.messages ?? []) this.inChain = this.inChain.then(() => this.onSealedFrame({ ...m })).catch(() => undefined);
        } else for (const m of s.messages ?? []) if ("content" in m) this.thread.add(m);
      });
      return r.status;
    } catch {
      this.reachable.value = false;
      return 0;
    }
  }

  private send(f: OutFrame | Loose): boolean {
    const sock = this.sock;
    if (!sock?.connected || !this.helloed) return false;
    if (this.sealed.value && !("sealed" in f)) {
      this.sendSealed(f as OutFrame);
      return true;
    }
    return sock.send(f);
  }

  // ------------------------------------------------------------------ sealed sessions (docs/e2e.md)

  /** New keys for the inbox: forget the crypto (it reloads the keyring) and connect again for the catch-up. */
  keysChanged(): void {
    this.crypto = undefined;
    if (!this.sealed.value) return;
    this.log.filter((c) => !c.unreadable);
    this.thread.dropUnreadable();
    this.cryptoP();
    this.renew();
  }

  /** The session is sealed (its hello, its status or its inbox said so): from now on nothing of it is written
   * to localStorage in plaintext, and it is pinned sealed (issue 26) — a relay's later word cannot unseal it. */
  markSealed(): void {
    if (!this.pinned) {
      this.pinned = true;
      void pinSealed(this.saved.origin, this.sid);
    }
    if (this.sealed.value) return;
    this.sealed.value = true;
    this.log.forget();
    this.auto.forget();
    this.cryptoP();
  }

  private cryptoP(): Promise<SessionCrypto> {
    const p = (this.crypto ??= import("./e2e/index.js").then(async (m) => {
      const c = await m.sessionCrypto(this.hooks.inbox, this.sid, this.clientId);
      this.noKey.value = !c.hasKey;
      return c;
    }));
    // A chunk that failed to load (offline before the service worker cached it) is tried again next time.
    p.catch(() => this.crypto === p && (this.crypto = undefined));
    return p;
  }

  /** Seals then sends, in order; what cannot be sent now is kept sealed in the outbox. */
  private sendSealed(f: OutFrame): void {
    const link = this.link;
    const id = "call_id" in f ? f.call_id : "id" in f ? f.id : "";
    if (id && f.type !== "tool.ack") {
      this.recentOut.set(`${f.type}/${id}`, f);
      if (this.recentOut.size > 50) this.recentOut.delete(this.recentOut.keys().next().value!);
    }
    this.outChain = this.outChain
      .then(async () => {
        const c = await this.cryptoP();
        const out = await c.seal(f);
        if (this.link !== link || !this.sock?.send(out)) this.queue(out);
      })
      .catch(() => {
        this.noKey.value = true;
        // Only what a person sent is worth a notice; the registration just waits for a key.
        if (f.type === "tool.result" || f.type === "message") this.flashNotice("e2eCannotSeal");
      });
  }

  /** A frame of a sealed session: opened (and validated) in the lazy e2e chunk before the v1 handling sees it. */
  private async onSealedFrame(sent: Loose): Promise<void> {
    if (sent.type === "hello" && sent.sealed === undefined) {
      // Pinned sealed, and the relay says plaintext: refused before anything is sent (issue 26).
      this.stop({ key: "stoppedDowngrade" });
      return;
    }
    const c = await this.cryptoP();
    const e2e = await import("./e2e/index.js");
    const d = await e2e.openInbound(c, sent, (id) => this.thread.has(id), (has) => (this.noKey.value = !has));
    switch (d.kind) {
      case "frame":
        if (d.frame.type === "hello") this.markSealed();
        return this.onFrame(d.frame);
      case "stale":
        return this.resendStale(d.callId);
      case "message":
        this.thread.add(d.message, false, d.unreadable === true);
        if (d.elided) this.thread.markElided(d.message.id);
        return;
      case "call":
        return this.onSealedCall(d.call, d.resealed, d.unreadable === true, d.invalid);
    }
  }

  /** The relay refused an envelope of an old epoch: seal it again under the new key. */
  private resendStale(callId: string | undefined): void {
    const list = [...this.recentOut.entries()];
    const hit = callId ? list.filter(([k]) => k.endsWith(`/${callId}`)) : list.slice(-1);
    for (const [, f] of hit) this.send(f);
  }

  private onSealedCall(call: ToolCallOut, resealed: boolean, unreadable: boolean, invalid: string | undefined): void {
    const { call_id: callId, name } = call;
    const known = this.find(callId);
    const action = call.action !== undefined ? { action: call.action } : {};
    if (unreadable) {
      // Never the ciphertext: the card says it cannot be opened here.
      if (known && !resealed) return;
      if (!known) {
        this.seenSinceHello.add(callId);
        this.log.add({ call_id: callId, name, ...action, args: {}, deadline: call.deadline, at: Date.now(), state: "pending", unreadable: true });
      }
      return;
    }
    if (invalid !== undefined) {
      this.seenSinceHello.add(callId);
      if (!known) this.send({ type: "tool.result", call_id: callId, name, ...action, error: { code: "invalid_arguments", message: invalid } });
      return;
    }
    if (known && (resealed || known.unreadable)) {
      // A re-sealed call replaces its card (never asked twice); a pending one keeps its state.
      this.seenSinceHello.add(callId);
      this.update(callId, { args: call.arguments, unreadable: false, deadline: call.deadline });
      return;
    }
    this.onCall(call);
  }

  // ------------------------------------------------------------------ frames in

  private onFrame(f: RelayFrame): void {
    switch (f.type) {
      case "hello":
        this.helloed = true;
        this.reachable.value = true;
        this.syncLists = 0;
        this.seenSinceHello = new Set();
        this.answeredSinceHello = new Set();
        batch(() => {
          this.phase.value = "online";
          this.presence.value = f.peers;
        });
        this.send({ type: "tool.list", tools: BUILTIN_TOOLS });
        // A catalog query after our registration: its answer marks the end of the relay's catch-up.
        this.send({ type: "tool.list" });
        this.flushOutbox();
        return;
      case "tool.list":
        this.agentTools.value = f.tools;
        if (++this.syncLists === 2) this.afterCatchUp();
        return;
      case "tool.call":
        if ("arguments" in f) this.onCall(f);
        return;
      case "tool.cancel": {
        // With reason "answered" the relay also says by whom (a device's name or a client id) and what.
        const extra: Partial<CallEntry> = {};
        if (f.reason === "answered") {
          if (typeof f.answered_by === "string" && f.answered_by) extra.answeredBy = f.answered_by;
          if (typeof f.answer === "string") extra.answerText = f.answer;
        }
        this.settle(f.call_id, f.reason === "answered" ? "elsewhere" : f.reason === "timeout" ? "timeout" : "cancelled", "other", extra);
        this.outbox.drop(f.call_id);
        return;
      }
      case "tool.result":
        // This app makes no calls of its own; acknowledge anything kept for it so the relay can forget it.
        this.send({ type: "tool.ack", call_id: f.call_id });
        return;
      case "message":
        if ("content" in f) this.thread.add(f);
        return;
      case "presence":
        this.presence.value = { agent: f.agent, apps: f.apps };
        return;
      case "error":
        if (f.code === "unknown_call" && f.call_id) {
          // Our answer arrived after another device's (or after the call closed): say so.
          const e = this.find(f.call_id);
          if (e && (e.state === "answered" || e.state === "queued" || e.state === "pending")) {
            this.update(f.call_id, { state: "lost", by: "other" });
            this.flashNotice("lostRace");
          }
          this.outbox.drop(f.call_id);
        }
        return;
    }
  }

  /** A one-off notice on the session screen; it clears itself after NOTICE_MS. */
  private flashNotice(key: Key): void {
    const at = Date.now();
    this.notice.value = { key, at };
    setTimeout(() => {
      if (this.notice.value?.at === at) this.notice.value = null;
    }, NOTICE_MS);
  }

  private afterCatchUp(): void {
    // Calls still pending here that the relay did not deliver again have closed while we were away.
    const stale = this.calls.value.filter((c) => c.state === "pending" && !this.seenSinceHello.has(c.call_id));
    for (const c of stale) this.settle(c.call_id, c.deadline <= Date.now() ? "timeout" : "gone", "other");
  }

  private onCall(f: ToolCallOut): void {
    this.seenSinceHello.add(f.call_id);
    const known = this.find(f.call_id);
    if (known) {
      if (known.state === "gone" || known.state === "elsewhere") this.update(f.call_id, { state: "pending" });
      // Delivered again although we answered: the answer was lost with the old socket (sent while it was
      // closing). The call is still open, so send the same answer again.
      if (known.state === "answered" && !known.slim && !this.answeredSinceHello.has(f.call_id) && (known.result || known.error)) this.send(this.resultFrame(known, known.result ? { result: known.result } : { error: known.error! }));
      return;
    }
    const entry: CallEntry = { call_id: f.call_id, name: f.name, args: f.arguments ?? {}, deadline: f.deadline, at: Date.now(), state: "pending" };
    if (f.action !== undefined) entry.action = f.action;
    this.log.add(entry);
    if (AUTOMATIC.has(f.name)) void this.autoAnswer(entry);
  }

  private async autoAnswer(c: CallEntry): Promise<void> {
    const a = await this.auto.answer(c, this.sealed.value, () => this.find(c.call_id)?.state === "pending");
    if (a) this.answer(c.call_id, a, "auto");
  }

  // ------------------------------------------------------------------ answers out

  /** Answers a call (human or automatic). Sent now, or queued in localStorage until the next `hello`. */
  answer(callId: string, a: Answer, by: "me" | "auto" = "me"): boolean {
    const c = this.find(callId);
    if (!c || c.state !== "pending") return false;
    // Stopped (replaced by another tab, refused, ended): this connection will not come back by itself, so an
    // answer kept here would say "sent when back online" and never be. Refuse it; the card says why.
    if (this.phase.value === "stopped") return false;
    const frame = this.resultFrame(c, a);
    const sent = this.send(frame);
    if (sent) this.answeredSinceHello.add(callId);
    else this.queue(frame);
    this.update(callId, { state: sent ? "answered" : "queued", by, doneAt: Date.now(), ...a });
    return true;
  }

  /** Replaced by another tab of this device (4409): connect again here, which replaces that tab in turn. */
  takeOver(): void {
    if (this.phase.value === "stopped") this.start();
  }

  /** Answers and messages are refused: the connection stopped for good (see stopReason). */
  get refused(): boolean {
    return this.phase.value === "stopped";
  }

  private resultFrame(c: CallEntry, a: Answer): OutFrame {
    return { type: "tool.result", call_id: c.call_id, name: c.name, ...(c.action !== undefined ? { action: c.action } : {}), ...a };
  }

  /** Keeps a frame until the next `hello`; a sealed session's only ever in its sealed form. */
  private queue(f: OutFrame | Loose): void {
    if (this.sealed.value && !("sealed" in f) && f.type !== "tool.ack") {
      void this.cryptoP()
        .then((c) => c.seal(f))
        .then((s) => this.queue(s), () => this.flashNotice("e2eCannotSeal"));
      return;
    }
    this.outbox.push(f);
  }

  private flushOutbox(): void {
    for (const f of this.outbox.flush((f) => this.send(f))) {
      const id = frameId(f);
      if (f.type === "tool.result") {
        this.answeredSinceHello.add(id);
        if (this.find(id)?.state === "queued") this.update(id, { state: "answered" });
      } else if (f.type === "message") this.thread.markSent(id);
    }
  }

  /** Sends a chat message (text and attachments); queued like answers while offline. */
  sendMessage(content: ContentBlock[]): boolean {
    if (this.phase.value === "stopped") return false;
    const id = randomId("m-", 14);
    const frame: OutFrame = { type: "message", id, content };
    if (!this.send(frame)) this.queue(frame);
    this.thread.add({ type: "message", id, from: { role: "app", client_id: this.clientId }, content, ts: Date.now() }, !this.helloed);
    return true;
  }

  // ------------------------------------------------------------------ state helpers

  find(callId: string): CallEntry | undefined {
    return this.log.find(callId);
  }

  private settle(callId: string, state: CallState, by: CallEntry["by"], extra: Partial<CallEntry> = {}): void {
    const was = this.find(callId)?.state;
    const done = this.log.settle(callId, state, by, extra);
    if (done === "lost") this.flashNotice("lostRace");
    else if (done === "settled" && was === "queued") this.outbox.drop(callId);
  }

  private update(callId: string, patch: Partial<CallEntry>): void {
    this.log.update(callId, patch);
  }

  /** Expires pending calls whose deadline passed while the relay could not tell us (we were offline). */
  sweep(now = Date.now()): void {
    // Online, the relay's own tool.cancel{timeout} is the authority (our clock may be ahead of its).
    if (this.phase.value === "online") return;
    for (const c of this.calls.value) if ((c.state === "pending" || c.state === "queued") && c.deadline <= now) this.settle(c.call_id, "timeout", "other");
  }

  /** A device's name in its inbox, when known (reading it follows renames). */
  deviceName(clientId: string): string | undefined {
    return this.hooks.nameOf?.(clientId);
  }

  /** Who answered elsewhere, as a person reads it: a device's name when its inbox knows the id. */
  whoAnswered(c: CallEntry): string | undefined {
    if (!c.answeredBy) return undefined;
    const named = this.hooks.nameOf?.(c.answeredBy);
    if (named) return named;
    // A bare client id (a guest link's `app-…`, an unknown device) tells a person nothing.
    return /^(app-|dv_|~)[A-Za-z0-9_-]*$/.test(c.answeredBy) ? undefined : c.answeredBy;
  }

  pendingCount(): number {
    return this.calls.value.filter((c) => c.state === "pending" && !AUTOMATIC.has(c.name)).length;
  }
}
