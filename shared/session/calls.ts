// Calls through the router: a new call (checked, stored, delivered), its result, cancel, re-seal and ack, the
// deadline's end, and the reserved HTTP caller (§7). Plain and sealed payloads take the same handler.
import {
  canonicalJson,
  clampTimeout,
  instanceIdOf,
  LIMITS,
  otherRole,
  utf8Length,
  type CallErrorCode,
  type InFrameOf,
  type SealedAnswer,
  type Role,
  type ToolCancelOut,
  type ToolResultOut,
  isSealedTool,
} from "../contract/protocol.js";
import { checkArguments } from "../contract/schema.js";
import { SEALED_ANSWER_MAX } from "../contract/envelope.js";
import { fingerprintHash } from "./hash.js";
import { RouterState, callFrame, HTTP_PEER, isInternal, keyOf, type Ctx, type Out, type Peer } from "./router-state.js";
import { sealedCallFrame } from "./sealed.js";
import { deliveriesOf, type CallRow, type Delivery } from "./store.js";

export class CallRouter extends RouterState {
  /** Open calls this connection can serve and has not yet received on this connection. */
  protected catchUp(peer: Peer, ctx: Ctx): Out[] {
    const out: Out[] = [];
    for (const c of this.store.openCalls()) {
      if (c.caller_role === peer.role || deliveriesOf(c).some((d) => d.conn === peer.conn)) continue;
      if (!this.serves(peer, c)) continue;
      out.push(...this.deliver(c, [peer], ctx));
    }
    return out;
  }

  private registered(peer: Peer): boolean {
    const key = keyOf(peer);
    return this.regs(peer.role).some((r) => r.key === key);
  }

  protected serves(peer: Peer, c: CallRow): boolean {
    if (c.target) return c.target === keyOf(peer);
    const key = keyOf(peer);
    return this.regs(peer.role).some((r) => r.key === key && r.tools.some((t) => t.name === c.name));
  }

  /** The call's frame for each of `to`; `record`: their deliveries are written now (a new call's went
   * into its insert). */
  protected deliver(c: CallRow, to: readonly Peer[], _ctx: Ctx, record = true): Out[] {
    const frame = this.sealed ? sealedCallFrame(c) : callFrame(c);
    return to.map((p) => {
      if (record) this.store.addDelivery(c, keyOf(p), p.conn);
      return { to: keyOf(p), conn: p.conn, frame };
    });
  }

  // ------------------------------------------------------------------ tool.call

  protected check(
    name: string,
    action: string | undefined,
    /** undefined for a sealed call: its arguments are the receiver's to validate. */
    args: Record<string, unknown> | undefined,
    side: Role,
    providerPresent: boolean,
  ): { target: string | null; known: boolean } | { error: CallErrorCode; message: string } {
    const def = this.catalog(side).find((t) => t.name === name);
    if (!def) {
      if (providerPresent) return { error: "unknown_tool", message: `no ${side} client provides the tool "${name}"` };
      return { target: null, known: false };
    }
    // A sealed definition keeps its schemas sealed (only action names are plain, and may be left out): the
    // receiver validates the arguments.
    let schema: Record<string, unknown> | undefined;
    if (def.type === "action") schema = isSealedTool(def) ? undefined : def.inputSchema;
    else if (def.actions) {
      const actions: readonly { name: string; inputSchema?: Record<string, unknown> }[] = def.actions;
      const a = actions.find((x) => x.name === action);
      if (!a) {
        const names = actions.map((x) => x.name).join(", ");
        return { error: "unknown_action", message: `${name} has no action "${action ?? ""}" (actions: ${names})` };
      }
      schema = a.inputSchema;
    }
    if (args === undefined || schema === undefined) return { target: null, known: true };
    const bad = checkArguments(schema, args);
    if (bad) return { error: "invalid_arguments", message: `${name}${action ? "." + action : ""}: ${bad}` };
    let target: string | null = null;
    if (def.type === "app" && typeof args.instance_id === "string") {
      target = this.store.instance(name, args.instance_id) ?? null;
      if (!target) return { error: "instance_gone", message: `${name} instance "${args.instance_id}" is not open` };
    }
    return { target, known: true };
  }

  /** A new call: plaintext arguments, or a sealed call's envelopes (kept in `args`, never validated here). */
  protected onToolCall(peer: Peer, f: InFrameOf<"tool.call">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    const body = f.args;
    const payload = "plain" in body ? body.plain : body.sealed;
    const args = JSON.stringify(payload);
    // A hash, not the canonical JSON itself: the arguments are kept once (and not at all once refused).
    // A sealed retry must resend the same envelope: a re-seal has a new nonce (docs/e2e.md rule 4).
    const fingerprint = fingerprintHash(
      canonicalJson({ name: f.name, action: f.action ?? null, ...("plain" in body ? { arguments: body.plain } : body.sealed), timeout_s: f.timeout_s ?? null }),
    );
    // The duplicate-call rule, applied before anything else is decided about a call_id in use. Its read is
    // only made when the insert (or a refusal) finds the id taken: a new call reads nothing first.
    const taken = (existing: CallRow): Out[] => {
      if (existing.caller === key && existing.fingerprint === fingerprint) {
        // An identical repeat is a safe retry: nothing new, but a kept result is sent again.
        return existing.status === "done" && existing.result ? [{ to: key, frame: JSON.parse(existing.result) as ToolResultOut }] : [];
      }
      return [this.err(peer, "duplicate_call", `call_id "${f.call_id}" is already in use in this session`, f.call_id)];
    };
    const timeout = clampTimeout(f.timeout_s);
    const side = otherRole(peer.role);
    const row: CallRow = {
      call_id: f.call_id,
      caller: key,
      caller_role: peer.role,
      name: f.name,
      action: f.action ?? null,
      args,
      timeout_s: f.timeout_s ?? null,
      deadline: ctx.now + Math.round(timeout * 1000),
      target: null,
      status: "open",
      checked: 0,
      result: null,
      keep_until: null,
      created_at: ctx.now,
      fingerprint,
      bytes: utf8Length(args),
      deliv: "[]",
    };
    // A refused call is answered and kept for the repeat rule, but without its arguments: stored closed at once,
    // in one insert (a tool.call is routed without a savepoint because it writes once: shared/session/engine.ts).
    const refuse = (code: CallErrorCode, message: string): Out[] => {
      const existing = this.store.getCall(f.call_id);
      if (existing) return taken(existing);
      const frame = this.resultFrame(row, { code, message });
      const result = JSON.stringify(frame);
      const keep = ctx.now + LIMITS.resultRetentionMs;
      this.store.insertCall({ ...row, args: "", status: "done", result, keep_until: keep, bytes: utf8Length(result), deliv: "[]" });
      return [{ to: key, frame }];
    };
    if (this.store.countOpen() >= LIMITS.maxOpenCalls) return refuse("too_many_calls", `the session already has ${LIMITS.maxOpenCalls} open calls`);
    if (!this.fits(row.bytes)) return refuse("over_budget", this.overBudget(`this call's ${row.bytes} bytes of arguments`));
    // A sealed session counts only providers that registered: a device without the key (paired before E2E, or
    // still waiting for its key) cannot, so the call waits for one that can, as a plaintext call waits for a phone.
    // So does a connection made with `?register=first` (the PWA dials before its code has loaded, issue 33).
    const providerPresent = ctx.peers.some((p) => p.role === side && !isInternal(p) && ((!this.sealed && !p.registerFirst) || this.registered(p)));
    const verdict = this.check(f.name, f.action, "plain" in body ? body.plain : undefined, side, providerPresent);
    if ("error" in verdict) return refuse(verdict.error, verdict.message);
    // Checked before it is stored: one insert, not an insert and an update.
    row.target = verdict.target;
    row.checked = verdict.known ? 1 : 0;
    // Its deliveries go into the same insert: one statement for a new call.
    const providers = ctx.peers.filter((p) => p.role === side && this.serves(p, row));
    row.deliv = JSON.stringify(providers.map((p): Delivery => ({ key: keyOf(p), conn: p.conn })));
    if (!this.store.insertCall(row)) return taken(this.store.getCall(f.call_id)!);
    return this.deliver(row, providers, ctx, false);
  }

  // ------------------------------------------------------------------ results, cancels, acks

  protected onToolResult(peer: Peer, frame: InFrameOf<"tool.result">, ctx: Ctx): Out[] {
    const sealed = "sealed" in frame.answer ? frame.answer.sealed : undefined;
    const plain = "plain" in frame.answer ? frame.answer.plain : undefined;
    const f = { call_id: frame.call_id, result: plain?.result, error: plain?.error };
    const c = this.store.getCall(f.call_id);
    const key = keyOf(peer);
    if (!c || c.status !== "open" || c.caller_role === peer.role || (c.target !== null && c.target !== key)) {
      return [this.err(peer, "unknown_call", `no open call "${f.call_id}" for you to answer`, f.call_id)];
    }
    // Only a client the call went to, or one whose registration serves it, may answer: holding the
    // session's token is not enough to answer a call meant for a device.
    if (!peer.virtual && !this.serves(peer, c) && !deliveriesOf(c).some((d) => d.key === key)) {
      return [this.err(peer, "unknown_call", `call "${f.call_id}" was not delivered to you`, f.call_id)];
    }
    // The result replaces the call's arguments in storage; past the budget it is refused and the call stays
    // open (a smaller answer, or an error, still closes it).
    const size = utf8Length(JSON.stringify(sealed?.sealed ?? f.result ?? f.error ?? null));
    if (!this.fits(size - c.bytes)) return [this.err(peer, "over_budget", this.overBudget(`this result's ${size} bytes`), f.call_id)];
    const out = this.finish(c, f.error, f.result, ctx, peer, sealed);
    if (out.length === 0) return [this.err(peer, "unknown_call", `call "${f.call_id}" is already closed`, f.call_id)];
    // Instances of app-type tools belong to the client that opened them. Sealed: the plaintext instance_id.
    const def = this.catalog(peer.role).find((t) => t.name === c.name);
    if (def?.type === "app" && (f.result || sealed)) {
      const closing = sealed ? sealed.instance_id : (JSON.parse(c.args) as Record<string, unknown>).instance_id;
      if (c.action === "close" && typeof closing === "string") this.store.unbind(c.name, closing);
      else {
        const inst = sealed ? sealed.instance_id : instanceIdOf(f.result);
        // First binding wins: another client naming an instance id already bound does not take it over.
        const owner = inst ? this.store.instance(c.name, inst) : undefined;
        if (inst && (owner === undefined || owner === key)) this.store.bind(c.name, inst, key);
      }
    }
    return out;
  }

  /** The caller's tool.result for call `c`: a result, a sealed answer, or an error. */
  protected resultFrame(
    c: CallRow,
    error: { code: string; message: string } | undefined,
    result?: ToolResultOut["result"],
    by?: Peer,
    sealed?: SealedAnswer,
  ): ToolResultOut {
    const frame: ToolResultOut = { type: "tool.result", call_id: c.call_id, name: c.name };
    if (c.action !== null) frame.action = c.action;
    if (sealed) {
      frame.sealed = sealed.sealed;
      if (sealed.instance_id !== undefined) frame.instance_id = sealed.instance_id;
    } else if (result) frame.result = result;
    else frame.error = error ?? { code: "internal", message: "no result" };
    if (by) frame.answered_by = by.clientId;
    if (sealed && by) frame.sender = keyOf(by);
    return frame;
  }

  /** Closes an open call with a result or error: the caller gets it, every other holder a cancel. */
  protected finish(
    c: CallRow,
    error: { code: string; message: string } | undefined,
    result: ToolResultOut["result"] | undefined,
    ctx: Ctx,
    by?: Peer,
    sealed?: SealedAnswer,
  ): Out[] {
    const frame = this.resultFrame(c, error, result, by, sealed);
    if (!this.store.finishCall(c.call_id, JSON.stringify(frame), ctx.now + LIMITS.resultRetentionMs, c.bytes)) return [];
    const out: Out[] = [{ to: c.caller, frame }];
    const reason = by ? "answered" : "timeout";
    // As read with the row (finishCall cleared them): a done call keeps no deliveries.
    const notify = new Set(deliveriesOf(c).map((d) => d.key));
    // The answering client needs no cancel — unless it answered virtually (a notification's tap): then this
    // same device's live app, which holds the call as a card, learns it like any other (issue 28 §4).
    if (by && !by.virtual) notify.delete(keyOf(by));
    // The other devices learn what was answered and by which device, or which guest link's client (extra
    // fields, only in inbox sessions: v1 clients ignore them, and v1 sessions see the contract's frame unchanged).
    const cancel: ToolCancelOut = { type: "tool.cancel", call_id: c.call_id, reason };
    const answeredBy = by?.name ?? (by && this.opts.inbox && !by.virtual && !isInternal(by) ? by.clientId : undefined);
    if (answeredBy !== undefined) {
      cancel.answered_by = answeredBy;
      // Never in a sealed session: the relay cannot read the answer, and must not pretend to.
      if (typeof result?.message === "string" && !this.sealed) cancel.answer = result.message;
    }
    // There, the winning sealed answer as its device sent it: the other devices open it, so a device whose answer
    // lost is told what won too (issue 28 item 4); too big an envelope is left out (the card names the device).
    if (sealed && by && utf8Length(JSON.stringify(sealed.sealed)) <= SEALED_ANSWER_MAX) {
      cancel.answer_sealed = sealed.sealed;
      cancel.answer_sender = keyOf(by);
    }
    if (by || error?.code === "timeout") for (const to of notify) out.push({ to, frame: cancel });
    return out;
  }

  protected onToolCancel(peer: Peer, f: InFrameOf<"tool.cancel">): Out[] {
    const c = this.store.getCall(f.call_id);
    if (!c || c.status !== "open" || c.caller !== keyOf(peer)) {
      return [this.err(peer, "unknown_call", `no open call "${f.call_id}" of yours to cancel`, f.call_id)];
    }
    const holders = new Set(deliveriesOf(c).map((d) => d.key));
    if (!this.store.dropOpenCall(c.call_id)) return [];
    const frame: ToolCancelOut = { type: "tool.cancel", call_id: c.call_id, reason: "cancelled" };
    if (f.sealed) Object.assign(frame, { sealed: f.sealed, sender: keyOf(peer) });
    return [...holders].map((to) => ({ to, frame }));
  }

  /** After a re-key the caller re-seals its open call: the holders that got it replace their card. */
  protected onReseal(peer: Peer, f: InFrameOf<"tool.reseal">): Out[] {
    const c = this.store.getCall(f.call_id);
    if (!c || c.status !== "open" || c.caller !== keyOf(peer))
      return [this.err(peer, "unknown_call", `no open call "${f.call_id}" of yours to re-seal`, f.call_id)];
    const a = f.args;
    const args = JSON.stringify(a);
    const bytes = utf8Length(args);
    if (!this.fits(bytes - c.bytes)) return [this.err(peer, "over_budget", this.overBudget(`this call's ${bytes} bytes`), f.call_id)];
    const fingerprint = fingerprintHash(canonicalJson({ name: c.name, action: c.action, ...a, timeout_s: c.timeout_s }));
    if (!this.store.resealCall(c.call_id, args, fingerprint, c.bytes)) return [];
    const frame = { ...sealedCallFrame({ ...c, args }), resealed: true as const };
    return deliveriesOf(c).map((d) => ({ to: d.key, conn: d.conn, frame }));
  }

  protected onToolAck(peer: Peer, f: InFrameOf<"tool.ack">): Out[] {
    // Acks are idempotent: an unknown or repeated ack, or one for a call not done or not the peer's,
    // changes nothing and needs no answer.
    this.store.ackCall(f.call_id, keyOf(peer));
    return [];
  }

  // ------------------------------------------------------------------ HTTP calls (§7)

  /** Starts a call for the reserved HTTP caller. `conflict` when the call_id is taken. */
  httpCall(
    body: { call_id?: string; name: string; action?: string; arguments: Record<string, unknown>; timeout_s?: number },
    ctx: Ctx,
  ): { call_id: string; conflict: boolean; out: Out[] } {
    const call_id = body.call_id ?? `http_${this.newId()}`;
    if (this.store.getCall(call_id)) return { call_id, conflict: true, out: [] };
    const frame: InFrameOf<"tool.call"> = { type: "tool.call", call_id, name: body.name, args: { plain: body.arguments } };
    if (body.action !== undefined) frame.action = body.action;
    if (body.timeout_s !== undefined) frame.timeout_s = body.timeout_s;
    return { call_id, conflict: false, out: this.onToolCall(HTTP_PEER, frame, ctx) };
  }

  /** The HTTP caller's view of a call: its result (which counts as the ack), pending, or unknown. */
  takeHttpResult(callId: string): ToolResultOut | "pending" | undefined {
    const c = this.store.getCall(callId);
    if (!c || c.caller !== keyOf(HTTP_PEER)) return undefined;
    if (c.status === "open") return "pending";
    this.store.deleteCall(callId);
    return c.result ? (JSON.parse(c.result) as ToolResultOut) : undefined;
  }
}
