// The plain/sealed codec under the call book (issue 27 §1): everything above it sees plaintext frames only.
// In a plaintext session frames pass as they are, at once. In a sealed one (docs/e2e.md) every frame from the
// relay is screened first (shared/crypto/e2e/guard.ts, issue 26: content only inside envelopes, the relay's
// own errors only end calls) and opened; every client frame is sealed (shared/crypto/e2e/frames.ts) — a call
// and a result once, so a retry is identical (rule 4) — and both directions keep their order through one
// queue each, since sealing and opening are asynchronous. A session pinned sealed refuses a plaintext hello.
import type { ClientFrame, ContentBlock, HelloFrame, MessageOut, RelayFrame, ToolCallOut, ToolCancelOut, ToolDef } from "../contract/protocol.js";
import { RtcSignal, type Role } from "../contract/protocol.js";
import { ToolDef as ToolDefSchema, ToolError as ToolErrorSchema, ToolResultBody as ToolResultBodySchema, describeIssues } from "../contract/protocol.js";
import type { ContentKey } from "../crypto/e2e/keys.js";
import { isE2EError } from "../crypto/e2e/errors.js";
import { openFrame, openPreview, sealFrame, sealPreview, sealReseal, senderOf, type Frame, type KeyOf, type Preview } from "../crypto/e2e/frames.js";
import { plaintextTools, screenSealed } from "../crypto/e2e/guard.js";
import type { CallFrame } from "./call-book.js";
import { isRelayFrame } from "./socket.js";
import { LineUpError } from "./errors.js";

/** The inbox's keys as a holder keeps them (adapter/e2e/keyring.ts, web/src/e2e/keyring.ts). */
export interface CodecKeys {
  keyOf: KeyOf;
  current(): ContentKey | undefined;
  /** Fetches newer keys (a re-key happened); must not throw. */
  refresh(): Promise<void>;
}

export interface CodecOptions {
  sessionId: string;
  /** `<role>:<client_id>` as the relay names this client (the envelopes' associated data). */
  sender: () => string;
  keys?: CodecKeys | undefined;
  /** The session was created (or once seen) sealed here: a `hello` without `sealed` is refused (issue 26). */
  pinned?: boolean;
  /** A sealed call's preview (the inbox's waiting text, the push extras). */
  preview?: (name: string, args: Record<string, unknown>) => Preview;
  /** Puts one frame on the wire; false when the socket is gone. */
  write: (wire: object) => boolean;
  /** Receives each frame from the relay, opened and in order. */
  deliver: (d: Decoded) => void;
  log?: (line: string) => void;
}

/** What the plaintext of a sealed frame that does not open still says (its card, its message, its cancel). */
export interface Unopenable {
  type: string;
  call_id?: string;
  name?: string;
  action?: string;
  id?: string;
  deadline?: number;
  reason?: string;
  from?: MessageOut["from"];
}

export type HelloVerdict = { ok: true; frame: HelloFrame } | { ok: false; code: "e2e_downgrade" | "e2e_no_key"; message: string };

export type Decoded =
  /** A plaintext frame (opened, in a sealed session). A re-sealed call (`resealed`) replaces the card shown. */
  | { frame: RelayFrame; resealed?: true }
  /** A sealed message the history budget elided: only its placeholder is left. */
  | { placeholder: MessageOut }
  /** A sealed frame that does not open here (never shown as ciphertext); a call or result it names should end. */
  | { unopenable: Unopenable; why: string }
  /** A sealed call whose arguments are no object: refused with invalid_arguments. */
  | { badCall: ToolCallOut; why: string }
  /** Issue 32: a direct path's handshake signal for this client (opened and checked in a sealed session). */
  | { rtc: RtcIn };

/** A handshake signal as delivered (docs/direct.md). */
export interface RtcIn {
  id: string;
  from: { role: Role; client_id: string };
  signal: RtcSignal;
}

export class Codec {
  private epoch: number | undefined;
  private inQ: Promise<void> = Promise.resolve();
  private outQ: Promise<void> = Promise.resolve();
  /** call_id → the exact sealed call / result sent, so a retry is identical (docs/e2e.md rule 4). */
  private readonly calls = new Map<string, Frame>();
  private readonly results = new Map<string, Frame>();
  private readonly log: (line: string) => void;

  constructor(private readonly o: CodecOptions) {
    this.log = o.log ?? (() => {});
  }

  /** A sealed session (its hello said so; never unset). */
  get sealed(): boolean {
    return this.epoch !== undefined;
  }

  /** Reads a `hello`: sealed or not, refused when a pinned or once-sealed session comes back plaintext or no key is held. */
  hello(h: HelloFrame): HelloVerdict {
    const sealedHello = h.sealed;
    if (sealedHello === undefined && (this.o.pinned === true || this.sealed)) {
      const why = this.o.pinned ? "this machine created it sealed" : "its earlier hello said so";
      return {
        ok: false,
        code: "e2e_downgrade",
        message: `session ${this.o.sessionId} is end-to-end encrypted (${why}), but the relay now says it is not: refused, nothing was sent`,
      };
    }
    if (sealedHello === undefined) return { ok: true, frame: h };
    const keys = this.o.keys;
    if (!keys)
      return { ok: false, code: "e2e_no_key", message: `session ${h.session_id} is sealed (end-to-end encrypted) but this machine holds no key of its inbox` };
    this.epoch = typeof sealedHello.epoch === "number" ? sealedHello.epoch : 0;
    // A newer epoch than we hold: fetch it before sealing anything (the relay would refuse the old one).
    if (this.epoch > (keys.current()?.epoch ?? 0)) this.refresh();
    // Sealed: the presence it carries loses a plaintext status detail (shared/crypto/e2e/guard.ts).
    const screened = screenSealed({ ...h });
    return { ok: true, frame: "frame" in screened ? { ...h, peers: { ...h.peers, ...pick(screened.frame.peers) } } : h };
  }

  /** A frame from the relay (not hello): delivered at once in plaintext, opened in order in a sealed session. */
  in(f: Frame): void {
    if (!this.sealed) {
      if (f.type === "rtc.signal") return this.rtcIn(f, f.signal);
      return isRelayFrame(f) ? this.o.deliver({ frame: f }) : undefined;
    }
    this.inQ = this.inQ.then(() => this.open(f)).catch((e: unknown) => this.log(`end-to-end: handling a ${String(f.type)} frame failed: ${errText(e)}`));
  }

  /** Sends a frame: as it is in plaintext; sealed and in order otherwise. `fresh`: a result sealed anew, not its kept envelope. */
  out(frame: ClientFrame, onUnsent?: () => void, fresh = false): void {
    if (!this.sealed) {
      if (!this.o.write(frame)) onUnsent?.();
      return;
    }
    this.enqueue(async () => {
      if (frame.type === "tool.ack") return frame;
      if (frame.type === "tool.call") return this.calls.get(frame.call_id) ?? this.keep(this.calls, frame.call_id, await this.sealCall(frame));
      if (frame.type === "tool.result") {
        const kept = fresh ? undefined : this.results.get(frame.call_id);
        if (kept) return kept;
        const wire = await sealFrame(this.key(), this.ctx(), { ...frame });
        // The instance id travels in plaintext beside the sealed result (docs/e2e.md rule 3).
        const inst = frame.result?.instance_id;
        if (typeof inst === "string" && inst !== "") wire.instance_id = inst;
        return this.keep(this.results, frame.call_id, wire);
      }
      return sealFrame(this.key(), this.ctx(), { ...frame });
    }, onUnsent);
  }

  /** Issue 32: one handshake signal to the client `to` of the other role (`toKey`: its `<role>:<client_id>`).
   * Sealed with the recipient inside (`for`), so the relay can neither read it nor redirect it. */
  signal(to: string, toKey: string, id: string, signal: RtcSignal): void {
    const frame = { type: "rtc.signal" as const, id, to, signal };
    if (!this.sealed) {
      this.o.write(frame);
      return;
    }
    this.enqueue(async () => sealFrame(this.key(), this.ctx(), { ...frame, for: toKey }));
  }

  /** A signal from the relay, opened: delivered when well-formed (and, sealed, meant for this client). */
  private rtcIn(f: Frame, signal: unknown, forKey?: unknown): void {
    const from = f.from as { role?: unknown; client_id?: unknown } | undefined;
    const s = RtcSignal.safeParse(signal);
    const role = from?.role === "agent" || from?.role === "app" ? from.role : undefined;
    if (!s.success || typeof f.id !== "string" || !role || typeof from?.client_id !== "string") return this.log("direct: a malformed rtc.signal; ignored");
    if (this.sealed && forKey !== this.o.sender()) return this.log(`direct: an rtc.signal sealed for ${String(forKey)}, not this client; ignored`);
    this.o.deliver({ rtc: { id: f.id, from: { role, client_id: from.client_id }, signal: s.data } });
  }

  /** After a re-key: the open call sealed again under the current key (`tool.reseal`), its kept envelope updated; with `alsoCall` the call is sent again too. */
  reseal(call: CallFrame, alsoCall: boolean, key?: ContentKey): void {
    this.enqueue(async () => {
      const ck = key ?? this.key();
      const r = await sealReseal(ck, this.ctx(), call.call_id, call.arguments, this.previewOf(call));
      const base = this.calls.get(call.call_id) ?? (await this.sealCall(call));
      const wire = this.keep(this.calls, call.call_id, { ...base, sealed: r.sealed, ...(r.preview ? { preview: r.preview } : {}) });
      this.o.write(r);
      return alsoCall ? wire : undefined;
    });
  }

  /** Fetches newer keys before the next frame is sealed. */
  refresh(): void {
    this.outQ = this.outQ.then(() => this.o.keys?.refresh());
  }

  /** Resolves once everything queued so far in both directions went through (a host about to close, tests). */
  async idle(): Promise<void> {
    let q: [Promise<void>, Promise<void>];
    do {
      q = [this.inQ, this.outQ];
      await Promise.all(q);
    } while (q[0] !== this.inQ || q[1] !== this.outQ);
  }

  /** Forgets the kept envelopes of a call (it ended). */
  forget(callId: string): void {
    this.calls.delete(callId);
    this.results.delete(callId);
  }

  private keep(m: Map<string, Frame>, id: string, wire: Frame): Frame {
    m.delete(id);
    m.set(id, wire);
    if (m.size > 500) m.delete(m.keys().next().value ?? id);
    return wire;
  }

  private enqueue(make: () => Promise<object | undefined>, onUnsent?: () => void): void {
    this.outQ = this.outQ
      .then(async () => {
        const w = await make();
        if (w !== undefined && !this.o.write(w)) onUnsent?.();
      })
      .catch((e: unknown) => this.log(`end-to-end: sealing a frame failed: ${errText(e)}`));
  }

  private ctx(): { session_id: string; sender: string } {
    return { session_id: this.o.sessionId, sender: this.o.sender() };
  }

  private key(): ContentKey {
    const ck = this.o.keys?.current();
    if (!ck) throw new LineUpError("e2e_no_key", "this machine holds no content key of its inbox (`lineup e2e status`)");
    return ck;
  }

  private async sealCall(frame: CallFrame): Promise<Frame> {
    const ck = this.key();
    const wire = await sealFrame(ck, this.ctx(), { ...frame });
    const preview = this.previewOf(frame);
    if (preview) wire.preview = await sealPreview(ck, this.ctx(), frame.call_id, preview);
    return wire;
  }

  /** A call's preview, naming its tool inside the envelope: a service worker answers only when the name beside it agrees. */
  private previewOf(call: CallFrame): Preview | undefined {
    return this.o.preview ? { ...this.o.preview(call.name, call.arguments), tool: call.name } : undefined;
  }

  /** Opens a frame of a sealed session; a newer epoch than we hold is fetched once first. */
  private async openOnce(f: Frame): Promise<Frame> {
    const keys = this.o.keys;
    if (!keys) throw new LineUpError("e2e_no_key", "no keys");
    try {
      return await openFrame(keys.keyOf, this.o.sessionId, f);
    } catch (e) {
      if (!isE2EError(e, "wrong_epoch")) throw e;
      await keys.refresh();
      return openFrame(keys.keyOf, this.o.sessionId, f);
    }
  }

  private async open(relayFrame: Frame): Promise<void> {
    // What the relay may say in plaintext here is screened first (issue 26): content only inside envelopes,
    // and of its own only errors that end a call — never a result, a call, a message or a description.
    const screened = screenSealed(relayFrame);
    const dropped = plaintextTools(relayFrame);
    if (dropped.length) this.log(`end-to-end: dropped plaintext tool definition(s) ${dropped.join(", ")} the relay sent in a sealed session`);
    if ("drop" in screened) {
      const id = typeof relayFrame.call_id === "string" ? ` (call ${relayFrame.call_id})` : "";
      return this.log(`end-to-end: dropped ${screened.drop} in sealed session ${this.o.sessionId}${id}`);
    }
    const raw = screened.frame;
    // Calls and results only travel between the two roles: a sealed one "from" this client's own role is the
    // relay handing back what this side sealed (its own call to run, its own answer as the answer to its call).
    const from = raw.sealed !== undefined && (raw.type === "tool.call" || raw.type === "tool.result") ? senderOf(raw) : undefined;
    if (from !== undefined && roleOf(from) === roleOf(this.o.sender()))
      return this.log(`end-to-end: dropped a sealed ${raw.type} from ${from}, of this client's own role (reflected by the relay)`);
    const d = this.o.deliver;
    switch (raw.type) {
      case "tool.list":
        return d({ frame: { type: "tool.list", tools: await this.openTools(raw) } });
      case "presence": {
        const f = raw;
        if (!isRelayFrame(f) || f.type !== "presence") return;
        const st: Frame | undefined = f.agent.status ? { ...f.agent.status } : undefined;
        if (st?.sealed === undefined) return d({ frame: f });
        const state = String(st.state);
        try {
          const o = await this.openOnce({ type: "status", state, sealed: st.sealed, ...(st.sender !== undefined ? { sender: st.sender } : {}) });
          return d({ frame: { ...f, agent: { ...f.agent, status: typeof o.detail === "string" ? { state, detail: o.detail } : { state } } } });
        } catch {
          return d({ frame: { ...f, agent: { ...f.agent, status: { state } } } });
        }
      }
      case "message":
        // The history budget's placeholder of an old sealed message: nothing in it to open.
        if (raw.sealed === undefined) return d({ placeholder: { ...asMessage(raw), content: [] } });
        break;
      case "tool.call":
      case "tool.result":
      case "tool.cancel":
        if (raw.sealed === undefined) {
          if (!isRelayFrame(raw)) return;
          return d({ frame: raw.type === "tool.cancel" ? await this.cancelIn(raw) : raw });
        }
        break;
      case "rtc.signal": {
        let o: Frame;
        try {
          o = await this.openOnce(raw);
        } catch (e) {
          return this.log(`direct: an rtc.signal does not open (${errText(e)}); ignored`);
        }
        return this.rtcIn(raw, o.signal, o.for);
      }
      default:
        return isRelayFrame(raw) ? d({ frame: raw }) : undefined;
    }
    let opened: Frame;
    try {
      opened = await this.openOnce(raw);
    } catch (e) {
      return d({ unopenable: identify(raw), why: errText(e) });
    }
    const { sender: _s, resealed, ...rest } = opened;
    if (raw.type === "tool.result") return d({ frame: checkedResult(rest) });
    if (raw.type === "tool.call") {
      // The tool name travels in plaintext; the caller's preview names it sealed: a relay that relabelled the
      // call (a permission shown as a confirm, whose answer means something else) gets it refused, not shown.
      const named = await this.previewTool(raw);
      if (named !== undefined && named !== raw.name)
        return d({ unopenable: identify(raw), why: `the relay changed the call's tool from ${JSON.stringify(named)} to ${JSON.stringify(raw.name)}` });
      const call = rest;
      if (!isRelayFrame(call) || call.type !== "tool.call") return;
      const args = rest.arguments;
      if (typeof args !== "object" || args === null || Array.isArray(args))
        return d({ badCall: { ...call, arguments: {} }, why: "the sealed arguments are not an object" });
      return d(resealed === true ? { frame: call, resealed: true } : { frame: call });
    }
    if (raw.type === "message" && !Array.isArray(rest.content)) return this.log(`end-to-end: message ${String(rest.id)} has no content list; ignored`);
    return isRelayFrame(rest) ? d({ frame: rest }) : undefined;
  }

  /**
   * The relay's cancel{answered} of a sealed session: the winning device's sealed answer (`answer_sealed`, its
   * author `answer_sender`) opened here, its message as the cancel's `answer` (issue 28 item 4) — the relay's
   * own words never are. One that does not open leaves the cancel naming the device only.
   */
  private async cancelIn(f: ToolCancelOut): Promise<ToolCancelOut> {
    const { answer_sealed, answer_sender, answer: _relays, ...cancel } = f;
    if (cancel.reason !== "answered" || answer_sealed === undefined || typeof answer_sender !== "string") return cancel;
    try {
      const won = checkedResult(await this.openOnce({ type: "tool.result", call_id: cancel.call_id, sealed: answer_sealed, sender: answer_sender }));
      if (won.type === "tool.result" && typeof won.result?.message === "string") return { ...cancel, answer: won.result.message };
    } catch (e) {
      this.log(`end-to-end: the winning answer of call ${cancel.call_id} does not open (${errText(e)}); its card names the device only`);
    }
    return cancel;
  }

  /** The tool a sealed call's preview names (undefined: no preview, none named, or it does not open). */
  private async previewTool(raw: Frame): Promise<string | undefined> {
    const keys = this.o.keys;
    const sender = senderOf(raw);
    if (!keys || raw.preview === undefined || sender === undefined) return undefined;
    try {
      return (await openPreview(keys.keyOf, this.o.sessionId, String(raw.call_id), sender, raw.preview)).tool;
    } catch {
      return undefined;
    }
  }

  /** Opens a sealed tool list entry by entry: an entry that does not open (or is no tool) is dropped and reported. */
  private async openTools(frame: Frame): Promise<ToolDef[]> {
    const keys = this.o.keys;
    const out: ToolDef[] = [];
    if (!keys || !Array.isArray(frame.tools)) return out;
    for (const t of frame.tools as Frame[]) {
      let opened: Frame;
      try {
        const f = await openFrame(keys.keyOf, this.o.sessionId, { type: "tool.list", tools: [t] });
        opened = Array.isArray(f.tools) ? (f.tools[0] as Frame) : {};
      } catch (e) {
        this.log(`end-to-end: the tool ${JSON.stringify(t.name)} does not open (${errText(e)}); ignored`);
        continue;
      }
      const { sender: _s, ...def } = opened;
      const r = ToolDefSchema.safeParse(def);
      if (r.success) out.push(r.data);
      else this.log(`end-to-end: the tool ${JSON.stringify(t.name)} is not a valid tool definition; ignored`);
    }
    return out;
  }
}

/** An opened result, checked where the relay no longer can: a malformed one becomes a `bad_result` error. */
function checkedResult(f: Frame): RelayFrame {
  const { result, error, ...rest } = f;
  const base = {
    type: "tool.result" as const,
    call_id: String(rest.call_id ?? ""),
    name: String(rest.name ?? ""),
    ...(typeof rest.action === "string" ? { action: rest.action } : {}),
  };
  const more = {
    ...(typeof rest.answered_by === "string" ? { answered_by: rest.answered_by } : {}),
    ...(typeof rest.instance_id === "string" ? { instance_id: rest.instance_id } : {}),
  };
  const fail = (why: string): RelayFrame => ({ ...base, ...more, error: { code: "bad_result", message: `the sealed result is invalid: ${why}` } });
  if (result !== undefined) {
    const r = ToolResultBodySchema.safeParse(result);
    return r.success ? { ...base, ...more, result: r.data } : fail(describeIssues(r.error));
  }
  if (error !== undefined) {
    const r = ToolErrorSchema.safeParse(error);
    return r.success ? { ...base, ...more, error: r.data } : fail(describeIssues(r.error));
  }
  return fail("neither result nor error");
}

function asMessage(f: Frame): MessageOut {
  const from = typeof f.from === "object" && f.from !== null ? (f.from as MessageOut["from"]) : { role: "agent" as const, client_id: "" };
  const content: ContentBlock[] = [];
  return {
    type: "message",
    id: String(f.id ?? ""),
    from,
    content,
    ts: typeof f.ts === "number" ? f.ts : Date.now(),
    ...(f.elided === true ? { elided: true } : {}),
  };
}

function identify(f: Frame): Unopenable {
  const s = (k: string) => (typeof f[k] === "string" ? { [k]: f[k] as string } : {});
  const from = f.type === "message" && typeof f.from === "object" && f.from !== null ? { from: asMessage(f).from } : {};
  return {
    type: String(f.type),
    ...s("call_id"),
    ...s("name"),
    ...s("action"),
    ...s("id"),
    ...s("reason"),
    ...(typeof f.deadline === "number" ? { deadline: f.deadline } : {}),
    ...from,
  };
}

function pick(p: unknown): Partial<HelloFrame["peers"]> {
  return typeof p === "object" && p !== null ? (p as Partial<HelloFrame["peers"]>) : {};
}

/** The role part of `<role>:<client_id>`. */
const roleOf = (sender: string): string => sender.split(":")[0] ?? sender;

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
