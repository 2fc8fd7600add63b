// The pure routing core: frames in, frames out, over a synchronous Store. No sockets, clocks or timers:
// the Durable Object drives it with SQLite and its alarm; the adapter's LAN mode with memory and one timer.
// Every frame arrives as the one internal frame (shared/contract/frames.ts `InFrame`, plain or sealed) and
// meets one handler per type in one table. Calls live in calls.ts, shared state and rules in router-state.ts.
import {
  canonicalJson,
  clampTimeout,
  LIMITS,
  MAY_SEND,
  otherRole,
  PROTOCOL,
  utf8Length,
  type AgentStatus,
  type ErrorCode,
  type HelloFrame,
  type InFrame,
  type InFrameOf,
  type InFrameType,
  isSealedTool,
  type KeptMessage,
  type KeptToolDef,
  type MessageOut,
  type SealedMessageOut,
  type PeerState,
  type OutFrame,
  type RelayFrame,
  type Role,
  type SessionStatus,
  type ToolDef,
  type ToolResultOut,
} from "../contract/protocol.js";
import { HUMAN_TOOL_NAMES } from "../contract/builtin-tools.js";
import { CallRouter } from "./calls.js";
import { keptCopy, placeholderFor } from "./history.js";
import { isInternal, keyOf, sameTools, shapeOf, wire, type Ctx, type Out, type Peer } from "./router-state.js";
import { elidedSealed, isSealedMessage, sealedTools, staleEpoch } from "./sealed.js";
import { SignalRelay } from "./signal.js";

export { callFrame, HTTP_PEER, isInternal, keyOf, type Ctx, type Out, type Peer, type RouterOptions } from "./router-state.js";

type Handler<T extends InFrameType> = (peer: Peer, frame: InFrameOf<T>, ctx: Ctx) => Out[];

export class Router extends CallRouter {
  // The one dispatch table: adding a frame type to the contract without a handler here fails to compile.
  private readonly handlers: { [T in InFrameType]: Handler<T> } = {
    "tool.list": (p, f, c) => this.onToolList(p, f, c),
    "tool.call": (p, f, c) => this.onToolCall(p, f, c),
    "tool.result": (p, f, c) => this.onToolResult(p, f, c),
    "tool.cancel": (p, f) => this.onToolCancel(p, f),
    "tool.ack": (p, f) => this.onToolAck(p, f),
    "tool.reseal": (p, f) => this.onReseal(p, f),
    message: (p, f, c) => this.onMessage(p, f, c),
    status: (p, f, c) => this.onStatus(p, f, c),
    "rtc.signal": (p, f, c) => this.onSignal(p, f, c),
  };
  private readonly signals = new SignalRelay();

  /** One frame, plain or sealed: the role's right to send it, a sealed payload's epoch, then its handler. */
  handle(peer: Peer, frame: InFrame, ctx: Ctx): Out[] {
    const callId = "call_id" in frame ? frame.call_id : undefined;
    if (!MAY_SEND[frame.type].includes(peer.role)) return [this.err(peer, "forbidden", `the ${peer.role} role may not send ${frame.type}`, callId)];
    const stale = staleEpoch(frame, () => this.opts.sealedEpoch?.() ?? 0);
    if (stale)
      return [
        this.err(peer, "stale_epoch", `sealed under epoch ${stale.epoch}; the inbox is at epoch ${stale.current}: fetch the new key and seal again`, callId),
      ];
    const h = this.handlers[frame.type] as Handler<typeof frame.type>;
    this.regMemo = new Map();
    try {
      return h(peer, frame as never, ctx);
    } finally {
      this.regMemo = undefined;
    }
  }

  // ------------------------------------------------------------------ connections

  connect(peer: Peer, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    const to = (frame: OutFrame): Out => ({ to: key, conn: peer.conn, frame });
    const out: Out[] = [to(this.hello(peer, ctx)), to({ type: "tool.list", tools: this.catalog(otherRole(peer.role)) })];
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
    const h: HelloFrame = {
      type: "hello",
      protocol: PROTOCOL,
      session_id: this.sessionId,
      role: peer.role,
      client_id: peer.clientId,
      peers: this.peerState(ctx),
    };
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

  /** Why a registration is refused (sizes, tool poisoning, the budget), or undefined when it is fine. */
  private refuseRegistration(peer: Peer, tools: KeptToolDef[]): { code: ErrorCode; message: string } | undefined {
    const key = keyOf(peer);
    const bytes = utf8Length(JSON.stringify(tools));
    if (bytes > LIMITS.maxRegistrationBytes)
      return {
        code: "too_large",
        message: `a registration is at most ${LIMITS.maxRegistrationBytes} bytes of JSON (this one: ${bytes}); nothing was registered`,
      };
    // Sealed tools: descriptions and schemas are inside their envelopes (the receiver checks them).
    if (this.sealed)
      return this.fits(bytes - (this.store.registration(key)?.bytes ?? 0)) ? undefined : { code: "over_budget", message: this.overBudget("this registration") };
    for (const t of tools) {
      if (isSealedTool(t)) continue;
      const parts =
        t.type === "action"
          ? [{ label: t.name, description: t.description, schema: t.inputSchema }]
          : [
              { label: t.name, description: t.description, schema: {} },
              ...t.actions.map((a) => ({ label: `${t.name}.${a.name}`, description: a.description, schema: a.inputSchema })),
            ];
      for (const x of parts) {
        if (x.description.length > LIMITS.maxDescriptionChars)
          return {
            code: "too_large",
            message: `${x.label}: a description is at most ${LIMITS.maxDescriptionChars} characters (refused, not truncated); nothing was registered`,
          };
        const n = utf8Length(JSON.stringify(x.schema));
        if (n > LIMITS.maxSchemaBytes)
          return {
            code: "too_large",
            message: `${x.label}: an inputSchema is at most ${LIMITS.maxSchemaBytes} bytes of JSON (this one: ${n}); nothing was registered`,
          };
      }
    }
    // Tool poisoning: a built-in human tool already offered by another client keeps its schema, so what the
    // model reads and what the human is asked cannot be swapped under either of them.
    const others = new Map<string, ToolDef>();
    for (const r of this.regs(peer.role)) if (r.key !== key) for (const t of r.tools) if (!isSealedTool(t)) others.set(t.name, t);
    for (const t of tools) {
      if (isSealedTool(t)) continue;
      const have = HUMAN_TOOL_NAMES.has(t.name) ? others.get(t.name) : undefined;
      if (have && canonicalJson(shapeOf(have)) !== canonicalJson(shapeOf(t))) {
        return {
          code: "tool_conflict",
          message: `"${t.name}" is a built-in human tool another client already provides with a different schema; nothing was registered`,
        };
      }
    }
    if (!this.fits(bytes - (this.store.registration(key)?.bytes ?? 0))) return { code: "over_budget", message: this.overBudget("this registration") };
    return undefined;
  }

  /** A catalog query, or a registration: plaintext definitions, or a sealed session's names and envelopes. */
  private onToolList(peer: Peer, f: InFrameOf<"tool.list">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    if (!f.tools) return [{ to: key, conn: peer.conn, frame: { type: "tool.list", tools: this.catalog(otherRole(peer.role)) } }];
    const tools = "plain" in f.tools ? f.tools.plain : sealedTools(f.tools.sealed, key);
    const refused = this.refuseRegistration(peer, tools);
    if (refused) return [this.err(peer, refused.code, refused.message)];
    const before = sameTools(this.catalog(peer.role));
    this.store.register(key, peer.role, tools, ctx.now);
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
      const verdict = this.check(
        c.name,
        c.action ?? undefined,
        this.sealed ? undefined : (JSON.parse(c.args) as Record<string, unknown>),
        otherRole(c.caller_role),
        true,
      );
      if ("error" in verdict) out.push(...this.finish(c, { code: verdict.error, message: verdict.message }, undefined, ctx));
      else this.store.setChecked(c.call_id, verdict.target);
    }
    out.push(...this.catchUp(peer, ctx));
    return out;
  }

  // ------------------------------------------------------------------ messages and status

  /** A chat message: v1 content (kept cut to its budget), or a sealed session's envelope (kept whole). */
  private onMessage(peer: Peer, f: InFrameOf<"message">, ctx: Ctx): Out[] {
    const key = keyOf(peer);
    if (f.id && this.store.hasMessage(key, f.id)) return []; // a retried message is delivered once
    const from = { role: peer.role, client_id: peer.clientId };
    if ("sealed" in f.body) {
      const msg: SealedMessageOut = { type: "message", id: f.id ?? this.newId(), from, sealed: f.body.sealed, ts: ctx.now };
      // Kept whole: the relay cannot cut what it cannot read; the history budget elides whole envelopes.
      const size = utf8Length(JSON.stringify(msg));
      if (!this.fits(size)) return [this.err(peer, "over_budget", this.overBudget(`keeping this message's ${size} bytes`))];
      return this.keepMessage(msg, key, ctx);
    }
    const msg: MessageOut = { type: "message", id: f.id ?? this.newId(), from, content: f.body.plain, ts: ctx.now };
    // Connected clients get the message whole (any frame up to 1 MiB is valid); the kept copy's text is
    // cut to its budget, and past the history's budget older bodies become placeholders.
    const kept = keptCopy(msg);
    const size = utf8Length(JSON.stringify(kept));
    if (!this.fits(size)) return [this.err(peer, "over_budget", this.overBudget(`keeping this message's ${size} bytes`))];
    return this.keepMessage(kept, key, ctx, msg);
  }

  /** Stores a message and fans it out (`live`: the uncut copy connected clients get). */
  private keepMessage(kept: KeptMessage, key: string, ctx: Ctx, live: KeptMessage = kept): Out[] {
    const seq = this.store.addMessage(kept, key);
    this.trimHistory();
    const to = new Set(ctx.peers.filter((p) => !isInternal(p)).map(keyOf));
    to.delete(key);
    for (const k of to) this.store.setCursor(k, seq);
    this.store.setCursor(key, seq);
    return [...to].map((k) => ({ to: k, frame: live }));
  }

  /** Past the history budget, the oldest large bodies become placeholders that say what was there. The
   * entries stay (the last 200 are always listed), only their bodies go. */
  private trimHistory(): void {
    let over = this.store.historyBytes() - LIMITS.historyBudgetBytes;
    while (over > 0) {
      const batch = this.store.largeMessages(LIMITS.historyLargeBodyBytes, 20);
      if (batch.length === 0) return;
      for (const m of batch) {
        const small = isSealedMessage(m.frame) ? elidedSealed(m.frame) : placeholderFor(m.frame);
        this.store.replaceMessage(m.seq, small);
        over -= m.bytes - utf8Length(JSON.stringify(small));
        if (over <= 0) return;
      }
    }
  }

  /** The agent's status: a plaintext detail, or a sealed one with its author (the AAD's sender). */
  private onStatus(peer: Peer, f: InFrameOf<"status">, ctx: Ctx): Out[] {
    const s: AgentStatus = { state: f.state };
    if (f.detail && "plain" in f.detail) s.detail = f.detail.plain;
    else if (f.detail) Object.assign(s, { sealed: f.detail.sealed, sender: keyOf(peer) });
    this.store.setMeta("agent_status", JSON.stringify(s));
    return this.presence(ctx);
  }

  /** Issue 32: a direct path's handshake, to the one peer it names (shared/session/signal.ts). Never kept. */
  private onSignal(peer: Peer, f: InFrameOf<"rtc.signal">, ctx: Ctx): Out[] {
    const v = this.signals.route(peer, f, ctx);
    return v.ok ? [v.out] : [this.err(peer, v.code, v.message)];
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
}
