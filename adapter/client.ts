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
} from "../shared/protocol.js";
import { randomId } from "../shared/tokens.js";
import { Backoff, isTerminalClose, terminalCodeName, type BackoffOptions } from "../shared/backoff.js";
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
  resolve: (r: ToolResultBody) => void;
  reject: (e: LineUpError) => void;
  cleanup: () => void;
}

export { terminalCodeName };

const DEDUP_MEMORY = 2000;
const OUTBOX_LIMIT = 100;

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
          ws.close(1000, "wrong role");
          return;
        }
        this.onHello(frame);
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
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      p.cleanup();
      p.reject(new LineUpError(e.code, e.message));
    }
    for (const ac of this.serving.values()) ac.abort();
    this.serving.clear();
    this.emit("connection", "closed");
  }

  private sendFrame(f: ClientFrame): boolean {
    const ws = this.ws;
    if (!ws || !this.isOpen || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(f));
    return true;
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
    for (const p of this.pending.values()) this.sendFrame(p.frame);
    while (this.outbox.length) this.sendFrame(this.outbox.shift()!);
    if (this.lastStatus) this.sendFrame(this.lastStatus);
    this.emit("connection", "open");
    this.emit("presence", this.presence);
  }

  private onFrame(f: RelayFrame): void {
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
    const p = f.call_id !== undefined ? this.pending.get(f.call_id) : undefined;
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
        for (const q of this.pending.values()) this.sendFrame(q.frame);
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
      this.pending.set(callId, {
        frame,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          opts.signal?.removeEventListener("abort", onAbort);
        },
      });
      this.sendFrame(frame); // offline: sent after the next hello
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
      this.sendFrame(done); // our answer was lost with the old socket
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
    this.sendFrame(frame); // offline: re-sent when the relay delivers the still-open call again
  }

  // ------------------------------------------------------------------ messages, status, events

  send(content: string | ContentBlock[]): void {
    const blocks: ContentBlock[] = typeof content === "string" ? [{ type: "text", text: content }] : content;
    const frame: ClientFrameOf<"message"> = { type: "message", id: `m_${randomId(9)}`, content: blocks };
    if (this.sendFrame(frame)) return;
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
      else ws.close(1000, "bye");
    });
  }
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
  const client = new Client({
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
  await client.start();
  return client;
}
