// Web Push outside workerd (docs/push.md): the payload always fits one record (a huge question is cut,
// ids and token never), and the LAN server runs the same shared code — its inbox pushes a confirm to a
// fake push service on 127.0.0.1 (accepted only with the test-only allowLocalPush, from a loopback peer; VAPID and
// http_ece checked) and an answer from the notification reaches the agent as that device.
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { parseConfig } from "../../shared/edge/config.js";
import { callMessage, encodeMessage } from "../../shared/inbox/push-payload.js";
import type { PushCallMessage } from "../../shared/contract/push.js";
import { MAX_PAYLOAD_BYTES } from "../../shared/crypto/webpush/index.js";
import { lanWithPush } from "../helpers/lan-push.js";

const relay = lanWithPush("lan-push-test-token-0123456789");

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
    const { s, devices } = await relay.world("/p/lan", ["Phone"], "lan");
    const { d, sub } = devices[0]!;
    const fake = relay.fake;

    const agent = new WebSocket(s.ws_url, { headers: { authorization: `Bearer ${s.agent_token}` } });
    const frames: Record<string, unknown>[] = [];
    agent.on("message", (x: WebSocket.RawData) => frames.push(JSON.parse(x.toString()) as Record<string, unknown>));
    await new Promise((r) => agent.once("open", r));
    agent.send(JSON.stringify({ type: "tool.call", call_id: "l1", name: "confirm", arguments: { question: "Deploy from the LAN?" } }));
    await expect.poll(() => fake.for(sub.endpoint).length, { timeout: 10_000 }).toBe(1);
    expect(fake.problems).toEqual([]);
    const msg = fake.for(sub.endpoint)[0]!.msg as PushCallMessage;
    expect(msg).toMatchObject({ kind: "call", body: "Deploy from the LAN?", title: "lan · box" });
    expect((await relay.call("POST", "/api/push/answer", undefined, { token: msg.token, action: "yes" })).status).toBe(200);
    await expect
      .poll(() => frames.find((f) => f.type === "tool.result"), { timeout: 10_000 })
      .toMatchObject({ call_id: "l1", result: { message: "yes" }, answered_by: d.device_id });
    agent.close();
  });
});
