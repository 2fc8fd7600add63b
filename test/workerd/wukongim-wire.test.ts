/// <reference types="vite/client" />
// The bridge's pure parts: wire parsing, answer shapes of /message/send, short-code replies.
import { describe, expect, it } from "vitest";
import v2error from "../fixtures/wukongim/message-send.response.v2.error.json?raw";
import v2ok from "../fixtures/wukongim/message-send.response.v2.ok.json?raw";
import textBatch from "../fixtures/wukongim/msg.notify.text-batch.json?raw";
import offlineBot from "../fixtures/wukongim/msg.offline.bot.json?raw";
import { parseCodeReply, renderCall, textAnswer } from "../../worker/wukongim/text.js";
import { decodePayload, encodePayload, parseOnlineStatus, parseWebhook, sendMessage, type SendBody } from "../../worker/wukongim/wire.js";

const CFG = { apiUrl: "http://wk.test", botUid: "lineup_bot", managerToken: "t0k" };
const BODY: SendBody = {
  header: { no_persist: 0, red_dot: 1, sync_once: 0 },
  client_msg_no: "x",
  from_uid: "lineup_bot",
  channel_id: "u",
  channel_type: 1,
  payload: "e30=",
};
const answering = (status: number, text: string | null) => (async () => new Response(text, { status })) as typeof fetch;

describe("WuKongIM wire", () => {
  it("parses the fixture batch, keeping message_idstr exact (message_id itself is rounded by JSON.parse)", () => {
    const r = parseWebhook("msg.notify", textBatch);
    expect(r.ok).toBe(true);
    if (!r.ok || r.value.event !== "msg.notify") return;
    expect(r.value.messages.map((m) => m.message_idstr)).toEqual(["2050183451750862848", "2050183452925267968"]);
    expect(String((JSON.parse(textBatch) as { message_id: number }[])[1]!.message_id)).not.toBe("2050183452925267968");
    expect(decodePayload(r.value.messages[0]!.payload)).toEqual({ content: "What is on my calendar tomorrow?", type: 1 });
    expect(parseWebhook("msg.offline", offlineBot).ok).toBe(true);
  });

  it("splits online-status lines from the right, since uids may contain '-'", () => {
    expect(parseOnlineStatus("u-a-b-1-0-7-0-0")).toEqual({ uid: "u-a-b", deviceFlag: 1, online: false, totalOnline: 0 });
    expect(parseOnlineStatus("u_alice-1-1-7-1-1")).toEqual({ uid: "u_alice", deviceFlag: 1, online: true, totalOnline: 1 });
  });

  it("round-trips payloads as standard base64 with padding of UTF-8", () => {
    const b64 = encodePayload({ type: 1, content: "部署 ✓" });
    expect(b64).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    expect(b64.length % 4).toBe(0);
    expect(decodePayload(b64)).toEqual({ type: 1, content: "部署 ✓" });
    expect(decodePayload("not base64!")).toBeUndefined();
    expect(decodePayload(btoa('{"no":"type"}'))).toBeUndefined();
  });

  it("accepts v2 and v3 success answers and refuses every error shape, sending the token header", async () => {
    let token: string | null = null;
    const spy = (async (_u: RequestInfo | URL, init?: RequestInit) => {
      token = new Headers(init?.headers).get("token");
      return new Response(v2ok, { status: 200 });
    }) as typeof fetch;
    expect(await sendMessage(CFG, BODY, spy)).toEqual({ ok: true });
    expect(token).toBe("t0k");
    expect(await sendMessage(CFG, BODY, answering(200, '{"message_id":2050183457539002368,"message_seq":3,"reason":1}'))).toEqual({ ok: true });
    const v2e = await sendMessage(CFG, BODY, answering(400, v2error));
    expect(v2e).toEqual({ ok: false, error: "HTTP 400: payload不能为空！" });
    expect(await sendMessage(CFG, BODY, answering(200, '{"message_id":1,"message_seq":0,"reason":2}'))).toMatchObject({ ok: false, error: "reason 2" });
    expect(await sendMessage(CFG, BODY, answering(500, '{"error":"boom"}'))).toMatchObject({ ok: false, error: "HTTP 500: boom" });
    expect(await sendMessage(CFG, BODY, answering(401, null))).toEqual({ ok: false, error: "HTTP 401: (empty body)" });
    expect(await sendMessage(CFG, BODY, (async () => Promise.reject(new TypeError("refused"))) as typeof fetch)).toMatchObject({
      ok: false,
      error: "network: refused",
    });
  });
});

describe("short-code replies", () => {
  it("reads a code at the start (after @-mentions, with # or ＃, any case) and nothing else", () => {
    expect(parseCodeReply("#K3F7 2")).toEqual({ code: "K3F7", answer: "2" });
    expect(parseCodeReply("@lineup_bot ＃k3f7：预发布")).toEqual({ code: "K3F7", answer: "预发布" });
    expect(parseCodeReply("see #K3F7 2")).toBeUndefined();
    expect(parseCodeReply("#K3F 2")).toEqual({ code: "K3F", answer: "2" });
    expect(parseCodeReply("#K3F7x")).toEqual({ code: "K3F7X", answer: "" });
    expect(parseCodeReply("#AB x")).toBeUndefined(); // codes are 3–8 characters
    expect(parseCodeReply("#ABCDEFGHI x")).toBeUndefined();
  });

  it("maps text answers to the built-in tools' result shapes", () => {
    const opts = { question: "q", options: ["测试", "预发布", "生产"] };
    expect(textAnswer("choice", opts, "2")).toEqual({ result: { message: "预发布", selected: ["预发布"] } });
    expect(textAnswer("choice", opts, "生产")).toEqual({ result: { message: "生产", selected: ["生产"] } });
    expect(textAnswer("choice", opts, "4")).toHaveProperty("problem");
    expect(textAnswer("choice", { ...opts, multiple: true }, "1, 3")).toEqual({ result: { message: "测试, 生产", selected: ["测试", "生产"] } });
    expect(textAnswer("confirm", { question: "q" }, "否")).toEqual({ result: { message: "no", confirmed: false } });
    expect(textAnswer("confirm", { question: "q", yes_label: "Ship" }, "ship")).toEqual({ result: { message: "yes", confirmed: true } });
    expect(textAnswer("confirm", { question: "q" }, "maybe")).toHaveProperty("problem");
    expect(textAnswer("ask_question", { question: "q", project_directory: "/p" }, "line 1\nline 2")).toEqual({ result: { message: "line 1\nline 2" } });
    expect(textAnswer("work_report", { summary: "s", project_directory: "/p" }, "LGTM")).toEqual({ result: { message: "approved", approved: true } });
    expect(textAnswer("calculator", {}, "3")).toHaveProperty("problem");
  });

  it("renders a confirm call with its code and labels", () => {
    expect(renderCall({ name: "confirm", arguments: { question: "Deploy?", yes_label: "Ship", no_label: "Wait" } }, "AB12")).toBe(
      '#AB12 Deploy?\nReply "#AB12 yes" (Ship) or "#AB12 no" (Wait).',
    );
  });
});
