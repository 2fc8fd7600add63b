// The provider side of one session's calls on this device, a host of the clients' one call book
// (shared/client/call-book.ts, provider side): the book decides (calls de-duplicated, answers sent or queued
// until the next `hello` and re-sent when the relay delivers their call again, the end of the catch-up, late
// answers that lost) and this file shows it — the cards (web/src/calls.ts) and the outbox in localStorage, so
// an answer or message made offline survives a reload. A sealed session's outbox is kept only sealed
// (`keepSealed`, docs/e2e.md: no plaintext at rest); a plaintext one as its frames.
import type { RelayFrame, ToolCallOut, ToolCancelOut } from "../../shared/contract/protocol.js";
import { CallBook, type Effect, type MessageFrame, type ResultFrame } from "../../shared/client/call-book.js";
import type { ClientFrame } from "../../shared/contract/protocol.js";
import type { ClosedCall } from "../../shared/contract/push.js";
import { CallLog, type CallEntry, type CallState } from "./calls.js";
import type { Answer } from "./tools/calculator.js";
import { readJson, remove, writeJson } from "./storage.js";

export interface ProviderHost {
  /** Sends (through the codec: sealed in a sealed session); `unsent` puts it back in the outbox. */
  send(f: ClientFrame, unsent: (() => void) | undefined, fresh: boolean): void;
  /** Sealed: fetch the newest key; re-seal an open call (the PWA makes no calls: unused). */
  refresh(): void;
  /** Our answer lost the race (another device answered first, or the call closed). */
  lost(): void;
  /** A queued message went out. */
  sent(messageId: string): void;
  /** A new call of a tool this app answers itself (web/src/tools/auto.ts). */
  auto(c: CallEntry): void;
  /** A sealed session: nothing of the outbox is written to localStorage in plaintext. */
  sealed(): boolean;
  /** Writes the outbox sealed (a sealed session). */
  keepSealed(frames: readonly (MessageFrame | ResultFrame)[]): void;
  /** Issue 32: an answer made while the relay is down also goes on the direct path when it is open (true: it went). */
  alsoDirect?(f: ResultFrame): boolean;
  log?(line: string): void;
}

/** How a received call is shown: a card, a card that cannot be opened here, or refused (invalid arguments). */
export type CallMode = { unreadable: true } | { invalid: string } | undefined;

/** A frame kept in the outbox: a plaintext answer or message, or (sealed session) its envelope. */
type Kept = Record<string, unknown>;

export class Provider {
  readonly log: CallLog;
  readonly book = new CallBook({ catchUp: true, unclaimed: "ack" });
  /** Envelopes a sealed session kept in an earlier page load: sent as they are after the next hello. */
  private sealedKept: Kept[] = [];
  private mode: CallMode;

  constructor(
    private readonly sid: string,
    private readonly host: ProviderHost,
    private readonly isAuto: (name: string) => boolean,
  ) {
    this.log = new CallLog(sid, () => !host.sealed());
    // The cards kept across a reload go back into the book (an open one, or an answered one whose answer may be re-sent).
    for (const c of this.log.calls.value) {
      const call: ToolCallOut = {
        type: "tool.call",
        call_id: c.call_id,
        name: c.name,
        arguments: c.args,
        deadline: c.deadline,
        from: "agent",
        ...(c.action !== undefined ? { action: c.action } : {}),
      };
      const answered = c.state === "answered" || c.state === "queued";
      const a = answered && !c.slim ? resultFrame(c, c.result ? { result: c.result } : c.error ? { error: c.error } : undefined) : undefined;
      this.book.adopt(call, c.state === "pending" ? "open" : answered ? "answered" : "closed", a);
    }
    const kept = readJson<Kept[]>(this.key, []);
    this.sealedKept = kept.filter((f) => "sealed" in f);
    this.book.requeue(kept.filter((f): f is MessageFrame | ResultFrame => !("sealed" in f) && (f.type === "message" || f.type === "tool.result")));
  }

  private get key(): string {
    return `outbox.${this.sid}`;
  }

  /** Drops what this device kept of the calls (the session is forgotten). */
  forget(): void {
    this.log.forget();
    remove(this.key);
  }

  find(callId: string): CallEntry | undefined {
    return this.log.find(callId);
  }

  /** A new connection said hello: the registration, the catch-up query and what waited in the outbox go out. */
  hello(write: (f: Kept) => boolean): void {
    this.run(this.book.hello());
    this.sealedKept = this.sealedKept.filter((f) => !write(f));
    this.persist();
  }

  /** A frame about calls (opened, in a sealed session); `mode` says how a call that did not open is shown. */
  receive(f: RelayFrame, mode?: CallMode, resealed = false): void {
    const known = f.type === "tool.call" && !mode ? this.find(f.call_id) : undefined;
    // A re-sealed call (or one that did not open before) replaces its card: never asked twice; a pending one keeps its state.
    if (f.type === "tool.call" && known && (resealed || known.unreadable))
      this.log.update(f.call_id, { args: f.arguments, unreadable: false, deadline: f.deadline });
    this.mode = mode;
    try {
      this.run(this.book.receive(f));
    } finally {
      this.mode = undefined;
    }
    this.persist();
  }

  /** New keys: the cards that did not open go, and the book takes their calls as closed, so the catch-up shows them again. */
  dropUnreadable(): void {
    for (const c of this.log.calls.value)
      if (c.unreadable) this.book.adopt({ type: "tool.call", call_id: c.call_id, name: c.name, arguments: {}, deadline: c.deadline, from: "agent" }, "closed");
    this.log.filter((c) => !c.unreadable);
  }

  /** Answers a pending call: sent now, or queued until the next `hello`. */
  answer(callId: string, a: Answer, by: "me" | "auto"): boolean {
    const c = this.find(callId);
    if (!c || c.state !== "pending") return false;
    const online = this.book.online;
    this.run(this.book.answer(c, a));
    // Offline, the answer waits for the relay in the outbox; the agent may take it now over the direct path.
    const kept = online ? undefined : this.book.queued.find((f): f is ResultFrame => f.type === "tool.result" && f.call_id === callId);
    const direct = kept !== undefined && this.host.alsoDirect?.(kept) === true;
    this.log.update(callId, { state: online || direct ? "answered" : "queued", by, doneAt: Date.now(), ...a });
    this.persist();
    return true;
  }

  /** A chat message: sent now, or queued like answers. */
  message(f: MessageFrame): boolean {
    const online = this.book.online;
    this.run(this.book.message(f));
    this.persist();
    return online;
  }

  /**
   * The inbox's list of calls that recently left its Waiting list (`recent`: who answered, and what in a
   * plaintext session) names the winner the relay's cancel could not: it went out while this device was away,
   * so an answer queued offline that lost, or a card found closed on the way back, said "another device"
   * (issue 28 item 4). Only cards that name no winner yet; an answer of another tab of this device stays its own.
   */
  fromRecent(recent: readonly ClosedCall[]): boolean {
    let named = false;
    for (const r of recent) {
      const c = r.outcome === "answered" && r.by ? this.find(r.call_id) : undefined;
      if (!c || c.answeredBy || c.tab || (c.state !== "lost" && c.state !== "gone")) continue;
      // A sealed session's list has no answer: one the relay puts there anyway is its own words, never shown (issue 26).
      const answer = r.answer !== undefined && !this.host.sealed() ? { answerText: r.answer } : {};
      this.log.update(c.call_id, { state: c.state === "gone" ? "elsewhere" : "lost", answeredBy: r.by, ...answer });
      named = true;
    }
    return named;
  }

  settle(callId: string, state: CallState, by: CallEntry["by"], extra: Partial<CallEntry> = {}): void {
    if (this.log.settle(callId, state, by, extra) === "lost") this.host.lost();
  }

  /** Expires pending calls whose deadline passed while the relay could not tell us (we were offline). */
  sweep(now: number): void {
    for (const c of this.log.calls.value) if ((c.state === "pending" || c.state === "queued") && c.deadline <= now) this.settle(c.call_id, "timeout", "other");
  }

  /** Writes the outbox: plaintext frames for a plaintext session, envelopes for a sealed one. */
  persist(): void {
    const q = this.book.queued;
    if (this.host.sealed()) {
      if (q.length) this.host.keepSealed(q);
      else if (!this.sealedKept.length) remove(this.key);
      return;
    }
    if (q.length) writeJson(this.key, q);
    else remove(this.key);
  }

  /** Sealed envelopes of the outbox, written by the e2e chunk (with those kept from an earlier page load). */
  writeSealed(envelopes: Kept[]): void {
    writeJson(this.key, [...this.sealedKept, ...envelopes]);
  }

  private run(fx: Effect[]): void {
    for (const e of fx) {
      switch (e.kind) {
        case "send": {
          const f = e.frame;
          const unsent = f.type === "message" || f.type === "tool.result" ? () => (this.book.unsent(f), this.persist()) : undefined;
          this.host.send(f, unsent, e.fresh === true);
          break;
        }
        case "refresh":
          this.host.refresh();
          break;
        case "call":
          this.onCall(e.call, e.again === true);
          break;
        case "cancel": {
          // With reason "answered" the relay also says by whom (a device's name or a client id) and what.
          const f = e.frame;
          this.settle(f.call_id, f.reason === "answered" ? "elsewhere" : f.reason === "timeout" ? "timeout" : "cancelled", "other", winner(f));
          break;
        }
        case "lost": {
          // Our answer arrived after another device's (or after the call closed): say so, and with the
          // relay's cancel (it came before the refusal) whose answer won and what.
          const c = this.find(e.callId);
          const f = e.cancel;
          if (!c || !(c.state === "answered" || c.state === "queued" || c.state === "pending") || this.inTab(e.callId)) break;
          if (f && f.reason !== "answered") this.log.update(e.callId, { state: f.reason === "timeout" ? "timeout" : "cancelled", by: "other" });
          else {
            const w = f ? winner(f) : {};
            this.log.update(e.callId, { state: "lost", by: "other", ...w });
            // The card names the winner; the banner is for a loss it cannot explain.
            if (!w.answeredBy) this.host.lost();
          }
          break;
        }
        case "delivered":
          if (e.frame.type === "tool.result" && this.find(e.frame.call_id)?.state === "queued") this.log.update(e.frame.call_id, { state: "answered" });
          else if (e.frame.type === "message" && e.frame.id !== undefined) this.host.sent(e.frame.id);
          break;
        case "gone": {
          // Calls still pending here that the relay did not deliver again closed while we were away.
          const now = Date.now();
          for (const id of e.callIds) {
            const c = this.find(id);
            if (c?.state === "pending" && !this.inTab(id)) this.settle(id, c.deadline <= now ? "timeout" : "gone", "other");
          }
          break;
        }
        case "log":
          this.host.log?.(e.line);
          break;
        default:
          break;
      }
    }
  }

  /** Another tab of this device answered the call (the log it kept says so): this tab shows that answer, never "lost" or "gone". */
  private inTab(callId: string): boolean {
    const kept = this.log.answeredInTab(callId);
    if (kept)
      this.log.update(callId, { state: kept.state, by: "me", tab: true, doneAt: kept.doneAt ?? Date.now(), ...(kept.result ? { result: kept.result } : {}) });
    return kept !== undefined;
  }

  private onCall(call: ToolCallOut, again: boolean): void {
    const mode = this.mode;
    if (mode && "invalid" in mode) {
      // Validation moved to the receiver (docs/e2e.md rule 2): refused before anything is rendered.
      this.run(this.book.answer(call, { error: { code: "invalid_arguments", message: mode.invalid } }));
      return;
    }
    const known = this.find(call.call_id);
    if (known) {
      if (again && (known.state === "gone" || known.state === "elsewhere")) this.log.update(call.call_id, { state: "pending" });
      return;
    }
    const entry: CallEntry = { call_id: call.call_id, name: call.name, args: call.arguments ?? {}, deadline: call.deadline, at: Date.now(), state: "pending" };
    if (call.action !== undefined) entry.action = call.action;
    if (call.via) entry.via = call.via;
    if (mode) entry.unreadable = true; // never the ciphertext: the card says it cannot be opened here
    this.log.add(entry);
    if (!mode && this.isAuto(call.name)) this.host.auto(entry);
  }
}

/** What a tool.cancel{answered} says of the winner: the answering device's name (or client id) and its result's message. */
function winner(f: ToolCancelOut): Partial<CallEntry> {
  const w: Partial<CallEntry> = {};
  if (f.reason !== "answered") return w;
  if (typeof f.answered_by === "string" && f.answered_by) w.answeredBy = f.answered_by;
  if (typeof f.answer === "string") w.answerText = f.answer;
  return w;
}

function resultFrame(c: CallEntry, a: Answer | undefined): ResultFrame | undefined {
  if (!a) return undefined;
  return { type: "tool.result", call_id: c.call_id, name: c.name, ...(c.action !== undefined ? { action: c.action } : {}), ...a };
}
