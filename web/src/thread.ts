// One session's chat thread as this device shows it (web/src/conn.ts feeds it): messages in time order, each
// once, and which of this device's own are not sent yet (queued while offline).
import { signal } from "@preact/signals";
import type { ContentBlock, MessageOut } from "../../shared/contract/protocol.js";

export interface ThreadMessage {
  id: string;
  /** Sent from this device. */
  mine: boolean;
  /** Sent by the human: from this device or another of theirs (every app client of a session is one of the
   * human's devices — a paired device of the inbox or a browser holding the session's link); IM group
   * members (`im:` ids) are other people. */
  own: boolean;
  /** The sender's client id (another device's name is looked up when shown: names change). */
  from: string;
  role: "agent" | "app";
  content: ContentBlock[];
  ts: number;
  /** Sealed session: the message did not open on this device. */
  unreadable?: boolean;
  /** Sealed session: an old message the relay's history budget dropped (only its placeholder is left). */
  elided?: boolean;
}

export class Thread {
  readonly messages = signal<ThreadMessage[]>([]);
  /** Ids of this device's messages still waiting in the outbox. */
  readonly unsent = signal<Set<string>>(new Set());

  constructor(private readonly clientId: string) {}

  has(id: string): boolean {
    return this.messages.value.some((x) => x.id === id);
  }

  /** Adds a message once (a known id is ignored); `unsent` marks one of ours that waits for the connection. */
  add(m: MessageOut, unsent = false, unreadable = false): void {
    if (this.has(m.id)) return;
    const app = m.from.role === "app";
    const mine = app && m.from.client_id === this.clientId;
    const own = app && !/^im(:|$)/.test(m.from.client_id);
    const entry: ThreadMessage = { id: m.id, mine, own, from: m.from.client_id, role: m.from.role, content: m.content, ts: m.ts };
    if (unreadable) entry.unreadable = true;
    const list = [...this.messages.value, entry];
    list.sort((a, b) => a.ts - b.ts);
    this.messages.value = list;
    if (unsent) this.unsent.value = new Set([...this.unsent.value, m.id]);
  }

  /** A sealed message the relay's history budget dropped: only its placeholder is left. */
  markElided(id: string): void {
    this.messages.value = this.messages.value.map((x) => (x.id === id ? { ...x, elided: true } : x));
  }

  /** New keys: the messages that did not open are fetched again with the catch-up. */
  dropUnreadable(): void {
    this.messages.value = this.messages.value.filter((m) => !m.unreadable);
  }

  markSent(id: string): void {
    const s = new Set(this.unsent.value);
    s.delete(id);
    this.unsent.value = s;
  }
}
