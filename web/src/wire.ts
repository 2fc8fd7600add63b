// The codec as one session's connection (web/src/conn.ts) uses it: a plaintext session's frames pass as they
// are; a sealed session's go through the clients' one codec (shared/client/codec.ts), which comes with the lazy
// e2e chunk (web/src/e2e/codec.ts) — a plaintext session never loads it. Frames wait here for that chunk one
// after another, so their order stays; what the sealed codec could not open is turned into what the screen
// shows instead (a card or message that says so, never the ciphertext).
import type { Decoded, HelloVerdict, Unopenable } from "../../shared/client/codec.js";
import { isRelayFrame, type RawFrame } from "../../shared/client/socket.js";
import type { ClientFrame, HelloFrame, MessageOut, RtcSignal, ToolCallOut, ToolCancelOut } from "../../shared/contract/protocol.js";
import type { InboxLink, SealedCodec } from "./e2e/index.js";

/** Plaintext or sealed, frames in and out. */
export interface Wire {
  readonly sealed: boolean;
  hello(h: HelloFrame): HelloVerdict;
  in(f: RawFrame): void;
  out(f: ClientFrame, onUnsent?: () => void, fresh?: boolean): void;
  refresh(): void;
  /** Issue 32: one direct-path handshake signal to the client `to` (`toKey`: its `<role>:<client_id>`, sealed inside). */
  signal(to: string, toKey: string, id: string, s: RtcSignal): void;
}

export interface WireHost {
  readonly sid: string;
  readonly clientId: string;
  readonly inbox: InboxLink | undefined;
  /** Puts a frame on the current socket; false when there is none past `hello`. */
  write(w: object): boolean;
  deliver(d: Decoded): void;
  /** A plaintext session's `rtc.signal` as it came (web/src/direct-link.ts checks it). */
  rtcRaw(f: RawFrame): void;
  /** Whether this device holds a key of the inbox, learnt again. */
  noKey(missing: boolean): void;
  /** The current connection's number: a frame of an older one is not handled. */
  link(): number;
}

/** A plaintext session's codec: frames as they are. */
export function plainWire(h: WireHost): Wire {
  return {
    sealed: false,
    hello: (f) => ({ ok: true, frame: f }),
    in: (f) => (f.type === "rtc.signal" ? h.rtcRaw(f) : isRelayFrame(f) && h.deliver({ frame: f })),
    out: (f, onUnsent) => h.write(f) || onUnsent?.(),
    refresh: () => undefined,
    signal: (to, _toKey, id, signal) => void h.write({ type: "rtc.signal", id, to, signal }),
  };
}

export class SealedWire {
  private codec: Promise<SealedCodec> | undefined;
  private sc: SealedCodec | undefined;
  private inQ: Promise<unknown> | undefined;
  /** Frames that came before the sealed hello (the status's message history), opened after it. */
  private early: RawFrame[] = [];

  constructor(private readonly h: WireHost) {}

  /** Frames already wait for the sealed codec (a sealed hello came, or the session is sealed). */
  get active(): boolean {
    return this.inQ !== undefined;
  }

  /** This device holds a key of the inbox (undefined until the chunk loaded). */
  hasKey(): boolean | undefined {
    return this.sc?.hasKey();
  }

  /** The sealed codec, loaded once with the e2e chunk; a chunk that failed to load is tried again. */
  load(): Promise<SealedCodec> {
    const h = this.h;
    const p = (this.codec ??= import("./e2e/index.js").then((m) =>
      m.sealedCodec(h.inbox, {
        sessionId: h.sid,
        sender: () => `app:${h.clientId}`,
        // Only a sealed session loads it, and it is pinned by then (conn.ts markSealed): a plaintext hello is refused (issue 26).
        pinned: true,
        write: (w) => h.write(w),
        deliver: (d) => h.deliver(d),
      }),
    ));
    p.then(
      (s) => {
        this.sc = s;
        h.noKey(!s.hasKey());
      },
      () => this.codec === p && (this.codec = undefined),
    );
    return p;
  }

  /** A frame from the relay, handled by `decode` with the sealed codec once it is there, after the ones before it. */
  in(f: RawFrame, decode: (w: Wire, f: RawFrame) => void): void {
    const link = this.h.link();
    this.inQ = (this.inQ ?? Promise.resolve())
      .then(() => this.load())
      .then((s) => this.h.link() === link && decode(s.codec, f))
      .catch(() => undefined);
  }

  /** A frame that came before the sealed hello; opened after it. */
  keep(f: RawFrame): void {
    this.early.push(f);
  }

  /** After the sealed hello: what came before it, opened. */
  flush(w: Wire): void {
    const early = this.early;
    this.early = [];
    for (const f of early) w.in(f);
    const has = this.sc?.hasKey();
    if (has !== undefined) this.h.noKey(!has);
  }

  /** New keys for the inbox: the keyring is read again before the next frame is opened. */
  reset(): void {
    const reset = this.codec?.then((s) => s.reset()).then(() => this.sc && this.h.noKey(!this.sc.hasKey()));
    if (this.inQ) this.inQ = this.inQ.then(() => reset).catch(() => undefined);
  }

  /** Seals the outbox for localStorage (never plaintext at rest). */
  async sealAll(frames: readonly object[]): Promise<Record<string, unknown>[]> {
    return (await this.load()).sealAll(frames);
  }

  /** Null when a sealed call's opened arguments fit the app's tool schema, else why not (docs/e2e.md rule 2). */
  check(call: ToolCallOut): string | null {
    return this.sc ? this.sc.check(call.name, call.action, call.arguments) : null;
  }
}

/** What the screen shows for a sealed frame that does not open here. */
export type Shown = { call: ToolCallOut } | { message: MessageOut } | { cancel: ToolCancelOut } | { ack: string } | undefined;

export function unopenable(u: Unopenable): Shown {
  if (!u.call_id && u.type !== "message") return undefined;
  const id = u.call_id ?? "";
  switch (u.type) {
    case "tool.call": {
      const action = u.action !== undefined ? { action: u.action } : {};
      return { call: { type: "tool.call", call_id: id, name: u.name ?? "", arguments: {}, deadline: u.deadline ?? Date.now(), from: "agent", ...action } };
    }
    case "message":
      return u.id ? { message: { type: "message", id: u.id, from: u.from ?? { role: "agent", client_id: "" }, content: [], ts: Date.now() } } : undefined;
    case "tool.cancel":
      return { cancel: { type: "tool.cancel", call_id: id, reason: u.reason === "answered" || u.reason === "timeout" ? u.reason : "cancelled" } };
    case "tool.result":
      // This app makes no calls: acknowledged unread.
      return { ack: id };
    default:
      return undefined;
  }
}
