// IM mode's reading of TSDD's conversation sync (web/src/im/sync.ts, issue 31): the bodies come from the fake's
// `POST /v1/conversation/sync` (test/fixtures/wukongim/tsdd-sync.ts, written from TangSengDaoDaoServer
// modules/message/api_conversation.go at commit c851aaa), so the parser is checked against upstream's layout.
import { describe, expect, it } from "vitest";
import { holdsLineUp, parseConversations } from "../../web/src/im/sync.js";
import { conversationSync } from "../fixtures/wukongim/tsdd-sync.js";
import type { StoredMessage } from "../fixtures/wukongim/ws-server.js";

const ME = "u_alice";
let seq = 0;
const msg = (fromUid: string, channelId: string, channelType: number, payload: object, clientMsgNo = `c${seq + 1}`): StoredMessage => ({
  messageId: 2050183470100000000n + BigInt(++seq),
  messageSeq: seq,
  clientMsgNo,
  fromUid,
  channelId,
  channelType,
  timestamp: 1_796_000_000 + seq,
  payload: new TextEncoder().encode(JSON.stringify(payload)),
});

const card = { type: 10100, v: 1, kind: "tool.call", call_id: "w1", name: "confirm", arguments: { question: "Ship?" } };
const all = [
  msg("lineup_bot", ME, 1, card, "lineup-w1"),
  msg("lineup_bot", ME, 1, { type: 1, content: "#K3F7 Ship?" }, "lineup-w1-text"),
  msg("u_bob", ME, 1, { type: 1, content: "lunch?" }),
  msg("u_carol", "g_team", 2, { type: 1, content: "standup" }),
  msg("u_mallory", "g_other", 2, card, "lineup-w1"),
];
const body = (count = 20) => JSON.parse(conversationSync(all, ME, { version: 0, msg_count: count }, (g) => g === "g_team")) as unknown;

describe("TSDD's conversation sync, as IM mode reads it", () => {
  it("lists the person's conversations named as she sees them, with exact message ids, newest message first", () => {
    const list = parseConversations(body());
    expect(list.map((c) => [c.channelId, c.channelType])).toEqual([
      ["lineup_bot", 1],
      ["u_bob", 1],
      ["g_team", 2],
    ]);
    const bot = list[0]!;
    expect(bot.recents.map((m) => m.client_msg_no)).toEqual(["lineup-w1-text", "lineup-w1"]);
    expect(bot.recents[1]!.message_idstr).toBe("2050183470100000001"); // above 2^53: the string twin, not the rounded number
    expect(bot.recents[1]!.payload).toEqual(card);
  });

  it("marks only conversations whose recent messages hold a LineUp card or its text twin", () => {
    expect(parseConversations(body()).map((c) => [c.channelId, holdsLineUp(c)])).toEqual([
      ["lineup_bot", true],
      ["u_bob", false],
      ["g_team", false],
    ]);
    // Only the twin among the recents (the card is older): still a conversation with cards.
    const [bot] = parseConversations(body(1));
    expect(bot?.recents.map((m) => m.client_msg_no)).toEqual(["lineup-w1-text"]);
    expect(bot && holdsLineUp(bot)).toBe(true);
  });

  it("skips a malformed conversation or message and keeps the others; a body that is no sync answer gives none", () => {
    const good = {
      channel_id: "lineup_bot",
      channel_type: 1,
      recents: [{ message_idstr: "x" }, (body() as { conversations: { recents: unknown[] }[] }).conversations[0]!.recents[0]],
    };
    const list = parseConversations({ uid: ME, conversations: [{ channel_type: 1 }, good, null] });
    expect(list.map((c) => [c.channelId, c.recents.length])).toEqual([["lineup_bot", 1]]);
    expect(parseConversations({ uid: ME, conversations: null })).toEqual([]);
    expect(parseConversations({ msg: "请先登录！", status: 401 })).toEqual([]);
    expect(parseConversations("nope")).toEqual([]);
  });
});
