// The call book: what a LineUp client must remember about calls, written once for every client (issue 27 §1).
// PURE — frames in, effects out, no I/O, no timers, no crypto: the host (adapter, PWA, MCP link) sends the
// `send` effects through the codec (shared/client/codec.ts) in order and acts on the rest. Both sides:
//  - caller (the agent, an MCP link): pending calls, settled ones (a repeated result is re-acked, never
//    delivered twice), acks, results of calls made by an earlier run (kept until claimed), cancels owed
//    while offline, re-send of OPEN calls after `hello` (an identical repeat is a no-op on the relay), and in
//    a sealed session the re-seal of open calls on a new key epoch or a `stale_epoch` refusal (bounded);
//  - provider (the PWA, an agent's own tools): calls received (de-duplicated by call_id), answered (the
//    answer kept: re-sent when the relay delivers the call again), answers queued while offline, the end of
//    the relay's catch-up after `hello` (calls that did not come again are gone), late answers that lost.
// Messages and the status are queued and re-sent like the rest (contract §4.2, §4.9, §4.10).
import type {
  ClientFrame,
  ClientFrameOf,
  ErrorOut,
  RelayFrame,
  ToolCallOut,
  ToolCancelOut,
  ToolDef,
  ToolResultBody,
  ToolResultOut,
} from "../contract/protocol.js";

export type CallFrame = ClientFrameOf<"tool.call">;
export type ResultFrame = ClientFrameOf<"tool.result">;
export type MessageFrame = ClientFrameOf<"message">;
export type StatusFrame = ClientFrameOf<"status">;
export type Outcome = { result: ToolResultBody } | { error: { code: string; message: string } };

export type Effect =
  /** Send this frame (sealed by the codec in a sealed session, in order). `fresh`: seal it anew, not the kept envelope. */
  | { kind: "send"; frame: ClientFrame; fresh?: true }
  /** Sealed: fetch the inbox's newest key before anything else is sealed. */
  | { kind: "refresh" }
  /** Sealed: seal this open call again under the current key (a `tool.reseal`); with `alsoCall` send the call itself too. */
  | { kind: "reseal"; call: CallFrame; alsoCall: boolean }
  /** Caller: a call ended; resolve or reject its promise. */
  | { kind: "settled"; callId: string; outcome: Outcome }
  /** Caller: a result for no call of this process (an earlier run's): kept, unacked, until claim()/acknowledge(). */
  | { kind: "unclaimed"; frame: ToolResultOut }
  /** Caller: the relay rate-limited us: call resendCalls() after this long. */
  | { kind: "retry"; afterMs: number }
  /** Provider: a call to handle (`again`: it had closed here, and the relay delivered it again). */
  | { kind: "call"; call: ToolCallOut; again?: true }
  /** Provider: the relay closed a call we were handling (answered elsewhere, cancelled, timed out). */
  | { kind: "cancel"; frame: ToolCancelOut }
  /** Provider: our answer came after the call closed (another device answered first, or it timed out); `cancel`:
   * the relay's tool.cancel{answered} that says who won, when it came (it precedes the relay's refusal). */
  | { kind: "lost"; callId: string; cancel?: ToolCancelOut }
  /** A queued answer or message went out after `hello`. */
  | { kind: "delivered"; frame: ClientFrame }
  /** Provider: the catch-up after `hello` is over; these calls did not come again, they closed while we were away. */
  | { kind: "gone"; callIds: string[] }
  | { kind: "log"; line: string };

export interface CallBookOptions {
  /** Remembered call ids (settled results, answers); oldest forgotten first. Default 2000. */
  memory?: number;
  /** Messages and answers kept while offline. Default 100 (oldest dropped). */
  outboxLimit?: number;
  /** Unclaimed results: "keep" them until claimed (the adapter), or "ack" them at once (the PWA makes no calls). */
  unclaimed?: "keep" | "ack";
  /** Provider: after `hello`, query the catalog; its answer ends the relay's catch-up (the PWA). */
  catchUp?: boolean;
}

export const CALL_BOOK_DEFAULTS = { memory: 2000, outboxLimit: 100, answersKept: 500, recentSealedMessages: 20, staleRetries: 3, rateRetryMs: 1000 } as const;

interface Pending {
  frame: CallFrame;
  /** The caller chose the call id (a re-run): a sealed `duplicate_call` means the open call is ours. */
  ownId: boolean;
  /** Sent at least once (in a sealed session it then has a kept envelope to re-seal). */
  sent: boolean;
}
interface Received {
  call: ToolCallOut;
  state: "open" | "answered" | "closed";
  answer?: ResultFrame;
}

/** A Map used as a bounded, insertion-ordered memory (oldest forgotten first). */
function remember<K, V>(m: Map<K, V>, k: K, v: V, limit: number): void {
  m.delete(k);
  m.set(k, v);
  while (m.size > limit) {
    const first = m.keys().next();
    if (first.done) break;
    m.delete(first.value);
  }
}

export class CallBook {
  /** Past `hello` on a live connection. */
  online = false;
  /** A sealed session (the codec's verdict on `hello`): stale-epoch and re-key handling apply. */
  sealed = false;
  private readonly o: Required<CallBookOptions>;
  private readonly pending = new Map<string, Pending>();
  private readonly settledIds = new Map<string, true>();
  private readonly unclaimedResults = new Map<string, ToolResultOut>();
  private readonly cancelLater = new Set<string>();
  private readonly received = new Map<string, Received>();
  private seenSinceHello = new Set<string>();
  private sentSinceHello = new Set<string>();
  private lists = 0;
  private outbox: (MessageFrame | ResultFrame)[] = [];
  private lastStatus: StatusFrame | undefined;
  private registration: ToolDef[] | undefined;
  private readonly recentMessages = new Map<string, MessageFrame>();
  private readonly staleTries = new Map<string, number>();
  private retryArmed = false;

  constructor(o: CallBookOptions = {}) {
    this.o = {
      memory: o.memory ?? CALL_BOOK_DEFAULTS.memory,
      outboxLimit: o.outboxLimit ?? CALL_BOOK_DEFAULTS.outboxLimit,
      unclaimed: o.unclaimed ?? "keep",
      catchUp: o.catchUp ?? false,
    };
  }

  /** Past `hello`, and (with `catchUp`) the relay's catch-up is over: every open call of ours has come again. */
  get caughtUp(): boolean {
    return this.online && (!this.o.catchUp || this.lists >= 2);
  }

  // ------------------------------------------------------------------ connection

  /** A `hello` arrived: register, then re-send what is owed (cancels, open calls, queued answers and messages, the status). */
  hello(): Effect[] {
    this.online = true;
    this.seenSinceHello = new Set();
    this.sentSinceHello = new Set();
    this.lists = 0;
    const out: Effect[] = [];
    if (this.registration && (this.registration.length > 0 || this.o.catchUp)) out.push(send({ type: "tool.list", tools: this.registration }));
    if (this.o.catchUp) out.push(send({ type: "tool.list" }));
    for (const id of this.cancelLater) out.push(send({ type: "tool.cancel", call_id: id, reason: "aborted" }));
    this.cancelLater.clear();
    for (const p of this.pending.values()) out.push(this.sendCall(p));
    const box = this.outbox;
    this.outbox = [];
    for (const f of box) {
      if (f.type === "tool.result") this.sentSinceHello.add(f.call_id);
      out.push(send(f), { kind: "delivered", frame: f });
    }
    if (this.lastStatus) out.push(send(this.lastStatus));
    return out;
  }

  /** The connection dropped: from now on frames are queued. */
  down(): void {
    this.online = false;
  }

  /** Stopped for good: every open call ends with `error`. */
  stop(error: { code: string; message: string }): Effect[] {
    this.online = false;
    const out: Effect[] = [];
    for (const id of [...this.pending.keys()]) out.push(this.settle(id, { error }));
    return out;
  }

  // ------------------------------------------------------------------ caller side

  /** Whether `callId` is open in this book. */
  isPending(callId: string): boolean {
    return this.pending.has(callId);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Makes a call: sent now, or after the next `hello`. */
  call(frame: CallFrame, ownId = false): Effect[] {
    const p: Pending = { frame, ownId, sent: false };
    this.pending.set(frame.call_id, p);
    return this.online ? [this.sendCall(p)] : [];
  }

  /** A kept result of an earlier run for `callId`: settled and acked now (undefined: none kept). */
  claim(callId: string): Effect[] | undefined {
    const kept = this.unclaimedResults.get(callId);
    if (!kept) return undefined;
    this.unclaimedResults.delete(callId);
    remember(this.settledIds, callId, true, this.o.memory);
    return [{ kind: "settled", callId, outcome: outcomeOf(kept) }, send({ type: "tool.ack", call_id: callId })];
  }

  /** An unclaimed result was handed over (to a `result` listener): ack it, and never again. */
  acknowledge(callId: string): Effect[] {
    this.unclaimedResults.delete(callId);
    remember(this.settledIds, callId, true, this.o.memory);
    return [send({ type: "tool.ack", call_id: callId })];
  }

  /** Ends an open call here (a local timeout, an abort): it fails with `error`, and the relay hears a cancel now or after `hello`. */
  abort(callId: string, reason: "timeout" | "aborted", error: { code: string; message: string }): Effect[] {
    if (!this.pending.has(callId)) return [];
    const out = [this.settle(callId, { error })];
    if (this.online) out.push(send({ type: "tool.cancel", call_id: callId, reason }));
    else this.cancelLater.add(callId);
    return out;
  }

  /** Ends an open call with `error` on this side only (its sealed result did not open here): settled and acked. */
  fail(callId: string, error: { code: string; message: string }): Effect[] {
    const out: Effect[] = this.pending.has(callId) ? [this.settle(callId, { error })] : [];
    return [...out, send({ type: "tool.ack", call_id: callId })];
  }

  /** Re-sends the open calls (after a rate-limit pause). */
  resendCalls(): Effect[] {
    this.retryArmed = false;
    return this.online ? [...this.pending.values()].map((p) => this.sendCall(p)) : [];
  }

  // ------------------------------------------------------------------ provider side

  /** The tools this client provides: registered after every `hello`, and now when online. */
  provide(tools: ToolDef[]): Effect[] {
    this.registration = tools;
    return this.online ? [send({ type: "tool.list", tools })] : [];
  }

  /** Answers a received call: sent now, or queued until the next `hello`. The answer is kept for a repeat delivery. */
  answer(call: { call_id: string; name: string; action?: string | undefined }, body: Outcome): Effect[] {
    const frame: ResultFrame = {
      type: "tool.result",
      call_id: call.call_id,
      name: call.name,
      ...(call.action !== undefined ? { action: call.action } : {}),
      ...body,
    };
    const r = this.received.get(call.call_id);
    if (r) {
      r.state = "answered";
      r.answer = frame;
      remember(this.received, call.call_id, r, CALL_BOOK_DEFAULTS.answersKept);
    }
    if (!this.online) {
      this.queue(frame);
      return [];
    }
    this.sentSinceHello.add(frame.call_id);
    return [send(frame)];
  }

  /** A host that keeps its calls across reloads (the PWA's localStorage) hands them back, before the first `hello`. */
  adopt(call: ToolCallOut, state: "open" | "answered" | "closed", answer?: ResultFrame): void {
    remember(this.received, call.call_id, { call, state, ...(answer ? { answer } : {}) }, this.o.memory);
  }

  /** What waits for the next `hello` (for a host that persists it), and putting it back after a reload. */
  get queued(): readonly (MessageFrame | ResultFrame)[] {
    return this.outbox;
  }
  requeue(frames: readonly (MessageFrame | ResultFrame)[]): void {
    for (const f of frames) this.queue(f);
  }

  /** Whether an answer of `callId` waits in the outbox. */
  isQueued(callId: string): boolean {
    return this.outbox.some((f) => f.type === "tool.result" && f.call_id === callId);
  }

  // ------------------------------------------------------------------ messages and status

  /** Sends a chat message now, or keeps it (bounded) until the next `hello`; its id lets the relay drop a repeat. */
  message(frame: MessageFrame): Effect[] {
    if (this.sealed && frame.id !== undefined) remember(this.recentMessages, frame.id, frame, CALL_BOOK_DEFAULTS.recentSealedMessages);
    if (!this.online) {
      this.queue(frame);
      return [];
    }
    return [send(frame)];
  }

  /** A frame the host could not send after all (the socket went while sealing): back into the outbox. */
  unsent(frame: MessageFrame | ResultFrame): void {
    this.queue(frame);
  }

  /** The latest status: sent now and after every `hello`. */
  status(frame: StatusFrame): Effect[] {
    this.lastStatus = frame;
    return this.online ? [send(frame)] : [];
  }

  // ------------------------------------------------------------------ frames from the relay (opened)

  /** A plaintext (or opened) frame from the relay; presence, messages and catalogs are also the host's to show. */
  receive(f: RelayFrame): Effect[] {
    switch (f.type) {
      case "tool.result":
        return this.onResult(f);
      case "tool.call":
        return this.onCall(f);
      case "tool.cancel":
        return this.onCancel(f);
      case "error":
        return this.onError(f);
      case "tool.list":
        if (this.o.catchUp && ++this.lists === 2) return this.afterCatchUp();
        return [];
      default:
        return [];
    }
  }

  /** Sealed: a new key epoch: open calls are re-sealed under it, and the registration and status sent again. */
  newEpoch(): Effect[] {
    if (!this.sealed || !this.online) return [];
    const out: Effect[] = [];
    for (const p of this.pending.values()) if (p.sent) out.push({ kind: "reseal", call: p.frame, alsoCall: false });
    if (this.registration?.length) out.push(send({ type: "tool.list", tools: this.registration }));
    if (this.lastStatus) out.push(send(this.lastStatus));
    return out;
  }

  private onResult(f: ToolResultOut): Effect[] {
    if (this.pending.has(f.call_id)) return [this.settle(f.call_id, outcomeOf(f)), send({ type: "tool.ack", call_id: f.call_id })];
    // Already handed over; the relay re-sent it because our ack was lost. Ack again, deliver nothing.
    if (this.settledIds.has(f.call_id) || this.o.unclaimed === "ack") return [send({ type: "tool.ack", call_id: f.call_id })];
    remember(this.unclaimedResults, f.call_id, f, 1000);
    return [{ kind: "unclaimed", frame: f }];
  }

  private onCall(f: ToolCallOut): Effect[] {
    this.seenSinceHello.add(f.call_id);
    const known = this.received.get(f.call_id);
    if (!known) {
      remember(this.received, f.call_id, { call: f, state: "open" }, this.o.memory);
      return [{ kind: "call", call: f }];
    }
    if (known.state === "open") return []; // already handling it (delivered again on a new connection)
    if (known.state === "closed") {
      known.state = "open";
      known.call = f;
      return [{ kind: "call", call: f, again: true }];
    }
    // Answered, yet delivered again: the answer was lost with the old socket; the call is still open.
    if (!known.answer || this.sentSinceHello.has(f.call_id) || this.isQueued(f.call_id)) return [];
    this.sentSinceHello.add(f.call_id);
    return [send(known.answer)];
  }

  private onCancel(f: ToolCancelOut): Effect[] {
    const r = this.received.get(f.call_id);
    if (!r) return [];
    const queued = this.dropQueued(f.call_id);
    // Our answer is queued, or sent and not yet refused: the call closed first (the relay sends no device a
    // cancel for its own answer). This cancel is the one place that says how: whose answer won, and what.
    if (queued || r.state === "answered") {
      r.state = "closed";
      return queued && f.reason !== "answered" ? [{ kind: "cancel", frame: f }] : [{ kind: "lost", callId: f.call_id, cancel: f }];
    }
    if (r.state !== "open") return [];
    r.state = "closed";
    return [{ kind: "cancel", frame: f }];
  }

  private onError(f: ErrorOut): Effect[] {
    if (f.code === "stale_epoch" && this.sealed) return this.onStale(f.call_id);
    const id = f.call_id;
    const p = id !== undefined ? this.pending.get(id) : undefined;
    if (id !== undefined && p) {
      // A sealed re-run of a call id the relay already holds: its envelope has a new nonce, so the relay sees
      // a different call (docs/e2e.md rule 4) — but the open call is ours, and its result comes here.
      if (p.ownId && this.sealed && f.code === "duplicate_call")
        return [{ kind: "log", line: `call ${id} is already open on the relay (made by an earlier run); waiting for its result` }];
      if (f.code !== "unknown_call") return [this.settle(id, { error: { code: f.code, message: f.message } })];
    }
    const out: Effect[] = [];
    if (id !== undefined && f.code === "unknown_call") {
      const r = this.received.get(id);
      const queued = this.dropQueued(id);
      if (r && r.state !== "closed") {
        r.state = "closed";
        out.push({ kind: "lost", callId: id });
      } else if (queued) out.push({ kind: "lost", callId: id });
    }
    // The relay's rate-limit error names no frame: re-send the open calls a little later (identical repeats are no-ops).
    if (f.code === "rate_limited" && this.pending.size > 0 && !this.retryArmed) {
      this.retryArmed = true;
      out.push({ kind: "retry", afterMs: CALL_BOOK_DEFAULTS.rateRetryMs });
    }
    out.push({ kind: "log", line: `relay error ${f.code}: ${f.message}` });
    return out;
  }

  /** `stale_epoch`: fetch the new key and seal the refused frame again (bounded). */
  private onStale(callId: string | undefined): Effect[] {
    const key = callId ?? "~frames";
    const n = (this.staleTries.get(key) ?? 0) + 1;
    remember(this.staleTries, key, n, 500);
    const p = callId !== undefined ? this.pending.get(callId) : undefined;
    if (n > CALL_BOOK_DEFAULTS.staleRetries) {
      const message = `the relay keeps refusing the key epoch this machine seals with (stale_epoch ${CALL_BOOK_DEFAULTS.staleRetries} times): \`lineup e2e status\``;
      if (p && callId !== undefined) return [this.settle(callId, { error: { code: "stale_epoch", message } })];
      return [{ kind: "log", line: `end-to-end: ${message}` }];
    }
    const out: Effect[] = [{ kind: "refresh" }];
    if (p) return [...out, { kind: "reseal", call: p.frame, alsoCall: true }];
    const answer = callId !== undefined ? this.received.get(callId)?.answer : undefined;
    if (answer) return [...out, { kind: "send", frame: answer, fresh: true }];
    // A message, the status or the tool list: send them again (message ids make repeats harmless).
    if (this.registration?.length) out.push(send({ type: "tool.list", tools: this.registration }));
    if (this.lastStatus) out.push(send(this.lastStatus));
    for (const m of this.recentMessages.values()) out.push(send(m));
    return out;
  }

  private afterCatchUp(): Effect[] {
    const ids: string[] = [];
    for (const [id, r] of this.received) {
      if (r.state === "open" && !this.seenSinceHello.has(id)) {
        r.state = "closed";
        ids.push(id);
      }
    }
    return ids.length ? [{ kind: "gone", callIds: ids }] : [];
  }

  private settle(callId: string, outcome: Outcome): Effect {
    this.pending.delete(callId);
    remember(this.settledIds, callId, true, this.o.memory);
    return { kind: "settled", callId, outcome };
  }

  private sendCall(p: Pending): Effect {
    p.sent = true;
    return send(p.frame);
  }

  private queue(f: MessageFrame | ResultFrame): void {
    this.outbox.push(f);
    if (this.outbox.length > this.o.outboxLimit) this.outbox.shift();
  }

  private dropQueued(callId: string): boolean {
    const before = this.outbox.length;
    this.outbox = this.outbox.filter((f) => f.type !== "tool.result" || f.call_id !== callId);
    return this.outbox.length !== before;
  }
}

const send = (frame: ClientFrame): Effect => ({ kind: "send", frame });

function outcomeOf(f: ToolResultOut): Outcome {
  if (f.error) return { error: { code: f.error.code, message: f.error.message } };
  return { result: f.result ?? { message: "" } };
}
