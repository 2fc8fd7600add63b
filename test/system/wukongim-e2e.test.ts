// End to end over real HTTP: a relay (`wrangler dev`) configured for WuKongIM, a fake WuKongIM API and a
// fake TangSengDaoDao on a node:http server (test/fixtures/wukongim/fake.ts), an agent on a real WebSocket,
// and this test posting webhooks the way WuKongIM does.
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { FakeWuKongIM, notifyBody, type SentMessage } from "../fixtures/wukongim/fake.js";
import { freePort, startRelay, type RunningRelay } from "../helpers/relay.js";

const SECRET = "e2e-webhook-secret";
const BOT = "lineup_bot";
const fixture = (name: string) => readFileSync(new URL(`../fixtures/wukongim/${name}`, import.meta.url), "utf8");

let fake: FakeWuKongIM;
let server: Server;
let relay: RunningRelay;

/** The fake behind node:http; a "network" failure resets the connection. */
async function serveOnNode(f: FakeWuKongIM): Promise<{ server: Server; url: string }> {
  const port = await freePort();
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const request = new Request(`http://127.0.0.1:${port}${req.url ?? "/"}`, {
        method: req.method ?? "GET",
        headers,
        body: req.method === "GET" ? undefined : Buffer.concat(chunks),
      });
      f.handle(request).then(
        async (r) => {
          const h: Record<string, string> = {};
          r.headers.forEach((v, k) => (h[k] = v));
          res.writeHead(r.status, h);
          res.end(Buffer.from(await r.arrayBuffer()));
        },
        () => req.socket.destroy(),
      );
    });
  });
  await new Promise<void>((r) => s.listen(port, "127.0.0.1", r));
  return { server: s, url: `http://127.0.0.1:${port}` };
}

class Agent {
  frames: Record<string, unknown>[] = [];
  constructor(readonly ws: WebSocket) {
    ws.on("message", (d: Buffer) => this.frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
  }
  send(f: object) {
    this.ws.send(JSON.stringify(f));
  }
  async next(pred: (f: Record<string, unknown>) => boolean, timeoutMs = 10_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.frames.findIndex(pred);
      if (i >= 0) return this.frames.splice(i, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`agent: timed out; unread ${JSON.stringify(this.frames).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function createIm(uid: string): Promise<SessionCreated> {
  const r = await fetch(`${relay.url}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ im: { channel_id: uid, channel_type: 1 } }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as SessionCreated;
}

async function imSession(uid: string): Promise<{ s: SessionCreated; agent: Agent }> {
  // `wrangler dev` keeps Durable Object storage between runs and the session id derives from the channel:
  // delete what an earlier run left, then bind afresh.
  const old = await createIm(uid);
  expect(
    (await fetch(`${relay.url}/api/sessions/${old.session_id}`, { method: "DELETE", headers: { authorization: `Bearer ${old.agent_token}` } })).status,
  ).toBe(204);
  const s = await createIm(uid);
  expect(s.session_id).toBe(old.session_id);
  const ws = new WebSocket(`${s.ws_url}?client_id=agent-e2e`, { headers: { authorization: `Bearer ${s.agent_token}` } });
  const agent = new Agent(ws);
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  await agent.next((f) => f.type === "hello");
  return { s, agent };
}

const hook = (event: string, body: string, secret = SECRET) =>
  fetch(`${relay.url}/webhooks/wukongim/${secret}?event=${event}`, { method: "POST", headers: { "content-type": "application/json" }, body });
const sentTo = (uid: string) => fake.sent.filter((m) => m.body.channel_id === uid);
const codeOf = (m: SentMessage) => /#([A-Z0-9]{3,8})/.exec(String(m.payload.content))![1]!;

beforeAll(async () => {
  fake = new FakeWuKongIM({ managerToken: "e2e-manager-token" });
  const f = await serveOnNode(fake);
  server = f.server;
  relay = await startRelay({
    vars: {
      WUKONGIM_API_URL: f.url,
      WUKONGIM_MANAGER_TOKEN: "e2e-manager-token",
      WUKONGIM_WEBHOOK_SECRET: SECRET,
      WUKONGIM_BOT_UID: BOT,
      WUKONGIM_FORWARD_URL: f.url,
    },
  });
});

afterAll(async () => {
  await relay?.stop();
  await new Promise((r) => server?.close(r));
});

describe("WuKongIM bridge end to end (wrangler dev + fake WuKongIM/TSDD over HTTP)", () => {
  it("agent → IM → plain-text reply by webhook → agent, and a LineUp-aware 10100 reply to a second call", async () => {
    const { agent } = await imSession("u_alice");
    agent.send({
      type: "tool.call",
      call_id: "call_8Yk2",
      name: "choice",
      action: "select",
      arguments: { question: "部署到哪个环境？", options: ["测试", "预发布", "生产"] },
    });
    await fake.until(() => sentTo("u_alice").length >= 2, 10_000, "the call's two messages");
    // The handout fixture byte for byte, as the relay in wrangler dev posted it (nothing appended to the payload).
    expect(sentTo("u_alice")[0]!.raw).toBe(fixture("message-send.request.tool-call.json").trim());
    expect(sentTo("u_alice")[1]!.body.client_msg_no).toBe("lineup-call_8Yk2-text");
    expect(sentTo("u_alice")[0]!.token).toBe("e2e-manager-token");
    const code = codeOf(sentTo("u_alice")[1]!);
    const reply = notifyBody([{ from_uid: "u_alice", channel_id: BOT, channel_type: 1, payload: { type: 1, content: `#${code} 2` } }]);
    expect((await hook("msg.notify", reply)).status).toBe(200);
    expect(await agent.next((f) => f.type === "tool.result")).toMatchObject({ call_id: "call_8Yk2", result: { message: "预发布" }, answered_by: "im" });

    agent.send({ type: "tool.call", call_id: "c2", name: "confirm", arguments: { question: "Ship it?" } });
    await fake.until(() => sentTo("u_alice").some((m) => m.payload.call_id === "c2"), 10_000);
    const lineupReply = { type: 10100, v: 1, kind: "tool.result", call_id: "c2", name: "confirm", result: { message: "yes", confirmed: true } };
    expect((await hook("msg.notify", notifyBody([{ from_uid: "u_alice", channel_id: BOT, channel_type: 1, payload: lineupReply }]))).status).toBe(200);
    expect(await agent.next((f) => f.type === "tool.result")).toMatchObject({ call_id: "c2", result: { message: "yes", confirmed: true } });
    agent.ws.close();
  }, 60_000);

  it("forwards every accepted event unchanged to TSDD's /v1/webhook, answers 200 only after TSDD did, and never forwards a 400", async () => {
    fake.forwarded.length = 0;
    const batch = fixture("msg.notify.text-batch.json");
    expect((await hook("msg.notify", batch)).status).toBe(200);
    expect(fake.forwarded).toEqual([{ event: "msg.notify", raw: batch, contentType: "application/json" }]);
    expect((await hook("user.onlinestatus", fixture("user.onlinestatus.json"))).status).toBe(200);
    expect((await hook("msg.offline", fixture("msg.offline.bot.json"))).status).toBe(200);
    expect(fake.forwarded.map((f) => f.event)).toEqual(["msg.notify", "user.onlinestatus", "msg.offline"]);

    fake.tsddStatus = 500;
    const r = await hook("msg.notify", batch);
    expect(r.status).toBe(502); // WuKongIM will retry the batch; the relay de-duplicates its own part
    fake.tsddStatus = 200;
    expect(fake.forwarded).toHaveLength(4);

    expect((await hook("msg.notify", "[{]")).status).toBe(400);
    expect((await hook("msg.notify", batch, "not-the-secret")).status).toBe(404);
    expect(fake.forwarded).toHaveLength(4);
  }, 30_000);
});
