// IM mode, relay side (issue 31 items 3 and 4): each call goes out as a structured LineUp card payload beside
// its readable text, and the relay judges structured answers arriving through the webhook — only from the
// bound person, only for a call of this conversation, first answer wins (text reply, card, relay-mode device),
// re-deliveries and SDK re-sends never double an answer. Real Worker route and session Durable Object;
// WuKongIM's HTTP API is the fake in test/fixtures/wukongim/fake.ts.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { INPUT } from "../../shared/contract/builtin-tools.js";
import { FakeWuKongIM, newIdstr, notifyBody, type NotifyMessage, type SentMessage } from "../fixtures/wukongim/fake.js";
import { connect, createSession, fetchWorker, stubOf, type Client } from "./helpers.js";

const BOT = "lineup_bot";

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

const hook = (body: string) =>
  fetchWorker("/webhooks/wukongim/test-webhook-secret?event=msg.notify", { method: "POST", headers: { "content-type": "application/json" }, body });

async function imSession(im: { channel_id: string; channel_type: number; owner_uid?: string }) {
  const s = await createSession({ im });
  const agent = await connect(s.session_id, s.agent_token, { clientId: "agent1" });
  await agent.next("tool.list");
  return { ...s, agent };
}

const sentTo = (ch: string) => fake.sent.filter((s) => s.body.channel_id === ch);
const cards = (ch: string, kind: string) => sentTo(ch).filter((s) => s.payload.type === 10100 && s.payload.kind === kind);
const codeOf = (s: SentMessage) => /#([A-Z0-9]{3,8})/.exec(String(s.payload.content))![1]!;

/** A structured answer as a LineUp-aware IM client sends it (person chat: to the bot; group: to the group). */
function cardAnswer(from_uid: string, call_id: string, message: string, o: { group?: string; cmn?: string; idstr?: string } = {}): NotifyMessage {
  const m: NotifyMessage = {
    idstr: o.idstr ?? newIdstr(),
    from_uid,
    channel_id: o.group ?? BOT,
    channel_type: o.group ? 2 : 1,
    payload: { type: 10100, v: 1, kind: "tool.result", call_id, name: "input", result: { message } },
  };
  if (o.cmn) m.client_msg_no = o.cmn;
  return m;
}

/** Waits until the session handled webhook message `idstr` (it is in the de-dup table). */
async function handled(sid: string, idstr: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const n = await runInDurableObject(stubOf(sid), (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM im_seen WHERE id = ?", idstr).one().n);
    if (n === 1) return;
    if (Date.now() > deadline) throw new Error(`message ${idstr} was never handled`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Outbox items not yet sent to WuKongIM. */
const pending = (sid: string) => runInDurableObject(stubOf(sid), (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM im_outbox").one().n);

/** Waits until client `key` registered its tools in the session. */
async function registered(sid: string, key: string): Promise<void> {
  for (let i = 0; ; i++) {
    const n = await runInDurableObject(stubOf(sid), (_i, st) => st.storage.sql.exec("SELECT COUNT(*) AS n FROM registrations WHERE key = ?", key).one().n);
    if (n === 1) return;
    if (i > 250) throw new Error(`${key} never registered`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sends an input call and waits for both of its IM messages; returns the text rendering's code. */
async function call(agent: Client, ch: string, call_id: string): Promise<string> {
  agent.send({ type: "tool.call", call_id, name: "input", arguments: { question: `Q ${call_id}?` } });
  const text = await fake.until(() => sentTo(ch).find((s) => s.payload.type === 1 && String(s.payload.content).includes(`Q ${call_id}?`)));
  await fake.until(() => cards(ch, "tool.call").find((s) => s.payload.call_id === call_id));
  return codeOf(text);
}

const results = (agent: Client, call_id: string) => agent.none((f) => f.type === "tool.result" && f.call_id === call_id, 300);

describe("IM mode: the structured call beside the readable text", () => {
  it("sends each call as a type-10100 card with only the handout's fields (no deadline, no code) and, after it, the text twin TSDD clients show", async () => {
    const { agent } = await imSession({ channel_id: "u_ivy", channel_type: 1 });
    agent.send({ type: "tool.call", call_id: "q1", name: "input", arguments: { question: "Which branch?" }, timeout_s: 120 });
    await fake.until(() => sentTo("u_ivy").length >= 2);
    const [card, text] = sentTo("u_ivy") as [SentMessage, SentMessage];
    expect(card.payload).toEqual({
      type: 10100,
      v: 1,
      kind: "tool.call",
      call_id: "q1",
      name: "input",
      arguments: { question: "Which branch?" },
    });
    expect(card.raw).toBe(
      `{"header":{"no_persist":0,"red_dot":1,"sync_once":0},"client_msg_no":"lineup-q1","from_uid":"lineup_bot","channel_id":"u_ivy","channel_type":1,"payload":"${btoa('{"type":10100,"v":1,"kind":"tool.call","call_id":"q1","name":"input","arguments":{"question":"Which branch?"}}')}"}`,
    );
    expect(text.body.client_msg_no).toBe("lineup-q1-text");
    expect(text.payload).toMatchObject({ type: 1, content: expect.stringContaining(`#${codeOf(text)} Which branch?`) as string });
    agent.close();
  });
});

describe("IM mode: the relay judges structured answers", () => {
  it("tells the card a call timed out, and answers a card that comes after the timeout with reason timeout", async () => {
    const { session_id: sid, agent } = await imSession({ channel_id: "u_oda", channel_type: 1 });
    await call(agent, "u_oda", "o1");
    // The deadline passes: made due now, then the session's alarm runs (no waiting on real time).
    await runInDurableObject(stubOf(sid), (_i, st) => {
      st.storage.sql.exec("UPDATE calls SET deadline = 1 WHERE call_id = 'o1'");
    });
    await runDurableObjectAlarm(stubOf(sid));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "o1", error: { code: "timeout" } });
    const closed = await fake.until(() => cards("u_oda", "tool.cancel").find((s) => s.payload.call_id === "o1"));
    expect(closed.payload).toEqual({ type: 10100, v: 1, kind: "tool.cancel", call_id: "o1", reason: "timeout" });
    await hook(notifyBody([cardAnswer("u_oda", "o1", "too late", { cmn: "cmn-o1" })]));
    const update = await fake.until(() => cards("u_oda", "tool.cancel").find((s) => s.payload.in_reply_to === "cmn-o1"));
    expect(update.payload).toEqual({ type: 10100, v: 1, kind: "tool.cancel", call_id: "o1", reason: "timeout", in_reply_to: "cmn-o1" });
    expect(await results(agent, "o1")).toBe(true);
    agent.close();
  });

  it("resolves a call exactly once from the bound person's card, though the webhook comes twice and the SDK re-sends its client_msg_no", async () => {
    const { session_id: sid, agent } = await imSession({ channel_id: "u_jon", channel_type: 1 });
    await call(agent, "u_jon", "a1");
    const first = cardAnswer("u_jon", "a1", "main", { cmn: "cmn-a1" });
    await hook(notifyBody([first]));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "a1", result: { message: "main" }, answered_by: "im" });
    await fake.until(() => cards("u_jon", "tool.cancel").find((s) => s.payload.call_id === "a1")); // the card's own close
    const before = sentTo("u_jon").length;
    // WuKongIM re-delivers the same batch; the SDK re-sends after a reconnect: same client_msg_no, new message id.
    await hook(notifyBody([first]));
    const resend = cardAnswer("u_jon", "a1", "main", { cmn: "cmn-a1" });
    await hook(notifyBody([resend]));
    await handled(sid, resend.idstr!);
    expect(await results(agent, "a1")).toBe(true);
    // The re-send of the winner is no loser: nothing at all goes to the conversation (no notice, no update).
    expect(await pending(sid)).toBe(0);
    expect(sentTo("u_jon").length).toBe(before);
    agent.close();
  });

  it("refuses a card from a group member who is not the bound person, and a call_id of another session; nothing changes", async () => {
    const other = await imSession({ channel_id: "u_kim", channel_type: 1 });
    await call(other.agent, "u_kim", "k1");
    const { session_id: sid, agent } = await imSession({ channel_id: "g_ops", channel_type: 2, owner_uid: "u_lead" });
    await call(agent, "g_ops", "g1");

    const intruder = cardAnswer("u_mallory", "g1", "rm -rf", { group: "g_ops" });
    await hook(notifyBody([intruder]));
    await fake.until(() => sentTo("g_ops").find((s) => /only the conversation's bound person may answer/.test(String(s.payload.content))));
    const foreign = cardAnswer("u_lead", "k1", "hijack", { group: "g_ops" });
    await hook(notifyBody([foreign]));
    await fake.until(() => sentTo("g_ops").find((s) => String(s.payload.content).includes('no call "k1" was sent to this conversation')));
    await handled(sid, foreign.idstr!);
    expect(await results(agent, "g1")).toBe(true);
    expect(await results(other.agent, "k1")).toBe(true);
    // Both calls are still open: their own people answer them.
    await hook(notifyBody([cardAnswer("u_lead", "g1", "ok", { group: "g_ops" })]));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "g1", result: { message: "ok" } });
    await hook(notifyBody([cardAnswer("u_kim", "k1", "fine")]));
    expect(await other.agent.next("tool.result")).toMatchObject({ call_id: "k1", result: { message: "fine" } });
    agent.close();
    other.agent.close();
  });

  it("lets a text reply that came first win; the later card gets a structured answered-elsewhere update", async () => {
    const { session_id: sid, agent } = await imSession({ channel_id: "u_liz", channel_type: 1 });
    const code = await call(agent, "u_liz", "t1");
    await hook(notifyBody([{ from_uid: "u_liz", channel_id: BOT, channel_type: 1, payload: { type: 1, content: `#${code} from text` } }]));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "t1", result: { message: "from text" } });
    const late = cardAnswer("u_liz", "t1", "from card", { cmn: "cmn-late" });
    await hook(notifyBody([late]));
    const update = await fake.until(() => cards("u_liz", "tool.cancel").find((s) => s.payload.in_reply_to === "cmn-late"));
    expect(update.payload).toEqual({ type: 10100, v: 1, kind: "tool.cancel", call_id: "t1", reason: "answered", answered_by: "im", in_reply_to: "cmn-late" });
    await handled(sid, late.idstr!);
    expect(await results(agent, "t1")).toBe(true);
    agent.close();
  });

  it("lets a relay-mode device that answered first win; the IM card is told, and a later card answer gets answered-elsewhere", async () => {
    const { session_id: sid, app_token, agent } = await imSession({ channel_id: "u_max", channel_type: 1 });
    const phone = await connect(sid, app_token, { clientId: "phone" });
    phone.send({ type: "tool.list", tools: [INPUT] });
    await registered(sid, "app:phone");
    await call(agent, "u_max", "d1");
    await phone.next((f) => f.type === "tool.call" && f.call_id === "d1");
    phone.send({ type: "tool.result", call_id: "d1", name: "input", result: { message: "from phone" } });
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "d1", result: { message: "from phone" }, answered_by: "phone" });
    // The conversation's card learns the call closed (structured, so an IM-mode card can update).
    await fake.until(() => cards("u_max", "tool.cancel").find((s) => s.payload.call_id === "d1" && s.payload.reason === "answered"));
    const late = cardAnswer("u_max", "d1", "from card", { cmn: "cmn-d1" });
    await hook(notifyBody([late]));
    const update = await fake.until(() => cards("u_max", "tool.cancel").find((s) => s.payload.in_reply_to === "cmn-d1"));
    expect(update.payload).toMatchObject({ call_id: "d1", reason: "answered", answered_by: "phone" });
    await handled(sid, late.idstr!);
    expect(await results(agent, "d1")).toBe(true);
    phone.close();
    agent.close();
  });

  it("keeps judging across eviction: the winner, its re-sends and a late loser are told apart from SQLite", async () => {
    const { session_id: sid, agent } = await imSession({ channel_id: "u_ned", channel_type: 1 });
    await call(agent, "u_ned", "e1");
    await hook(notifyBody([cardAnswer("u_ned", "e1", "yes", { cmn: "cmn-e1" })]));
    expect(await agent.next("tool.result")).toMatchObject({ call_id: "e1", result: { message: "yes" } });
    // The card's own close goes out first (an eviction must not cut a send in flight: workerd would hang).
    await fake.until(() => cards("u_ned", "tool.cancel").find((s) => s.payload.call_id === "e1"));
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    const resend = cardAnswer("u_ned", "e1", "yes", { cmn: "cmn-e1" });
    await hook(notifyBody([resend]));
    await handled(sid, resend.idstr!);
    await evictDurableObject(stubOf(sid), { webSockets: "hibernate" });
    await hook(notifyBody([cardAnswer("u_ned", "e1", "no", { cmn: "cmn-other-device" })]));
    const update = await fake.until(() => cards("u_ned", "tool.cancel").find((s) => s.payload.in_reply_to === "cmn-other-device"));
    expect(update.payload).toMatchObject({ call_id: "e1", reason: "answered" });
    // The winner's re-send was silent: it is no loser.
    expect(sentTo("u_ned").filter((s) => s.payload.in_reply_to === "cmn-e1")).toEqual([]);
    expect(await results(agent, "e1")).toBe(true);
    agent.close();
    // Eviction waits for the object's pending send timers (up to 10 s each), hence the longer limit.
  }, 45_000);
});
