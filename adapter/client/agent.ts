// The agent adapter's client (exported by index.ts): one outgoing WebSocket to the relay (so it works behind NAT) that survives
// drops and relay deploys without losing a human's answer. API agreed in ADAPTER_API.md (docs/adapter.md).
// A thin shell over the client core (issue 27 §1): the reconnecting socket (shared/client/socket.ts), the
// plain/sealed codec (shared/client/codec.ts) and the pure call book (shared/client/call-book.ts), which keeps
// the delivery rules (contract §4.2, §4.9, §4.10): a stable, persisted client id (the relay re-sends every
// unacked result after `hello`); results acked once handed over and de-duplicated by call_id; after a
// reconnect only OPEN calls are re-sent, by id; messages carry ids the relay de-duplicates; the latest status.
// What stays here: the `ws` dial and its HTTP refusals, promises and timers of calls, and running handlers.
import { clampTimeout } from "../../shared/contract/protocol.js";
import type { ContentBlock, HelloFrame, RelayFrame, ToolDef, ToolResultBody } from "../../shared/contract/protocol.js";
import { CLOSE, terminalCodeName } from "../../shared/contract/close.js";
import { CallBook, type Effect, type Outcome } from "../../shared/client/call-book.js";
import { Codec, type Decoded, type RtcIn } from "../../shared/client/codec.js";
import { LineUpError } from "../../shared/client/errors.js";
import { isRelayFrame, ReconnectingSocket, type WebSocketLike } from "../../shared/client/socket.js";
import { randomId } from "../../shared/crypto/bytes.js";
import type { ContentKey } from "../../shared/crypto/e2e/keys.js";
import type { Keyring } from "../e2e/keyring.js";
import { previewOf } from "../e2e/frames.js";
import { callFrameOf } from "./call-frame.js";
import { Provider } from "./provider.js";
import { fromPeer, Paths } from "../../shared/client/paths.js";
import { DirectSide } from "./direct.js";
import { dialRelay, peersToPresence, sessionWsUrl, refusalOf, sealRefusal, wrongRole, type HttpRefusal } from "./dial.js";
import { normalizeUrl } from "./state.js";
import type { AgentClient, CallOptions, ClientOptions, Events, Presence, ToolHandler } from "./types.js";
import { protocolWarner, type ProtocolMemory } from "./version.js";
import { Emitter } from "./emitter.js";

/** One warning per relay and protocol when it speaks a newer protocol (issue 30); across processes: protocolMemory. */
const warnProtocol = protocolWarner();

interface Waiting {
  resolve: (r: ToolResultBody) => void;
  reject: (e: LineUpError) => void;
  cleanup: () => void;
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
  private readonly graceS: number;
  private readonly log: (line: string) => void;
  /** Warnings the user must see even when no log was given (Node's own warning channel, stderr). */
  private readonly warn: (line: string) => void;
  private readonly protocolMemory: ProtocolMemory | undefined;
  private readonly sock: ReconnectingSocket;
  private readonly codec: Codec;
  private readonly book = new CallBook();
  private readonly keyring: Keyring | undefined;
  private readonly offEpoch: (() => void) | undefined;
  private stopped = false;
  private first: { resolve: () => void; reject: (e: LineUpError) => void } | undefined;
  /** The current dial's refused upgrade (status and body), for the terminal verdict and the log. */
  private http: HttpRefusal = { body: "" };
  private rateTimer: ReturnType<typeof setTimeout> | undefined;
  /** Issue 32: the relay path and, when a device on the same LAN offered one, the direct path. */
  private readonly paths = new Paths();
  private readonly direct: DirectSide | undefined;

  private readonly waiting = new Map<string, Waiting>();
  private readonly provider = new Provider({ sealed: () => this.codec.sealed, answer: (f, body) => this.answer(f, body), log: (l) => this.log(l) });
  private readonly events: Emitter<Events>;

  constructor(o: ClientOptions) {
    this.relayUrl = normalizeUrl(o.relayUrl);
    this.sessionId = o.sessionId;
    this.token = o.token;
    this.clientId = o.clientId;
    this.appUrl = o.appUrl;
    this.connectTimeoutMs = o.connectTimeoutMs ?? 10_000;
    const heartbeatMs = o.heartbeatMs ?? 20_000;
    this.graceS = o.localGraceS ?? 15;
    this.log = o.log ?? (() => {});
    this.warn = o.log ?? ((line) => process.emitWarning(line, { code: "LINEUP_PROTOCOL" }));
    this.protocolMemory = o.protocolMemory;
    this.events = new Emitter<Events>(this.log);
    for (const t of o.tools ?? []) this.provider.define(t);
    if (this.provider.defs.size > 0) this.book.provide([...this.provider.defs.values()]);
    const keyring = o.keyring;
    this.keyring = keyring;
    this.codec = new Codec({
      sessionId: this.sessionId,
      sender: () => `agent:${this.clientId}`,
      keys: keyring ? { keyOf: keyring.keyOf, current: () => keyring.current(), refresh: () => this.refreshKeys() } : undefined,
      ...(o.expectSealed === true ? { pinned: true } : {}),
      preview: previewOf,
      write: (w) => this.sock.send(w),
      deliver: (d) => this.onDecoded(d),
      log: this.log,
    });
    // App-level heartbeat: the relay's runtime answers "ping" with "pong" without waking the object. A socket
    // silent for two intervals is dead (NAT timeout, sleeping laptop): dropped and reconnected.
    this.sock = new ReconnectingSocket({
      dial: () => this.dial(),
      ...(o.backoff ? { backoff: o.backoff } : {}),
      heartbeatMs,
      deadMs: 2 * heartbeatMs,
      helloTimeoutMs: this.connectTimeoutMs,
      terminalOf: () => refusalOf(this.http)?.code,
    });
    this.sock.on("frame", (f) => (isRelayFrame(f) && f.type === "hello" ? this.onHello(f) : this.codec.in(f)));
    if (o.direct) {
      const { key, ...direct } = o.direct;
      this.direct = new DirectSide({
        ...direct,
        ...(key ? { sign: { sessionId: this.sessionId, key } } : {}),
        log: this.log,
        send: (to, id, signal) => this.codec.signal(to, `app:${to}`, id, signal),
        frame: (f, from) => this.onDirect(fromPeer(f, { role: "app", clientId: from }, Date.now())),
        state: (peer, from) => {
          this.paths.setDirect(peer);
          this.log(peer ? `direct path to ${from ?? "?"} open` : "direct path closed; calls go through the relay");
        },
      });
    }
    this.sock.on("close", (c) => {
      this.book.down();
      const why = this.http.status ? `HTTP ${this.http.status}` : c.error || c.reason || `closed ${c.code}`;
      if (this.first) return this.stop(new LineUpError("connect", `cannot connect to ${this.relayUrl}: ${why}`));
      this.log(
        `connection lost (${this.http.status ? `HTTP ${this.http.status}` : `${c.code}${c.error || c.reason ? ` ${c.error || c.reason}` : ""}`}); reconnecting in ${(c.delayMs / 1000).toFixed(1)} s`,
      );
      this.emit("connection", "reconnecting");
    });
    this.sock.on("terminal", (t) => {
      if (t.name === "stopped") return;
      const e =
        refusalOf(this.http) ??
        new LineUpError(terminalCodeName(t.code), `the relay closed the connection with ${t.code}${t.reason ? ` (${t.reason})` : ""}; not reconnecting`);
      if (!this.first) this.log(e.message);
      this.stop(e);
    });
    this.offEpoch = keyring?.onEpoch((ck) => this.onNewEpoch(ck));
  }

  /** Issue 32: "direct" while a data channel to a device is open (calls also go there), else "relay". */
  get path(): "direct" | "relay" {
    return this.paths.directOpen ? "direct" : "relay";
  }

  /** A handshake signal from a device, opened and checked by the codec (sealed: meant for this client). */
  private onSignal(r: RtcIn): void {
    if (this.direct && r.from.role === "app") this.direct.signal(r.from.client_id, r.id, r.signal);
  }

  /** A frame from the direct path: the first copy of a result of a call still waiting here, or of a cancel. A
   * device's calls to the agent's tools are taken from the relay only (it checks them and keeps them). */
  private onDirect(f: RelayFrame | undefined): void {
    if (!f || f.type === "tool.call" || (f.type === "tool.result" && !this.book.isPending(f.call_id))) return;
    if (this.paths.accept("direct", f)) this.run(this.book.receive(f));
  }

  /** True in a sealed session: every frame is sealed out and opened in. */
  get sealed(): boolean {
    return this.codec.sealed;
  }

  get connected(): boolean {
    return this.book.online;
  }

  get wsUrl(): string {
    return sessionWsUrl(this.relayUrl, this.sessionId, this.clientId);
  }

  // ------------------------------------------------------------------ connection

  /** Opens the first connection; resolves after `hello`, rejects with LineUpError("auth"|"connect"|…). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.first = { resolve, reject };
      this.sock.start();
    });
  }

  private dial(): WebSocketLike {
    const { ws, http } = dialRelay(this.wsUrl, this.token, this.connectTimeoutMs);
    this.http = http;
    return ws;
  }

  private onHello(f: HelloFrame): void {
    const wrong = wrongRole(f);
    if (wrong) return this.refuse(wrong, "wrong role");
    const newer = warnProtocol(f.protocol, this.relayUrl, this.protocolMemory);
    if (newer) this.warn(newer);
    const v = this.codec.hello(f);
    const at = { relayUrl: this.relayUrl, sessionId: this.sessionId, sealed: this.codec.sealed };
    if (!v.ok) return this.refuse(sealRefusal(f, v, at), v.code === "e2e_downgrade" ? "e2e_downgrade" : "no key");
    this.book.sealed = this.codec.sealed;
    this.clientId = f.client_id;
    this.presence = peersToPresence(v.frame.peers);
    this.log(`connected to session ${f.session_id} as ${f.client_id}`);
    this.run(this.book.hello());
    this.emit("connection", "open");
    this.emit("presence", this.presence);
    this.first?.resolve();
    this.first = undefined;
  }

  private refuse(e: LineUpError, reason: string): void {
    void this.sock.stop(CLOSE.normal, reason);
    this.stop(e);
  }

  private stop(e: LineUpError): void {
    if (this.stopped) return;
    this.stopped = true;
    this.lastError = e;
    if (this.rateTimer) clearTimeout(this.rateTimer);
    this.offEpoch?.();
    this.keyring?.close();
    this.direct?.close();
    void this.sock.stop();
    this.run(this.book.stop({ code: e.code, message: e.message }));
    this.provider.abortAll();
    this.emit("connection", "closed");
    this.first?.reject(e);
    this.first = undefined;
  }

  async close(): Promise<void> {
    const closing = this.sock.stop(CLOSE.normal, "bye", 1000);
    this.stop(new LineUpError("closed", "the client was closed"));
    await closing;
  }

  // ------------------------------------------------------------------ effects of the call book, frames of the codec

  private run(fx: Effect[]): void {
    for (const e of fx) {
      switch (e.kind) {
        case "send": {
          const f = e.frame;
          this.codec.out(f, f.type === "message" ? () => this.book.unsent(f) : undefined, e.fresh === true);
          this.paths.alsoDirect(f);
          break;
        }
        case "refresh":
          this.codec.refresh();
          break;
        case "reseal":
          this.codec.reseal(e.call, e.alsoCall);
          break;
        case "settled":
          this.settled(e.callId, e.outcome);
          break;
        case "unclaimed":
          // A result for a call made before this process started: handed to a listener, or kept (unacked) until call() claims it.
          if (this.events.count("result") > 0) {
            this.emit("result", e.frame);
            this.run(this.book.acknowledge(e.frame.call_id));
          }
          break;
        case "retry":
          this.rateTimer ??= setTimeout(() => {
            this.rateTimer = undefined;
            this.run(this.book.resendCalls());
          }, e.afterMs);
          break;
        case "call":
          this.provider.call(e.call);
          break;
        case "cancel":
          this.provider.cancel(e.frame.call_id, e.frame.reason);
          break;
        case "log":
          this.log(e.line);
          break;
        default:
          break;
      }
    }
  }

  private settled(callId: string, outcome: Outcome): void {
    const w = this.waiting.get(callId);
    if (!w) return;
    this.waiting.delete(callId);
    w.cleanup();
    if ("error" in outcome) w.reject(new LineUpError(outcome.error.code, outcome.error.message));
    else w.resolve(outcome.result);
  }

  private onDecoded(d: Decoded): void {
    if ("placeholder" in d) return; // an elided sealed message: nothing in it to hand over
    if ("badCall" in d) return this.answer(d.badCall, { error: { code: "invalid_arguments", message: d.why } });
    if ("rtc" in d) return this.onSignal(d.rtc);
    if ("unopenable" in d) {
      // Never shown as ciphertext; a call or result it belongs to ends.
      const u = d.unopenable;
      this.log(`end-to-end: a ${u.type} frame does not open (${d.why}); ignored`);
      if (u.type === "tool.result" && u.call_id)
        this.run(
          this.book.fail(u.call_id, { code: "e2e_open_failed", message: `the result of ${u.call_id} does not open with this machine's keys: ${d.why}` }),
        );
      else if (u.type === "tool.call" && u.call_id)
        this.answer(
          { call_id: u.call_id, name: u.name ?? "", ...(u.action !== undefined ? { action: u.action } : {}) },
          { error: { code: "e2e_open_failed", message: "the agent could not open this call's sealed arguments" } },
        );
      return;
    }
    const f: RelayFrame = d.frame;
    if (f.type === "tool.list") {
      this.appTools = f.tools;
      this.emit("tools", f.tools);
    } else if (f.type === "presence") {
      this.presence = peersToPresence(f);
      this.emit("presence", this.presence);
    } else if (f.type === "message") this.emit("message", f);
    else if (this.paths.accept("relay", f)) this.run(this.book.receive(f));
  }

  private async refreshKeys(): Promise<void> {
    try {
      await this.keyring?.sync();
    } catch (e) {
      this.log(`end-to-end: fetching the inbox's keys failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private onNewEpoch(ck: ContentKey): void {
    if (!this.codec.sealed || !this.book.online) return;
    this.log(`end-to-end: key epoch ${ck.epoch}; re-sealing ${this.book.pendingCount} open call(s)`);
    this.run(this.book.newEpoch());
  }

  // ------------------------------------------------------------------ calls we make

  call(name: string, action: string | undefined, args: Record<string, unknown> = {}, opts: CallOptions = {}): Promise<ToolResultBody> {
    return new Promise<ToolResultBody>((resolve, reject) => {
      if (this.stopped) return reject(new LineUpError(this.lastError?.code ?? "closed", this.lastError?.message ?? "the client is closed"));
      const callId = opts.callId ?? `c_${randomId(12)}`;
      if (this.book.isPending(callId)) return reject(new LineUpError("duplicate_call", `call_id "${callId}" is already open in this client`));
      const sealed = this.sealed ? { hasKey: !!this.keyring?.current(), appTools: this.appTools } : undefined;
      const frame = callFrameOf({ callId, name, action, args, timeoutS: opts.timeoutS }, sealed);
      if (frame instanceof LineUpError) return reject(frame);
      const claimed = this.book.claim(callId);
      if (claimed) {
        this.waiting.set(callId, { resolve, reject, cleanup: () => {} });
        return this.run(claimed);
      }
      if (opts.signal?.aborted) return reject(new LineUpError("cancelled", "aborted before it was sent"));
      // A local backstop: the relay answers `timeout` itself at the deadline; this only fires if the relay
      // stays unreachable, so that every call ends.
      const limitS = clampTimeout(opts.timeoutS) + this.graceS;
      const timer = setTimeout(
        () => this.run(this.book.abort(callId, "timeout", { code: "timeout", message: `no result within ${limitS} s (the relay was unreachable)` })),
        limitS * 1000,
      );
      const onAbort = () => this.run(this.book.abort(callId, "aborted", { code: "cancelled", message: "the call was aborted" }));
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
      };
      this.waiting.set(callId, { resolve, reject, cleanup });
      this.run(this.book.call(frame, opts.callId !== undefined)); // offline: sent after the next hello
    });
  }

  // ------------------------------------------------------------------ tools we provide

  provide(def: ToolDef, handler: ToolHandler): void {
    this.run(this.book.provide(this.provider.provide(def, handler)));
  }

  private answer(f: { call_id: string; name: string; action?: string | undefined }, body: Outcome): void {
    this.run(this.book.answer(f, body));
  }

  // ------------------------------------------------------------------ messages, status, events

  send(content: string | ContentBlock[]): void {
    const blocks: ContentBlock[] = typeof content === "string" ? [{ type: "text", text: content }] : content;
    this.run(this.book.message({ type: "message", id: `m_${randomId(9)}`, content: blocks }));
  }

  setStatus(state: string, detail?: string): void {
    this.run(this.book.status(detail === undefined ? { type: "status", state } : { type: "status", state, detail }));
  }

  on<E extends keyof Events>(event: E, cb: (v: Events[E]) => void): () => void {
    return this.events.on(event, cb);
  }

  private emit<E extends keyof Events>(event: E, v: Events[E]): void {
    this.events.emit(event, v);
  }
}
