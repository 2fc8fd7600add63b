// The provider side of one session's calls on this device (web/src/conn.ts drives it with plaintext frames):
// calls received once, answers sent or kept in the outbox until the next `hello`, an answer re-sent when the
// relay delivers its call again, the end of the relay's catch-up (calls not delivered again closed while we
// were away), and calls closed elsewhere, by the agent or by the clock.
import type { RelayFrame, ToolCallOut } from "../../shared/contract/protocol.js";
import { CallLog, type CallEntry, type CallState } from "./calls.js";
import { frameId, Outbox, type Loose, type OutFrame } from "./outbox.js";
import type { Answer } from "./tools/calculator.js";

export interface ProviderHost {
  /** Sends now; false when there is no connection past `hello`. */
  send(f: OutFrame | Loose): boolean;
  /** Keeps a frame for the next `hello` (a sealed session seals it first). */
  queue(f: OutFrame | Loose): void;
  /** Our answer lost the race (another device answered first, or the call closed). */
  lost(): void;
  /** A queued message went out. */
  sent(messageId: string): void;
  /** A new call of a tool this app answers itself (web/src/tools/auto.ts). */
  auto(c: CallEntry): void;
}

type Cancel = Extract<RelayFrame, { type: "tool.cancel" }>;
type Err = Extract<RelayFrame, { type: "error" }>;

export class Provider {
  readonly log: CallLog;
  readonly outbox: Outbox;
  /** The relay's catch-up after `hello` ends with the answer to our second `tool.list`. */
  private lists = 0;
  private seen = new Set<string>();
  /** Answers sent on the current connection: the relay's catch-up re-delivers their calls right after
   * hello, and sending them again would only earn an `unknown_call` that looks like a lost race. */
  private answered = new Set<string>();

  constructor(
    sid: string,
    kept: () => boolean,
    private readonly host: ProviderHost,
    private readonly isAuto: (name: string) => boolean,
  ) {
    this.log = new CallLog(sid, kept);
    this.outbox = new Outbox(sid);
  }

  /** A frame about calls: a call, its cancel, an error about our answer, or a result (acknowledged unread: this
   * app makes no calls of its own, so the relay may forget anything kept for it). */
  receive(f: RelayFrame): void {
    if (f.type === "tool.call" && "arguments" in f) this.call(f);
    else if (f.type === "tool.cancel") this.cancel(f);
    else if (f.type === "error") this.error(f);
    else if (f.type === "tool.result") this.host.send({ type: "tool.ack", call_id: f.call_id });
  }

  /** Drops what this device kept of the calls (the session is forgotten). */
  forget(): void {
    this.log.forget();
    this.outbox.forget();
  }

  find(callId: string): CallEntry | undefined {
    return this.log.find(callId);
  }

  /** A new connection said hello (the registration went out first): send what waited in the outbox. */
  hello(): void {
    this.lists = 0;
    this.seen = new Set();
    this.answered = new Set();
    for (const f of this.outbox.flush((f) => this.host.send(f))) {
      const id = frameId(f);
      if (f.type === "tool.result") {
        this.answered.add(id);
        if (this.find(id)?.state === "queued") this.log.update(id, { state: "answered" });
      } else if (f.type === "message") this.host.sent(id);
    }
  }

  /** A `tool.list` from the relay: the second after `hello` ends the catch-up. */
  toolList(): void {
    if (++this.lists !== 2) return;
    // Calls still pending here that the relay did not deliver again have closed while we were away.
    const stale = this.log.calls.value.filter((c) => c.state === "pending" && !this.seen.has(c.call_id));
    for (const c of stale) this.settle(c.call_id, c.deadline <= Date.now() ? "timeout" : "gone", "other");
  }

  call(f: ToolCallOut): void {
    this.seen.add(f.call_id);
    const known = this.find(f.call_id);
    if (known) {
      if (known.state === "gone" || known.state === "elsewhere") this.log.update(f.call_id, { state: "pending" });
      // Delivered again although we answered: the answer was lost with the old socket (sent while it was
      // closing). The call is still open, so send the same answer again.
      const a: Answer | undefined = known.result ? { result: known.result } : known.error ? { error: known.error } : undefined;
      if (known.state === "answered" && !known.slim && !this.answered.has(f.call_id) && a) this.host.send(resultFrame(known, a));
      return;
    }
    const entry: CallEntry = { call_id: f.call_id, name: f.name, args: f.arguments ?? {}, deadline: f.deadline, at: Date.now(), state: "pending" };
    if (f.action !== undefined) entry.action = f.action;
    this.log.add(entry);
    if (this.isAuto(f.name)) this.host.auto(entry);
  }

  /** The relay delivered this call on the current connection (a sealed one: web/src/e2e/inbound.ts sealedCall). */
  saw(callId: string): void {
    this.seen.add(callId);
  }

  send(f: OutFrame): boolean {
    return this.host.send(f);
  }

  cancel(f: Cancel): void {
    // With reason "answered" the relay also says by whom (a device's name or a client id) and what.
    const extra: Partial<CallEntry> = {};
    if (f.reason === "answered") {
      if (typeof f.answered_by === "string" && f.answered_by) extra.answeredBy = f.answered_by;
      if (typeof f.answer === "string") extra.answerText = f.answer;
    }
    this.settle(f.call_id, f.reason === "answered" ? "elsewhere" : f.reason === "timeout" ? "timeout" : "cancelled", "other", extra);
    this.outbox.drop(f.call_id);
  }

  error(f: Err): void {
    if (f.code !== "unknown_call" || !f.call_id) return;
    // Our answer arrived after another device's (or after the call closed): say so.
    const e = this.find(f.call_id);
    if (e && (e.state === "answered" || e.state === "queued" || e.state === "pending")) {
      this.log.update(f.call_id, { state: "lost", by: "other" });
      this.host.lost();
    }
    this.outbox.drop(f.call_id);
  }

  /** Answers a pending call: sent now, or queued until the next `hello`. */
  answer(callId: string, a: Answer, by: "me" | "auto"): boolean {
    const c = this.find(callId);
    if (!c || c.state !== "pending") return false;
    const frame = resultFrame(c, a);
    const sent = this.host.send(frame);
    if (sent) this.answered.add(callId);
    else this.host.queue(frame);
    this.log.update(callId, { state: sent ? "answered" : "queued", by, doneAt: Date.now(), ...a });
    return true;
  }

  settle(callId: string, state: CallState, by: CallEntry["by"], extra: Partial<CallEntry> = {}): void {
    const was = this.find(callId)?.state;
    const done = this.log.settle(callId, state, by, extra);
    if (done === "lost") this.host.lost();
    else if (done === "settled" && was === "queued") this.outbox.drop(callId);
  }

  /** Expires pending calls whose deadline passed while the relay could not tell us (we were offline). */
  sweep(now: number): void {
    for (const c of this.log.calls.value) if ((c.state === "pending" || c.state === "queued") && c.deadline <= now) this.settle(c.call_id, "timeout", "other");
  }
}

function resultFrame(c: CallEntry, a: Answer): OutFrame {
  return { type: "tool.result", call_id: c.call_id, name: c.name, ...(c.action !== undefined ? { action: c.action } : {}), ...a };
}
