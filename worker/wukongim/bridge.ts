// The WuKongIM side of an IM-bound session, run inside the session's Durable Object.
// The IM conversation is one virtual app-side peer (`app:im`): the router delivers calls, cancels and
// messages to it like to any app; this class turns them into WuKongIM `/message/send` requests through a
// SQLite outbox (retried from the DO's single alarm — no timers, hibernation wipes memory), and turns
// webhook messages back into frames from that peer, under the router's usual rules.
import { ASK_QUESTION, CHOICE, CONFIRM, INPUT, WORK_REPORT } from "../../shared/contract/builtin-tools.js";
import {
  LIMITS,
  parseFrameValue,
  type ClientFrame,
  type PeerState,
  isSealedFrame,
  isSealedTool,
  type OutFrame,
  type SessionStatus,
  type ToolDef,
} from "../../shared/contract/protocol.js";
import type { Bridge } from "../../shared/session/engine.js";
import { keyOf, type Out, type Peer } from "../../shared/session/router.js";
import { deliveriesOf, type Store } from "../../shared/session/store.js";
import type { Env } from "../env.js";
import { inboundContent, newCode, parseCodeReply, renderCall, renderContent, textAnswer } from "./text.js";
import { LINEUP_TYPE, sendBody, sendMessage, TEXT_TYPE, WK_LIMITS, wkConfig, type SendBody, type WkConfig } from "./wire.js";

/** The IM conversation as an always-reachable app peer (not counted as an app in presence). */
export const IM_PEER: Peer = { role: "app", clientId: "im", conn: "im", virtual: true };
export const IM_KEY = keyOf(IM_PEER);
/** What a person can answer from a plain IM app (a LineUp-aware IM client may register more). */
export const IM_TOOLS: ToolDef[] = [CHOICE, CONFIRM, INPUT, ASK_QUESTION, WORK_REPORT];

export interface ImChannel {
  channel_id: string;
  channel_type: number;
  /** A group's bound human: the only member whose LineUp client may register tools. */
  owner_uid?: string;
}

/** One webhook message for this session, already filtered and decoded by the Worker. */
export interface ImMessage {
  /** `message_idstr` (the int64 id as a string, never a JS number). */
  id: string;
  from_uid: string;
  /** The sender's `client_msg_no`: an SDK re-send after a reconnect repeats it under a new message id. */
  client_msg_no?: string;
  payload: Record<string, unknown>;
}
export type ImInbound = { kind: "messages"; messages: ImMessage[] } | { kind: "presence"; online: boolean };

/** What the bridge needs from the Durable Object. */
export interface BridgeHost {
  /** Routes a frame from an IM peer under the session's usual rules (one transaction). */
  route(peer: Peer, frame: ClientFrame): void;
  /** Sends presence to every client (the IM online state changed). */
  presence(): void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS im_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT, bodies TEXT NOT NULL,
  sent INTEGER NOT NULL, attempts INTEGER NOT NULL, next_at INTEGER NOT NULL, deadline INTEGER, last_error TEXT);
CREATE INDEX IF NOT EXISTS im_outbox_due ON im_outbox (next_at);
CREATE TABLE IF NOT EXISTS im_codes (code TEXT PRIMARY KEY, call_id TEXT NOT NULL UNIQUE, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS im_seen (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS im_answers (call_id TEXT PRIMARY KEY, client_msg_no TEXT, from_uid TEXT NOT NULL, at INTEGER NOT NULL);
`;

type OutboxRow = {
  id: number;
  call_id: string | null;
  bodies: string;
  sent: number;
  attempts: number;
  next_at: number;
  deadline: number | null;
  last_error: string | null;
};

/** Delay before retry number `attempts` (1-based): 2 s, doubling, at most 60 s. */
export const backoffMs = (attempts: number) => Math.min(WK_LIMITS.maxRetryMs, WK_LIMITS.firstRetryMs * 2 ** Math.max(0, attempts - 1));

export class WuKongImBridge implements Bridge {
  private readonly cfg: WkConfig | undefined;
  /** Outbox rows whose request is in flight in this alarm run (a cancel must not assume they were unsent). */
  private readonly inflight = new Set<number>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly store: Store,
    env: Env,
    private readonly channel: ImChannel,
    private readonly host: BridgeHost,
    /** Injected for tests; the Worker's global fetch otherwise. */
    private readonly fetcher: typeof fetch = (...a) => fetch(...a),
  ) {
    sql.exec(SCHEMA);
    this.cfg = wkConfig(env);
  }

  private all<T extends Record<string, SqlStorageValue>>(q: string, ...p: SqlStorageValue[]): T[] {
    return this.sql.exec<T>(q, ...p).toArray();
  }
  private one<T extends Record<string, SqlStorageValue>>(q: string, ...p: SqlStorageValue[]): T | undefined {
    return this.all<T>(q, ...p)[0];
  }

  // ---------------------------------------------------------------- session hooks

  /** Registers the IM peer's catalog (keeping what a LineUp-aware IM client added). Idempotent. */
  init(): void {
    // The IM peer's own registrations are plaintext: a sealed session has no IM bridge.
    const extra = (this.store.registrations("app").find((r) => r.key === IM_KEY)?.tools ?? []).filter((t): t is ToolDef => !isSealedTool(t));
    this.register(extra);
  }

  private register(extra: readonly ToolDef[]): void {
    const byName = new Map<string, ToolDef>();
    for (const t of [...IM_TOOLS, ...extra]) byName.set(t.name, t);
    const tools = [...byName.values()].slice(0, LIMITS.maxToolsPerRegistration);
    this.route({ type: "tool.list", tools });
  }

  /** IM online state from `user.onlinestatus` (undefined until the first event). */
  online(): boolean | undefined {
    const v = this.store.meta("im_online");
    return v === undefined ? undefined : v === "1";
  }

  /** Adds `im: {online}` to presence frames (and to `hello.peers`, so a new client knows it at once). */
  decorate(frame: OutFrame): void {
    if (frame.type !== "presence" && frame.type !== "hello") return;
    const on = this.online();
    if (on === undefined) return;
    if (frame.type === "presence") frame.im = { online: on };
    else (frame.peers as PeerState & { im?: { online: boolean } }).im = { online: on };
  }

  status(s: SessionStatus): SessionStatus {
    const on = this.online();
    return { ...s, im: on === undefined ? { ...this.channel } : { ...this.channel, online: on } };
  }

  /** Earliest time the alarm must run for the outbox: a retry, or a call's deadline. */
  nextDue(): number | undefined {
    const r = this.one<{ a: number | null; d: number | null }>("SELECT MIN(next_at) AS a, MIN(deadline) AS d FROM im_outbox");
    const ts = [r?.a, r?.d].filter((t): t is number => typeof t === "number");
    return ts.length ? Math.min(...ts) : undefined;
  }

  // ---------------------------------------------------------------- outbound (router → IM)

  peers(): Peer[] {
    return [IM_PEER];
  }

  /** The outbox's bytes, part of the session's budget. */
  bytes(): number {
    return this.one<{ n: number }>("SELECT COALESCE(SUM(length(bodies)), 0) AS n FROM im_outbox")?.n ?? 0;
  }

  /** Takes the frames the router addressed to the conversation (`app:im`). */
  accept(out: Out): boolean {
    if (out.to !== IM_KEY) return false;
    this.acceptFrame(out.frame);
    return true;
  }

  /** Synchronous: it only writes the outbox. */
  private acceptFrame(frame: OutFrame): void {
    if (isSealedFrame(frame)) return; // a sealed session has no IM bridge (docs/e2e.md); nothing sealed is rendered
    switch (frame.type) {
      case "tool.call": {
        // The router delivers a call to `im` once; this guards the same call only (a call_id may be reused
        // once the earlier call was acked, and that new call needs its own code).
        const prev = this.one<{ at: number }>("SELECT at FROM im_codes WHERE call_id = ?", frame.call_id);
        if (prev && prev.at >= (this.store.getCall(frame.call_id)?.created_at ?? 0)) return;
        const code = this.issueCode(frame.call_id);
        const lineup: Record<string, unknown> = { type: LINEUP_TYPE, v: 1, kind: "tool.call", call_id: frame.call_id, name: frame.name };
        if (frame.action !== undefined) lineup.action = frame.action;
        lineup.arguments = frame.arguments;
        // Exactly the handout's layout (../shared/wukongim/message-send.request.tool-call.json): an IM-mode client
        // learns the code from the text twin (`lineup-<call_id>-text`) and the end from the relay's updates.
        this.enqueue(
          [this.body(`lineup-${frame.call_id}`, lineup), this.body(`lineup-${frame.call_id}-text`, { type: TEXT_TYPE, content: renderCall(frame, code) })],
          frame.call_id,
          frame.deadline,
        );
        return;
      }
      case "tool.cancel": {
        const row = this.one<OutboxRow>("SELECT * FROM im_outbox WHERE call_id = ?", frame.call_id);
        if (row) this.sql.exec("DELETE FROM im_outbox WHERE id = ?", row.id);
        // Never sent: the conversation never saw the call, so it needs no cancel either.
        if (row && row.sent === 0 && !this.inflight.has(row.id)) return;
        const update: Record<string, unknown> = { type: LINEUP_TYPE, v: 1, kind: "tool.cancel", call_id: frame.call_id, reason: frame.reason };
        if (frame.answered_by !== undefined) update.answered_by = frame.answered_by;
        if (frame.answer !== undefined) update.answer = frame.answer;
        this.enqueue([this.body(`lineup-${frame.call_id}-cancel`, update)]);
        return;
      }
      case "tool.list":
        this.enqueue([this.body(`lineup-list-${crypto.randomUUID()}`, { type: LINEUP_TYPE, v: 1, kind: "tool.list", tools: frame.tools })]);
        return;
      case "message":
        // Only the agent's messages go to the conversation (IM chat must not echo back into it).
        if (frame.from.role !== "agent") return;
        this.enqueue([this.body(`lineup-msg-${frame.id}`, { type: TEXT_TYPE, content: renderContent(frame.content) })]);
        return;
      case "error":
        this.notice(`LineUp: ${frame.message}`);
        return;
      default:
        return; // hello, presence, tool.result: nothing to show in the conversation
    }
  }

  private body(clientMsgNo: string, payload: object): SendBody {
    // Without configuration the body still needs a sender; sending then fails and is retried/given up.
    const cfg = this.cfg ?? { apiUrl: "", botUid: "" };
    return sendBody(cfg, this.channel, clientMsgNo, payload);
  }

  private notice(text: string): void {
    this.enqueue([this.body(`lineup-notice-${crypto.randomUUID()}`, { type: TEXT_TYPE, content: text.slice(0, WK_LIMITS.maxTextChars) })]);
  }

  private enqueue(bodies: SendBody[], callId: string | null = null, deadline: number | null = null): void {
    const n = this.one<{ n: number }>("SELECT COUNT(*) AS n FROM im_outbox")?.n ?? 0;
    if (n >= WK_LIMITS.maxOutbox) {
      // Bounded: the oldest chat item goes first (calls are bounded by the open-call limit and end by deadline).
      const old = this.one<{ id: number }>("SELECT id FROM im_outbox WHERE call_id IS NULL ORDER BY id LIMIT 1");
      if (!old) return;
      console.warn("wukongim: outbox full, dropping the oldest message");
      this.sql.exec("DELETE FROM im_outbox WHERE id = ?", old.id);
    }
    this.sql.exec(
      "INSERT INTO im_outbox (call_id, bodies, sent, attempts, next_at, deadline) VALUES (?, ?, 0, 0, ?, ?)",
      callId,
      JSON.stringify(bodies),
      Date.now(),
      deadline,
    );
  }

  private issueCode(callId: string): string {
    this.sql.exec("DELETE FROM im_codes WHERE call_id = ?", callId); // a stale code of an earlier call with this id
    let code = newCode();
    while (this.one("SELECT 1 AS x FROM im_codes WHERE code = ?", code)) code = newCode();
    this.sql.exec("INSERT INTO im_codes (code, call_id, at) VALUES (?, ?, ?)", code, callId, Date.now());
    const n = this.one<{ n: number }>("SELECT COUNT(*) AS n FROM im_codes")?.n ?? 0;
    if (n > WK_LIMITS.maxCodes) {
      // Bounded: forget the oldest codes of calls that are no longer open.
      for (const r of this.all<{ code: string; call_id: string }>("SELECT code, call_id FROM im_codes ORDER BY at LIMIT ?", n - WK_LIMITS.maxCodes + 100)) {
        if (this.store.getCall(r.call_id)?.status !== "open") this.sql.exec("DELETE FROM im_codes WHERE code = ?", r.code);
      }
    }
    return code;
  }

  /**
   * Run from the DO's alarm before the router's deadline tick: calls whose deadline passed before WuKongIM
   * accepted them end as `im_undeliverable` (not `timeout`).
   */
  expire(): void {
    for (const row of this.all<OutboxRow>("SELECT * FROM im_outbox WHERE deadline IS NOT NULL AND deadline <= ?", Date.now())) {
      this.giveUp(row, `the call's deadline passed before WuKongIM accepted it${row.last_error ? ` (last error: ${row.last_error})` : ""}`);
    }
  }

  /**
   * Run from the DO's alarm: sends due outbox items in order. A failure backs the item off (2 s doubling,
   * ≤ 60 s; the 8th failure gives it up) and ends the run: WuKongIM is most likely down or refusing us, so
   * the other items wait for the same retry time, uncharged — one probe per backoff step, not a burst.
   */
  async pump(): Promise<void> {
    const due = this.all<OutboxRow>("SELECT * FROM im_outbox WHERE next_at <= ? ORDER BY id LIMIT ?", Date.now(), WK_LIMITS.pumpBatch);
    for (const first of due) {
      // Re-read: a cancel or an answer may have removed the item while an earlier send was awaited.
      const row = this.one<OutboxRow>("SELECT * FROM im_outbox WHERE id = ?", first.id);
      if (!row) continue;
      const error = await this.send(row);
      if (error === undefined) {
        this.sql.exec("DELETE FROM im_outbox WHERE id = ?", row.id);
        continue;
      }
      const attempts = row.attempts + 1;
      console.warn(`wukongim: send failed (attempt ${attempts}/${WK_LIMITS.maxAttempts}): ${error}`);
      if (attempts >= WK_LIMITS.maxAttempts) this.giveUp({ ...row, last_error: error }, `WuKongIM refused it ${attempts} times (last error: ${error})`);
      else {
        const next = Date.now() + backoffMs(attempts);
        this.sql.exec("UPDATE im_outbox SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?", attempts, next, error, row.id);
        this.sql.exec("UPDATE im_outbox SET next_at = ? WHERE next_at < ?", next, next);
      }
      return;
    }
  }

  /** Sends an item's remaining bodies in order; the error of the first that fails, else undefined. */
  private async send(row: OutboxRow): Promise<string | undefined> {
    let bodies: SendBody[];
    try {
      bodies = JSON.parse(row.bodies) as SendBody[];
    } catch {
      return "corrupt outbox item";
    }
    this.inflight.add(row.id);
    try {
      for (let i = row.sent; i < bodies.length; i++) {
        if (!this.cfg) return "WUKONGIM_API_URL / WUKONGIM_BOT_UID are not configured";
        const r = await sendMessage(this.cfg, bodies[i]!, this.fetcher);
        if (!r.ok) return r.error;
        this.sql.exec("UPDATE im_outbox SET sent = ? WHERE id = ?", i + 1, row.id);
      }
      return undefined;
    } finally {
      this.inflight.delete(row.id);
    }
  }

  /** Drops an item; an open call that only the IM conversation held ends with `im_undeliverable`. */
  private giveUp(row: OutboxRow, why: string): void {
    this.sql.exec("DELETE FROM im_outbox WHERE id = ?", row.id);
    if (row.call_id === null) {
      console.warn(`wukongim: message dropped: ${why}`);
      return;
    }
    const c = this.store.getCall(row.call_id);
    if (!c || c.status !== "open") return;
    // Another app client (the PWA) that holds the call can still answer it.
    if (deliveriesOf(c).some((d) => d.key !== IM_KEY)) return;
    const frame: ClientFrame = {
      type: "tool.result",
      call_id: c.call_id,
      name: c.name,
      error: { code: "im_undeliverable", message: `could not deliver the call to the IM conversation: ${why}`.slice(0, 500) },
    };
    if (c.action !== null) frame.action = c.action;
    this.route(frame);
  }

  // ---------------------------------------------------------------- inbound (webhook → router)

  inbound(input: ImInbound): void {
    if (input.kind === "presence") {
      if (this.online() === input.online) return;
      this.store.setMeta("im_online", input.online ? "1" : "0");
      this.host.presence();
      return;
    }
    for (const m of input.messages) {
      // Batches are retried whole: each message is handled once, by message_idstr (bounded table).
      if (this.one("SELECT 1 AS x FROM im_seen WHERE id = ?", m.id)) continue;
      this.sql.exec("INSERT INTO im_seen (id) VALUES (?)", m.id);
      this.handle(m);
    }
    this.sql.exec("DELETE FROM im_seen WHERE rowid <= (SELECT MAX(rowid) FROM im_seen) - ?", WK_LIMITS.maxSeen);
  }

  private handle(m: ImMessage): void {
    const p = m.payload;
    if (p.type === LINEUP_TYPE) return this.lineupFrame(p, m);
    if (p.type === TEXT_TYPE && typeof p.content === "string") {
      const reply = parseCodeReply(p.content);
      const code = reply && this.one<{ call_id: string }>("SELECT call_id FROM im_codes WHERE code = ?", reply.code);
      // A code that was never issued is plain chat.
      if (reply && code) return this.answer(code.call_id, reply.code, reply.answer);
    }
    const content = inboundContent(p);
    if (!content) return;
    const from: Peer = { role: "app", clientId: `im:${m.from_uid}`, conn: "im", virtual: true };
    this.host.route(from, { type: "message", id: `im-${m.id}`, content });
  }

  /** A type-10100 frame from a LineUp-aware IM client: validated like a WebSocket frame, then routed. */
  private lineupFrame(p: Record<string, unknown>, m: ImMessage): void {
    const from = m.from_uid;
    if (p.kind === "tool.result") {
      const f: Record<string, unknown> = { type: "tool.result" };
      for (const k of ["call_id", "name", "action", "result", "error"]) if (p[k] !== undefined) f[k] = p[k];
      const d = parseFrameValue(f);
      if (!d.ok || d.frame.type !== "tool.result") return this.notice(`LineUp: ${d.ok ? "bad tool.result" : d.error.message}`);
      return this.structuredAnswer(d.frame, m);
    }
    if (p.kind === "tool.list") {
      // Only the bound human registers tools: in a person chat the user it is with, in a group the
      // owner named at creation (none named: nobody, the plain-text tools stay). Any group member could
      // otherwise change what the agent's calls show to everyone.
      if (p.tools !== undefined && from !== this.boundUid()) return this.notice("LineUp: only the conversation's bound person may register tools here.");
      const d = parseFrameValue(p.tools === undefined ? { type: "tool.list" } : { type: "tool.list", tools: p.tools });
      if (!d.ok || d.frame.type !== "tool.list") return this.notice(`LineUp: ${d.ok ? "bad tool.list" : d.error.message}`);
      return d.frame.tools ? this.register(d.frame.tools) : this.route(d.frame);
    }
    // tool.call / tool.cancel from IM are not part of the bridge; other kinds are ignored.
  }

  /**
   * A structured answer (IM mode, issue 31), judged here before the router sees it: only from the bound
   * person, only for a call this conversation was sent, and the first answer wins. A re-send of the answer
   * that won (same `client_msg_no`, new message id) is dropped silently; any other late answer gets the
   * structured "answered elsewhere" update so its card closes (docs/wukongim.md, IM mode).
   */
  private structuredAnswer(frame: ClientFrame & { type: "tool.result" }, m: ImMessage): void {
    if (m.from_uid !== this.boundUid()) {
      return this.notice("LineUp: only the conversation's bound person may answer with a LineUp card here; reply to the call's #code instead.");
    }
    if (!this.one("SELECT 1 AS x FROM im_codes WHERE call_id = ?", frame.call_id)) {
      return this.notice(`LineUp: no call "${frame.call_id.slice(0, 64)}" was sent to this conversation.`);
    }
    const c = this.store.getCall(frame.call_id);
    if (c?.status === "open") {
      this.sql.exec(
        "INSERT OR REPLACE INTO im_answers (call_id, client_msg_no, from_uid, at) VALUES (?, ?, ?, ?)",
        frame.call_id,
        m.client_msg_no ?? null,
        m.from_uid,
        Date.now(),
      );
      this.sql.exec("DELETE FROM im_answers WHERE rowid <= (SELECT MAX(rowid) FROM im_answers) - ?", WK_LIMITS.maxCodes);
      return this.route(frame);
    }
    const won = this.one<{ client_msg_no: string | null }>("SELECT client_msg_no FROM im_answers WHERE call_id = ?", frame.call_id);
    if (won && m.client_msg_no !== undefined && won.client_msg_no === m.client_msg_no) return; // the SDK re-sent the winner
    const update: Record<string, unknown> = { type: LINEUP_TYPE, v: 1, kind: "tool.cancel", call_id: frame.call_id, reason: closedReason(c) };
    const by = c?.result ? (JSON.parse(c.result) as { answered_by?: unknown }).answered_by : undefined;
    if (typeof by === "string") update.answered_by = by;
    if (m.client_msg_no !== undefined) update.in_reply_to = m.client_msg_no;
    this.enqueue([this.body(`lineup-${frame.call_id}-late-${m.id}`, update)]);
  }

  /** Who may answer with a card: the user of a person chat, a group's named owner (none named: nobody). */
  private boundUid(): string | undefined {
    return this.channel.channel_type === 1 ? this.channel.channel_id : this.channel.owner_uid;
  }

  /** A text reply naming a call's code. */
  private answer(callId: string, code: string, text: string): void {
    const c = this.store.getCall(callId);
    if (!c || c.status !== "open") return this.notice(`#${code} was already answered or has closed.`);
    const a = textAnswer(c.name, JSON.parse(c.args) as Record<string, unknown>, text);
    if ("problem" in a) return this.notice(`#${code}: ${a.problem}.`);
    const frame: ClientFrame = { type: "tool.result", call_id: c.call_id, name: c.name, result: a.result };
    if (c.action !== null) frame.action = c.action;
    this.route(frame);
  }

  private route(frame: ClientFrame): void {
    this.host.route(IM_PEER, frame);
  }
}

/** How a call that is no longer open ended, for the structured update a late answer gets. */
function closedReason(c: { status: string; result: string | null } | undefined): "answered" | "timeout" | "cancelled" | "closed" {
  if (!c) return "closed"; // cancelled (dropped) or acked and forgotten: the relay no longer knows which
  let r: { result?: unknown; sealed?: unknown; error?: { code?: unknown } } = {};
  try {
    r = JSON.parse(c.result ?? "{}") as typeof r;
  } catch {
    /* kept results are the relay's own JSON */
  }
  if (r.result !== undefined || r.sealed !== undefined) return "answered";
  return r.error?.code === "timeout" ? "timeout" : "cancelled";
}
