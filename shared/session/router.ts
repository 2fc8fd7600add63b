// The pure routing core: frames in, frames out, over a synchronous Store. No sockets, clocks or timers:
// the Durable Object drives it with SQLite and its alarm; the adapter's LAN mode with memory and one timer.
import {
  canonicalJson,
  clampTimeout,
  HTTP_CLIENT_ID,
  instanceIdOf,
  LIMITS,
  MAY_SEND,
  otherRole,
  PROTOCOL,
  type AgentStatus,
  type CallErrorCode,
  type ClientFrame,
  type ClientFrameOf,
  type ClientFrameType,
  type ErrorCode,
  type HelloFrame,
  type MessageOut,
  type PeerState,
  type SealedFrame,
  type SealedFrameOf,
  type SealedMessageOut,
  type RelayFrame,
  type Role,
  type SessionStatus,
  type ToolCallOut,
  type ToolCancelOut,
  type ToolDef,
  type ToolResultOut,
} from "../contract/protocol.js";
import { HUMAN_TOOL_NAMES } from "../contract/builtin-tools.js";
import { fingerprintHash } from "./hash.js";
import { keptCopy, placeholderFor } from "./history.js";
import { checkArguments } from "../contract/schema.js";
import { asWire, elidedSealed, isSealedMessage, sealedArgs, sealedCallFrame, sealedTools, staleEpoch, type SealedArgs } from "./sealed.js";
import { deliveriesOf, type CallRow, type Delivery, type Registration, type Store } from "./store.js";
import { utf8Length } from "../contract/protocol.js";

/** One live connection. `key` = `role:client_id` is the identity that results and bindings belong to. */
export interface Peer {
  role: Role;
  clientId: string;
  /** Unique per connection (survives hibernation in the socket attachment). */
  conn: string;
  /** A bridge that is always reachable (e.g. the WuKongIM conversation); not counted as an app. */
  virtual?: boolean;
  /** The credential the connection was admitted with (its rate bucket across connections). */
  cred?: string;
  /** A paired device's name (shown to the other devices as who answered). */
  name?: string;
}
export const keyOf = (p: { role: Role; clientId: string }) => `${p.role}:${p.clientId}`;
/** The relay's own callers (remote MCP, `~` ids): not people or providers — no presence, no chat, no catalog. */
export const isInternal = (p: { clientId: string }) => p.clientId.startsWith("~");
export const HTTP_PEER: Peer = { role: "agent", clientId: HTTP_CLIENT_ID, conn: "http" };

/** A frame for every connection of one client key (or one connection when `conn` is set). */
export interface Out {
  to: string;
  conn?: string;
  frame: RelayFrame;
}

export interface Ctx {
  now: number;
  /** Every live connection, including the one the frame came from. */
  peers: readonly Peer[];
}

type Handler<T extends ClientFrameType> = (peer: Peer, frame: ClientFrameOf<T>, ctx: Ctx) => Out[];

export interface RouterOptions {
  /** Bytes a session keeps outside the store (the WuKongIM outbox), counted in its budget. */
  extraUsage?: () => number;
  /** A sealed session's current inbox epoch (docs/e2e.md); undefined for a plaintext session. */
  sealedEpoch?: () => number | undefined;
  /** An inbox session (docs/inbox.md): its other devices learn who answered, a guest link by client id. */
  inbox?: boolean;
}

/** A sealed part of a result as the router forwards it (the relay cannot read it). */
interface SealedPart {
  sealed: NonNullable<ToolResultOut["sealed"]>;
  instance_id?: string;
}

export class Router {
  constructor(
    private readonly store: Store,
    readonly sessionId: string,
    private readonly newId: () => string,
    private readonly opts: RouterOptions = {},
  ) {}

  /** Whether keeping `more` bytes (net) stays within the session's budget. */
  private fits(more: number): boolean {
    if (more <= 0) return true;
    return this.store.usage() + (this.opts.extraUsage?.() ?? 0) + more <= LIMITS.sessionBudgetBytes;
  }
  private overBudget(what: string): string {
    return `the session keeps ${LIMITS.sessionBudgetBytes} bytes at most and ${what} would pass that; ack results, end calls or delete old sessions`;
  }

  // A typed table: adding a frame type to the protocol without a handler here fails to compile.
  private readonly handlers: { [T in ClientFrameType]: Handler<T> } = {
    "tool.list": (p, f, c) => this.onToolList(p, f, c),
    "tool.call": (p, f, c) => this.onToolCall(p, f, c),
    "tool.result": (p, f, c) => this.onToolResult(p, f, c),
    "tool.cancel": (p, f, c) => this.onToolCancel(p, f),
    "tool.ack": (p, f) => this.onToolAck(p, f),
    message: (p, f, c) => this.onMessage(p, f, c),
    status: (p, f, c) => this.onStatus(p, f, c),
  };

  /** A flag test on the plaintext path: the getter is only consulted where sealed sessions differ. */
  private get sealed(): boolean {
    return this.opts.sealedEpoch?.() !== undefined;
  }

  /** A frame of a sealed session (decoded by parseSealedValue): epoch first, then the same rules as v1. */
  handleSealed(peer: Peer, f: SealedFrame, ctx: Ctx): Out[] {
    const callId = "call_id" in f ? f.call_id : undefined;
    if (f.type !== "tool.reseal" && !MAY_SEND[f.type].includes(peer.role)) return [this.err(peer, "forbidden", `the ${peer.role} role may not send ${f.type}`, callId)];
    const current = this.opts.sealedEpoch?.() ?? 0;
    const stale = staleEpoch(f, current);
    if (stale !== undefined) return [this.err(peer, "stale_epoch", `sealed under epoch ${stale}; the inbox is at epoch ${current}: fetch the new key and seal again`, callId)];
    this.regMemo = new Map();
    try {
      switch (f.type) {
        case "tool.list":
          return this.onToolList(peer, f.tools === undefined ? { type: "tool.list" } : { type: "tool.list", tools: sealedTools(f.tools, keyOf(peer)) }, ctx);
        case "tool.call":
          return this.startCall(peer, f, { sealed: sealedArgs(f.sealed, f.preview) }, ctx);
        case "tool.result":
          return this.onToolResult(peer, { type: "tool.result", call_id: f.call_id }, ctx, f.instance_id === undefined ? { sealed: f.sealed } : { sealed: f.sealed, instance_id: f.instance_id });
        case "tool.cancel":
          return this.onToolCancel(peer, f);
        case "tool.ack":
          return this.onToolAck(peer, f);
        case "message":
          return this.onSealedMessage(peer, f, ctx);
        case "status":
          return this.setStatus(f.sealed ? { state: f.state, sealed: f.sealed, sender: keyOf(peer) } : { state: f.state }, ctx);
        case "tool.reseal":
          return this.onReseal(peer, f);
      }
    } finally {
      this.regMemo = undefined;
    }
  }

  handle(peer: Peer, frame: ClientFrame, ctx: Ctx): Out[] {
    if (!MAY_SEND[frame.type].includes(peer.role)) {
      return [this.err(peer, "forbidden", `the ${peer.role} role may not send ${frame.type}`, callIdOf(frame))];
    }
    const h = this.handlers[frame.type] as Handler<typeof frame.type>;
    this.regMemo = new Map();
    try {
      return h(peer, frame as never, ctx);
    } finally {
      this.regMemo = undefined;
    }
  }

  /** A side's registrations, read once per frame: a call asks for them to check, to find its providers and
   * to answer. Only within handle(): across frames SQLite stays the one truth. */
  private regMemo: Map<Role, Registration[]> | undefined;
  private regs(role: Role): Registration[] {
    if (!this.regMemo) return this.store.registrations(role);
    let r = this.regMemo.get(role);
    if (!r) this.regMemo.set(role, (r = this.store.registrations(role)));
    return r;
  }

  // ------------------------------------------------------------------ connections

  connect(peer: Peer, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    const to = (frame: RelayFrame): Out => ({ to: key, conn: peer.conn, frame });
    const out: Out[] = [
      to(this.hello(peer, ctx)),
      to({ type: "tool.list", tools: this.catalog(otherRole(peer.role)) }),
    ];
    for (const c of this.store.keptResults(key)) if (c.result) out.push(to(JSON.parse(c.result) as ToolResultOut));
    out.push(...this.catchUp(peer, ctx).map((o) => ({ ...o, conn: peer.conn })));
    // The relay's own callers want calls and results only: no chat, no cursor row, no presence.
    if (isInternal(peer)) return out;
    // Messages sent while this client was away (a new client id reads history over HTTP instead).
    const cursor = this.store.cursor(key);
    if (cursor !== undefined) {
      const missed = this.store.messages(cursor, LIMITS.historySize).filter((m) => !(m.from.role === peer.role && m.from.client_id === peer.clientId));
      for (const m of missed) out.push(to(wire(m)));
    }
    this.store.setCursor(key, this.store.lastSeq());
    this.store.touch(key, ctx.now);
    out.push(...this.presence(ctx, key));
    return out;
  }

  private hello(peer: Peer, ctx: Ctx): HelloFrame {
    const h: HelloFrame = { type: "hello", protocol: PROTOCOL, session_id: this.sessionId, role: peer.role, client_id: peer.clientId, peers: this.peerState(ctx) };
    const epoch = this.opts.sealedEpoch?.();
    if (epoch !== undefined) h.sealed = { epoch };
    return h;
  }

  disconnect(peer: Peer, ctx: Ctx): Out[] {
    if (isInternal(peer)) return [];
    // A registration is dropped after 7 days without its client: the clock starts when it leaves.
    this.store.touch(keyOf(peer), ctx.now);
    return this.presence(ctx);
  }

  peerState(ctx: Ctx): PeerState {
    const status = this.agentStatus();
    const agentOnline = ctx.peers.some((p) => p.role === "agent" && !p.virtual && !isInternal(p));
    const apps = new Set(ctx.peers.filter((p) => p.role === "app" && !p.virtual && !isInternal(p)).map((p) => p.clientId)).size;
    return { agent: status ? { online: agentOnline, status } : { online: agentOnline }, apps };
  }

  /** `presence` to every connected client (except `skip`, which just got the same facts in `hello`). */
  presence(ctx: Ctx, skip?: string): Out[] {
    const state = this.peerState(ctx);
    const keys = new Set(ctx.peers.filter((p) => !p.virtual && !isInternal(p)).map(keyOf));
    if (skip) keys.delete(skip);
    return [...keys].map((to) => ({ to, frame: { type: "presence", ...state } }));
  }

  // ------------------------------------------------------------------ tool.list

  /** The side's catalog: the union of its clients' registrations (a later registration wins a name). */
  catalog(role: Role): ToolDef[] {
    const byName = new Map<string, ToolDef>();
    for (const r of this.regs(role)) for (const t of r.tools) byName.set(t.name, t);
    return [...byName.values()];
  }

  /** Why a registration is refused (sizes, tool poisoning, the budget), or undefined when it is fine. */
  private refuseRegistration(peer: Peer, tools: ToolDef[]): { code: ErrorCode; message: string } | undefined {
    const key = keyOf(peer);
    const bytes = utf8Length(JSON.stringify(tools));
    if (bytes > LIMITS.maxRegistrationBytes) return { code: "too_large", message: `a registration is at most ${LIMITS.maxRegistrationBytes} bytes of JSON (this one: ${bytes}); nothing was registered` };
    // Sealed tools: descriptions and schemas are inside their envelopes (the receiver checks them).
    if (this.sealed) return this.fits(bytes - (this.store.registration(key)?.bytes ?? 0)) ? undefined : { code: "over_budget", message: this.overBudget("this registration") };
    for (const t of tools) {
      const parts = t.type === "action" ? [{ label: t.name, description: t.description, schema: t.inputSchema }] : [{ label: t.name, description: t.description, schema: {} }, ...t.actions.map((a) => ({ label: `${t.name}.${a.name}`, description: a.description, schema: a.inputSchema }))];
      for (const x of parts) {
        if (x.description.length > LIMITS.maxDescriptionChars) return { code: "too_large", message: `${x.label}: a description is at most ${LIMITS.maxDescriptionChars} characters (refused, not truncated); nothing was registered` };
        const n = utf8Length(JSON.stringify(x.schema));
        if (n > LIMITS.maxSchemaBytes) return { code: "too_large", message: `${x.label}: an inputSchema is at most ${LIMITS.maxSchemaBytes} bytes of JSON (this one: ${n}); nothing was registered` };
      }
    }
    // Tool poisoning: a built-in human tool already offered by another client keeps its schema, so what the
    // model reads and what the human is asked cannot be swapped under either of them.
    const others = new Map<string, ToolDef>();
    for (const r of this.regs(peer.role)) if (r.key !== key) for (const t of r.tools) others.set(t.name, t);
    for (const t of tools) {
      const have = HUMAN_TOOL_NAMES.has(t.name) ? others.get(t.name) : undefined;
      if (have && canonicalJson(shapeOf(have)) !== canonicalJson(shapeOf(t))) {
        return { code: "tool_conflict", message: `"${t.name}" is a built-in human tool another client already provides with a different schema; nothing was registered` };
      }
    }
    if (!this.fits(bytes - (this.store.registration(key)?.bytes ?? 0))) return { code: "over_budget", message: this.overBudget("this registration") };
    return undefined;
  }

  private onToolList(peer: Peer, f: ClientFrameOf<"tool.list">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    if (!f.tools) return [{ to: key, conn: peer.conn, frame: { type: "tool.list", tools: this.catalog(otherRole(peer.role)) } }];
    const refused = this.refuseRegistration(peer, f.tools);
    if (refused) return [this.err(peer, refused.code, refused.message)];
    const before = sameTools(this.catalog(peer.role));
    this.store.register(key, peer.role, f.tools, ctx.now);
    this.regMemo?.delete(peer.role);
    const after = this.catalog(peer.role);
    const out: Out[] = [];
    if (sameTools(after) !== before) {
      const others = new Set(ctx.peers.filter((p) => p.role !== peer.role && !p.virtual).map(keyOf));
      for (const to of others) out.push({ to, frame: { type: "tool.list", tools: after } });
    }
    // Calls queued before any definition was known are checked now that a provider has registered.
    for (const c of this.store.openCalls()) {
      if (c.checked || c.caller_role === peer.role) continue;
      const verdict = this.check(c.name, c.action ?? undefined, this.sealed ? undefined : (JSON.parse(c.args) as Record<string, unknown>), otherRole(c.caller_role), true);
      if ("error" in verdict) out.push(...this.finish(c, { code: verdict.error, message: verdict.message }, undefined, ctx));
      else this.store.setChecked(c.call_id, verdict.target);
    }
    out.push(...this.catchUp(peer, ctx));
    return out;
  }

  /** Open calls this connection can serve and has not yet received on this connection. */
  private catchUp(peer: Peer, ctx: Ctx): Out[] {
    const out: Out[] = [];
    for (const c of this.store.openCalls()) {
      if (c.caller_role === peer.role || deliveriesOf(c).some((d) => d.conn === peer.conn)) continue;
      if (!this.serves(peer, c)) continue;
      out.push(...this.deliver(c, [peer], ctx));
    }
    return out;
  }

  private serves(peer: Peer, c: CallRow): boolean {
    if (c.target) return c.target === keyOf(peer);
    const key = keyOf(peer);
    return this.regs(peer.role).some((r) => r.key === key && r.tools.some((t) => t.name === c.name));
  }

  /** The call's frame for each of `to`; `record`: their deliveries are written now (a new call's went
   * into its insert). */
  private deliver(c: CallRow, to: readonly Peer[], _ctx: Ctx, record = true): Out[] {
    const frame = this.sealed ? asWire(sealedCallFrame(c)) : callFrame(c);
    return to.map((p) => {
      if (record) this.store.addDelivery(c, keyOf(p), p.conn);
      return { to: keyOf(p), conn: p.conn, frame };
    });
  }

  // ------------------------------------------------------------------ tool.call

  private check(
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
    let schema: Record<string, unknown>;
    if (def.type === "action") schema = def.inputSchema;
    else {
      const a = def.actions.find((x) => x.name === action);
      if (!a) {
        const names = def.actions.map((x) => x.name).join(", ");
        return { error: "unknown_action", message: `${name} has no action "${action ?? ""}" (actions: ${names})` };
      }
      schema = a.inputSchema;
    }
    if (args === undefined) return { target: null, known: true };
    const bad = checkArguments(schema, args);
    if (bad) return { error: "invalid_arguments", message: `${name}${action ? "." + action : ""}: ${bad}` };
    let target: string | null = null;
    if (def.type === "app" && typeof args.instance_id === "string") {
      target = this.store.instance(name, args.instance_id) ?? null;
      if (!target) return { error: "instance_gone", message: `${name} instance "${args.instance_id}" is not open` };
    }
    return { target, known: true };
  }

  private onToolCall(peer: Peer, f: ClientFrameOf<"tool.call">, ctx: Ctx): Out[] {
    return this.startCall(peer, f, { plain: f.arguments }, ctx);
  }

  /** A new call: plaintext arguments, or a sealed call's envelopes (kept in `args`, never validated here). */
  private startCall(peer: Peer, f: { call_id: string; name: string; action?: string | undefined; timeout_s?: number | undefined }, body: { plain: Record<string, unknown> } | { sealed: SealedArgs }, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    const payload = "plain" in body ? body.plain : body.sealed;
    const args = JSON.stringify(payload);
    // A hash, not the canonical JSON itself: the arguments are kept once (and not at all once refused).
    // A sealed retry must resend the same envelope: a re-seal has a new nonce (docs/e2e.md rule 4).
    const fingerprint = fingerprintHash(canonicalJson({ name: f.name, action: f.action ?? null, ...("plain" in body ? { arguments: body.plain } : body.sealed), timeout_s: f.timeout_s ?? null }));
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
    // A refused call is answered and kept for the repeat rule, but without its arguments.
    const refuse = (code: CallErrorCode, message: string) => {
      const existing = this.store.getCall(f.call_id);
      if (existing) return taken(existing);
      const bare = { ...row, args: "", bytes: 0 };
      this.store.insertCall(bare);
      return this.finish(bare, { code, message }, undefined, ctx);
    };
    if (this.store.countOpen() >= LIMITS.maxOpenCalls) return refuse("too_many_calls", `the session already has ${LIMITS.maxOpenCalls} open calls`);
    if (!this.fits(row.bytes)) return refuse("over_budget", this.overBudget(`this call's ${row.bytes} bytes of arguments`));
    const providerPresent = ctx.peers.some((p) => p.role === side && !isInternal(p));
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

  private onToolResult(peer: Peer, f: Pick<ClientFrameOf<"tool.result">, "call_id" | "result" | "error"> & { type: "tool.result" }, ctx: Ctx, sealed?: SealedPart): Out[] {
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

  /** Closes an open call with a result or error: the caller gets it, every other holder a cancel. */
  private finish(
    c: CallRow,
    error: { code: string; message: string } | undefined,
    result: ToolResultOut["result"] | undefined,
    ctx: Ctx,
    by?: Peer,
    sealed?: SealedPart,
  ): Out[] {
    const frame: ToolResultOut = { type: "tool.result", call_id: c.call_id, name: c.name };
    if (c.action !== null) frame.action = c.action;
    if (sealed) {
      frame.sealed = sealed.sealed;
      if (sealed.instance_id !== undefined) frame.instance_id = sealed.instance_id;
    } else if (result) frame.result = result;
    else frame.error = error ?? { code: "internal", message: "no result" };
    if (by) frame.answered_by = by.clientId;
    if (sealed && by) frame.sender = keyOf(by);
    if (!this.store.finishCall(c.call_id, JSON.stringify(frame), ctx.now + LIMITS.resultRetentionMs, c.bytes)) return [];
    const out: Out[] = [{ to: c.caller, frame }];
    const reason = by ? "answered" : "timeout";
    // As read with the row (finishCall cleared them): a done call keeps no deliveries.
    const notify = new Set(deliveriesOf(c).map((d) => d.key));
    if (by) notify.delete(keyOf(by));
    // The other devices learn what was answered and by which device, or which guest link's client (extra
    // fields, only in inbox sessions: v1 clients ignore them, and v1 sessions see the contract's frame unchanged).
    const cancel: ToolCancelOut = { type: "tool.cancel", call_id: c.call_id, reason };
    const answeredBy = by?.name ?? (by && this.opts.inbox && !by.virtual && !isInternal(by) ? by.clientId : undefined);
    if (answeredBy !== undefined) {
      cancel.answered_by = answeredBy;
      // Never in a sealed session: the relay cannot read the answer, and must not pretend to.
      if (typeof result?.message === "string" && !this.sealed) cancel.answer = result.message;
    }
    if (by || error?.code === "timeout") for (const to of notify) out.push({ to, frame: cancel });
    return out;
  }

  private onToolCancel(peer: Peer, f: ClientFrameOf<"tool.cancel"> | SealedFrameOf<"tool.cancel">): Out[] {
    const c = this.store.getCall(f.call_id);
    if (!c || c.status !== "open" || c.caller !== keyOf(peer)) {
      return [this.err(peer, "unknown_call", `no open call "${f.call_id}" of yours to cancel`, f.call_id)];
    }
    const holders = new Set(deliveriesOf(c).map((d) => d.key));
    if (!this.store.dropOpenCall(c.call_id)) return [];
    const frame: ToolCancelOut = { type: "tool.cancel", call_id: c.call_id, reason: "cancelled" };
    if ("sealed" in f && f.sealed) Object.assign(frame, { sealed: f.sealed, sender: keyOf(peer) });
    return [...holders].map((to) => ({ to, frame }));
  }

  /** After a re-key the caller re-seals its open call: the holders that got it replace their card. */
  private onReseal(peer: Peer, f: SealedFrameOf<"tool.reseal">): Out[] {
    const c = this.store.getCall(f.call_id);
    if (!c || c.status !== "open" || c.caller !== keyOf(peer)) return [this.err(peer, "unknown_call", `no open call "${f.call_id}" of yours to re-seal`, f.call_id)];
    const a = sealedArgs(f.sealed, f.preview);
    const args = JSON.stringify(a);
    const bytes = utf8Length(args);
    if (!this.fits(bytes - c.bytes)) return [this.err(peer, "over_budget", this.overBudget(`this call's ${bytes} bytes`), f.call_id)];
    const fingerprint = fingerprintHash(canonicalJson({ name: c.name, action: c.action, ...a, timeout_s: c.timeout_s }));
    if (!this.store.resealCall(c.call_id, args, fingerprint, c.bytes)) return [];
    const frame = asWire({ ...sealedCallFrame({ ...c, args }), resealed: true });
    return deliveriesOf(c).map((d) => ({ to: d.key, conn: d.conn, frame }));
  }

  private onToolAck(peer: Peer, f: ClientFrameOf<"tool.ack">): Out[] {
    // Acks are idempotent: an unknown or repeated ack, or one for a call not done or not the peer's,
    // changes nothing and needs no answer.
    this.store.ackCall(f.call_id, keyOf(peer));
    return [];
  }

  // ------------------------------------------------------------------ messages and status

  private onMessage(peer: Peer, f: ClientFrameOf<"message">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    if (f.id && this.store.hasMessage(key, f.id)) return []; // a retried message is delivered once
    const msg: MessageOut = { type: "message", id: f.id ?? this.newId(), from: { role: peer.role, client_id: peer.clientId }, content: f.content, ts: ctx.now };
    // Connected clients get the message whole (any frame up to 1 MiB is valid); the kept copy's text is
    // cut to its budget, and past the history's budget older bodies become placeholders.
    const kept = keptCopy(msg);
    const size = utf8Length(JSON.stringify(kept));
    if (!this.fits(size)) return [this.err(peer, "over_budget", this.overBudget(`keeping this message's ${size} bytes`))];
    return this.keepMessage(kept, key, ctx, msg);
  }

  /** Stores a message and fans it out (`live`: the uncut copy connected clients get). */
  private keepMessage(kept: MessageOut, key: string, ctx: Ctx, live: MessageOut = kept): Out[] {
    const seq = this.store.addMessage(kept, key);
    this.trimHistory();
    const to = new Set(ctx.peers.filter((p) => !isInternal(p)).map(keyOf));
    to.delete(key);
    for (const k of to) this.store.setCursor(k, seq);
    this.store.setCursor(key, seq);
    return [...to].map((k) => ({ to: k, frame: live }));
  }

  private onSealedMessage(peer: Peer, f: SealedFrameOf<"message">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    if (this.store.hasMessage(key, f.id)) return [];
    const msg: SealedMessageOut = { type: "message", id: f.id, from: { role: peer.role, client_id: peer.clientId }, sealed: f.sealed, ts: ctx.now };
    // Kept whole: the relay cannot cut what it cannot read; the history budget elides whole envelopes.
    const size = utf8Length(JSON.stringify(msg));
    if (!this.fits(size)) return [this.err(peer, "over_budget", this.overBudget(`keeping this message's ${size} bytes`))];
    return this.keepMessage(asWire(msg), key, ctx);
  }

  /** Past the history budget, the oldest large bodies become placeholders that say what was there. The
   * entries stay (the last 200 are always listed), only their bodies go. */
  private trimHistory(): void {
    let over = this.store.historyBytes() - LIMITS.historyBudgetBytes;
    while (over > 0) {
      const batch = this.store.largeMessages(LIMITS.historyLargeBodyBytes, 20);
      if (batch.length === 0) return;
      for (const m of batch) {
        const small = isSealedMessage(m.frame) ? asWire(elidedSealed(m.frame)) : placeholderFor(m.frame);
        this.store.replaceMessage(m.seq, small);
        over -= m.bytes - utf8Length(JSON.stringify(small));
        if (over <= 0) return;
      }
    }
  }

  private onStatus(_peer: Peer, f: ClientFrameOf<"status">, ctx: Ctx): Out[] {
    return this.setStatus(f.detail === undefined ? { state: f.state } : { state: f.state, detail: f.detail }, ctx);
  }

  private setStatus(s: AgentStatus, ctx: Ctx): Out[] {
    this.store.setMeta("agent_status", JSON.stringify(s));
    return this.presence(ctx);
  }

  agentStatus(): AgentStatus | undefined {
    const s = this.store.meta("agent_status");
    return s ? (JSON.parse(s) as AgentStatus) : undefined;
  }

  // ------------------------------------------------------------------ time

  /** Closes every call past its deadline and forgets expired results. Idempotent. */
  tick(ctx: Ctx): Out[] {
    const out: Out[] = [];
    // Bounded work per run: when more rows are due, nextDue() stays in the past and the alarm runs again.
    for (const c of this.store.dueCalls(ctx.now, LIMITS.maxRowsPerTick)) {
      const t = clampTimeout(c.timeout_s ?? undefined);
      out.push(...this.finish(c, { code: "timeout", message: `no result within ${t} s` }, undefined, ctx));
    }
    this.store.purgeResults(ctx.now, LIMITS.maxRowsPerTick);
    // Registrations of clients away for 7 days go (a connected client's clock restarts instead).
    const live = new Set(ctx.peers.map(keyOf));
    const idle = this.store.idleRegistrations(ctx.now - LIMITS.registrationIdleMs, LIMITS.maxRowsPerTick);
    if (idle.length) {
      const before = this.catalogs();
      for (const k of idle) {
        if (live.has(k)) this.store.touch(k, ctx.now);
        else this.store.dropRegistration(k);
      }
      out.push(...this.catalogChanges(before, ctx));
    }
    return out;
  }

  /** A client gone for good (its device revoked): its tools leave the catalog now, not after 7 days idle.
   * Open calls it held stay open for another provider, or end at their deadline. Idempotent. */
  forget(key: string, ctx: Ctx): Out[] {
    if (!this.store.registrations(key.startsWith("agent:") ? "agent" : "app").some((r) => r.key === key)) return [];
    const before = this.catalogs();
    this.store.dropRegistration(key);
    return this.catalogChanges(before, ctx);
  }

  private catalogs(): Record<Role, string> {
    return { agent: sameTools(this.catalog("agent")), app: sameTools(this.catalog("app")) };
  }
  /** `tool.list` to the other side of every catalog that changed since `before`. */
  private catalogChanges(before: Record<Role, string>, ctx: Ctx): Out[] {
    const out: Out[] = [];
    for (const role of ["agent", "app"] as const) {
      const now = this.catalog(role);
      if (sameTools(now) === before[role]) continue;
      const to = new Set(ctx.peers.filter((p) => p.role !== role && !p.virtual).map(keyOf));
      for (const k of to) out.push({ to: k, frame: { type: "tool.list", tools: now } });
    }
    return out;
  }

  nextDue(): number | undefined {
    return this.store.nextDue();
  }

  // ------------------------------------------------------------------ HTTP calls (§7)

  /** Starts a call for the reserved HTTP caller. `conflict` when the call_id is taken. */
  httpCall(body: { call_id?: string; name: string; action?: string; arguments: Record<string, unknown>; timeout_s?: number }, ctx: Ctx): { call_id: string; conflict: boolean; out: Out[] } {
    const call_id = body.call_id ?? `http_${this.newId()}`;
    if (this.store.getCall(call_id)) return { call_id, conflict: true, out: [] };
    const frame: ClientFrameOf<"tool.call"> = { type: "tool.call", call_id, name: body.name, arguments: body.arguments };
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

  // ------------------------------------------------------------------ status

  status(ctx: Ctx, extra: { label?: string; expires_at: number }): SessionStatus {
    const ps = this.peerState(ctx);
    const ids = (role: Role) => [...new Set(ctx.peers.filter((p) => p.role === role && !p.virtual && !isInternal(p)).map((p) => p.clientId))];
    const s: SessionStatus = {
      session_id: this.sessionId,
      expires_at: extra.expires_at,
      agent: ps.agent,
      apps: ps.apps,
      app_clients: ids("app"),
      agent_clients: ids("agent"),
      tools: { agent: this.catalog("agent"), app: this.catalog("app") },
      pending_calls: this.store.countOpen(),
      messages: this.store.messages(0, LIMITS.historySize).map(wire),
      sealed: this.sealed,
    };
    if (extra.label !== undefined) s.label = extra.label;
    return s;
  }

  private err(peer: Peer, code: ErrorCode, message: string, call_id?: string): Out {
    const frame: RelayFrame = call_id === undefined ? { type: "error", code, message } : { type: "error", code, message, call_id };
    return { to: keyOf(peer), conn: peer.conn, frame };
  }
}

/** Compared by content, not order: re-registering the same tools moves them in the union's order. */
function sameTools(tools: ToolDef[]): string {
  return canonicalJson([...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
}

/** What a tool asks for: its type and schemas, not its wording. */
function shapeOf(t: ToolDef): unknown {
  return t.type === "action" ? { type: t.type, inputSchema: t.inputSchema } : { type: t.type, actions: t.actions.map((a) => ({ name: a.name, inputSchema: a.inputSchema })) };
}

/** The contract's message frame: `seq` is the store's cursor position, not part of the wire format. */
function wire(m: MessageOut): MessageOut {
  const { seq: _seq, ...frame } = m;
  return frame;
}

function callIdOf(f: ClientFrame): string | undefined {
  return "call_id" in f ? f.call_id : undefined;
}

export function callFrame(c: CallRow): ToolCallOut {
  const f: ToolCallOut = { type: "tool.call", call_id: c.call_id, name: c.name, arguments: JSON.parse(c.args) as Record<string, unknown>, deadline: c.deadline, from: c.caller_role };
  if (c.action !== null) f.action = c.action;
  if (c.timeout_s !== null) f.timeout_s = c.timeout_s;
  return f;
}
