// TSDD's conversation sync as IM mode reads it (issue 31): which of the person's conversations hold LineUp cards,
// so a fresh device lists them at once. Pure: a body in, conversations out; web/src/im/client.ts does the
// fetching through the SDK's `syncConversationsCallback`. Each conversation and each message is parsed on its own
// (a bad one is skipped, the others are kept).
import { IM_LINEUP_TYPE, TsddConversation, TsddConversationSync, TsddSyncMessage } from "../../../shared/contract/im-card.js";

export interface SyncedConversation {
  channelId: string;
  channelType: number;
  /** Unix seconds of the last message (0 when TSDD gave none). */
  timestamp: number;
  /** Its newest messages, newest first, as TSDD sent them. */
  recents: TsddSyncMessage[];
}

/** The conversations of a `POST /v1/conversation/sync` answer; [] when the body is not one. */
export function parseConversations(body: unknown): SyncedConversation[] {
  const wrap = TsddConversationSync.safeParse(body);
  if (!wrap.success) return [];
  return (wrap.data.conversations ?? []).flatMap((raw) => {
    const c = TsddConversation.safeParse(raw);
    if (!c.success) return [];
    const recents = (c.data.recents ?? []).flatMap((m) => {
      const r = TsddSyncMessage.safeParse(m);
      return r.success ? [r.data] : [];
    });
    return [{ channelId: c.data.channel_id, channelType: c.data.channel_type, timestamp: c.data.timestamp ?? 0, recents }];
  });
}

/**
 * Whether a conversation holds LineUp cards, from its recent messages: a content-type-10100 message, or the text
 * twin of one (`client_msg_no` `lineup-…`: the relay's renderings and notices, also when the card itself is older
 * than the recents). Only a hint for the list: what the thread shows is decided by im/thread.ts.
 */
export function holdsLineUp(c: SyncedConversation): boolean {
  return c.recents.some((m) => m.payload.type === IM_LINEUP_TYPE || m.client_msg_no.startsWith("lineup-"));
}
