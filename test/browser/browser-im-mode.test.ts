// The PWA's IM mode (issue 31) in real Chromium against the real relay (its own `wrangler dev`, configured for
// WuKongIM) and the fake WuKongIM v2.2.5 server (test/fixtures/wukongim/ws-server.ts: the binary protocol the
// real SDK speaks, TSDD's login, route and history endpoints). The fake's HTTP API side is wired the way a
// WuKongIM deployment is: the relay's `POST /message/send` becomes a stored message delivered to the
// conversation's connections, and every stored message is posted to the relay's webhook as `msg.notify`
// (in order, as WuKongIM does within a channel). The person logs in as u_alice; her person chat with the
// relay's bot is bound to one session; a scripted agent makes the calls.
import { createServer, type Server } from "node:http";
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { notifyBody } from "../fixtures/wukongim/fake.js";
import { FakeWuKongIMServer } from "../fixtures/wukongim/ws-server.js";
import { Agent, type Frame, shot, useBrowser } from "../helpers/browser.js";
import { freePort, type RunningRelay, startRelay } from "../helpers/relay.js";

const SECRET = "im-mode-webhook-secret";
const BOT = "lineup_bot";
const ME = "u_alice";

let wk: FakeWuKongIMServer;
let api: Server;
let relay: RunningRelay;
let webhooks: Promise<unknown> = Promise.resolve();

/** WuKongIM's HTTP API as the relay uses it: `POST /message/send` (v2 answer), stored and delivered by the fake. */
async function serveApi(): Promise<string> {
  const port = await freePort();
  api = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/message/send") return void res.writeHead(404).end("404 page not found");
      const b = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        client_msg_no: string;
        from_uid: string;
        channel_id: string;
        channel_type: number;
        payload: string;
      };
      const stored = wk.push({
        fromUid: b.from_uid,
        channelId: b.channel_id,
        channelType: b.channel_type,
        payload: new Uint8Array(Buffer.from(b.payload, "base64")),
        clientMsgNo: b.client_msg_no,
      });
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(`{"data":{"client_msg_no":${JSON.stringify(b.client_msg_no)},"message_id":${stored.messageId}},"status":200}`);
    });
  });
  await new Promise<void>((r) => api.listen(port, "127.0.0.1", r));
  return `http://127.0.0.1:${port}`;
}

const b = useBrowser({
  relay: false,
  timeoutMs: 120_000,
  setup: async () => {
    wk = await FakeWuKongIMServer.start({ accounts: { alice: { password: "pw-alice", uid: ME, name: "Alice" } } });
    const apiUrl = await serveApi();
    relay = await startRelay({ vars: { WUKONGIM_API_URL: apiUrl, WUKONGIM_WEBHOOK_SECRET: SECRET, WUKONGIM_BOT_UID: BOT } });
    // Every stored message reaches the webhook, one batch after the other (WuKongIM keeps order within a channel).
    wk.onMessage = (m) => {
      const body = notifyBody([
        {
          idstr: m.messageId.toString(),
          from_uid: m.fromUid,
          channel_id: m.channelId,
          channel_type: m.channelType,
          payload: JSON.parse(new TextDecoder().decode(m.payload)) as object,
          seq: m.messageSeq,
          client_msg_no: m.clientMsgNo,
        },
      ]);
      const url = `${relay.url}/webhooks/wukongim/${SECRET}?event=msg.notify`;
      webhooks = webhooks.then(() =>
        fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body })
          .then((r) => r.text())
          .catch(() => ""),
      );
    };
  },
  teardown: async () => {
    await relay?.stop();
    await wk?.close();
    await new Promise((r) => api?.close(r));
  },
});

let agent: Agent | undefined;
afterAll(() => agent?.close());

async function imSession(): Promise<{ s: SessionCreated; agent: Agent }> {
  const r = await fetch(`${relay.url}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ im: { channel_id: ME, channel_type: 1 } }),
  });
  expect(r.status).toBe(201);
  const s = (await r.json()) as SessionCreated;
  return { s, agent: await Agent.connect(s, "agent-im") };
}

const axe = async (page: Page) =>
  (await new AxeBuilder({ page }).analyze()).violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);

/** The call's card payload as the relay sent it into the conversation (its text rendering's code inside). */
const cardOf = (callId: string) =>
  wk.messages
    .map((m) => JSON.parse(new TextDecoder().decode(m.payload)) as Record<string, unknown>)
    .find((p) => p.kind === "tool.call" && p.call_id === callId);
const results = (frames: Frame[], callId: string) => frames.filter((f) => f.type === "tool.result" && f.call_id === callId);

describe("IM mode: the PWA as a WuKongIM client answering LineUp cards (Chromium, real relay, fake WuKongIM v2.2.5)", () => {
  let page: Page;
  const seen: Frame[] = [];

  it("refuses ws:// and http:// to a host other than this machine, before sending anything", async () => {
    const ctx = await b.context("phone");
    ctx.setDefaultTimeout(15_000);
    page = await ctx.newPage();
    await page.goto(`${relay.url}/settings`);
    await page.getByRole("button", { name: "Open IM mode" }).click();
    await page.getByLabel("Server API address").fill("http://im.example.com/api");
    await page.getByLabel("Username").fill("alice");
    await page.getByLabel("Password").fill("pw-alice");
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("use https://");
    expect(wk.connects).toHaveLength(0);
  });

  it("logs in through TSDD, connects over the SDK with that token, and shows the person's conversation once a card arrives", async () => {
    await page.getByLabel("Server API address").fill(wk.httpUrl);
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.locator(".im-who").getAttribute("data-status"), { timeout: 15_000 }).toBe("connected");
    expect(wk.connects.at(-1)).toMatchObject({ uid: ME, deviceFlag: 1, outcome: "ok" });
    const token = await page.evaluate(() => localStorage.getItem("lineup.im.account"));
    expect(token).toContain(wk.tokens.get(ME));

    ({ agent } = await imSession());
    agent.call("c-choice", "choice", { question: "部署到哪个环境？", options: ["测试", "预发布", "生产"] }, "select");
    await page.getByRole("button", { name: /lineup_bot · 1 waiting/ }).click({ timeout: 15_000 });
    const card = page.locator('[data-call="c-choice"]');
    await expect.poll(() => card.getAttribute("data-state")).toBe("pending");
    // The text rendering beside the card (its #CODE) is hidden: one card, no numbered text.
    expect(await page.locator(".im-text").count()).toBe(0);
    expect(await axe(page)).toEqual([]);
    await shot(page, "im-mode-choice");
  });

  it("answers the choice on the card: the agent gets it exactly once and the card shows it answered here (the card re-renders though the core mutated it in place)", async () => {
    const card = page.locator('[data-call="c-choice"]');
    await card.getByText("生产").click();
    await card.getByRole("button", { name: "Submit" }).click();
    const r = await agent!.result("c-choice");
    seen.push(r);
    expect(r).toMatchObject({ answered_by: "im", result: { message: "生产" } });
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("answered");
    expect(await card.textContent()).toContain("Answered here: 生产");
    const sent = wk.sends.filter((s) => s.json?.call_id === "c-choice");
    expect(sent).toHaveLength(1);
    expect(sent[0]!.json).toMatchObject({ type: 10100, v: 1, kind: "tool.result", call_id: "c-choice", result: { message: "生产" } });
  });

  it("renders an ask_question's markdown and sends the typed reply", async () => {
    agent!.call("c-ask", "ask_question", { project_directory: "/srv/app", question: "**Ship** it?\n\n- tests pass\n- docs done" });
    const card = page.locator('[data-call="c-ask"]');
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("pending");
    await expect.poll(() => card.locator("strong").textContent()).toBe("Ship");
    expect(await card.locator("li").count()).toBe(2);
    await card.getByRole("textbox").fill("yes, ship it");
    await card.getByRole("button", { name: "Send" }).click();
    const r = await agent!.result("c-ask");
    seen.push(r);
    expect(r.result).toMatchObject({ message: "yes, ship it" });
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("answered");
    expect(await axe(page)).toEqual([]);
    await shot(page, "im-mode-ask-answered");
  });

  it("a TSDD-style text reply in the same conversation wins first, and the card shows it was answered elsewhere", async () => {
    agent!.call("c-confirm", "confirm", { question: "Delete the staging database?" });
    const card = page.locator('[data-call="c-confirm"]');
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("pending");
    const code = String(cardOf("c-confirm")?.code);
    // Alice's TSDD phone app answers with text (another device of hers: WuKongIM delivers it to this page too).
    wk.push({ fromUid: ME, channelId: BOT, channelType: 1, payload: { type: 1, content: `#${code} no` } });
    const r = await agent!.result("c-confirm");
    seen.push(r);
    expect(r).toMatchObject({ answered_by: "im", result: { confirmed: false } });
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("elsewhere");
    expect(await card.textContent()).toContain("Answered elsewhere");
    expect(await card.textContent()).toContain("no");
    expect(wk.sends.filter((s) => s.json?.call_id === "c-confirm")).toHaveLength(0);
  });

  it("a dropped WebSocket, the SDK's re-sent SEND and re-delivered RECVs double nothing, and the update sent while the socket was down arrives through history", async () => {
    agent!.call("c-drop", "choice", { question: "Which region?", options: ["eu", "us"] });
    const card = page.locator('[data-call="c-drop"]');
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("pending");
    // WuKongIM re-sends the card's RECV (as when a RECVACK was lost): same message id, still one card.
    const stored = wk.messages.find((m) => m.clientMsgNo === "lineup-c-drop")!;
    expect(wk.redeliver(stored.messageId)).toBe(1);
    await wk.until(() => wk.recvacks.filter((a) => a.messageId === stored.messageId).length >= 2, 10_000, "the second RECVACK");
    expect(await page.locator('[data-call="c-drop"]').count()).toBe(1);
    wk.holdSendacks = true;
    await card.getByText("eu").click();
    await card.getByRole("button", { name: "Submit" }).click();
    const first = await wk.until(() => wk.sends.find((s) => s.json?.call_id === "c-drop"), 10_000, "the answer's SEND");
    wk.holdSendacks = false;
    wk.redeliverOnConnect = true;
    wk.drop(ME);
    const again = await wk.until(() => wk.sends.filter((s) => s.json?.call_id === "c-drop")[1], 20_000, "the SDK's re-send after reconnecting");
    wk.redeliverOnConnect = false;
    expect(again.clientMsgNo).toBe(first.clientMsgNo);
    expect(again.connId).not.toBe(first.connId);
    expect(wk.messages.filter((m) => m.clientMsgNo === first.clientMsgNo)).toHaveLength(2); // WuKongIM stored both
    const r = await agent!.result("c-drop");
    seen.push(r);
    expect(r.result).toMatchObject({ message: "eu" });
    await expect.poll(() => card.getAttribute("data-state"), { timeout: 15_000 }).toBe("answered");
    // Order barrier: a later call answered through the same webhook path means the duplicate was judged before it.
    agent!.call("c-after", "confirm", { question: "Continue?" });
    const after = page.locator('[data-call="c-after"]');
    await expect.poll(() => after.getAttribute("data-state"), { timeout: 15_000 }).toBe("pending");
    await after.getByRole("button", { name: "Yes" }).click();
    seen.push(await agent!.result("c-after"));
    await webhooks;
    for (const id of ["c-choice", "c-ask", "c-confirm", "c-drop", "c-after"]) {
      expect(results(seen, id), id).toHaveLength(1);
      await expect(agent!.next((f) => f.type === "tool.result" && f.call_id === id, 300, `a second result for ${id}`)).rejects.toThrow();
    }
    expect(await page.locator('[data-call="c-drop"]').count()).toBe(1);
  });

  it("shows the same cards from history after a reload (TSDD's channel sync through the SDK's syncMessagesCallback), and logs out", async () => {
    await page.reload();
    await page.getByRole("button", { name: /lineup_bot/ }).click({ timeout: 15_000 });
    for (const [id, state] of [
      ["c-choice", "answered"],
      ["c-ask", "answered"],
      ["c-confirm", "elsewhere"],
      ["c-drop", "answered"],
    ] as const) {
      await expect.poll(() => page.locator(`[data-call="${id}"]`).getAttribute("data-state"), { timeout: 15_000 }).toBe(state);
    }
    expect(await page.locator('[data-call="c-drop"]').count()).toBe(1);
    await page.getByRole("button", { name: "Log out of IM mode" }).click();
    await expect.poll(() => page.evaluate(() => localStorage.getItem("lineup.im.account"))).toBeNull();
    await expect.poll(() => wk.connections(ME)).toBe(0);
  });
});
