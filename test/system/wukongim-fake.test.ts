// The fake WuKongIM v2.2.5 server (test/fixtures/wukongim/ws-server.ts) against the REAL client: the
// official JS SDK `wukongimjssdk` 1.0.4 running in Node over the `ws` client (test/fixtures/wukongim/sdk-socket.ts).
// If the fake's framing, key exchange, AES or msgKey were off by a byte, the SDK would refuse its CONNACK,
// drop its RECVs as "非法的消息" (bad msgKey) or its SENDs would not decrypt here. The SDK is one singleton
// per process, so these tests run in order on one client; the refused-token case comes last because the
// SDK then reconnects every 3 s until told to stop. Issue 31 item 5 (groundwork).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import WKSDK from "wukongimjssdk";
import { ConnectStatus } from "wukongimjssdk/lib/connect_manager";
import type { SendackPacket } from "wukongimjssdk/lib/proto";
import { Channel, type Message, MessageContent, MessageText } from "wukongimjssdk/lib/sdk";
import { SdkSocket } from "../fixtures/wukongim/sdk-socket.js";
import { FakeWuKongIMServer } from "../fixtures/wukongim/ws-server.js";

const LINEUP_TYPE = 10100; // the LineUp content type (test/fixtures/wukongim/README.md "Payload conventions")
const BOT = "lineup_bot";
const ME = "u_alice";

/** A LineUp frame as a custom SDK content type, registered the way a PWA would (WKSDK.register). */
class LineUpContent extends MessageContent {
  frame: Record<string, unknown> = {};
  constructor(frame?: Record<string, unknown>) {
    super();
    if (frame) this.frame = frame;
  }
  override get contentType(): number {
    return LINEUP_TYPE;
  }
  override decodeJSON(content: Record<string, unknown>): void {
    this.frame = content;
  }
  override encodeJSON(): Record<string, unknown> {
    return { ...this.frame };
  }
}

let fake: FakeWuKongIMServer;
const sdk = WKSDK.shared();
const received: Message[] = [];
const acks: SendackPacket[] = [];
const statuses: { status: ConnectStatus; reason: number | undefined }[] = [];

const toBot = new Channel(BOT, 1);
const inbound = () => received.filter((m) => m.fromUID !== ME);
const connected = () => sdk.connectManager.status === ConnectStatus.Connected;
const okConnects = () => fake.connects.filter((c) => c.outcome === "ok").length;

beforeAll(async () => {
  vi.spyOn(console, "log").mockImplementation(() => {}); // the SDK logs every packet in Chinese
  SdkSocket.install();
  fake = await FakeWuKongIMServer.start({ accounts: { alice: { password: "pw-alice", uid: ME, name: "Alice" } } });
  sdk.register(LINEUP_TYPE, () => new LineUpContent());
  sdk.chatManager.addMessageListener((m: Message) => received.push(m));
  sdk.chatManager.addMessageStatusListener((p: SendackPacket) => acks.push(p));
  sdk.connectManager.addConnectStatusListener((status: ConnectStatus, reason?: number) => statuses.push({ status, reason }));
  sdk.config.heartbeatInterval = 400; // upstream default 60 s; short so the ping test needs no long wait
});

afterAll(async () => {
  sdk.disconnect();
  await fake?.close();
  vi.restoreAllMocks();
});

describe("the fake WuKongIM server, driven by the real wukongimjssdk 1.0.4", () => {
  it("logs in through TSDD's POST /v1/user/login, finds the WebSocket in GET /v1/users/:uid/im, and connects with that token", async () => {
    const bad = await fetch(`${fake.httpUrl}/v1/user/login`, { method: "POST", body: JSON.stringify({ username: "alice", password: "nope", flag: 1 }) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ msg: "密码不正确！", status: 400 });

    const login = await fetch(`${fake.httpUrl}/v1/user/login`, { method: "POST", body: JSON.stringify({ username: "alice", password: "pw-alice", flag: 1 }) });
    expect(login.status).toBe(200);
    const user = (await login.json()) as { uid: string; token: string; name: string };
    expect(user).toMatchObject({ uid: ME, name: "Alice" });
    const route = (await (await fetch(`${fake.httpUrl}/v1/users/${user.uid}/im`)).json()) as { ws_addr: string; wss_addr: string; tcp_addr: string };
    expect(Object.keys(route).sort()).toEqual(["tcp_addr", "ws_addr", "wss_addr"]);

    sdk.config.addr = route.ws_addr;
    sdk.config.uid = user.uid;
    sdk.config.token = user.token;
    sdk.connect();
    await fake.until(connected, 10_000, "the SDK to accept the CONNACK");
    expect(statuses.at(-1)).toEqual({ status: ConnectStatus.Connected, reason: 1 });
    expect(fake.connects.at(-1)).toMatchObject({ uid: ME, token: user.token, version: 2, deviceFlag: 1, outcome: "ok" });
    expect(fake.connections(ME)).toBe(1);
  });

  it("delivers a pushed LineUp message to the SDK's listener decrypted, with its custom content type and an exact int64 id, and gets its RECVACK", async () => {
    const frame = {
      type: LINEUP_TYPE,
      v: 1,
      kind: "tool.call",
      call_id: "c-1",
      name: "choice",
      arguments: { question: "部署到哪个环境？", options: ["测试", "生产"] },
    };
    const stored = fake.push({ fromUid: BOT, channelId: ME, channelType: 1, payload: frame });
    const msg = await fake.until(() => inbound().find((m) => m.clientMsgNo === stored.clientMsgNo), 5000, "the SDK to receive the RECV");
    expect(msg.contentType).toBe(LINEUP_TYPE);
    expect(msg.content).toBeInstanceOf(LineUpContent);
    expect((msg.content as LineUpContent).frame).toEqual(frame);
    expect(msg.fromUID).toBe(BOT);
    // Person chat seen by the recipient: the channel is the other party.
    expect({ id: msg.channel.channelID, type: msg.channel.channelType }).toEqual({ id: BOT, type: 1 });
    expect(stored.messageId > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(msg.messageID).toBe(stored.messageId.toString());
    expect(msg.messageSeq).toBe(stored.messageSeq);
    await fake.until(() => fake.recvacks.find((a) => a.messageId === stored.messageId), 5000, "the RECVACK");

    const text = fake.push({ fromUid: BOT, channelId: ME, channelType: 1, payload: { type: 1, content: "#K3F7 部署到哪个环境？" } });
    const t = await fake.until(() => inbound().find((m) => m.clientMsgNo === text.clientMsgNo), 5000, "the text message");
    expect(t.content).toBeInstanceOf(MessageText);
    expect((t.content as MessageText).text).toBe("#K3F7 部署到哪个环境？");
  });

  it("records a message the SDK sends, decrypted, with its client_msg_no, and answers SENDACK reason 1 with the message id", async () => {
    const answer = { v: 1, kind: "tool.result", call_id: "c-1", result: { message: "生产" } };
    const sent = await sdk.chatManager.send(new LineUpContent(answer), toBot);
    const rec = await fake.until(() => fake.sends.find((s) => s.clientMsgNo === sent.clientMsgNo), 5000, "the SEND");
    expect(rec).toMatchObject({ uid: ME, channelId: BOT, channelType: 1, clientSeq: sent.clientSeq, reason: 1 });
    expect(rec.json).toEqual({ ...answer, type: LINEUP_TYPE });
    const ack = await fake.until(() => acks.find((a) => a.clientSeq === sent.clientSeq), 5000, "the SENDACK");
    expect(ack.reasonCode).toBe(1);
    expect(ack.messageID.toFixed()).toBe(String(rec.messageId));
    expect(fake.messages.at(-1)).toMatchObject({ fromUid: ME, channelId: BOT, clientMsgNo: sent.clientMsgNo });
  });

  it("serves TSDD's channel history (POST /v1/message/channel/sync) to the logged-in uid: the person chat named as she sees it, exact ids, payloads as JSON", async () => {
    const sync = (token: string, body: object) =>
      fetch(`${fake.httpUrl}/v1/message/channel/sync`, { method: "POST", headers: { token, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await sync("not-a-token", { channel_id: BOT, channel_type: 1 })).status).toBe(401);
    const r = await sync(fake.tokens.get(ME) ?? "", { channel_id: BOT, channel_type: 1, start_message_seq: 0, end_message_seq: 0, limit: 2, pull_mode: 1 });
    expect(r.status).toBe(200);
    const raw = await r.text();
    const body = JSON.parse(raw) as {
      more: number;
      messages: { message_idstr: string; channel_id: string; from_uid: string; message_seq: number; payload: Record<string, unknown> }[];
    };
    const mine = fake.messages.filter((m) => m.channelType === 1 && [m.fromUid, m.channelId].includes(ME) && [m.fromUid, m.channelId].includes(BOT));
    expect(body.messages.map((m) => m.message_idstr)).toEqual(mine.slice(0, 2).map((m) => m.messageId.toString()));
    expect(raw).toContain(`"message_id":${mine[0]!.messageId}`); // the int64 literal, as Go writes it
    expect(body.more).toBe(1);
    expect(body.messages.every((m) => m.channel_id === BOT)).toBe(true);
    expect(body.messages[0]!.payload).toMatchObject({ type: LINEUP_TYPE, kind: "tool.call" });
  });

  it("answers SENDACK reason 9 (PayloadDecodeError) to a SEND whose msgKey does not match the connection's key", async () => {
    const security = sdk.securityManager;
    const realKey = security.aesKey;
    security.aesKey = "0123456789abcdef"; // the SDK now signs and encrypts with a key the server never agreed
    try {
      const sent = await sdk.chatManager.send(new MessageText("tampered"), toBot);
      const ack = await fake.until(() => acks.find((a) => a.clientSeq === sent.clientSeq), 5000, "the SENDACK");
      expect(ack.reasonCode).toBe(9);
      expect(fake.sends.find((s) => s.clientMsgNo === sent.clientMsgNo)).toMatchObject({ reason: 9, json: undefined });
      expect(fake.messages.some((m) => m.clientMsgNo === sent.clientMsgNo)).toBe(false);
    } finally {
      security.aesKey = realKey;
    }
  });

  it("reads several packets sent in one WebSocket message, and a packet split across two messages", async () => {
    try {
      SdkSocket.mode = "batch";
      const a = await sdk.chatManager.send(new MessageText("one"), toBot);
      const b = await sdk.chatManager.send(new MessageText("two"), toBot);
      expect(SdkSocket.flushBatch()).toBeGreaterThanOrEqual(2); // a heartbeat PING may ride along
      await fake.until(() => [a, b].every((m) => fake.sends.some((s) => s.clientMsgNo === m.clientMsgNo && s.reason === 1)), 5000, "both batched SENDs");
      SdkSocket.mode = "split";
      const c = await sdk.chatManager.send(new MessageText("三"), toBot);
      const rec = await fake.until(() => fake.sends.find((s) => s.clientMsgNo === c.clientMsgNo), 5000, "the split SEND");
      expect(rec).toMatchObject({ reason: 1, json: { type: 1, content: "三" } });
    } finally {
      SdkSocket.mode = "whole";
    }
  });

  it("answers PING with PONG, so the SDK keeps its connection; unanswered, the SDK gives up on it and reconnects", async () => {
    const connects = okConnects();
    const pings = fake.pings;
    await fake.until(() => fake.pings >= pings + 5, 10_000, "five PINGs");
    expect(okConnects()).toBe(connects); // more than pingMaxRetryCount (3) pings: only PONGs kept it alive
    expect(connected()).toBe(true);

    fake.answerPings = false;
    try {
      await fake.until(() => okConnects() > connects, 15_000, "the SDK to reconnect after its PINGs went unanswered");
    } finally {
      fake.answerPings = true;
    }
    await fake.until(connected, 10_000, "the SDK to be connected again");
  });

  it("reconnects after its socket is dropped without a close frame, and receives on the new connection", async () => {
    const connects = okConnects();
    fake.drop(ME);
    await fake.until(() => SdkSocket.closeCodes.at(-1) === 1006 && !connected(), 5000, "the SDK to see the drop");
    await fake.until(() => okConnects() > connects && connected(), 10_000, "the SDK's reconnect (3 s timer)");
    const stored = fake.push({ fromUid: BOT, channelId: ME, channelType: 1, payload: { type: 1, content: "after reconnect" } });
    await fake.until(() => inbound().some((m) => m.messageID === stored.messageId.toString()), 5000, "the RECV on the new connection");
  });

  it("sees the SDK re-send an un-acked SEND after a reconnect with the SAME client_msg_no (and stores it twice: WuKongIM does not de-duplicate)", async () => {
    fake.holdSendacks = true;
    const answer = { v: 1, kind: "tool.result", call_id: "c-2", result: { message: "yes", confirmed: true } };
    const sent = await sdk.chatManager.send(new LineUpContent(answer), toBot);
    const first = await fake.until(() => fake.sends.find((s) => s.clientMsgNo === sent.clientMsgNo), 5000, "the first SEND");
    expect(first.reason).toBeUndefined();
    fake.holdSendacks = false;
    fake.drop(ME);
    const again = await fake.until(() => fake.sends.filter((s) => s.clientMsgNo === sent.clientMsgNo)[1], 15_000, "the re-sent SEND");
    expect(again.connId).not.toBe(first.connId);
    expect(again).toMatchObject({ clientSeq: first.clientSeq, reason: 1, json: { ...answer, type: LINEUP_TYPE } });
    const ack = await fake.until(() => acks.find((a) => a.clientSeq === sent.clientSeq), 5000, "the SENDACK of the re-send");
    expect(ack.reasonCode).toBe(1);
    expect(fake.messages.filter((m) => m.clientMsgNo === sent.clientMsgNo)).toHaveLength(2);
  });

  it("re-sends a RECV that was never acked, on demand and to the uid's next connection, with the same message id and client_msg_no", async () => {
    SdkSocket.dropOutgoing.add(6); // RECVACKs lost on the way
    let stored: ReturnType<FakeWuKongIMServer["push"]>;
    const copies = () => inbound().filter((m) => m.messageID === stored.messageId.toString());
    try {
      stored = fake.push({
        fromUid: BOT,
        channelId: ME,
        channelType: 1,
        payload: { type: LINEUP_TYPE, v: 1, kind: "tool.cancel", call_id: "c-3", reason: "timeout" },
      });
      await fake.until(() => copies().length === 1, 5000, "the first delivery");
      expect(fake.redeliverUnacked()).toBe(1); // what WuKongIM's 60 s retry does on the same connection
      await fake.until(() => copies().length === 2, 5000, "the retried RECV");
    } finally {
      SdkSocket.dropOutgoing.delete(6);
    }
    fake.redeliverOnConnect = true;
    try {
      fake.drop(ME);
      await fake.until(() => copies().length === 3, 15_000, "the RECV on the next connection");
    } finally {
      fake.redeliverOnConnect = false;
    }
    expect(new Set(copies().map((m) => m.clientMsgNo))).toEqual(new Set([stored.clientMsgNo]));
    await fake.until(() => fake.recvacks.some((a) => a.messageId === stored.messageId), 5000, "the RECVACK at last");
    expect(fake.redeliverUnacked()).toBe(0);
  });

  it("delivers a group message to the group's members only, with the group as the channel", async () => {
    fake.setGroup("g_other", ["u_bob", "u_carol"]);
    fake.setGroup("g_team1", [ME, "u_bob", BOT]);
    const notMine = fake.push({ fromUid: "u_bob", channelId: "g_other", channelType: 2, payload: { type: 1, content: "not for alice" } });
    const mine = fake.push({
      fromUid: "u_bob",
      channelId: "g_team1",
      channelType: 2,
      payload: { type: 1, content: "@lineup_bot hi", mention: { uids: [BOT] } },
    });
    const m = await fake.until(() => inbound().find((x) => x.clientMsgNo === mine.clientMsgNo), 5000, "the group message");
    expect({ id: m.channel.channelID, type: m.channel.channelType, from: m.fromUID }).toEqual({ id: "g_team1", type: 2, from: "u_bob" });
    expect((m.content as MessageText).mention?.uids).toEqual([BOT]);
    // One socket keeps order: had the other group's message been sent to alice, it would be here already.
    expect(inbound().some((x) => x.clientMsgNo === notMine.clientMsgNo)).toBe(false);
  });

  it("kicks a connection with DISCONNECT reason 12, after which the SDK stays off until told to connect", async () => {
    const seen = statuses.length;
    fake.kick(ME);
    await fake.until(() => statuses.slice(seen).find((s) => s.status === ConnectStatus.ConnectKick), 5000, "the SDK to see the kick");
    expect(statuses.slice(seen).find((s) => s.status === ConnectStatus.ConnectKick)?.reason).toBe(12);
    await fake.until(() => fake.connections(ME) === 0, 5000, "the kicked socket to close");
    expect(sdk.connectManager.needReconnect).toBe(false);
    sdk.connect();
    await fake.until(() => connected() && fake.connections(ME) === 1, 10_000, "the SDK to connect again");
  });

  it("closes a socket whose first packet is not CONNECT, without a close frame", async () => {
    const raw = new WebSocket(fake.wsUrl);
    await new Promise((r) => raw.once("open", r));
    const closed = new Promise<number>((r) => raw.once("close", (code: number) => r(code)));
    raw.send(Uint8Array.of(0x70)); // a PING before CONNECT
    expect(await closed).toBe(1006);
  });

  it("gives a wrong token NO CONNACK (v2.2.5 behaviour, not v1's reason 2): the socket dies on the 4 s auth timer with no close frame", async () => {
    sdk.disconnect();
    await fake.until(() => !connected() && fake.connections(ME) === 0, 5000, "the SDK to disconnect");
    const seen = statuses.length;
    const closes = SdkSocket.closeCodes.length;
    sdk.config.token = "not-the-token";
    sdk.connect();
    await fake.until(() => fake.connects.at(-1)?.outcome === "token verify fail: no CONNACK", 5000, "the refused CONNECT");
    await fake.until(() => SdkSocket.closeCodes.length > closes, 8000, "the auth idle timer to close the socket");
    sdk.disconnect(); // else the SDK retries every 3 s forever (upstream WuKongIMJSSDK#7)
    expect(SdkSocket.closeCodes.at(-1)).toBe(1006);
    expect(statuses.slice(seen).some((s) => s.status === ConnectStatus.Connected)).toBe(false);
    expect(fake.connections(ME)).toBe(0);
  });
});
