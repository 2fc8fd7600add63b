// One IM conversation as the PWA's IM mode shows it (issue 31): a pure core fed with WuKongIM messages — live
// RECVs, the page's own sends, and history from the sync API, in any mix and with repeats — that keeps one
// card per `call_id` and the chat rows around them. Hosts (im/client.ts, im/ImScreen.tsx) only translate SDK
// messages into `ImMsg` and render `view()`. De-dup: by WuKongIM message id (a RECV re-sent until RECVACK,
// history overlapping live messages), then by `call_id` (the relay's card sent again after a retry).
import { type ImCallCard, type ImCancel, parseImFrame } from "../../../shared/contract/im-card.js";
import type { ToolError, ToolResultBody } from "../../../shared/contract/tools.js";

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
  /** Our answer (sent, or seen in history) and the `client_msg_no` it went with. */
  mine?: { result?: ToolResultBody; error?: ToolError; clientMsgNo: string };
  /** Who answered when it was not us: the relay's `answered_by`, or the uid of a text reply naming the code. */
  by?: string;
  /** What the winner answered, when known (the relay's `answer`, or the text after the code). */
  answerText?: string;
  seq: number;
}

export type ImRow = { kind: "card"; callId: string; seq: number } | { kind: "text"; id: string; fromUid: string; text: string; seq: number; mine: boolean };

/** A text reply naming a call: "#K3F7 2", "#k3f7 yes" (codes are matched case-insensitively, as the relay does). */
const CODE_RE = /^\s*#([A-Za-z0-9]{3,8})\b\s*([\s\S]*)$/;

export class ImThread {
  private readonly seen = new Set<string>();
  private readonly cards = new Map<string, ImCard>();
  private readonly texts: Extract<ImRow, { kind: "text" }>[] = [];
  /** Text replies by code (upper case), so a card closed "answered" can show what the winner said. */
  private readonly replies = new Map<string, { fromUid: string; text: string }>();

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
    c.state = "sent";
    c.mine = { ...a, clientMsgNo };
    this.seen.add(`c:${clientMsgNo}`);
    return true;
  }

  /** Marks deadlines passed on this device's clock (the relay's timeout update closes it for good). */
  expire(now: number): void {
    for (const c of this.cards.values()) if (c.state === "pending" && c.call.deadline <= now) c.state = "timeout";
  }

  card(callId: string): ImCard | undefined {
    return this.cards.get(callId);
  }

  /** Rows in conversation order (message seq); the text rendering of a card (its `#CODE`, from the bot) is hidden. */
  view(): ImRow[] {
    const codes = new Set([...this.cards.values()].map((c) => c.call.code).filter((c): c is string => !!c));
    const rows: ImRow[] = [...this.cards.values()].map((c) => ({ kind: "card" as const, callId: c.call.call_id, seq: c.seq }));
    for (const t of this.texts) {
      const code = CODE_RE.exec(t.text)?.[1]?.toUpperCase();
      if (t.fromUid === this.bot && code && codes.has(code)) continue;
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
      if (!this.cards.has(f.call_id)) this.cards.set(f.call_id, { call: f, state: "pending", seq: m.seq });
      return;
    }
    const c = this.cards.get(f.call_id);
    if (!c) return;
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
        c.state = "elsewhere";
        const reply = c.call.code ? this.replies.get(c.call.code) : undefined;
        c.by = f.answered_by ?? reply?.fromUid;
        c.answerText = f.answer ?? reply?.text;
      }
      return;
    }
    if (c.state === "pending" || c.state === "sent" || c.state === "timeout") c.state = end(f.reason);
  }

  private text(m: ImMsg): void {
    const text = m.text ?? "";
    this.texts.push({ kind: "text", id: m.id || m.clientMsgNo, fromUid: m.fromUid, text, seq: m.seq, mine: m.fromUid === this.me });
    const r = CODE_RE.exec(text);
    if (r && m.fromUid !== this.bot) this.replies.set(r[1]!.toUpperCase(), { fromUid: m.fromUid, text: r[2]!.trim() });
  }
}

function end(reason: string): ImCardState {
  return reason === "timeout" ? "timeout" : reason === "cancelled" ? "cancelled" : reason === "answered" ? "elsewhere" : "gone";
}

function pick(f: { result?: ToolResultBody; error?: ToolError }): { result?: ToolResultBody; error?: ToolError } {
  return { ...(f.result ? { result: f.result } : {}), ...(f.error ? { error: f.error } : {}) };
}
