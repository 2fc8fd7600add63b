/// <reference types="vite/client" />
// The WuKongIM bridge inside workerd: the real Worker route and session Durable Object, with WuKongIM's
// HTTP API played by the fake in test/fixtures/wukongim/fake.ts (global fetch is stubbed for its host;
// the Durable Object runs in the test isolate, so its sends reach the fake).
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import toolCallRequest from "../fixtures/wukongim/message-send.request.tool-call.json?raw";
import textBatch from "../fixtures/wukongim/msg.notify.text-batch.json?raw";
import toolResultNotify from "../fixtures/wukongim/msg.notify.tool-result.json?raw";
import offlineBot from "../fixtures/wukongim/msg.offline.bot.json?raw";
import onlineStatus from "../fixtures/wukongim/user.onlinestatus.json?raw";
import type { SessionCreated, SessionStatus } from "../../shared/contract/protocol.js";
import { FakeWuKongIM, notifyBody, type NotifyMessage, type SentMessage } from "../fixtures/wukongim/fake.js";
import { connect, createSession, fetchWorker, stubOf, type Client, type Frame } from "./helpers.js";

const SECRET = "test-webhook-secret";
const BOT = "lineup_bot";
const FIXTURE_CALL = {
  type: "tool.call",
  call_id: "call_8Yk2",
  name: "choice",
  action: "select",
  arguments: { question: "部署到哪个环境？", options: ["测试", "预发布", "生产"] },
};

let fake: FakeWuKongIM;
beforeEach(() => {
  fake = new FakeWuKongIM({ managerToken: "test-manager-token" });
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation((input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    return new URL(req.url).host === "wukongim.test" ? fake.handle(req) : real(input, init);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

function hook(event: string, body: string, secret = SECRET): Promise<Response> {
  return fetchWorker(`/webhooks/wukongim/${secret}?event=${event}`, { method: "POST", headers: { "content-type": "application/json" }, body });
}

// A conversation's session is handed out once (a second POST gets 409 im_bound), so tests of this file
// that use the same conversation share the session its first test created, as its creator would.
const created = new Map<string, SessionCreated>();

/** An IM-bound session for a person chat with `uid`, and its agent connected. */
async function imSession(channel_id: string, channel_type = 1): Promise<{ sid: string; token: string; agent: Client; status: () => Promise<SessionStatus> }> {
  const k = `${channel_type}:${channel_id}`;
  const s = created.get(k) ?? (await createSession({ im: { channel_id, channel_type } }));
  created.set(k, s);
  const agent = await connect(s.session_id, s.agent_token, { clientId: "agent1" });
  const status = async () =>
    (await (await fetchWorker(`/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } })).json()) as SessionStatus;
  return { sid: s.session_id, token: s.agent_token, agent, status };
}

const text = (from_uid: string, content: string, extra: Partial<NotifyMessage> = {}): NotifyMessage => ({
  from_uid,
  channel_id: BOT,
  channel_type: 1,
  payload: { type: 1, content },
  ...extra,
});
const sentTo = (uid: string) => fake.sent.filter((s) => s.body.channel_id === uid);
const codeOf = (s: SentMessage) => /#([A-Z0-9]{3,8})/.exec(String(s.payload.content))![1]!;
const isMessage = (f: Frame) => f.type === "message";

/** Makes every outbox item due now and runs the session's alarm (fast-forwarding the retry backoff). */
async function retryNow(sid: string): Promise<void> {
  await runInDurableObject(stubOf(sid), (_i, state) => {
    state.storage.sql.exec("UPDATE im_outbox SET next_at = 0");
  });
  await runDurableObjectAlarm(stubOf(sid));
}

describe("WuKongIM bridge: outbound", () => {
  it("regression (card payload carried deadline and code): sends a choice call as the handout fixture's exact /message/send body, byte for byte, then the text twin with a short code", async () => {
    const { agent, status } = await imSession("u_alice");
    const list = await agent.next("tool.list");
    expect((list.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(["choice", "confirm", "input", "ask_question"]));
    agent.send(FIXTURE_CALL);
    await fake.until(() => sentTo("u_alice").length >= 2, 5000, "two sends");
    const [lineup, readable] = sentTo("u_alice") as [SentMessage, SentMessage];
    // Byte for byte, as the relay posted it: nothing added to the handout's payload (IM mode reads the code
    // from the text twin and the end from the relay's updates).
    expect(lineup.raw).toBe(toolCallRequest.trim());
    expect(readable.body.client_msg_no).toBe("lineup-call_8Yk2-text");
    expect(lineup.token).toBe("test-manager-token");
    expect(readable.payload.type).toBe(1);
    expect(readable.body).toMatchObject({ from_uid: BOT, channel_id: "u_alice", channel_type: 1, header: { no_persist: 0, sync_once: 0 } });
    expect(readable.payload.content).toMatch(/^#[A-Z0-9]{3,8} 部署到哪个环境？\n1\. 测试\n2\. 预发布\n3\. 生产\n/);
    const st = await status();
    expect(st.im).toEqual({ channel_id: "u_alice", channel_type: 1 });
    expect(st.apps).toBe(0); // the conversation is a virtual peer, not an app

    // A LineUp-aware IM client answers with a type-10100 tool.result (the fixture, byte for byte).
    expect((await hook("msg.notify", toolResultNotify)).status).toBe(200);
    const res = await agent.next("tool.result");
    expect(res).toMatchObject({ call_id: "call_8Yk2", name: "choice", action: "select", result: { message: "预发布" }, answered_by: "im" });
    agent.close();
  });

  it("answers a call from a plain text reply naming its code (#CODE 2), once; a late reply gets a notice", async () => {
    const { agent } = await imSession("u_carol");
    agent.send({ ...FIXTURE_CALL, call_id: "c-text" });
    await fake.until(() => sentTo("u_carol").length >= 2);
    const code = codeOf(sentTo("u_carol")[1]!);
    const reply = text("u_carol", `#${code} 2`);
    expect((await hook("msg.notify", notifyBody([reply]))).status).toBe(200);
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "c-text", result: { message: "预发布", selected: ["预发布"] }, answered_by: "im" });
    // The same batch again (WuKongIM retries whole batches): nothing new.
    expect((await hook("msg.notify", notifyBody([reply]))).status).toBe(200);
    // A new reply to the closed call: not forwarded; the conversation is told.
    expect((await hook("msg.notify", notifyBody([text("u_carol", `#${code.toLowerCase()} 3`)]))).status).toBe(200);
    const notice = await fake.until(() => sentTo("u_carol").find((s) => String(s.payload.content).includes("already answered")));
    expect(notice.payload.content).toBe(`#${code} was already answered or has closed.`);
    expect(await agent.none((f) => f.type === "tool.result" || f.type === "message", 300)).toBe(true);
    agent.close();
  });

  it("gives a call_id reused after the earlier call was acked its own delivery and code (regression: stale code row)", async () => {
    const { agent } = await imSession("u_uma");
    for (const answer of ["first", "second"]) {
      agent.send({ type: "tool.call", call_id: "again", name: "input", arguments: { question: answer } });
      const rendering = await fake.until(() => sentTo("u_uma").find((s) => s.payload.type === 1 && String(s.payload.content).includes(` ${answer}\n`)));
      await hook("msg.notify", notifyBody([text("u_uma", `#${codeOf(rendering)} ${answer}!`)]));
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "again", result: { message: `${answer}!` } });
      agent.send({ type: "tool.ack", call_id: "again" });
    }
    agent.close();
  });

  it("answers confirm with 是 and input with the text after the code; a bad choice answer gets a hint", async () => {
    const { agent } = await imSession("u_erin");
    agent.send({ type: "tool.call", call_id: "k1", name: "confirm", arguments: { question: "Deploy?" } });
    agent.send({ type: "tool.call", call_id: "k2", name: "input", arguments: { question: "Name?" } });
    agent.send({ type: "tool.call", call_id: "k3", name: "choice", arguments: { question: "Env?", options: ["a", "b"] } });
    await fake.until(() => sentTo("u_erin").length >= 6);
    const texts = sentTo("u_erin").filter((s) => s.payload.type === 1);
    const [c1, c2, c3] = texts.map(codeOf) as [string, string, string];
    await hook("msg.notify", notifyBody([text("u_erin", `#${c1} 是`), text("u_erin", `#${c2}  Ada Lovelace `), text("u_erin", `#${c3} 7`)]));
    expect(await agent.next((f) => f.type === "tool.result" && f.call_id === "k1")).toMatchObject({ result: { message: "yes", confirmed: true } });
    expect(await agent.next((f) => f.type === "tool.result" && f.call_id === "k2")).toMatchObject({ result: { message: "Ada Lovelace" } });
    const hint = await fake.until(() => sentTo("u_erin").find((s) => String(s.payload.content).startsWith(`#${c3}:`)));
    expect(hint.payload.content).toContain("1–2");
    await hook("msg.notify", notifyBody([text("u_erin", `#${c3} b`)]));
    expect(await agent.next((f) => f.type === "tool.result" && f.call_id === "k3")).toMatchObject({ result: { message: "b" } });
    agent.close();
  });

  it("sends agent messages as type-1 text and a cancel as a type-10100 tool.cancel", async () => {
    const { agent } = await imSession("u_frank");
    agent.send({
      type: "message",
      content: [
        { type: "text", text: "Build finished." },
        { type: "image", data: "AAAA", mimeType: "image/png" },
      ],
    });
    const msg = await fake.until(() => sentTo("u_frank").find((s) => s.payload.type === 1));
    expect(msg.payload).toEqual({ type: 1, content: "Build finished.\n[image image/png]" });
    agent.send({ type: "tool.call", call_id: "x1", name: "input", arguments: { question: "Why?" } });
    await fake.until(() => sentTo("u_frank").some((s) => s.payload.kind === "tool.call"));
    await fake.until(() => sentTo("u_frank").filter((s) => s.payload.type === 1).length >= 2);
    agent.send({ type: "tool.cancel", call_id: "x1" });
    const cancel = await fake.until(() => sentTo("u_frank").find((s) => s.payload.kind === "tool.cancel"));
    expect(cancel.payload).toEqual({ type: 10100, v: 1, kind: "tool.cancel", call_id: "x1", reason: "cancelled" });
    agent.close();
  });
});

describe("WuKongIM bridge: hibernation", () => {
  it("survives eviction between a failed send, its retry and the reply (outbox, codes and de-dup live in SQLite)", async () => {
    const { sid, agent } = await imSession("u_rex");
    fake.failNext("network");
    agent.send({ type: "tool.call", call_id: "h1", name: "input", arguments: { question: "still there?" } });
    await fake.until(() => fake.refused.length >= 1);
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    await retryNow(sid);
    await fake.until(() => sentTo("u_rex").length >= 2);
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    const reply = notifyBody([text("u_rex", `#${codeOf(sentTo("u_rex")[1]!)} yes I am`)]);
    await hook("msg.notify", reply);
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "h1", result: { message: "yes I am" } });
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    await hook("msg.notify", reply);
    expect(await agent.none((f) => f.type === "tool.result" || f.type === "message", 300)).toBe(true);
    // Seen before (not merely a late answer): no "already answered" notice either.
    expect(sentTo("u_rex").filter((s) => String(s.payload.content).includes("already answered"))).toEqual([]);
    agent.close();
  });
});

describe("WuKongIM bridge: inbound", () => {
  it("turns chat into message frames once, though the batch is delivered twice (fixture text batch, person chat and group)", async () => {
    const alice = await imSession("u_alice");
    const group = await imSession("g_team1", 2);
    for (let i = 0; i < 2; i++) expect((await hook("msg.notify", textBatch)).status).toBe(200);
    const m = await alice.agent.next(isMessage);
    expect(m).toMatchObject({
      id: "im-2050183451750862848",
      from: { role: "app", client_id: "im:u_alice" },
      content: [{ type: "text", text: "What is on my calendar tomorrow?" }],
    });
    const g = await group.agent.next(isMessage);
    expect(g).toMatchObject({ from: { client_id: "im:u_bob" }, content: [{ type: "text", text: "@lineup_bot summarise this thread" }] });
    expect(await alice.agent.none(isMessage, 300)).toBe(true);
    expect(await group.agent.none(isMessage, 50)).toBe(true);
    alice.agent.close();
    group.agent.close();
  });

  it("in a group, routes mentions and code replies from any member, and ignores other chatter", async () => {
    const { agent } = await imSession("g_ops", 2);
    agent.send({ type: "tool.call", call_id: "g1", name: "choice", arguments: { question: "Who?", options: ["me", "you"] } });
    await fake.until(() => sentTo("g_ops").length >= 2);
    expect(sentTo("g_ops")[0]!.body).toMatchObject({ channel_id: "g_ops", channel_type: 2, from_uid: BOT });
    const code = codeOf(sentTo("g_ops")[1]!);
    const inGroup = (from_uid: string, payload: object): NotifyMessage => ({ from_uid, channel_id: "g_ops", channel_type: 2, payload });
    await hook("msg.notify", notifyBody([inGroup("u_x", { type: 1, content: "lunch?" }), inGroup("u_y", { type: 1, content: `#${code} you` })]));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "g1", result: { message: "you" } });
    await hook(
      "msg.notify",
      notifyBody([
        inGroup("u_x", { type: 1, content: "no mention here" }),
        inGroup("u_z", { type: 1, content: "@lineup_bot status?", mention: { uids: [BOT] } }),
      ]),
    );
    expect(await agent.next(isMessage)).toMatchObject({ from: { client_id: "im:u_z" }, content: [{ text: "@lineup_bot status?" }] });
    expect(await agent.none(isMessage, 200)).toBe(true);
    agent.close();
  });

  it("keeps message ids above 2^53 exact (message_idstr), so neighbours that JSON.parse would merge stay two messages", async () => {
    const { agent } = await imSession("u_gina");
    const a = "9007199254740993123";
    const b = "9007199254740993124";
    expect(JSON.parse(a) === JSON.parse(b)).toBe(true); // what a number parse would do
    await hook("msg.notify", notifyBody([text("u_gina", "one", { idstr: a }), text("u_gina", "two", { idstr: b })]));
    expect(await agent.next(isMessage)).toMatchObject({ id: `im-${a}`, content: [{ text: "one" }] });
    expect(await agent.next(isMessage)).toMatchObject({ id: `im-${b}`, content: [{ text: "two" }] });
    agent.close();
  });

  it("drops the relay's own echoes, system (empty from_uid) messages, sync_once cmd messages and msg.offline", async () => {
    const { agent } = await imSession("u_hank");
    agent.send({ type: "message", content: [{ type: "text", text: "hello from the agent" }] });
    const sent = await fake.until(() => sentTo("u_hank")[0]);
    const noise = [fake.echoOf(sent), text("", "system says hi"), text("u_hank", "cmd", { sync_once: 1 })];
    expect((await hook("msg.notify", notifyBody(noise))).status).toBe(200);
    expect((await hook("msg.offline", offlineBot)).status).toBe(200);
    expect((await hook("msg.notify", notifyBody([text("u_hank", "real one")]))).status).toBe(200);
    // The first message the agent sees is the real one: everything before it was dropped.
    expect(await agent.next(isMessage)).toMatchObject({ content: [{ text: "real one" }] });
    expect(await agent.none(isMessage, 200)).toBe(true);
    agent.close();
  });

  it("handles a batch of 400 messages (100 from 20 other users' chats, 300 of one chat, interleaved) and keeps the chat's order", async () => {
    const { agent } = await imSession("u_ivy");
    const many = Array.from({ length: 400 }, (_, i) =>
      i % 4 === 0 ? text(`u_other${(i / 4) % 20}`, `x${i}`) : text("u_ivy", `m${i - Math.floor(i / 4) - 1}`),
    );
    expect((await hook("msg.notify", notifyBody(many))).status).toBe(200);
    for (let i = 0; i < 300; i++) expect(await agent.next(isMessage, 10_000)).toMatchObject({ content: [{ text: `m${i}` }] });
    agent.close();
  }, 30_000);

  it("lets a LineUp-aware IM client register more tools (10100 tool.list) and ask for the agent's catalog", async () => {
    const { agent } = await imSession("u_pia");
    await agent.next("tool.list");
    const calc = { name: "calculator", type: "toolset", description: "calc", actions: [{ name: "add", description: "a+b", inputSchema: { type: "object" } }] };
    agent.send({ type: "tool.list", tools: [{ name: "notes", type: "action", description: "the agent's notes", inputSchema: { type: "object" } }] });
    await hook(
      "msg.notify",
      notifyBody([{ from_uid: "u_pia", channel_id: BOT, channel_type: 1, payload: { type: 10100, v: 1, kind: "tool.list", tools: [calc] } }]),
    );
    const list = await agent.next("tool.list");
    expect((list.tools as { name: string }[]).map((t) => t.name).sort()).toEqual(["ask_question", "calculator", "choice", "confirm", "input", "work_report"]);
    await hook("msg.notify", notifyBody([{ from_uid: "u_pia", channel_id: BOT, channel_type: 1, payload: { type: 10100, v: 1, kind: "tool.list" } }]));
    const sent = await fake.until(() => sentTo("u_pia").find((s) => s.payload.kind === "tool.list"));
    expect(sent.payload).toMatchObject({ type: 10100, v: 1, kind: "tool.list", tools: [{ name: "notes" }] });
    // A call to a tool no app side provides is refused at once: the conversation counts as a connected provider.
    agent.send({ type: "tool.call", call_id: "nt1", name: "no_such_tool", arguments: {} });
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "nt1", error: { code: "unknown_tool" } });
    agent.close();
  });

  // Regression (issue 11 §3): any group member's LineUp client could register tools and change what the
  // agent's calls show to everyone in the group.
  it("regression: in a group only the bound human may register tools; another member gets a notice and changes nothing", async () => {
    const s = await createSession({ im: { channel_id: "g_team", channel_type: 2, owner_uid: "u_boss" } });
    const agent = await connect(s.session_id, s.agent_token, { clientId: "agent1" });
    await agent.next("tool.list");
    const notes = { name: "notes", type: "action", description: "pin a note", inputSchema: { type: "object" } };
    const fromGroup = (uid: string) =>
      notifyBody([{ from_uid: uid, channel_id: "g_team", channel_type: 2, payload: { type: 10100, v: 1, kind: "tool.list", tools: [notes] } }]);
    await hook("msg.notify", fromGroup("u_mallory"));
    await fake.until(() => sentTo("g_team").find((m) => /only the conversation's bound person/.test(String(m.payload.content))));
    expect(await agent.none("tool.list", 300)).toBe(true);
    await hook("msg.notify", fromGroup("u_boss"));
    const list = await agent.next("tool.list");
    expect((list.tools as { name: string }[]).map((t) => t.name)).toContain("notes");
    agent.close();
  });

  it("adds im.online to presence from user.onlinestatus (uids split from the right)", async () => {
    const { sid, token, agent, status } = await imSession("u-j-1");
    await hook("user.onlinestatus", JSON.stringify(["u-j-1-1-1-7-1-1"]));
    expect(await agent.next((f) => f.type === "presence" && f.im !== undefined)).toMatchObject({ im: { online: true }, apps: 0 });
    await hook("user.onlinestatus", JSON.stringify(["u-j-1-1-1-8-1-2", "u-j-1-1-0-8-0-0"]));
    expect(await agent.next((f) => f.type === "presence" && f.im !== undefined)).toMatchObject({ im: { online: false } });
    expect((await status()).im).toEqual({ channel_id: "u-j-1", channel_type: 1, online: false });
    const late = await connect(sid, token, { clientId: "agent2" });
    expect(late.hello!.peers).toMatchObject({ im: { online: false } });
    late.close();
    expect((await hook("user.onlinestatus", onlineStatus)).status).toBe(200); // the fixture (u_alice) parses
    agent.close();
  });
});

describe("WuKongIM bridge: webhook guard and validation", () => {
  it("answers a wrong or missing secret with 404 and touches nothing", async () => {
    const { agent } = await imSession("u_kim");
    const body = notifyBody([text("u_kim", "secret test")]);
    for (const s of ["wrong-secret", "test-webhook-secre", "test-webhook-secret-"]) expect((await hook("msg.notify", body, s)).status).toBe(404);
    expect((await fetchWorker("/webhooks/wukongim?event=msg.notify", { method: "POST", body })).status).toBe(404);
    expect(await agent.none(isMessage, 300)).toBe(true);
    // The same body with the right secret is new to the session: the refused requests stored nothing.
    expect((await hook("msg.notify", body)).status).toBe(200);
    expect(await agent.next(isMessage)).toMatchObject({ content: [{ text: "secret test" }] });
    agent.close();
  });

  it("answers malformed bodies with a clear 400 and changes nothing; unknown events get 200", async () => {
    const { agent } = await imSession("u_lee");
    const good = text("u_lee", "still new", { idstr: "2050183451750860001" });
    const bad = [
      ["msg.notify", "{not json"],
      ["msg.notify", '{"not":"an array"}'],
      ["msg.notify", `[${notifyBody([good]).slice(1, -1)},{"from_uid":"u_lee","payload":"e30="}]`],
      ["msg.offline", "[]"],
      ["user.onlinestatus", '["no-dashes"]'],
    ] as const;
    for (const [ev, body] of bad) {
      const r = await hook(ev, body);
      expect(r.status).toBe(400);
      const j = (await r.json()) as { error: { code: string; message: string } };
      expect(j.error.code).toBe("bad_request");
      expect(j.error.message).toContain(ev);
    }
    expect((await hook("some.future.event", "whatever")).status).toBe(200);
    expect(await agent.none(isMessage, 300)).toBe(true);
    // The valid message that rode in the refused batch was not processed (nor marked seen).
    await hook("msg.notify", notifyBody([good]));
    expect(await agent.next(isMessage)).toMatchObject({ content: [{ text: "still new" }] });
    agent.close();
  });
});

describe("WuKongIM bridge: send failures", () => {
  it("retries v2 errors, v3 errors, a v3 reason≠1 and 401 empty bodies with doubling backoff, then delivers", async () => {
    const { sid, agent } = await imSession("u_max");
    fake.failNext("v2-error");
    fake.failNext("v3-error");
    fake.failNext("v3-reason");
    fake.failNext("unauthorized");
    agent.send({ type: "tool.call", call_id: "r1", name: "input", arguments: { question: "retry?" } });
    const delays: number[] = [];
    for (let i = 1; i <= 4; i++) {
      await fake.until(() => fake.refused.length >= i, 5000, `failure ${i}`);
      const row = await runInDurableObject(stubOf(sid), async (_o, state) => {
        // The failure is recorded before the alarm run ends; wait for the row to show it.
        for (let k = 0; k < 50; k++) {
          const r = state.storage.sql.exec<{ attempts: number; next_at: number }>("SELECT attempts, next_at FROM im_outbox").toArray()[0];
          if (r && r.attempts === i) return { ...r, now: Date.now() };
          await scheduler.wait(20);
        }
        throw new Error("attempt not recorded");
      });
      delays.push(Math.round((row.next_at - row.now) / 1000));
      await retryNow(sid);
    }
    expect(fake.refused.map((r) => r.failure)).toEqual(["v2-error", "v3-error", "v3-reason", "unauthorized"]);
    expect(delays).toEqual([2, 4, 8, 16]);
    await fake.until(() => sentTo("u_max").length >= 2);
    expect(sentTo("u_max")[0]!.payload).toMatchObject({ kind: "tool.call", call_id: "r1" });
    expect(await agent.none("tool.result", 200)).toBe(true);
    agent.close();
  });

  it("while WuKongIM is down, queued items wait behind the failing one (no burst) and go out in order once it is back", async () => {
    const { sid, agent } = await imSession("u_pat");
    fake.setFailAlways("network");
    for (const t of ["one", "two", "three"]) agent.send({ type: "message", content: [{ type: "text", text: t }] });
    await fake.until(() => fake.refused.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.refused).toHaveLength(1);
    fake.setFailAlways(undefined);
    await retryNow(sid);
    await fake.until(() => sentTo("u_pat").length >= 3);
    expect(sentTo("u_pat").map((s) => s.payload.content)).toEqual(["one", "two", "three"]);
    agent.close();
  });

  it("drops a call that was never delivered when the agent cancels it: no call and no cancel reach the IM", async () => {
    const { sid, agent } = await imSession("u_quin");
    fake.setFailAlways("v3-error");
    agent.send({ type: "tool.call", call_id: "q1", name: "input", arguments: { question: "?" } });
    await fake.until(() => fake.refused.length >= 1);
    agent.send({ type: "tool.cancel", call_id: "q1" });
    agent.send({ type: "message", content: [{ type: "text", text: "after the cancel" }] });
    // Once the message is queued (frames are handled in order), only it is: the call's item went with the cancel.
    let rows: { call_id: string | null }[] = [];
    for (let i = 0; i < 100 && !rows.some((r) => r.call_id === null); i++) {
      rows = await runInDurableObject(stubOf(sid), (_o, state) =>
        state.storage.sql.exec<{ call_id: string | null }>("SELECT call_id FROM im_outbox").toArray(),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(rows).toEqual([{ call_id: null }]);
    fake.setFailAlways(undefined);
    await retryNow(sid);
    await fake.until(() => sentTo("u_quin").length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(sentTo("u_quin").map((s) => s.payload)).toEqual([{ type: 1, content: "after the cancel" }]);
    agent.close();
  });

  it("ends a call with im_undeliverable after 8 failed sends", async () => {
    const { sid, agent } = await imSession("u_ned");
    fake.setFailAlways("v2-error");
    agent.send({ type: "tool.call", call_id: "u1", name: "confirm", arguments: { question: "ok?" } });
    await fake.until(() => fake.refused.length >= 1);
    for (let i = 2; i <= 8; i++) {
      await retryNow(sid);
      await fake.until(() => fake.refused.length >= i, 5000, `attempt ${i}`);
    }
    const r = await agent.next("tool.result");
    expect(r).toMatchObject({ call_id: "u1", error: { code: "im_undeliverable" } });
    expect(String((r.error as { message: string }).message)).toContain("payload不能为空");
    expect(fake.refused).toHaveLength(8);
    expect(fake.sent).toHaveLength(0);
    agent.close();
  });

  it("ends a call with im_undeliverable (not timeout) when its deadline passes undelivered", async () => {
    const { agent } = await imSession("u_olga");
    fake.setFailAlways("network");
    agent.send({ type: "tool.call", call_id: "d1", name: "input", timeout_s: 1, arguments: { question: "soon?" } });
    const r = await agent.next("tool.result", 8000);
    expect(r).toMatchObject({ call_id: "d1", error: { code: "im_undeliverable" } });
    agent.close();
  });
});
