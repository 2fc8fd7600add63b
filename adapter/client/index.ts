// The agent adapter library: one outgoing WebSocket to the relay (so it works behind NAT) that survives
// drops and relay deploys without losing a human's answer. API agreed in ADAPTER_API.md (docs/adapter.md).
//
// Delivery rules this file keeps (contract §4.2, §4.9, §4.10):
// - the client id is stable per session and persisted, so a restarted process is the same client and the
//   relay re-sends every result it has not acked right after `hello`;
// - a result is acked with `tool.ack` once it is handed to the caller; repeats are de-duplicated by call_id;
// - after a reconnect only OPEN calls are re-sent, by id (an identical repeat is a no-op on the relay);
//   nothing else queued while offline is replayed blindly (messages carry ids the relay de-duplicates,
//   and only the latest status is re-sent).
import WebSocket from "ws";
import {
  clampTimeout,
  SUBPROTOCOL,
  TOKEN_SUBPROTOCOL_PREFIX,
  ToolCallIn,
  ToolDef as ToolDefSchema,
  ToolError as ToolErrorSchema,
  ToolResultBody as ToolResultBodySchema,
  describeIssues,
  type ClientFrame,
  type ClientFrameOf,
  type ContentBlock,
  type MessageOut,
  type PeerState,
  type RelayFrame,
  type SessionCreated,
  type ToolCallOut,
  type ToolDef,
  type ToolResultBody,
  type ToolResultOut,
} from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { isE2EError, openFrame, plaintextTools, screenSealed, sealFrame, sealPreview, sealReseal, type ContentKey, type Frame } from "../../shared/crypto/e2e/index.js";
import { checkArguments } from "../../shared/contract/schema.js";
import { E2EFailure, Keyring } from "../e2e/keyring.js";
import { checkCallArguments, openToolList, previewOf, schemaOf } from "../e2e/frames.js";
import { Backoff, type BackoffOptions } from "../../shared/client/backoff.js";
import { CLOSE, isTerminalClose, terminalCodeName } from "../../shared/contract/close.js";
import {
  clientIdFor,
  createSession as createSessionHttp,
  defaultRelayKey,
  defaultRelayUrl,
  defaultStateDir,
  ensureSession,
  loadState,
  normalizeUrl,
  StateError,
} from "./state.js";

export type { ToolDef, ToolResultBody, ToolCallOut, MessageOut, ContentBlock, ToolResultOut };
export { ensureSession, loadState } from "./state.js";
export type { SavedSession } from "./state.js";

export class LineUpError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = "LineUpError";
  }
}

export interface ConnectOptions {
  relayUrl?: string;
  sessionId?: string;
  token?: string;
  relayKey?: string;
  stateDir?: string;
  cwd?: string;
  label?: string;
  clientId?: string;
  /** Names a second stable client of the same session (e.g. "mcp"), so two processes do not replace each other. Default "agent". */
  clientName?: string;
  tools?: ToolDef[];
  connectTimeoutMs?: number;
  heartbeatMs?: number;
  /** Reconnect backoff (defaults: base 500 ms, cap 30 s, counter reset after 10 s of uptime). */
  backoff?: BackoffOptions;
  /** Extra seconds a call waits past its timeout for the relay's own timeout result before failing locally. */
  localGraceS?: number;
  log?: (line: string) => void;
}

export type Presence = { agent: { online: boolean; status?: { state: string; detail?: string } }; apps: number };
export type ConnectionState = "open" | "closed" | "reconnecting";
export type ToolCall = ToolCallOut & { signal: AbortSignal };
export type ToolHandler = (args: Record<string, unknown>, call: ToolCall) => Promise<ToolResultBody> | ToolResultBody;
export interface CallOptions {
  timeoutS?: number;
  signal?: AbortSignal;
  callId?: string;
}

interface Events {
  presence: Presence;
  tools: ToolDef[];
  message: MessageOut;
  connection: ConnectionState;
  /** A result for a call this process did not make (e.g. made by a previous run); see docs. */
  result: ToolResultOut;
}

export interface AgentClient {
  readonly sessionId: string;
  readonly clientId: string;
  readonly relayUrl: string;
  readonly appUrl?: string;
  readonly presence: Presence;
  readonly appTools: ToolDef[];
  readonly connected: boolean;
  /** Set once the client stopped for good (terminal close code, auth failure, or close()). */
  readonly lastError: LineUpError | undefined;
  call(name: string, action: string | undefined, args?: Record<string, unknown>, opts?: CallOptions): Promise<ToolResultBody>;
  provide(def: ToolDef, handler: ToolHandler): void;
  send(content: string | ContentBlock[]): void;
  setStatus(state: string, detail?: string): void;
  on<E extends keyof Events>(event: E, cb: (v: Events[E]) => void): () => void;
  close(): Promise<void>;
}

interface PendingCall {
  frame: ClientFrameOf<"tool.call">;
  /** The caller chose the call id (a re-run of `lineup call --call-id`): see onError's duplicate_call. */
  ownId?: boolean;
  /** Sealed sessions: the exact frame sent, kept so a retry is identical (docs/e2e.md rule 4). */
  wire?: Frame;
  resolve: (r: ToolResultBody) => void;
  reject: (e: LineUpError) => void;
  cleanup: () => void;
}

export { terminalCodeName };

const DEDUP_MEMORY = 2000;
const OUTBOX_LIMIT = 100;
/** Sealed sessions: messages kept to seal again after a `stale_epoch` (ids let the relay drop repeats). */
const RECENT_SEALED_MESSAGES = 20;
/** Sealed sessions: how often one frame is sealed again after `stale_epoch` before giving up. */
const STALE_RETRIES = 3;

/** A Map used as a bounded, insertion-ordered memory (oldest forgotten first). */
function remember<K, V>(m: Map<K, V>, k: K, v: V, limit = DEDUP_MEMORY): void {
  m.delete(k);
  m.set(k, v);
  while (m.size > limit) m.delete(m.keys().next().value as K);
}

export class Client implements AgentClient {
  readonly sessionId: string;
  clientId: string;
  readonly relayUrl: string;
  readonly appUrl: string | undefined;
  presence: Presence = { agent: { online: false }, apps: 0 };
  appTools: ToolDef[] = [];
  lastError: LineUpError | undefined;

  private readonly token: string;
  private readonly connectTimeoutMs: number;
  private readonly heartbeatMs: number;
  private readonly graceS: number;
  private readonly log: (line: string) => void;
  private readonly backoff: Backoff;

  private ws: WebSocket | undefined;
  private isOpen = false;
  private stopped = false;
  private openedAt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private rateTimer: ReturnType<typeof setTimeout> | undefined;
  private lastSeen = 0;

  private readonly pending = new Map<string, PendingCall>();
  /** call_id → true: results already handed over (a repeat is re-acked, never delivered twice). */
  private readonly settled = new Map<string, true>();
  private readonly unclaimed = new Map<string, ToolResultOut>();
  private readonly cancelLater = new Set<string>();

  private readonly defs = new Map<string, ToolDef>();
  private readonly handlers = new Map<string, ToolHandler>();
  private readonly serving = new Map<string, AbortController>();
  private readonly waitingForHandler = new Map<string, ToolCallOut>();
  /** call_id → the result frame we answered with, re-sent if the relay delivers the call again. */
  private readonly answered = new Map<string, ClientFrameOf<"tool.result">>();
  private readonly outbox: ClientFrameOf<"message">[] = [];
  private lastStatus: ClientFrameOf<"status"> | undefined;

  // ---- sealed sessions (docs/e2e.md): everything goes through two queues, so frames keep their order
  // while sealing and opening (async WebCrypto) happen.
  private readonly keyring: Keyring | undefined;
  /** The inbox epoch the relay named in `hello`: set only for a sealed session (and never unset). */
  private sealedEpoch: number | undefined;
  /** Pinned sealed by this machine's state file (issue 26): the relay's hello cannot make it plaintext. */
  private readonly expectSealed: boolean;
  private outQ: Promise<void> = Promise.resolve();
  private inQ: Promise<void> = Promise.resolve();
  private readonly answeredWire = new Map<string, Frame>();
  private readonly recentMessages = new Map<string, ClientFrameOf<"message">>();
  private readonly staleTries = new Map<string, number>();
  private offEpoch: (() => void) | undefined;

  private readonly listeners: { [E in keyof Events]: Set<(v: Events[E]) => void> } = {
    presence: new Set(),
    tools: new Set(),
    message: new Set(),
    connection: new Set(),
    result: new Set(),
  };

  constructor(o: {
    relayUrl: string;
    sessionId: string;
    token: string;
    clientId: string;
    appUrl?: string;
    tools?: ToolDef[];
    connectTimeoutMs?: number;
    heartbeatMs?: number;
    backoff?: BackoffOptions;
    localGraceS?: number;
    log?: (line: string) => void;
    /** The inbox's E2E keys: needed to join a sealed session (adapter/e2e/keyring.ts). */
    keyring?: Keyring;
    /** The state file says this session was created sealed: a `hello` without `sealed` is refused (e2e_downgrade). */
    expectSealed?: boolean;
  }) {
    this.relayUrl = normalizeUrl(o.relayUrl);
    this.sessionId = o.sessionId;
    this.token = o.token;
    this.clientId = o.clientId;
    this.appUrl = o.appUrl;
    this.connectTimeoutMs = o.connectTimeoutMs ?? 10_000;
    this.heartbeatMs = o.heartbeatMs ?? 20_000;
    this.graceS = o.localGraceS ?? 15;
    this.log = o.log ?? (() => {});
    this.backoff = new Backoff(o.backoff);
    for (const t of o.tools ?? []) this.defs.set(t.name, parseDef(t));
    this.keyring = o.keyring;
    this.expectSealed = o.expectSealed === true;
    this.offEpoch = this.keyring?.onEpoch((ck) => this.onNewEpoch(ck));
  }

  /** True in a sealed session: every frame is sealed out and opened in. */
  get sealed(): boolean {
    return this.sealedEpoch !== undefined;
  }

  get connected(): boolean {
    return this.isOpen;
  }

  get wsUrl(): string {
    const u = new URL(`${this.relayUrl.replace(/^http/, "ws")}/api/sessions/${encodeURIComponent(this.sessionId)}/ws`);
    u.searchParams.set("client_id", this.clientId);
    return u.toString();
  }

  // ------------------------------------------------------------------ connection

  /** Opens the first connection; resolves after `hello`, rejects with LineUpError("auth"|"connect"|…). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.open({ resolve, reject }));
  }

  private open(first?: { resolve: () => void; reject: (e: LineUpError) => void }): void {
    if (this.stopped) return;
    // closeTimeout (ws ≥ 8.18, not in @types/ws): after the relay's close frame, wait at most 1 s for the
    // TCP close — `wrangler dev` holds it ~10 s, and a terminal code (4004/4409) should stop us at once.
    const options: WebSocket.ClientOptions & { closeTimeout?: number } = { handshakeTimeout: this.connectTimeoutMs, closeTimeout: 1000 };
    const ws = new WebSocket(this.wsUrl, [SUBPROTOCOL, `${TOKEN_SUBPROTOCOL_PREFIX}${this.token}`], options);
    this.ws = ws;
    let helloed = false;
    let httpStatus: number | undefined;
    let httpBody = "";
    let lastErr = "";
    const helloTimer = setTimeout(() => {
      lastErr = `no hello within ${this.connectTimeoutMs} ms`;
      ws.terminate();
    }, this.connectTimeoutMs);

    ws.on("unexpected-response", (_req, res) => {
      httpStatus = res.statusCode;
      res.on("data", (d: Buffer) => (httpBody += d.toString().slice(0, 2000)));
      res.on("end", () => ws.terminate());
      res.on("error", () => ws.terminate());
    });
    ws.on("error", (e) => (lastErr = e.message));
    ws.on("open", () => {
      this.lastSeen = Date.now();
      this.startHeartbeat(ws);
    });
    ws.on("message", (data, isBinary) => {
      if (ws !== this.ws) return;
      this.lastSeen = Date.now();
      if (isBinary) return;
      const text = data.toString();
      if (text === "pong") return;
      let frame: RelayFrame;
      try {
        frame = JSON.parse(text) as RelayFrame;
      } catch {
        this.log(`relay sent a frame that is not JSON: ${text.slice(0, 80)}`);
        return;
      }
      if (frame.type === "hello") {
        helloed = true;
        clearTimeout(helloTimer);
        if (frame.role !== "agent") {
          // The role comes from the token: an app token would make this process a "human".
          const e = new LineUpError("auth", `this token is for the ${frame.role} role; the adapter needs the session's agent token`);
          this.stop(e);
          first?.reject(e);
          ws.close(CLOSE.normal, "wrong role");
          return;
        }
        const sealedHello = (frame as { sealed?: { epoch?: unknown } }).sealed;
        if (sealedHello === undefined && (this.expectSealed || this.sealed)) {
          // A relay that drops `sealed` would get every frame in plaintext: refused before anything is sent.
          const e = new LineUpError(
            "e2e_downgrade",
            `session ${this.sessionId} is end-to-end encrypted (${this.expectSealed ? "this machine created it sealed" : "its earlier hello said so"}), but the relay at ${this.relayUrl} now says it is not: refused, nothing was sent. A relay cannot unseal a session; check LINEUP_RELAY_URL, or start a new session`,
          );
          this.stop(e);
          first?.reject(e);
          ws.close(CLOSE.normal, "e2e_downgrade");
          return;
        }
        if (sealedHello !== undefined) {
          const epoch = typeof sealedHello.epoch === "number" ? sealedHello.epoch : 0;
          if (!this.keyring) {
            const e = new LineUpError("e2e_no_key", `session ${frame.session_id} is sealed (end-to-end encrypted) but this machine holds no key of its inbox on ${this.relayUrl}: \`lineup e2e status\` tells why`);
            this.stop(e);
            first?.reject(e);
            ws.close(CLOSE.normal, "no key");
            return;
          }
          this.sealedEpoch = epoch;
          // A newer epoch than we hold: fetch it before sealing anything (the relay would refuse the old one).
          if (epoch > (this.keyring.current()?.epoch ?? 0)) this.outQ = this.outQ.then(() => this.refreshKeys());
        }
        // Sealed: the presence it carries loses a plaintext status detail (shared/crypto/e2e/guard.ts).
        const screened = this.sealed ? screenSealed(frame as unknown as Frame) : undefined;
        this.onHello(screened && "frame" in screened ? (screened.frame as unknown as typeof frame) : frame);
        first?.resolve();
        return;
      }
      this.onFrame(frame);
    });
    ws.on("close", (code, reasonBuf) => {
      clearTimeout(helloTimer);
      if (ws !== this.ws) return; // a socket we already replaced
      this.stopHeartbeat();
      const wasOpen = this.isOpen;
      this.isOpen = false;
      this.ws = undefined;
      this.backoff.closed(wasOpen ? Date.now() - this.openedAt : 0);
      const reason = reasonBuf.toString();
      let terminal: LineUpError | undefined;
      if (isTerminalClose(code)) terminal = new LineUpError(terminalCodeName(code), `the relay closed the connection with ${code}${reason ? ` (${reason})` : ""}; not reconnecting`);
      else if (httpStatus === 401 || httpStatus === 403) terminal = new LineUpError("auth", `the relay refused the agent token (${httpStatus}) ${errorText(httpBody)}`.trim());
      else if (httpStatus === 404) terminal = new LineUpError("session_ended", `the session is gone (404) ${errorText(httpBody)}`.trim());
      else if (httpStatus === 400) terminal = new LineUpError("bad_request", `the relay refused the connection (400) ${errorText(httpBody)}`.trim());
      if (!helloed && first) {
        const e = terminal ?? new LineUpError("connect", `cannot connect to ${this.relayUrl}: ${httpStatus ? `HTTP ${httpStatus}` : lastErr || `closed ${code}`}`);
        this.stop(e);
        first.reject(e);
        return;
      }
      if (this.stopped) return;
      if (terminal) {
        this.log(terminal.message);
        this.stop(terminal);
        return;
      }
      const delay = this.backoff.next();
      this.log(`connection lost (${httpStatus ? `HTTP ${httpStatus}` : `${code}${lastErr ? ` ${lastErr}` : ""}`}); reconnecting in ${(delay / 1000).toFixed(1)} s`);
      this.emit("connection", "reconnecting");
      this.reconnectTimer = setTimeout(() => this.open(), delay);
    });
  }

  private startHeartbeat(ws: WebSocket): void {
    this.stopHeartbeat();
    // App-level heartbeat: the relay's runtime answers "ping" with "pong" without waking the object.
    // A socket that stays silent for two intervals is dead (NAT timeout, sleeping laptop): force-close.
    this.heartbeatTimer = setInterval(() => {
      if (Date.now() - this.lastSeen > 2 * this.heartbeatMs) {
        this.log(`no answer from the relay for ${Math.round((Date.now() - this.lastSeen) / 1000)} s; dropping the socket`);
        ws.terminate();
        return;
      }
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, this.heartbeatMs);
    this.heartbeatTimer.unref?.();
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private stop(e: LineUpError): void {
    if (this.stopped) return;
    this.stopped = true;
    this.lastError = e;
    this.isOpen = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.rateTimer) clearTimeout(this.rateTimer);
    this.stopHeartbeat();
    this.offEpoch?.();
    this.keyring?.close();
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      p.cleanup();
      p.reject(new LineUpError(e.code, e.message));
    }
    for (const ac of this.serving.values()) ac.abort();
    this.serving.clear();
    this.emit("connection", "closed");
  }

  /** Sends a frame as it is (plaintext sessions; already sealed frames). */
  private sendRaw(f: ClientFrame | Frame): boolean {
    const ws = this.ws;
    if (!ws || !this.isOpen || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(f));
    return true;
  }

  /**
   * Sends a client frame: as it is in a plaintext session, sealed (shared/crypto/e2e/frames.ts) in a sealed one.
   * Sealed frames go out in order through `outQ`; `onUnsent` runs when the socket was gone by then.
   */
  private sendFrame(f: ClientFrame, onUnsent?: () => void): boolean {
    if (!this.sealed) return this.sendRaw(f);
    if (!this.isOpen) return false;
    this.enqueue(async () => {
      if (f.type === "tool.ack") return f;
      return sealFrame(this.contentKey(), this.sealCtx(), f as unknown as Frame);
    }, onUnsent);
    return true;
  }

  private enqueue(make: () => Promise<Frame | ClientFrame | undefined>, onUnsent?: () => void): void {
    this.outQ = this.outQ
      .then(async () => {
        const w = await make();
        if (w !== undefined && !this.sendRaw(w)) onUnsent?.();
      })
      .catch((e: unknown) => this.log(`end-to-end: sealing a frame failed: ${e instanceof Error ? e.message : String(e)}`));
  }

  private sealCtx(): { session_id: string; sender: string } {
    return { session_id: this.sessionId, sender: `agent:${this.clientId}` };
  }

  private contentKey(): ContentKey {
    const ck = this.keyring?.current();
    if (!ck) throw new LineUpError("e2e_no_key", "this machine holds no content key of its inbox (`lineup e2e status`)");
    return ck;
  }

  private async refreshKeys(): Promise<void> {
    try {
      await this.keyring?.sync();
    } catch (e) {
      this.log(`end-to-end: fetching the inbox's keys failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** A pending call as sent: plaintext, or sealed once (arguments + preview) and kept for identical retries. */
  private sendCall(p: PendingCall): void {
    if (!this.sealed) {
      this.sendRaw(p.frame);
      return;
    }
    if (!this.isOpen) return;
    this.enqueue(async () => {
      if (this.pending.get(p.frame.call_id) !== p) return undefined;
      p.wire ??= await this.sealCall(p.frame);
      return p.wire;
    });
  }

  private async sealCall(frame: ClientFrameOf<"tool.call">): Promise<Frame> {
    const ck = this.contentKey();
    const ctx = this.sealCtx();
    const wire = await sealFrame(ck, ctx, frame as unknown as Frame);
    wire.preview = await sealPreview(ck, ctx, frame.call_id, previewOf(frame.name, frame.arguments));
    return wire;
  }

  /** After a re-key: each open call sealed again under `ck` (tool.reseal), its kept frame updated to match. */
  private resealCall(p: PendingCall, key: ContentKey | undefined, alsoCall: boolean): void {
    this.enqueue(async () => {
      if (this.pending.get(p.frame.call_id) !== p) return undefined;
      // Without a key given: the current one when this runs (after the refresh queued before it).
      const ck = key ?? this.contentKey();
      const r = await sealReseal(ck, this.sealCtx(), p.frame.call_id, p.frame.arguments, previewOf(p.frame.name, p.frame.arguments));
      const base = p.wire ?? (await this.sealCall(p.frame));
      p.wire = { ...base, sealed: r.sealed, ...(r.preview ? { preview: r.preview } : {}) };
      this.sendRaw(r);
      // After stale_epoch the relay may not hold the call at all: the call itself, identical to the re-seal.
      return alsoCall ? p.wire : undefined;
    });
  }

  private onNewEpoch(ck: ContentKey): void {
    if (!this.sealed || !this.isOpen) return;
    this.log(`end-to-end: key epoch ${ck.epoch}; re-sealing ${this.pending.size} open call(s)`);
    for (const p of this.pending.values()) if (p.wire) this.resealCall(p, ck, false);
    if (this.defs.size > 0) this.sendFrame({ type: "tool.list", tools: [...this.defs.values()] });
    if (this.lastStatus) this.sendFrame(this.lastStatus);
  }

  /** `stale_epoch`: fetch the new key and seal the refused frame again (bounded). */
  private onStale(callId: string | undefined): void {
    const key = callId ?? "~frames";
    const n = (this.staleTries.get(key) ?? 0) + 1;
    remember(this.staleTries, key, n, 500);
    if (n > STALE_RETRIES) {
      const p = callId !== undefined ? this.pending.get(callId) : undefined;
      const msg = `the relay keeps refusing the key epoch this machine seals with (stale_epoch ${STALE_RETRIES} times): \`lineup e2e status\``;
      if (p) {
        this.settle(callId!, p);
        p.reject(new LineUpError("stale_epoch", msg));
      } else this.log(`end-to-end: ${msg}`);
      return;
    }
    this.outQ = this.outQ.then(() => this.refreshKeys());
    const p = callId !== undefined ? this.pending.get(callId) : undefined;
    if (p) return this.resealCall(p, undefined, true);
    const done = callId !== undefined ? this.answered.get(callId) : undefined;
    if (done && callId !== undefined) {
      this.answeredWire.delete(callId);
      return this.sendAnswer(done);
    }
    // A message, status or tool list: send them again (message ids make repeats harmless).
    if (this.defs.size > 0) this.sendFrame({ type: "tool.list", tools: [...this.defs.values()] });
    if (this.lastStatus) this.sendFrame(this.lastStatus);
    for (const m of this.recentMessages.values()) this.sendFrame(m);
  }

  private onHello(f: Extract<RelayFrame, { type: "hello" }>): void {
    this.clientId = f.client_id;
    this.presence = peersToPresence(f.peers);
    this.isOpen = true;
    this.openedAt = Date.now();
    this.log(`connected to session ${f.session_id} as ${f.client_id}`);
    // Register on every connect: registrations belong to the client id, and a fresh relay may have none.
    if (this.defs.size > 0) this.sendFrame({ type: "tool.list", tools: [...this.defs.values()] });
    for (const id of this.cancelLater) this.sendFrame({ type: "tool.cancel", call_id: id, reason: "aborted" });
    this.cancelLater.clear();
    for (const p of this.pending.values()) this.sendCall(p);
    while (this.outbox.length) this.sendFrame(this.outbox.shift()!);
    if (this.lastStatus) this.sendFrame(this.lastStatus);
    this.emit("connection", "open");
    this.emit("presence", this.presence);
  }

  private onFrame(f: RelayFrame): void {
    if (this.sealed) {
      this.inQ = this.inQ.then(() => this.openAndHandle(f)).catch((e: unknown) => this.log(`end-to-end: handling a ${f.type} frame failed: ${e instanceof Error ? e.message : String(e)}`));
      return;
    }
    this.handleFrame(f);
  }

  /** Opens a frame of a sealed session; a newer epoch than we hold is fetched once first. */
  private async openSealed(f: Frame): Promise<Frame> {
    const keyOf = this.keyring!.keyOf;
    try {
      return await openFrame(keyOf, this.sessionId, f);
    } catch (e) {
      if (!isE2EError(e, "wrong_epoch")) throw e;
      await this.refreshKeys();
      return openFrame(keyOf, this.sessionId, f);
    }
  }

  private async openAndHandle(relayFrame: RelayFrame): Promise<void> {
    // What the relay may say in plaintext here is screened first (issue 26): content only inside envelopes,
    // and of its own only errors that end a call — never a result, a call, a message or a description.
    const screened = screenSealed(relayFrame as unknown as Frame);
    const dropped = plaintextTools(relayFrame as unknown as Frame);
    if (dropped.length) this.log(`end-to-end: dropped plaintext tool definition(s) ${dropped.join(", ")} the relay sent in a sealed session`);
    if ("drop" in screened) return this.log(`end-to-end: dropped ${screened.drop} in sealed session ${this.sessionId}${typeof (relayFrame as { call_id?: unknown }).call_id === "string" ? ` (call ${(relayFrame as { call_id: string }).call_id})` : ""}`);
    const raw = screened.frame;
    const f = raw as unknown as RelayFrame;
    if (f.type === "tool.list") {
      const tools = await openToolList(this.keyring!.keyOf, this.sessionId, raw, this.log);
      this.appTools = tools;
      this.emit("tools", tools);
      return;
    }
    if (f.type === "presence") {
      const st = f.agent.status as (typeof f.agent.status & { sealed?: unknown; sender?: string }) | undefined;
      if (st?.sealed !== undefined) {
        try {
          const o = await this.openSealed({ type: "status", state: st.state, sealed: st.sealed, ...(st.sender !== undefined ? { sender: st.sender } : {}) });
          const status = typeof o.detail === "string" ? { state: st.state, detail: o.detail } : { state: st.state };
          return this.handleFrame({ ...f, agent: { ...f.agent, status } });
        } catch {
          return this.handleFrame({ ...f, agent: { ...f.agent, status: { state: st.state } } });
        }
      }
      return this.handleFrame(f);
    }
    // The history budget's placeholder of an old sealed message: nothing in it to hand over.
    if (f.type === "message" && raw.sealed === undefined) return;
    if (raw.sealed === undefined || (f.type !== "tool.call" && f.type !== "tool.result" && f.type !== "tool.cancel" && f.type !== "message")) return this.handleFrame(f);
    let opened: Frame;
    try {
      opened = await this.openSealed(raw);
    } catch (e) {
      return this.unopenable(f, e);
    }
    if (f.type === "tool.result") return this.handleFrame(checkedResult(opened));
    if (f.type === "tool.call") {
      const args = opened.arguments;
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        return this.answer(f, { error: { code: "invalid_arguments", message: "the sealed arguments are not an object" } });
      }
      const { resealed: _r, sender: _s, ...call } = opened;
      return this.handleFrame(call as unknown as ToolCallOut);
    }
    if (f.type === "message" && !Array.isArray(opened.content)) return this.log(`end-to-end: message ${String(opened.id)} has no content list; ignored`);
    return this.handleFrame(opened as unknown as RelayFrame);
  }

  /** A sealed frame that does not open: never shown as ciphertext; a call or result it belongs to ends. */
  private unopenable(f: RelayFrame, e: unknown): void {
    const why = e instanceof Error ? e.message : String(e);
    this.log(`end-to-end: a ${f.type} frame does not open (${why}); ignored`);
    if (f.type === "tool.result") {
      const p = this.pending.get(f.call_id);
      if (p) {
        this.settle(f.call_id, p);
        p.reject(new LineUpError("e2e_open_failed", `the result of ${f.call_id} does not open with this machine's keys: ${why}`));
      }
      this.sendRaw({ type: "tool.ack", call_id: f.call_id });
    } else if (f.type === "tool.call") this.answer(f, { error: { code: "e2e_open_failed", message: "the agent could not open this call's sealed arguments" } });
  }

  private handleFrame(f: RelayFrame): void {
    switch (f.type) {
      case "tool.result":
        return this.onResult(f);
      case "tool.call":
        return this.onCall(f);
      case "tool.cancel": {
        const ac = this.serving.get(f.call_id);
        if (ac) {
          this.serving.delete(f.call_id);
          ac.abort(new LineUpError("cancelled", `call ${f.call_id} ${f.reason}`));
        }
        this.waitingForHandler.delete(f.call_id);
        return;
      }
      case "tool.list":
        this.appTools = f.tools;
        this.emit("tools", f.tools);
        return;
      case "presence":
        this.presence = peersToPresence(f);
        this.emit("presence", this.presence);
        return;
      case "message":
        this.emit("message", f);
        return;
      case "error":
        return this.onError(f);
      default:
        return;
    }
  }

  private onError(f: Extract<RelayFrame, { type: "error" }>): void {
    if (f.code === "stale_epoch" && this.sealed) return this.onStale(f.call_id);
    const p = f.call_id !== undefined ? this.pending.get(f.call_id) : undefined;
    // A sealed re-run of a call id the relay already holds: its envelope has a new nonce, so the relay
    // sees a different call (docs/e2e.md rule 4) — but the open call is ours, and its result comes here.
    if (p?.ownId && this.sealed && f.code === "duplicate_call") {
      this.log(`call ${f.call_id} is already open on the relay (made by an earlier run); waiting for its result`);
      return;
    }
    if (p && f.code !== "unknown_call") {
      this.settle(f.call_id!, p);
      p.reject(new LineUpError(f.code, f.message));
      return;
    }
    if (f.code === "rate_limited" && this.pending.size > 0 && !this.rateTimer) {
      // The relay's rate-limit error names no frame: re-send the open calls a little later
      // (identical repeats are no-ops, so a call that did get through is not duplicated).
      this.rateTimer = setTimeout(() => {
        this.rateTimer = undefined;
        for (const q of this.pending.values()) this.sendCall(q);
      }, 1000);
    }
    this.log(`relay error ${f.code}: ${f.message}`);
  }

  // ------------------------------------------------------------------ calls we make

  private settle(id: string, p: PendingCall): void {
    this.pending.delete(id);
    p.cleanup();
    remember(this.settled, id, true);
  }

  private onResult(f: ToolResultOut): void {
    const p = this.pending.get(f.call_id);
    if (p) {
      this.settle(f.call_id, p);
      if (f.error) p.reject(new LineUpError(f.error.code, f.error.message));
      else p.resolve(f.result ?? { message: "" });
      this.sendFrame({ type: "tool.ack", call_id: f.call_id });
      return;
    }
    if (this.settled.has(f.call_id)) {
      // Already handed over; the relay re-sent it because our ack was lost. Ack again, deliver nothing.
      this.sendFrame({ type: "tool.ack", call_id: f.call_id });
      return;
    }
    if (this.listeners.result.size > 0) {
      remember(this.settled, f.call_id, true);
      this.emit("result", f);
      this.sendFrame({ type: "tool.ack", call_id: f.call_id });
      return;
    }
    // A result for a call made before this process started: kept (unacked) until call() claims it by id.
    remember(this.unclaimed, f.call_id, f, 1000);
  }

  call(name: string, action: string | undefined, args: Record<string, unknown> = {}, opts: CallOptions = {}): Promise<ToolResultBody> {
    return new Promise<ToolResultBody>((resolve, reject) => {
      if (this.stopped) return reject(new LineUpError(this.lastError?.code ?? "closed", this.lastError?.message ?? "the client is closed"));
      const callId = opts.callId ?? `c_${randomId(12)}`;
      if (this.pending.has(callId)) return reject(new LineUpError("duplicate_call", `call_id "${callId}" is already open in this client`));
      const raw: Record<string, unknown> = { type: "tool.call", call_id: callId, name, arguments: args };
      if (action !== undefined && action !== "") raw.action = action;
      if (opts.timeoutS !== undefined) raw.timeout_s = opts.timeoutS;
      const parsed = ToolCallIn.safeParse(raw);
      if (!parsed.success) return reject(new LineUpError("bad_frame", describeIssues(parsed.error)));
      const frame = parsed.data;
      // Sealed: the relay cannot check the arguments any more, so the caller does (docs/e2e.md rule 2).
      if (this.sealed) {
        if (!this.keyring?.current()) return reject(new LineUpError("e2e_no_key", "this session is sealed but this machine holds no content key of its inbox (`lineup e2e status`)"));
        const bad = checkCallArguments(this.appTools, name, frame.action, frame.arguments);
        if (bad) return reject(new LineUpError("invalid_arguments", bad));
      }

      const kept = this.unclaimed.get(callId);
      if (kept) {
        this.unclaimed.delete(callId);
        remember(this.settled, callId, true);
        if (kept.error) reject(new LineUpError(kept.error.code, kept.error.message));
        else resolve(kept.result ?? { message: "" });
        this.sendFrame({ type: "tool.ack", call_id: callId });
        return;
      }
      if (opts.signal?.aborted) return reject(new LineUpError("cancelled", "aborted before it was sent"));

      // A local backstop: the relay answers `timeout` itself at the deadline; this only fires if the relay
      // stays unreachable, so that every call ends.
      const limitS = clampTimeout(opts.timeoutS) + this.graceS;
      const timer = setTimeout(() => {
        const p = this.pending.get(callId);
        if (!p) return;
        this.settle(callId, p);
        if (!this.sendFrame({ type: "tool.cancel", call_id: callId, reason: "timeout" })) this.cancelLater.add(callId);
        reject(new LineUpError("timeout", `no result within ${limitS} s (the relay was unreachable)`));
      }, limitS * 1000);
      const onAbort = () => {
        const p = this.pending.get(callId);
        if (!p) return;
        this.settle(callId, p);
        if (!this.sendFrame({ type: "tool.cancel", call_id: callId, reason: "aborted" })) this.cancelLater.add(callId);
        reject(new LineUpError("cancelled", "the call was aborted"));
      };
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      const p: PendingCall = {
        frame,
        ...(opts.callId !== undefined ? { ownId: true } : {}),
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          opts.signal?.removeEventListener("abort", onAbort);
        },
      };
      this.pending.set(callId, p);
      this.sendCall(p); // offline: sent after the next hello
    });
  }

  // ------------------------------------------------------------------ tools we provide

  provide(def: ToolDef, handler: ToolHandler): void {
    const parsed = parseDef(def);
    this.defs.set(parsed.name, parsed);
    this.handlers.set(parsed.name, handler);
    if (this.isOpen) this.sendFrame({ type: "tool.list", tools: [...this.defs.values()] });
    for (const [id, call] of [...this.waitingForHandler]) {
      if (call.name !== parsed.name) continue;
      this.waitingForHandler.delete(id);
      this.onCall(call);
    }
  }

  private onCall(f: ToolCallOut): void {
    if (this.serving.has(f.call_id)) return; // already working on it (delivered again on a new connection)
    const done = this.answered.get(f.call_id);
    if (done) {
      this.sendAnswer(done); // our answer was lost with the old socket
      return;
    }
    const handler = this.handlers.get(f.name);
    if (!handler) {
      if (this.defs.has(f.name)) {
        remember(this.waitingForHandler, f.call_id, f, 1000); // registered via options; handler comes with provide()
        return;
      }
      this.answer(f, { error: { code: "unknown_tool", message: `this agent does not provide "${f.name}"` } });
      return;
    }
    if (this.sealed) {
      // The relay could not check sealed arguments: the provider does, against its own schema (rule 2).
      const def = this.defs.get(f.name);
      const schema = def ? schemaOf([def], f.name, f.action) : undefined;
      if (schema === null) return this.answer(f, { error: { code: "unknown_action", message: `${f.name} has no action "${f.action ?? ""}"` } });
      const bad = schema ? checkArguments(schema, f.arguments) : null;
      if (bad) return this.answer(f, { error: { code: "invalid_arguments", message: `${f.name}${f.action ? "." + f.action : ""}: ${bad}` } });
    }
    const ac = new AbortController();
    this.serving.set(f.call_id, ac);
    const call: ToolCall = { ...f, signal: ac.signal };
    Promise.resolve()
      .then(() => handler(f.arguments, call))
      .then(
        (r): { result: ToolResultBody } | { error: { code: string; message: string } } => {
          const ok = ToolResultBodySchema.safeParse(r);
          return ok.success ? { result: ok.data } : { error: { code: "bad_result", message: `the handler's result is invalid: ${describeIssues(ok.error)}` } };
        },
        (e: unknown) => ({ error: { code: e instanceof LineUpError ? e.code : "handler_error", message: e instanceof Error ? e.message : String(e) } }),
      )
      .then((body) => {
        if (ac.signal.aborted) return; // cancelled or answered elsewhere: no result
        this.serving.delete(f.call_id);
        this.answer(f, body);
      })
      .catch((e: unknown) => this.log(`answering ${f.call_id} failed: ${String(e)}`));
  }

  private answer(f: ToolCallOut, body: { result: ToolResultBody } | { error: { code: string; message: string } }): void {
    const frame: ClientFrameOf<"tool.result"> = { type: "tool.result", call_id: f.call_id, name: f.name, ...body };
    if (f.action !== undefined) frame.action = f.action;
    remember(this.answered, f.call_id, frame, 500);
    this.sendAnswer(frame); // offline: re-sent when the relay delivers the still-open call again
  }

  private sendAnswer(frame: ClientFrameOf<"tool.result">): void {
    if (!this.sealed) {
      this.sendRaw(frame);
      return;
    }
    if (!this.isOpen) return;
    this.enqueue(async () => {
      let wire = this.answeredWire.get(frame.call_id);
      if (!wire) {
        wire = await sealFrame(this.contentKey(), this.sealCtx(), frame as unknown as Frame);
        // The instance id travels in plaintext beside the sealed result (docs/e2e.md rule 3).
        const inst = frame.result?.instance_id;
        if (typeof inst === "string" && inst !== "") wire.instance_id = inst;
        remember(this.answeredWire, frame.call_id, wire, 500);
      }
      return wire;
    });
  }

  // ------------------------------------------------------------------ messages, status, events

  send(content: string | ContentBlock[]): void {
    const blocks: ContentBlock[] = typeof content === "string" ? [{ type: "text", text: content }] : content;
    const frame: ClientFrameOf<"message"> = { type: "message", id: `m_${randomId(9)}`, content: blocks };
    if (this.sealed) remember(this.recentMessages, frame.id!, frame, RECENT_SEALED_MESSAGES);
    if (this.sendFrame(frame, () => this.keepUnsent(frame))) return;
    this.keepUnsent(frame);
  }

  private keepUnsent(frame: ClientFrameOf<"message">): void {
    // Offline: kept (bounded) and sent after the next hello; the id lets the relay drop a repeat.
    this.outbox.push(frame);
    if (this.outbox.length > OUTBOX_LIMIT) this.outbox.shift();
  }

  setStatus(state: string, detail?: string): void {
    this.lastStatus = detail === undefined ? { type: "status", state } : { type: "status", state, detail };
    this.sendFrame(this.lastStatus);
  }

  on<E extends keyof Events>(event: E, cb: (v: Events[E]) => void): () => void {
    const set = this.listeners[event] as Set<(v: Events[E]) => void>;
    set.add(cb);
    return () => set.delete(cb);
  }

  private emit<E extends keyof Events>(event: E, v: Events[E]): void {
    for (const cb of [...(this.listeners[event] as Set<(v: Events[E]) => void>)]) {
      try {
        cb(v);
      } catch (e) {
        this.log(`a ${event} listener threw: ${String(e)}`);
      }
    }
  }

  async close(): Promise<void> {
    const ws = this.ws;
    this.stop(new LineUpError("closed", "the client was closed"));
    this.ws = undefined;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000);
      ws.once("close", () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(CLOSE.normal, "bye");
    });
  }
}

/** An opened result, checked where the relay no longer can: a malformed one becomes a `bad_result` error. */
function checkedResult(f: Frame): RelayFrame {
  const { sender: _s, result, error, ...rest } = f;
  const fail = (why: string): RelayFrame => ({ ...rest, error: { code: "bad_result", message: `the sealed result is invalid: ${why}` } }) as unknown as RelayFrame;
  if (result !== undefined) {
    const r = ToolResultBodySchema.safeParse(result);
    return r.success ? ({ ...rest, result: r.data } as unknown as RelayFrame) : fail(describeIssues(r.error));
  }
  if (error !== undefined) {
    const r = ToolErrorSchema.safeParse(error);
    return r.success ? ({ ...rest, error: r.data } as unknown as RelayFrame) : fail(describeIssues(r.error));
  }
  return fail("neither result nor error");
}

function parseDef(t: ToolDef): ToolDef {
  const r = ToolDefSchema.safeParse(t);
  if (!r.success) throw new LineUpError("bad_tool", `tool definition ${JSON.stringify((t as { name?: unknown }).name)}: ${describeIssues(r.error)}`);
  return r.data;
}

function peersToPresence(p: PeerState): Presence {
  return { agent: p.agent.status ? { online: p.agent.online, status: p.agent.status } : { online: p.agent.online }, apps: p.apps };
}

function errorText(body: string): string {
  try {
    const e = (JSON.parse(body) as { error?: { code?: string; message?: string } }).error;
    return e ? `${e.code ?? ""}: ${e.message ?? ""}` : body.slice(0, 200);
  } catch {
    return body.slice(0, 200);
  }
}

function stateErr(e: unknown): LineUpError {
  if (e instanceof StateError) return new LineUpError(e.code, e.message);
  if (e instanceof LineUpError) return e;
  return new LineUpError("connect", e instanceof Error ? e.message : String(e));
}

/** Creates a session on the relay with the relay key (POST /api/sessions). Nothing is saved. */
export async function createSession(opts: { relayUrl?: string; relayKey?: string; label?: string; ttlS?: number } = {}): Promise<SessionCreated> {
  try {
    return await createSessionHttp({
      relayUrl: opts.relayUrl ?? defaultRelayUrl(),
      relayKey: opts.relayKey ?? defaultRelayKey(),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
      ...(opts.ttlS !== undefined ? { ttlS: opts.ttlS } : {}),
    });
  } catch (e) {
    throw stateErr(e);
  }
}

export interface ResolvedSession {
  relayUrl: string;
  stateDir: string;
  sessionId: string;
  token: string;
  /** The persisted client id for `clientName` (or the given clientId). */
  clientId: string;
  appUrl?: string;
  /** The state file saved this session as created sealed: pinned, a plaintext hello is refused. */
  sealed?: boolean;
}

/**
 * Which session and identity connectAgent() would use, without connecting: `sessionId`+`token` when given
 * (or LINEUP_SESSION + LINEUP_TOKEN), else the session saved for (relayUrl, cwd), created if needed.
 */
export async function resolveSession(opts: ConnectOptions = {}): Promise<ResolvedSession> {
  const relayUrl = normalizeUrl(opts.relayUrl ?? defaultRelayUrl());
  const stateDir = opts.stateDir ?? defaultStateDir();
  const sessionId = opts.sessionId ?? process.env.LINEUP_SESSION ?? undefined;
  const token = opts.token ?? process.env.LINEUP_TOKEN ?? undefined;
  const name = opts.clientName ?? "agent";
  try {
    if (sessionId || token) {
      if (!sessionId || !token) throw new LineUpError("usage", "joining a session needs both the session id and its agent token (LINEUP_SESSION and LINEUP_TOKEN)");
      const saved = loadState(stateDir).sessions.find((s) => s.sessionId === sessionId);
      const r: ResolvedSession = { relayUrl, stateDir, sessionId, token, clientId: opts.clientId ?? clientIdFor(stateDir, sessionId, name) };
      if (saved?.appUrl) r.appUrl = saved.appUrl;
      if (saved?.sealed === true) r.sealed = true;
      return r;
    }
    const saved = await ensureSession({
      relayUrl,
      stateDir,
      cwd: opts.cwd ?? process.cwd(),
      ...(opts.relayKey !== undefined ? { relayKey: opts.relayKey } : {}),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
    });
    const r: ResolvedSession = {
      relayUrl,
      stateDir,
      sessionId: saved.sessionId,
      token: saved.agentToken,
      clientId: opts.clientId ?? (name === "agent" ? saved.clientId : clientIdFor(stateDir, saved.sessionId, name)),
    };
    if (saved.appUrl) r.appUrl = saved.appUrl;
    if (saved.sealed === true) r.sealed = true;
    return r;
  } catch (e) {
    throw stateErr(e);
  }
}

/**
 * Connects as the session's agent; resolves after the first `hello`. Joins `sessionId`+`token` when given
 * (or LINEUP_SESSION + LINEUP_TOKEN), else the session saved for (relayUrl, cwd), creating one if needed.
 */
export async function connectAgent(opts: ConnectOptions = {}): Promise<Client> {
  const r = await resolveSession(opts);
  const keyring = await openKeyring(r, opts.log);
  const client = new Client({
    ...(keyring ? { keyring } : {}),
    ...(r.sealed ? { expectSealed: true } : {}),
    relayUrl: r.relayUrl,
    sessionId: r.sessionId,
    token: r.token,
    clientId: r.clientId,
    ...(r.appUrl ? { appUrl: r.appUrl } : {}),
    ...(opts.tools ? { tools: opts.tools } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(opts.heartbeatMs !== undefined ? { heartbeatMs: opts.heartbeatMs } : {}),
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    ...(opts.localGraceS !== undefined ? { localGraceS: opts.localGraceS } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  try {
    await client.start();
  } catch (e) {
    keyring?.close();
    throw e;
  }
  return client;
}

/**
 * The inbox's E2E keys when this machine has them: synced once (completing pending pairings, a due re-key)
 * and then watched while the client runs. A failure to sync is only logged: plaintext sessions go on.
 */
async function openKeyring(r: ResolvedSession, log: ((line: string) => void) | undefined): Promise<Keyring | undefined> {
  let k: Keyring | undefined;
  try {
    k = await Keyring.open({ relayUrl: r.relayUrl, stateDir: r.stateDir, ...(log ? { log } : {}) });
  } catch (e) {
    throw new LineUpError(e instanceof E2EFailure ? e.code : "e2e_state", `reading this machine's E2E keys failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!k) return undefined;
  try {
    await k.sync();
  } catch (e) {
    log?.(`end-to-end: checking the inbox's keys failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  k.watch();
  return k;
}
