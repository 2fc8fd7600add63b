// One IM conversation as the PWA's IM mode shows it (issue 31): a pure core fed with WuKongIM messages — live
// RECVs, the page's own sends, and history from the sync API, in any mix and with repeats — that keeps one
// card per `call_id` and the chat rows around them. Hosts (im/client.ts, im/ImScreen.tsx) only translate SDK
// messages into `ImMsg` and render `view()`. De-dup: by WuKongIM message id (a RECV re-sent until RECVACK,
// history overlapping live messages), then by `call_id` (the relay's card sent again after a retry).
// The card payload is exactly the handout's layout (no deadline, no code): a card's short code is read from its
// text twin (`client_msg_no` `lineup-<call_id>-text`, from the bot), its end — timeouts too — from the relay's
// `tool.cancel` updates; there is no countdown on this device.
import { type ImCallCard, type ImCancel, type ImResult, parseImFrame } from "../../../shared/contract/im-card.js";
import type { ToolError, ToolResultBody } from "../../../shared/contract/tools.js";
import { parseCodeReply } from "../../../shared/text/code-reply.js";

/** A message as the thread needs it. `id` is WuKongIM's message id (a decimal string above 2^53), "" while unacked. */
export interface ImMsg {
  id: string;
  clientMsgNo: string;
  fromUid: string;
  seq: number;
  /** Unix seconds. */
  timestamp: number;
  /** Text (content type 1). */
  text?: string;
  /** The payload of a content-type-10100 message, unparsed. */
  lineup?: unknown;
}

export type ImCardState = "pending" | "sent" | "answered" | "elsewhere" | "timeout" | "cancelled" | "gone";

export interface ImCard {
  call: ImCallCard;
  state: ImCardState;
  /** The short code of the card's text twin, once that twin was seen (`card()` fills it in). */
  code?: string;
  /** Our answer (sent, or seen in history) and the `client_msg_no` it went with. */
  mine?: { result?: ToolResultBody; error?: ToolError; clientMsgNo: string };
  /** Who answered when it was not us: the relay's `answered_by`, or the uid of a text reply naming the code. */
  by?: string;
  /** What the winner answered, when known (the relay's `answer`, or the text after the code). */
  answerText?: string;
  seq: number;
}

export type ImRow = { kind: "card"; callId: string; seq: number } | { kind: "text"; id: string; fromUid: string; text: string; seq: number; mine: boolean };

/** The relay's text rendering of call X is sent as `lineup-X-text` (worker/wukongim/bridge.ts). */
const TWIN_RE = /^lineup-(.+)-text$/;

/** Updates kept per call (the card's state is replayed from them), and calls kept. */
const MAX_UPDATES_PER_CALL = 16;
const MAX_CALLS = 2000;

interface Twin {
  callId: string;
  fromUid: string;
  code: string;
  seq: number;
}

export class ImThread {
  private readonly seen = new Set<string>();
  private readonly cards = new Map<string, ImCard>();
  private readonly texts: Extract<ImRow, { kind: "text" }>[] = [];
  /** Text replies by code (upper case), so a card closed "answered" can show what the winner said. */
  private readonly replies = new Map<string, { fromUid: string; text: string }>();
  /** Text twins by row id; only the bot's count (see `codeOf`): anyone can pick a client_msg_no. */
  private readonly twins = new Map<string, Twin>();
  /** Every update and answer of ours seen, by call_id, in any order (see `replay`). */
  private readonly updates = new Map<string, { m: ImMsg; f: ImResult | ImCancel }[]>();
  /** Answers this page sent, by call_id, before their echo comes back. */
  private readonly sent = new Map<string, NonNullable<ImCard["mine"]>>();

  constructor(
    /** The logged-in uid: its own messages are "mine". */
    private readonly me: string,
    /** The relay's bot uid in this conversation (the person chat's channel id; groups: whoever sent a card). */
    private bot: string | undefined,
  ) {}

  /** Takes one message; false when it was already taken (same message id, or the same client_msg_no of ours). */
  add(m: ImMsg): boolean {
    const key = m.id || `c:${m.clientMsgNo}`;
    if (this.seen.has(key) || (m.id && m.fromUid === this.me && this.seen.has(`c:${m.clientMsgNo}`))) {
      if (m.id) this.seen.add(m.id);
      return false;
    }
    this.seen.add(key);
    if (m.fromUid === this.me) this.seen.add(`c:${m.clientMsgNo}`);
    if (m.lineup !== undefined) this.frame(m);
    else if (m.text !== undefined) this.text(m);
    return true;
  }

  /** Our answer to a card, before it is sent: false when the card is not open (nothing is sent twice). */
  answer(callId: string, a: { result?: ToolResultBody; error?: ToolError }, clientMsgNo: string): boolean {
    const c = this.cards.get(callId);
    if (!c || c.state !== "pending") return false;
    this.sent.set(callId, { ...a, clientMsgNo });
    this.seen.add(`c:${clientMsgNo}`);
    this.replay(c);
    return true;
  }

  /** The card with its code and, when someone else answered, who and what (from the relay or the winning text reply). */
  card(callId: string): ImCard | undefined {
    const c = this.cards.get(callId);
    if (!c) return undefined;
    const code = this.codeOf(callId);
    const out: ImCard = code ? { ...c, code } : { ...c };
    if (c.state !== "elsewhere" || c.mine) return out;
    const reply = code ? this.replies.get(code) : undefined;
    const by = c.by ?? reply?.fromUid;
    const answerText = c.answerText ?? reply?.text;
    if (by !== undefined) out.by = by;
    if (answerText !== undefined) out.answerText = answerText;
    return out;
  }

  /** The short code of call `callId`, from the bot's text twin (the latest, should the relay reuse the call_id). */
  codeOf(callId: string): string | undefined {
    let best: Twin | undefined;
    for (const t of this.twins.values()) if (t.callId === callId && t.fromUid === this.bot && (!best || t.seq > best.seq)) best = t;
    return best?.code;
  }

  /** Rows in conversation order (message seq); the text twin of a shown card (from the bot) is hidden. */
  view(): ImRow[] {
    const rows: ImRow[] = [...this.cards.values()].map((c) => ({ kind: "card" as const, callId: c.call.call_id, seq: c.seq }));
    for (const t of this.texts) {
      const twin = this.twins.get(t.id);
      if (twin && twin.fromUid === this.bot && this.cards.has(twin.callId)) continue;
      rows.push(t);
    }
    return rows.sort((a, b) => a.seq - b.seq);
  }

  private frame(m: ImMsg): void {
    const f = parseImFrame(m.lineup);
    if (!f) return;
    if (f.kind === "tool.call") {
      // Only the relay's bot sends calls: a person chat's other party; in a group, the first uid that sent a
      // card here (another member's look-alike card is not shown; docs/wukongim.md "Limits").
      if (m.fromUid === this.me || (this.bot !== undefined && m.fromUid !== this.bot)) return;
      this.bot ??= m.fromUid;
      if (this.cards.has(f.call_id) || this.cards.size >= MAX_CALLS) return;
      const card: ImCard = { call: f, state: "pending", seq: m.seq };
      this.cards.set(f.call_id, card);
      return this.replay(card);
    }
    // Kept whether or not its card came yet: history pages and live messages arrive in any order (the
    // conversation sync's newest messages before the older page), so the card's state is replayed from all.
    const list = this.updates.get(f.call_id) ?? [];
    if (list.length >= MAX_UPDATES_PER_CALL || (list.length === 0 && this.updates.size >= MAX_CALLS)) return;
    this.updates.set(f.call_id, [...list, { m, f }]);
    const c = this.cards.get(f.call_id);
    if (c) this.replay(c);
  }

  /** The card's state from its updates in message order (our own unacked echo has seq 0: first). Idempotent. */
  private replay(c: ImCard): void {
    c.state = "pending";
    delete c.mine;
    delete c.by;
    delete c.answerText;
    const own = this.sent.get(c.call.call_id);
    if (own) {
      c.state = "sent";
      c.mine = own;
    }
    const list = [...(this.updates.get(c.call.call_id) ?? [])].sort((a, b) => a.m.seq - b.m.seq);
    for (const u of list) this.update(c, u.m, u.f);
  }

  private update(c: ImCard, m: ImMsg, f: ImResult | ImCancel): void {
    // Updates come from the relay's bot only (in a group, anyone may post a look-alike).
    if (f.kind === "tool.cancel" && m.fromUid !== this.bot) return;
    if (f.kind === "tool.result") {
      // Our own answer seen again (history, or another tab): the card waits for the relay's verdict.
      if (m.fromUid === this.me && c.state === "pending") c.mine = { ...pick(f), clientMsgNo: m.clientMsgNo };
      if (m.fromUid === this.me && c.state === "pending") c.state = "sent";
      return;
    }
    this.cancel(c, f);
  }

  private cancel(c: ImCard, f: ImCancel): void {
    if (f.in_reply_to !== undefined) {
      // A late answer was refused: ours lost (the call had already ended); someone else's changes nothing of ours.
      if (f.in_reply_to === c.mine?.clientMsgNo) {
        c.state = f.reason === "answered" ? "elsewhere" : end(f.reason);
        if (f.answered_by) c.by = f.answered_by;
      }
      return;
    }
    if (f.reason === "answered") {
      if (c.state === "sent") c.state = "answered";
      else if (c.state === "pending" || c.state === "timeout") {
        c.state = "elsewhere"; // who and what: the relay's word, else the winning text reply (`card()`)
        if (f.answered_by !== undefined) c.by = f.answered_by;
        if (f.answer !== undefined) c.answerText = f.answer;
      }
      return;
    }
    if (c.state === "pending" || c.state === "sent" || c.state === "timeout") c.state = end(f.reason);
  }

  private text(m: ImMsg): void {
    const text = m.text ?? "";
    const id = m.id || m.clientMsgNo;
    this.texts.push({ kind: "text", id, fromUid: m.fromUid, text, seq: m.seq, mine: m.fromUid === this.me });
    const r = parseCodeReply(text);
    const twin = TWIN_RE.exec(m.clientMsgNo)?.[1];
    if (twin !== undefined && r) this.twins.set(id, { callId: twin, fromUid: m.fromUid, code: r.code, seq: m.seq });
    else if (r && m.fromUid !== this.bot) this.replies.set(r.code, { fromUid: m.fromUid, text: r.answer });
  }
}

function end(reason: string): ImCardState {
  return reason === "timeout" ? "timeout" : reason === "cancelled" ? "cancelled" : reason === "answered" ? "elsewhere" : "gone";
}

function pick(f: { result?: ToolResultBody; error?: ToolError }): { result?: ToolResultBody; error?: ToolError } {
  return { ...(f.result ? { result: f.result } : {}), ...(f.error ? { error: f.error } : {}) };
}
