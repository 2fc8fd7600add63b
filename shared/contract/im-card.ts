// The LineUp payload inside WuKongIM messages (content type 10100), as the PWA's IM mode reads and writes it
// (issue 31; layout: docs/wukongim.md "IM mode (relay side)"). The relay's bridge (worker/wukongim/bridge.ts)
// sends `tool.call` cards and `tool.cancel` updates and judges the `tool.result` answers the PWA sends.
import { z } from "./zod.js";
import { CallId, JsonObject, ToolError, ToolName, ToolResultBody } from "./tools.js";

/** The one WuKongIM content type LineUp uses (no range is reserved upstream). */
export const IM_LINEUP_TYPE = 10100;

/**
 * A call as a card: exactly the handout's layout (`../shared/wukongim/message-send.request.tool-call.json`), the
 * call's full arguments and nothing else. The card's short code comes from its text twin (`client_msg_no`
 * `lineup-<call_id>-text`), its end from the relay's `tool.cancel` updates (timeouts included).
 */
export const ImCallCard = z.looseObject({
  v: z.literal(1),
  kind: z.literal("tool.call"),
  call_id: CallId,
  name: ToolName,
  action: z.string().max(64).optional(),
  arguments: JsonObject,
});
export type ImCallCard = z.infer<typeof ImCallCard>;

/** A card's end: cancelled, timed out, answered (by anyone), or — with `in_reply_to` — a late answer that lost. */
export const ImCancel = z.looseObject({
  v: z.literal(1),
  kind: z.literal("tool.cancel"),
  call_id: CallId,
  reason: z.string().min(1).max(64),
  answered_by: z.string().max(128).optional(),
  answer: z.string().max(4000).optional(),
  /** The `client_msg_no` of the late answer this update refuses. */
  in_reply_to: z.string().max(128).optional(),
});
export type ImCancel = z.infer<typeof ImCancel>;

/** A structured answer, sent by an IM-mode client (and seen again in history). */
export const ImResult = z.looseObject({
  v: z.literal(1),
  kind: z.literal("tool.result"),
  call_id: CallId,
  name: ToolName.optional(),
  action: z.string().max(64).optional(),
  result: ToolResultBody.optional(),
  error: ToolError.optional(),
});
export type ImResult = z.infer<typeof ImResult>;

export const ImLineUpFrame = z.discriminatedUnion("kind", [ImCallCard, ImCancel, ImResult]);
export type ImLineUpFrame = z.infer<typeof ImLineUpFrame>;

/** The frame in a 10100 payload, or undefined (another kind such as `tool.list`, or malformed: not shown). */
export function parseImFrame(v: unknown): ImLineUpFrame | undefined {
  const r = ImLineUpFrame.safeParse(v);
  return r.success ? r.data : undefined;
}

// ---------------------------------------------------------------- TangSengDaoDao HTTP bodies (IM-mode login, history)
// Read from TangSengDaoDao/TangSengDaoDaoServer (commit e977db8): modules/user/api.go `login` and `userIM`,
// modules/message/api.go `syncChannelMessage`, modules/message/api_conversation.go `syncUserConversation` (commit
// c851aaa); test/fixtures/wukongim/ws-server.ts and tsdd-sync.ts reproduce them.

/** `POST /v1/user/login` (loginUserDetailResp): only what IM mode needs. */
export const TsddLogin = z.looseObject({ uid: z.string().min(1).max(128), token: z.string().min(1).max(512), name: z.string().max(256).optional() });
/** `GET /v1/users/:uid/im`: WuKongIM's `GET /route` body. */
export const TsddRoute = z.looseObject({ ws_addr: z.string().max(512).optional(), wss_addr: z.string().max(512).optional() });
/** TSDD's error body (pkg/wkhttp ResponseError). */
export const TsddError = z.looseObject({ msg: z.string().max(1000), status: z.number().optional() });

/** One message of `POST /v1/message/channel/sync`: the payload already decoded to JSON by TSDD. */
export const TsddSyncMessage = z.looseObject({
  message_idstr: z.string().regex(/^[0-9]{1,20}$/),
  client_msg_no: z.string().max(128),
  message_seq: z.number().int().nonnegative(),
  from_uid: z.string().max(256),
  channel_id: z.string().max(256),
  channel_type: z.number().int().min(0).max(255),
  timestamp: z.number().int(),
  payload: JsonObject,
});
export type TsddSyncMessage = z.infer<typeof TsddSyncMessage>;
export const TsddSync = z.looseObject({
  start_message_seq: z.number().int().optional(),
  end_message_seq: z.number().int().optional(),
  more: z.number().int().optional(),
  /** Each one parsed on its own (TsddSyncMessage): one bad message does not hide the others. */
  messages: z.array(z.unknown()).max(10_000),
});

/** Messages of one conversation asked for by `POST /v1/conversation/sync` (`msg_count`). */
export const IM_CONVERSATION_RECENTS = 20;

/** One conversation of `POST /v1/conversation/sync` (SyncUserConversationResp): who, and its newest messages. */
export const TsddConversation = z.looseObject({
  channel_id: z.string().min(1).max(256),
  channel_type: z.number().int().min(0).max(255),
  timestamp: z.number().int().optional(),
  /** Newest first; left out (omitempty) when empty. Each one parsed on its own (TsddSyncMessage). */
  recents: z.array(z.unknown()).max(10_000).optional(),
});
export type TsddConversation = z.infer<typeof TsddConversation>;
/** `POST /v1/conversation/sync`'s answer (SyncUserConversationRespWrap); Go writes an empty list as `[]`, a nil one as `null`. */
export const TsddConversationSync = z.looseObject({
  uid: z.string().max(256).optional(),
  conversations: z.array(z.unknown()).max(10_000).nullable(),
});
