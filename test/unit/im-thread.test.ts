// IM mode's pure core (web/src/im/thread.ts) and its address check (web/src/im/account.ts): messages in any
// order and with repeats, as WuKongIM, the SDK and TSDD's history deliver them (issue 31).
import { describe, expect, it } from "vitest";
import { checkAddr } from "../../web/src/im/account.js";
import { type ImMsg, ImThread } from "../../web/src/im/thread.js";

const ME = "u_alice";
const BOT = "lineup_bot";
const DEADLINE = Date.now() + 3_600_000;
let seq = 0;
const fromBot = (lineup: object, id = String(2050183470100000000n + BigInt(++seq))): ImMsg => ({
  id,
  clientMsgNo: `cmn-${id}`,
  fromUid: BOT,
  seq,
  timestamp: 0,
  lineup: { type: 10100, v: 1, ...lineup },
});
const call = (callId: string, code = "K3F7") =>
  fromBot({
    kind: "tool.call",
    call_id: callId,
    name: "choice",
    action: "select",
    arguments: { question: "where?", options: ["a", "b"] },
    deadline: DEADLINE,
    code,
  });
const cancel = (callId: string, extra: object = {}) => fromBot({ kind: "tool.cancel", call_id: callId, reason: "answered", ...extra });
const text = (from: string, content: string): ImMsg => ({ id: String(++seq), clientMsgNo: `t-${seq}`, fromUid: from, seq, timestamp: 0, text: content });

describe("an IM conversation's cards", () => {
  it("shows one card per call however often its message comes (RECV retry, history overlapping live), and hides the card's #CODE text", () => {
    const t = new ImThread(ME, BOT);
    const m = call("c1");
    expect(t.add(m)).toBe(true);
    expect(t.add({ ...m })).toBe(false); // the same message id again
    expect(t.add({ ...call("c1"), id: "999" })).toBe(true); // a new copy of the card (another message id) …
    expect(t.view().filter((r) => r.kind === "card")).toHaveLength(1); // … is still the same card
    t.add(text(BOT, "#K3F7 where?\n1. a\n2. b"));
    t.add(text(BOT, "#ZZZZ not a card of ours"));
    expect(t.view().map((r) => r.kind)).toEqual(["card", "text"]);
  });

  it("closes our answered card as answered here when the relay's answered update comes", () => {
    const t = new ImThread(ME, BOT);
    t.add(call("c1"));
    expect(t.answer("c1", { result: { message: "a" } }, "my-cmn")).toBe(true);
    expect(t.answer("c1", { result: { message: "b" } }, "my-cmn-2")).toBe(false); // nothing is sent twice
    t.add(cancel("c1"));
    expect(t.card("c1")).toMatchObject({ state: "answered", mine: { result: { message: "a" } } });
  });

  it("marks our answer lost when the relay refuses it with in_reply_to (another answer came first), and ignores other people's refused answers", () => {
    const t = new ImThread(ME, BOT);
    t.add(call("c1"));
    t.answer("c1", { result: { message: "a" } }, "my-cmn");
    t.add(cancel("c1", { in_reply_to: "someone-elses" }));
    expect(t.card("c1")?.state).toBe("sent");
    t.add(cancel("c1")); // the winner's answered update, seen before the refusal of ours
    t.add(cancel("c1", { in_reply_to: "my-cmn", answered_by: "phone" }));
    expect(t.card("c1")).toMatchObject({ state: "elsewhere", by: "phone" });
  });

  it("shows a TSDD text reply that won: answered elsewhere, by whom and what", () => {
    const t = new ImThread(ME, BOT);
    t.add(call("c1", "K3F7"));
    t.add(text("u_bob", "#k3f7 b"));
    t.add(cancel("c1"));
    expect(t.card("c1")).toMatchObject({ state: "elsewhere", by: "u_bob", answerText: "b" });
  });

  it("takes our own answer seen again in history (after a reload) and the SDK's re-send of it (same client_msg_no) once", () => {
    const t = new ImThread(ME, BOT);
    t.add(call("c1"));
    const mine: ImMsg = {
      id: "",
      clientMsgNo: "my-cmn",
      fromUid: ME,
      seq: 0,
      timestamp: 0,
      lineup: { type: 10100, v: 1, kind: "tool.result", call_id: "c1", result: { message: "a" } },
    };
    expect(t.add(mine)).toBe(true); // the SDK's own echo, before the SENDACK
    expect(t.add({ ...mine, id: "501", seq: 7 })).toBe(false); // history: the stored copy
    expect(t.add({ ...mine, id: "502", seq: 8 })).toBe(false); // the re-send after a reconnect, stored again
    expect(t.card("c1")?.state).toBe("sent");
    t.add(cancel("c1"));
    expect(t.card("c1")?.state).toBe("answered");
  });

  it("ends a card on timeout and cancel updates; a bad or foreign 10100 payload changes nothing", () => {
    const t = new ImThread(ME, BOT);
    t.add(call("c1"));
    t.add(call("c2"));
    t.add(fromBot({ kind: "tool.cancel", call_id: "c1", reason: "timeout" }));
    t.add(fromBot({ kind: "tool.cancel", call_id: "c2", reason: "cancelled" }));
    t.add(fromBot({ kind: "tool.call", call_id: "c3" })); // no name, no arguments
    t.add({ ...call("c4"), fromUid: ME }); // calls come from the bot only
    t.add(fromBot({ kind: "tool.cancel", call_id: "nope", reason: "answered" }));
    expect([t.card("c1")?.state, t.card("c2")?.state, t.card("c3"), t.card("c4")]).toEqual(["timeout", "cancelled", undefined, undefined]);
  });
});

describe("an IM group's cards", () => {
  it("come only from the uid that sent the first card there: another member's look-alike card is not shown", () => {
    const t = new ImThread(ME, undefined);
    t.add(call("g1"));
    t.add({ ...call("g2"), fromUid: "u_mallory" });
    expect([t.card("g1")?.state, t.card("g2")]).toEqual(["pending", undefined]);
  });
});

describe("IM mode's server addresses", () => {
  it("allow https/wss anywhere and http/ws only to this machine", () => {
    expect(checkAddr("https://im.example.com/api", "http").host).toBe("im.example.com");
    expect(checkAddr("wss://im.example.com/ws", "ws").protocol).toBe("wss:");
    expect(checkAddr("http://127.0.0.1:8090", "http").port).toBe("8090");
    expect(checkAddr("ws://localhost:5200", "ws").hostname).toBe("localhost");
  });

  it("refuse ws:// and http:// to another host with a sentence that says why, and non-URLs", () => {
    expect(() => checkAddr("ws://10.0.0.5:5200", "ws")).toThrow(/unencrypted: use wss:\/\//);
    expect(() => checkAddr("http://im.example.com", "http")).toThrow(/use https:\/\//);
    expect(() => checkAddr("ftp://im.example.com", "http")).toThrow(/not a TangSengDaoDao server/);
    expect(() => checkAddr("im.example.com", "http")).toThrow(/is not a URL/);
  });
});
