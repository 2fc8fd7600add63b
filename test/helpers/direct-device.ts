// The device side of the direct-path system tests (issue 32): a stand-in for the PWA — a raw app socket with the
// same client core the PWA uses (codec, call book, paths) and node-datachannel offering the channel. It checks the
// agent's answer's bind as the PWA does (plaintext: required; sealed: when there) and pins the machine's key.
// Both ends bind to 127.0.0.1 and pass only loopback candidates, so no private address is probed.
import nodeDataChannel from "node-datachannel";
import { DirectSide, type NdcModule } from "../../adapter/client/direct.js";
import { CallBook, type Effect } from "../../shared/client/call-book.js";
import { fromPeer, Paths, type PathName } from "../../shared/client/paths.js";
import { Codec, type CodecKeys } from "../../shared/client/codec.js";
import type { HelloFrame, RelayFrame, ToolCallOut } from "../../shared/contract/protocol.js";
import type { RawClient } from "./raw-client.js";

export const ndc: NdcModule = nodeDataChannel;
export const LOOPBACK = { ndc, bindAddress: "127.0.0.1", allowCandidate: (c: string) => / 127\.0\.0\.1 \d+ typ host/.test(c) };

/** The device: its relay socket, its direct path, and the same client core the PWA will use (codec, call book, paths). */
export class Device {
  readonly book = new CallBook({ unclaimed: "ack" });
  readonly paths = new Paths();
  /** Every copy of a call that arrived, with its path. */
  readonly arrivals: { callId: string; path: PathName }[] = [];
  /** Calls handed over to the person (the book's `call` effects). */
  readonly handed: ToolCallOut[] = [];
  readonly direct: DirectSide;
  readonly codec: Codec;
  /** The agent machine's direct key as this device pinned it (from the pairing link, else on first contact). */
  pin: string | undefined;
  /** Keys the device took an answer from: `first` when it pinned it then (trust on first use). */
  readonly accepted: { key: string; first: boolean }[] = [];
  /** What the codec and the direct path logged (drops and refusals). */
  readonly logs: string[] = [];

  constructor(
    readonly app: RawClient,
    readonly agentId: string,
    o: { sessionId: string; sender: string; hello?: HelloFrame; keys?: CodecKeys; pin?: string },
  ) {
    this.pin = o.pin;
    this.codec = new Codec({
      sessionId: o.sessionId,
      sender: () => o.sender,
      keys: o.keys,
      log: (l) => this.logs.push(l),
      write: (w) => (app.send(w), true),
      deliver: (d) => {
        if ("rtc" in d) this.direct.signal(d.rtc.from.client_id, d.rtc.id, d.rtc.signal);
        else if ("frame" in d && d.frame.type === "tool.call") this.in("relay", d.frame);
      },
    });
    if (o.hello) this.codec.hello(o.hello);
    this.direct = new DirectSide({
      ...LOOPBACK,
      log: (l) => this.logs.push(l),
      send: (to, id, signal) => this.codec.signal(to, `agent:${to}`, id, signal),
      frame: (f) => this.in("direct", fromPeer(f, { role: "agent", clientId: agentId }, Date.now())),
      state: (peer) => this.paths.setDirect(peer),
      verify: {
        sessionId: o.sessionId,
        selfId: o.sender.slice("app:".length),
        required: !o.keys,
        pinned: () => this.pin,
        accepted: (key, first) => {
          this.accepted.push({ key, first });
          this.pin ??= key;
        },
      },
    });
    app.ws.on("message", (data: Buffer) => {
      const f = JSON.parse(data.toString("utf8")) as Record<string, unknown>;
      if (f.type !== "hello") this.codec.in(f);
    });
    this.run(this.book.hello());
  }

  private in(path: PathName, f: RelayFrame | undefined): void {
    if (!f) return;
    if (f.type === "tool.call") this.arrivals.push({ callId: f.call_id, path });
    if (this.paths.accept(path, f)) this.run(this.book.receive(f));
  }

  answer(call: ToolCallOut, message: string): void {
    this.run(this.book.answer(call, { result: { message } }));
  }

  /** Answers with the relay stalled: the answer goes on the direct path now, its relay copy only on `release()`. */
  answerWithRelayStalled(call: ToolCallOut, message: string): { release: () => void } {
    const held = this.book.answer(call, { result: { message } }).flatMap((e) => (e.kind === "send" ? [e.frame] : []));
    for (const f of held) this.paths.alsoDirect(f);
    return { release: () => held.forEach((f) => this.codec.out(f)) };
  }

  private run(fx: Effect[]): void {
    for (const e of fx) {
      if (e.kind === "send") {
        this.codec.out(e.frame);
        this.paths.alsoDirect(e.frame);
      }
      if (e.kind === "call") this.handed.push(e.call);
    }
  }
}
