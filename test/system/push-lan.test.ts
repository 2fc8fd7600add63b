// Web Push outside workerd (docs/push.md): the payload always fits one record (a huge question is cut,
// ids and token never), and the LAN server runs the same shared code — its inbox pushes a confirm to a
// fake push service on 127.0.0.1 (accepted only with the test-only allowLocalPush, from a loopback peer; VAPID and
// http_ece checked) and an answer from the notification reaches the agent as that device.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import { parseConfig } from "../../shared/edge/config.js";
import { callMessage, encodeMessage } from "../../shared/inbox/push-payload.js";
import type { PushCallMessage, PushInfo } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { MAX_PAYLOAD_BYTES } from "../../shared/crypto/webpush/index.js";
import type { FakePushService } from "../helpers/fake-push.js";
import { startFakePush } from "../helpers/fake-push-server.js";
import { freePort } from "../helpers/relay.js";

const TOKEN = "lan-push-test-token-0123456789";
let lan: LanServer;
let fakePush: Awaited<ReturnType<typeof startFakePush>> | undefined;
let fake: FakePushService;

beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, allowLocalPush: true });
  fakePush = await startFakePush();
  fake = fakePush.fake;
});
afterAll(async () => {
  await lan?.close();
  await fakePush?.close();
});

async function call<T>(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: T }> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

describe("VAPID_SUBJECT", () => {
  it("takes a mailto: address or an https: URL, refuses anything else and Apple's localhost/.local refusals", () => {
    const subj = (v: string) => parseConfig({ VAPID_SUBJECT: v });
    expect(subj("mailto:ops@example.com")).toMatchObject({ ok: true, config: { vapidSubject: "mailto:ops@example.com" } });
    expect(subj("https://relay.example.com")).toMatchObject({ ok: true, config: { vapidSubject: "https://relay.example.com" } });
    expect(parseConfig({})).toMatchObject({ ok: true, config: { vapidSubject: undefined } });
    for (const bad of ["ops@example.com", "http://relay.example.com", "mailto:me@localhost", "mailto:me@box.local", "https://localhost"]) {
      const r = subj(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.problems.join(" ")).toContain("VAPID_SUBJECT");
    }
  });
});

describe("push payloads", () => {
  it("a huge question is cut to fit 3993 bytes; ids, token and options survive", () => {
    const m = callMessage({
      inbox: "abcdefghijkl",
      sid: "s".repeat(64),
      label: "标签".repeat(200),
      lang: "zh",
      call: { call_id: "c".repeat(128), name: "choice", text: "问".repeat(50_000), created_at: 1, deadline_at: 2, options: ["a", "b"] },
      token: `lpt1.abcdefghijkl.${"t".repeat(43)}`,
    });
    const out = encodeMessage(m);
    expect(new TextEncoder().encode(out).length).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    const back = JSON.parse(out) as PushCallMessage;
    expect(back.call).toBe("c".repeat(128));
    expect(back.token).toBe(m.token);
    expect(back.options).toEqual(["a", "b"]);
    expect(back.title.length).toBeLessThanOrEqual(120);
    expect(back.body.endsWith("…")).toBe(true);
  });
});

describe("Web Push in the LAN server (shared code)", () => {
  it("pushes a confirm from its inbox and takes the answer from the notification", async () => {
    const m = (await call<MachineCreated>(lan.url, "POST", "/api/inboxes", TOKEN, {})).body;
    const s = (await call<SessionCreated>(lan.url, "POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/lan", host: "box" })).body;
    const code = (await call<CodeIssued>(lan.url, "POST", "/api/inbox/pairings", m.machine_credential)).body;
    const d = (await call<DevicePaired>(lan.url, "POST", "/api/pair", undefined, { code: code.code, name: "Phone" })).body;
    const key = (await call<{ public_key: string }>(lan.url, "GET", "/api/push/key")).body.public_key;
    const sub = fake.subscriber("lan");
    const put = await call<PushInfo>(lan.url, "PUT", "/api/inbox/push", d.device_credential, { subscription: sub, application_server_key: key, lang: "en" });
    expect(put.status).toBe(200);

    const agent = new WebSocket(s.ws_url, { headers: { authorization: `Bearer ${s.agent_token}` } });
    const frames: Record<string, unknown>[] = [];
    agent.on("message", (x: WebSocket.RawData) => frames.push(JSON.parse(x.toString()) as Record<string, unknown>));
    await new Promise((r) => agent.once("open", r));
    agent.send(JSON.stringify({ type: "tool.call", call_id: "l1", name: "confirm", arguments: { question: "Deploy from the LAN?" } }));
    await expect.poll(() => fake.for(sub.endpoint).length, { timeout: 10_000 }).toBe(1);
    expect(fake.problems).toEqual([]);
    const msg = fake.for(sub.endpoint)[0]!.msg as PushCallMessage;
    expect(msg).toMatchObject({ kind: "call", body: "Deploy from the LAN?", title: "lan · box" });
    expect((await call(lan.url, "POST", "/api/push/answer", undefined, { token: msg.token, action: "yes" })).status).toBe(200);
    await expect
      .poll(() => frames.find((f) => f.type === "tool.result"), { timeout: 10_000 })
      .toMatchObject({ call_id: "l1", result: { message: "yes" }, answered_by: d.device_id });
    agent.close();
  });
});
