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
  ToolError,
  ToolResultBody,
} from "../../shared/contract/protocol.js";
import { Backoff, isTerminalClose, TERMINAL_CLOSE } from "../../shared/client/backoff.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import type { Answer } from "./tools/calculator.js";
import { AUTOMATIC, AutoTools } from "./tools/auto.js";
import type { Key } from "./i18n.js";
import { deviceId, randomId, readJson, remove, writeJson, type SavedSession } from "./storage.js";
import type { InboxLink, SessionCrypto } from "./e2e/index.js";
import { isPinned, pinSealed } from "./e2e/store.js";

/** A frame as JSON, before it is known to be one of the protocol's (sealed frames are opened first). */
type Loose = Record<string, unknown>;

export type CallState = "pending" | "queued" | "answered" | "elsewhere" | "lost" | "timeout" | "cancelled" | "gone";

export interface CallEntry {
  call_id: string;
  name: string;
  action?: string;
  args: Record<string, unknown>;
  deadline: number;
  /** When this device first saw the call (epoch ms). */
  at: number;
  state: CallState;
  result?: ToolResultBody;
  error?: ToolError;
  by?: "me" | "auto" | "other";
  doneAt?: number;
  /** Big attachments were dropped when this entry was stored; its answer can no longer be re-sent. */
  slim?: boolean;
  /** Answered elsewhere: by which device (name or client id) and what (the winner's result.message). */
  answeredBy?: string;
  answerText?: string;
  /** Sealed session: the call did not open on this device (wrong key or epoch, or moved from another call). */
  unreadable?: boolean;
}

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

export interface ThreadMessage {
  id: string;
  /** Sent from this device. */
  mine: boolean;
  /** Sent by the human: from this device or another of theirs (every app client of a session is one of the
   * human's devices — a paired device of the inbox or a browser holding the session's link); IM group
   * members (`im:` ids) are other people. */
  own: boolean;
  /** The sender's client id (another device's name is looked up when shown: names change). */
  from: string;
  role: "agent" | "app";
  content: ContentBlock[];
  ts: number;
  /** Sealed session: the message did not open on this device. */
  unreadable?: boolean;
  /** Sealed session: an old message the relay's history budget dropped (only its placeholder is left). */
  elided?: boolean;
}

export type Phase = "connecting" | "online" | "offline" | "stopped";

export { AUTOMATIC } from "./tools/auto.js";
/** Heartbeat: a `ping` this often; no frame at all for DEAD_MS means the socket is dead. */
const PING_MS = 20_000;
const DEAD_MS = 45_000;
/** How long a notice ("another device answered first") stays on screen. */
const NOTICE_MS = 10_000;
/** Log entries kept per session (oldest finished ones go first). */
const MAX_LOG = 300;
/** Content over this many characters is not written to localStorage (the relay keeps the real thing). */
const MAX_STORED_CONTENT = 4_000;

type OutFrame =
  | { type: "tool.list"; tools?: ToolDef[] }
  | { type: "tool.result"; call_id: string; name: string; action?: string; result?: ToolResultBody; error?: ToolError }
  | { type: "tool.ack"; call_id: string }
  | { type: "message"; id: string; content: ContentBlock[] };

/** An agent status without its plaintext detail (a sealed session's detail is sealed). */
const plainAgent = (a: PeerState["agent"]): PeerState["agent"] => (a.status?.detail !== undefined ? { ...a, status: { state: a.status.state } } : a);

/** Strips big base64 payloads before a log goes to localStorage. */
function slim(e: CallEntry): CallEntry {
  const big = (v: unknown) => JSON.stringify(v ?? null).length > MAX_STORED_CONTENT;
  const out: CallEntry = { ...e };
  if (e.result?.content && big(e.result.content)) {
    out.result = { ...e.result, content: [{ type: "text", text: `[${e.result.content.length} attachment(s)]` }] };
    out.slim = true;
  }
  if (big(e.args)) out.args = { note: "[arguments too large to keep on this device]" };
  return out;
}

export class SessionConn {
  readonly sid: string;
  readonly phase = signal<Phase>("connecting");
  readonly stopReason = signal<{ key: Key; reason?: string } | null>(null);
  readonly presence = signal<PeerState | null>(null);
  readonly calls = signal<CallEntry[]>([]);
  readonly messages = signal<ThreadMessage[]>([]);
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

  private ws: WebSocket | null = null;
  private helloed = false;
  /** The adapter's reconnect policy (shared/client/backoff.ts): the attempt count resets only after a connection
   * stayed up, so a relay that accepts and drops at once is not hammered at the base delay. */
  private readonly backoff = new Backoff();
  private openedAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private lastFrameAt = 0;
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
    this.calls.value = readJson<CallEntry[]>(`calls.${this.sid}`, []);
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
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      try {
        ws.close(1000);
      } catch {
        /* already closed */
      }
    }
    batch(() => {
      this.phase.value = "stopped";
      if (reason) this.stopReason.value = reason;
    });
  }

  forget(): void {
    this.stop();
    for (const k of ["calls", "boards", "outbox"]) remove(`${k}.${this.sid}`);
  }

  /** Reconnect now (the network came back, the page became visible, or the user asked). */
  poke(): void {
    if (this.stopped && this.phase.value !== "stopped") return;
    if (this.phase.value === "stopped") {
      this.start();
      return;
    }
    if (!this.ws) {
      clearTimeout(this.timer);
      this.connect();
    }
  }

  /** A fresh connection now: the relay takes a device's name when it connects (after a rename). */
  renew(): void {
    if (this.stopped) return;
    const ws = this.ws;
    this.ws = null;
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    if (ws) {
      ws.onclose = null;
      try {
        ws.close(1000);
      } catch {
        /* already closed */
      }
    }
    this.helloed = false;
    this.connect();
  }

  /** Treats the socket as dead (the browser went offline): close it and retry with backoff. */
  drop(): void {
    const ws = this.ws;
    if (!ws) return;
    ws.onclose?.(new CloseEvent("close", { code: 1006 }));
    try {
      ws.close();
    } catch {
      /* ignore */
    }
  }

  private url(): string {
    const u = new URL(`/api/sessions/${encodeURIComponent(this.sid)}/ws`, this.saved.origin);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("client_id", this.clientId);
    return u.toString();
  }

  private connect(): void {
    if (this.stopped) return;
    if (this.pinned === undefined) {
      // A pinned session's first frame must already be read as sealed: wait for the pin (one IndexedDB read).
      void this.pinRead.then(() => !this.ws && this.connect());
      return;
    }
    this.helloed = false;
    this.phase.value = this.backoff.attempts === 0 ? "connecting" : "offline";
    let ws: WebSocket;
    try {
      // The token travels as a subprotocol: it never appears in a URL, a log line or the Referer.
      ws = new WebSocket(this.url(), ["lineup.v1", `lineup.token.${this.saved.token}`]);
    } catch {
      this.schedule();
      return;
    }
    this.ws = ws;
    ws.onmessage = (ev: MessageEvent) => {
      this.lastFrameAt = Date.now();
      if (typeof ev.data !== "string" || ev.data === "pong") return;
      let f: RelayFrame;
      try {
        f = JSON.parse(ev.data) as RelayFrame;
      } catch {
        return;
      }
      // A sealed session's frames are opened first, one after another, so their order stays.
      if (this.sealed.value || (f.type === "hello" && f.sealed)) {
        const frame = f;
        this.inChain = this.inChain.then(() => (this.ws === ws ? this.onSealedFrame(frame) : undefined)).catch(() => undefined);
      } else this.onFrame(f);
    };
    ws.onclose = (ev: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.pingTimer);
      const hadHello = this.helloed;
      this.helloed = false;
      this.backoff.closed(hadHello ? Date.now() - this.openedAt : 0);
      // Close codes 4000–4999 mean "do not reconnect" (contract §5).
      if (ev.code === TERMINAL_CLOSE.revoked && this.saved.inbox) {
        this.stop({ key: "stoppedRevoked" });
        this.hooks.onRevoked?.();
        return;
      }
      if (isTerminalClose(ev.code)) {
        this.stop({ key: ev.code === TERMINAL_CLOSE.sessionEnded ? "stopped4004" : ev.code === TERMINAL_CLOSE.replaced ? "stopped4409" : "stoppedOther", reason: ev.reason || String(ev.code) });
        return;
      }
      this.phase.value = "offline";
      if (!hadHello) void this.diagnose();
      this.schedule();
    };
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), this.backoff.next());
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
          for (const m of s.messages ?? []) this.inChain = this.inChain.then(() => this.onSealedFrame(m as unknown as RelayFrame)).catch(() => undefined);
        } else for (const m of s.messages ?? []) if ("content" in m) this.addMessage(m);
      });
      return r.status;
    } catch {
      this.reachable.value = false;
      return 0;
    }
  }

  private startHeartbeat(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      const ws = this.ws;
      if (!ws) return;
      if (Date.now() - this.lastFrameAt > DEAD_MS) {
        // No pong: the socket is half-open (phone slept, NAT dropped it). Drop it and reconnect.
        this.drop();
        return;
      }
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, PING_MS);
  }

  private send(f: OutFrame | Loose): boolean {
    const ws = this.ws;
    if (!ws || !this.helloed || ws.readyState !== WebSocket.OPEN) return false;
    if (this.sealed.value && !("sealed" in f)) this.sendSealed(ws, f as OutFrame);
    else ws.send(JSON.stringify(f));
    return true;
  }

  // ------------------------------------------------------------------ sealed sessions (docs/e2e.md)

  /** New keys for the inbox: forget the crypto (it reloads the keyring) and connect again for the catch-up. */
  keysChanged(): void {
    this.crypto = undefined;
    if (!this.sealed.value) return;
    this.setCalls(this.calls.value.filter((c) => !c.unreadable));
    this.messages.value = this.messages.value.filter((m) => !m.unreadable);
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
    remove(`calls.${this.sid}`);
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
  private sendSealed(ws: WebSocket, f: OutFrame): void {
    const id = "call_id" in f ? f.call_id : "id" in f ? f.id : "";
    if (id && f.type !== "tool.ack") {
      this.recentOut.set(`${f.type}/${id}`, f);
      if (this.recentOut.size > 50) this.recentOut.delete(this.recentOut.keys().next().value!);
    }
    this.outChain = this.outChain
      .then(async () => {
        const c = await this.cryptoP();
        const out = await c.seal(f);
        if (this.ws === ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(out));
        else this.queue(out);
      })
      .catch(() => {
        this.noKey.value = true;
        // Only what a person sent is worth a notice; the registration just waits for a key.
        if (f.type === "tool.result" || f.type === "message") this.flashNotice("e2eCannotSeal");
      });
  }

  /** A frame of a sealed session: opened (and validated) before the v1 handling sees it. */
  private async onSealedFrame(relayFrame: RelayFrame): Promise<void> {
    const sent = relayFrame as unknown as Loose;
    if (sent.type === "hello" && sent.sealed === undefined) {
      // Pinned sealed, and the relay says plaintext: refused before anything is sent (issue 26).
      this.stop({ key: "stoppedDowngrade" });
      return;
    }
    const c = await this.cryptoP();
    // Plaintext content is dropped, relay-made errors only end calls (shared/crypto/e2e/guard.ts).
    const screened = c.screen(sent);
    if ("drop" in screened) return;
    const f = screened.frame;
    const raw = f as unknown as RelayFrame;
    if (f.type === "hello") this.markSealed();
    switch (f.type) {
      case "hello":
        this.noKey.value = !c.hasKey;
        this.onFrame(raw);
        return;
      case "tool.call":
        return this.onSealedCall(c, f);
      case "tool.list": {
        let tools: ToolDef[] = [];
        try {
          tools = ((await c.open(f)).tools as ToolDef[] | undefined) ?? [];
        } catch {
          /* the agent's tools stay unknown here; the catch-up count goes on */
        }
        this.onFrame({ type: "tool.list", tools });
        return;
      }
      case "tool.cancel": {
        let opened: Loose = { ...f };
        try {
          opened = await c.open(f);
        } catch {
          delete opened.sealed;
        }
        this.onFrame(opened as unknown as RelayFrame);
        return;
      }
      case "message": {
        if (typeof f.id !== "string" || this.messages.value.some((x) => x.id === f.id)) return;
        const from = f.from as MessageOut["from"];
        const ts = typeof f.ts === "number" ? f.ts : Date.now();
        if (f.sealed === undefined && !Array.isArray(f.content)) {
          // The history budget's placeholder of an old sealed message: nothing to open, nothing lost here.
          this.addMessage({ type: "message", id: f.id, from, ts, content: [] }, false, f.elided !== true);
          if (f.elided === true) this.messages.value = this.messages.value.map((x) => (x.id === f.id ? { ...x, elided: true } : x));
          return;
        }
        try {
          const m = await c.open(f);
          this.addMessage({ type: "message", id: f.id, from, ts, content: Array.isArray(m.content) ? (m.content as ContentBlock[]) : [] });
        } catch {
          this.addMessage({ type: "message", id: f.id, from, ts, content: [] }, false, true);
        }
        return;
      }
      case "error":
        if (f.code === "stale_epoch") {
          await c.refresh();
          this.noKey.value = !c.hasKey;
          this.resendStale(typeof f.call_id === "string" ? f.call_id : undefined);
          return;
        }
        this.onFrame(raw);
        return;
      default:
        // tool.result (acknowledged unread: this app makes no calls), presence and the rest.
        this.onFrame(raw);
    }
  }

  /** The relay refused an envelope of an old epoch: seal it again under the new key. */
  private resendStale(callId: string | undefined): void {
    const list = [...this.recentOut.entries()];
    const hit = callId ? list.filter(([k]) => k.endsWith(`/${callId}`)) : list.slice(-1);
    for (const [, f] of hit) this.send(f);
  }

  private async onSealedCall(c: SessionCrypto, f: Loose): Promise<void> {
    const callId = String(f.call_id ?? "");
    const name = String(f.name ?? "");
    const base: ToolCallOut = { type: "tool.call", call_id: callId, name, arguments: {}, deadline: Number(f.deadline ?? Date.now()), from: "agent" };
    if (typeof f.action === "string") base.action = f.action;
    const resealed = f.resealed === true;
    let args: Record<string, unknown>;
    try {
      const o = await c.open(f);
      args = (o.arguments ?? {}) as Record<string, unknown>;
    } catch {
      // Never the ciphertext: the card says it cannot be opened here.
      this.noKey.value = !c.hasKey;
      const known = this.find(callId);
      if (known && !resealed) return;
      if (!known) {
        this.seenSinceHello.add(callId);
        this.setCalls([...this.calls.value, { call_id: callId, name, ...(base.action !== undefined ? { action: base.action } : {}), args: {}, deadline: base.deadline, at: Date.now(), state: "pending", unreadable: true }]);
      }
      return;
    }
    const bad = c.check(name, base.action, args);
    if (bad) {
      // Validation moved to the receiver (docs/e2e.md rule 2): refused before anything is rendered.
      this.seenSinceHello.add(callId);
      if (!this.find(callId)) this.send({ type: "tool.result", call_id: callId, name, ...(base.action !== undefined ? { action: base.action } : {}), error: { code: "invalid_arguments", message: bad } });
      return;
    }
    const known = this.find(callId);
    if (known && (resealed || known.unreadable)) {
      // A re-sealed call replaces its card (never asked twice); a pending one keeps its state.
      this.seenSinceHello.add(callId);
      this.update(callId, { args, unreadable: false, deadline: base.deadline });
      return;
    }
    this.onCall({ ...base, arguments: args });
  }

  // ------------------------------------------------------------------ frames in

  private onFrame(f: RelayFrame): void {
    switch (f.type) {
      case "hello":
        this.helloed = true;
        this.openedAt = Date.now();
        this.reachable.value = true;
        this.syncLists = 0;
        this.seenSinceHello = new Set();
        this.answeredSinceHello = new Set();
        batch(() => {
          this.phase.value = "online";
          this.presence.value = f.peers;
        });
        this.startHeartbeat();
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
        this.dropQueued(f.call_id);
        return;
      }
      case "tool.result":
        // This app makes no calls of its own; acknowledge anything kept for it so the relay can forget it.
        this.send({ type: "tool.ack", call_id: f.call_id });
        return;
      case "message":
        if ("content" in f) this.addMessage(f);
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
          this.dropQueued(f.call_id);
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
    this.setCalls([...this.calls.value, entry]);
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
    const box = readJson<OutFrame[]>(`outbox.${this.sid}`, []);
    box.push(f as OutFrame);
    writeJson(`outbox.${this.sid}`, box);
  }

  private dropQueued(callId: string): void {
    const box = readJson<OutFrame[]>(`outbox.${this.sid}`, []);
    const rest = box.filter((f) => !("call_id" in f) || f.call_id !== callId);
    if (rest.length !== box.length) writeJson(`outbox.${this.sid}`, rest);
  }

  private flushOutbox(): void {
    const box = readJson<OutFrame[]>(`outbox.${this.sid}`, []);
    if (!box.length) return;
    const left: OutFrame[] = [];
    for (const f of box) {
      if (!this.send(f)) left.push(f);
      else if (f.type === "tool.result") {
        this.answeredSinceHello.add(f.call_id);
        const c = this.find(f.call_id);
        if (c?.state === "queued") this.update(f.call_id, { state: "answered" });
      } else if (f.type === "message") this.markSent(f.id);
    }
    if (left.length) writeJson(`outbox.${this.sid}`, left);
    else remove(`outbox.${this.sid}`);
  }

  /** Sends a chat message (text and attachments); queued like answers while offline. */
  sendMessage(content: ContentBlock[]): boolean {
    if (this.phase.value === "stopped") return false;
    const id = randomId("m-", 14);
    const frame: OutFrame = { type: "message", id, content };
    if (!this.send(frame)) this.queue(frame);
    this.addMessage({ type: "message", id, from: { role: "app", client_id: this.clientId }, content, ts: Date.now() }, !this.helloed);
    return true;
  }

  readonly unsent = signal<Set<string>>(new Set());
  private markSent(id: string): void {
    const s = new Set(this.unsent.value);
    s.delete(id);
    this.unsent.value = s;
  }

  // ------------------------------------------------------------------ state helpers

  private addMessage(m: MessageOut, unsent = false, unreadable = false): void {
    if (this.messages.value.some((x) => x.id === m.id)) return;
    const app = m.from.role === "app";
    const mine = app && m.from.client_id === this.clientId;
    const own = app && !/^im(:|$)/.test(m.from.client_id);
    const entry: ThreadMessage = { id: m.id, mine, own, from: m.from.client_id, role: m.from.role, content: m.content, ts: m.ts };
    if (unreadable) entry.unreadable = true;
    const list = [...this.messages.value, entry];
    list.sort((a, b) => a.ts - b.ts);
    this.messages.value = list;
    if (unsent) this.unsent.value = new Set([...this.unsent.value, m.id]);
  }

  find(callId: string): CallEntry | undefined {
    return this.calls.value.find((c) => c.call_id === callId);
  }

  private settle(callId: string, state: CallState, by: CallEntry["by"], extra: Partial<CallEntry> = {}): void {
    const c = this.find(callId);
    if (!c || c.state === "answered" || c.state === "lost") return;
    if (c.state === "queued" && state === "elsewhere") {
      this.update(callId, { state: "lost", by: "other", doneAt: Date.now(), ...extra });
      this.flashNotice("lostRace");
      return;
    }
    if (c.state !== "pending" && c.state !== "queued") return;
    if (c.state === "queued") this.dropQueued(callId);
    this.update(callId, { state, by, doneAt: Date.now(), ...extra });
  }

  private update(callId: string, patch: Partial<CallEntry>): void {
    this.setCalls(this.calls.value.map((c) => (c.call_id === callId ? { ...c, ...patch } : c)));
  }

  private setCalls(list: CallEntry[]): void {
    if (list.length > MAX_LOG) {
      const drop = list.length - MAX_LOG;
      let n = 0;
      list = list.filter((c) => !(n < drop && c.state !== "pending" && c.state !== "queued" && ++n));
    }
    this.calls.value = list;
    // A sealed session's calls stay in memory only (docs/e2e.md: no plaintext at rest outside the key's reach).
    if (!this.sealed.value) writeJson(`calls.${this.sid}`, list.map(slim));
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
