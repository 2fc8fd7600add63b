// Web Push from the inbox object in workerd (docs/push.md): a fake push service (test/helpers/fake-push.ts,
// reached through a stubbed global fetch — the objects run in the test isolate) checks every VAPID header
// and decrypts every payload with http_ece. Covered: one push per new human call, none for automatic tools,
// suppression while the device shows the session or the Waiting list, answers from the notification's
// action (idempotent, first wins, as that device), the update that closes the loop, 410 and retries,
// reminders via runDurableObjectAlarm (and their off switch), evictions between a call and its push,
// revocation and a rotated key.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CONFIRM } from "../../shared/contract/builtin-tools.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import { PUSH_LIMITS, type PushCallMessage, type PushInfo, type PushUpdateMessage } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { FakePushService } from "../helpers/fake-push.js";
import { authed } from "./contract-fixtures.js";
import { Client, connect, fetchWorker, RELAY_KEY } from "./helpers.js";

let fake: FakePushService;
beforeEach(() => {
  fake = new FakePushService("https://push.test");
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation((input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    return new URL(req.url).host === "push.test" ? fake.handle(req) : real(input, init);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

const json = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const inboxStub = (id: string) => env.INBOXES.get(env.INBOXES.idFromName(id));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface World {
  m: MachineCreated;
  s: SessionCreated;
  agent: Client;
}
async function world(dir = "/p/api"): Promise<World> {
  const m: MachineCreated = await (await json("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
  const r = await json("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: dir, host: "laptop" });
  expect(r.status).toBe(201);
  const s: SessionCreated = await r.json();
  const agent = await connect(s.session_id, s.agent_token);
  return { m, s, agent };
}
async function device(w: World, name: string, subscribe = true): Promise<DevicePaired & { endpoint: string }> {
  const c: CodeIssued = await (await json("POST", "/api/inbox/pairings", w.m.machine_credential)).json();
  const d: DevicePaired = await (await json("POST", "/api/pair", undefined, { code: c.code, name })).json();
  const sub = fake.subscriber(`${name}-${d.device_id}`);
  if (subscribe) {
    const key = ((await (await fetchWorker("/api/push/key")).json()) as { public_key: string }).public_key;
    const r = await json("PUT", "/api/inbox/push", d.device_credential, { subscription: sub, application_server_key: key, lang: "en" });
    expect(r.status, await r.clone().text()).toBe(200);
    expect(((await r.json()) as PushInfo).subscribed).toBe(true);
  }
  return { ...d, endpoint: sub.endpoint };
}
async function inboxSocket(d: DevicePaired): Promise<Client> {
  const res = await fetchWorker("/api/inbox/ws", {
    headers: { upgrade: "websocket", "sec-websocket-protocol": `lineup.v1, lineup.token.${d.device_credential}` },
  });
  expect(res.status).toBe(101);
  res.webSocket!.accept();
  const c = new Client(res.webSocket!);
  await c.next("inbox");
  return c;
}
const info = async (token: string, sid?: string): Promise<PushInfo> =>
  (await fetchWorker(`/api/inbox/push${sid ? `?session_id=${sid}` : ""}`, authed(token))).json();

/** Runs the inbox's alarm until `pred` holds (the session's report reaches the inbox asynchronously). */
async function until(inboxId: string, pred: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await runDurableObjectAlarm(inboxStub(inboxId)).catch(() => false);
    if (await pred()) return;
    if (Date.now() > end)
      throw new Error(`timed out: ${what}; received ${JSON.stringify(fake.received.map((r) => r.msg))}; problems ${JSON.stringify(fake.problems)}`);
    await sleep(20);
  }
}
const confirm = (w: World, id: string, question = "Deploy to staging?", timeout_s = 600) =>
  w.agent.send({ type: "tool.call", call_id: id, name: "confirm", arguments: { question, yes_label: "Ship it" }, timeout_s });

describe("Web Push from the inbox object", () => {
  it("a new confirm is pushed once to every subscribed device: VAPID checked, payload decrypted by http_ece, TTL = remaining time, Urgency high, a Topic", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const ipad = await device(w, "iPad");
    confirm(w, "c1", "Deploy to staging?", 600);
    await until(w.m.inbox_id, () => fake.received.length >= 2, "two pushes");
    expect(fake.problems).toEqual([]);
    for (const d of [pixel, ipad]) {
      const got = fake.for(d.endpoint);
      expect(got).toHaveLength(1);
      const msg = got[0]!.msg as PushCallMessage;
      expect(msg).toMatchObject({
        v: 1,
        kind: "call",
        sid: w.s.session_id,
        call: "c1",
        tool: "confirm",
        title: "api · laptop",
        body: "Deploy to staging?",
        confirm: { yes: "Ship it" },
        lang: "en",
      });
      expect(msg.token).toMatch(/^lpt1\./);
      const h = got[0]!.headers;
      expect(Number(h.ttl)).toBeGreaterThan(590);
      expect(Number(h.ttl)).toBeLessThanOrEqual(600);
      expect(h.urgency).toBe("high");
      expect(h.topic).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(got[0]!.claims.aud).toBe("https://push.test");
      expect(got[0]!.claims.sub).toMatch(/^(https:|mailto:)/);
    }
    // The same call again (a repeated report) and an automatic tool: no more pushes.
    w.agent.send({ type: "tool.call", call_id: "k1", name: "calculator", action: "add", arguments: { a: 1, b: 2 } });
    await sleep(200);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    expect(fake.received).toHaveLength(2);
    const log = (await info(pixel.device_credential, w.s.session_id)).log;
    expect(
      log
        .filter((e) => e.call_id === "c1")
        .map((e) => `${e.device_name} ${e.kind} ${e.outcome} ${e.status}`)
        .sort(),
    ).toEqual(["Pixel call sent 201", "iPad call sent 201"]);
    w.agent.close();
  });

  it("answering from the notification: the token and Yes reach the agent as that device; repeats are idempotent, a second device loses, the other device's notification is replaced", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const ipad = await device(w, "iPad");
    confirm(w, "c2");
    await until(w.m.inbox_id, () => fake.received.length >= 2, "two pushes");
    const tokenOf = (d: { endpoint: string }) => (fake.for(d.endpoint)[0]!.msg as PushCallMessage).token;
    const r = await json("POST", "/api/push/answer", undefined, { token: tokenOf(pixel), action: "yes" });
    expect(r.status, await r.clone().text()).toBe(200);
    const result = await w.agent.next("tool.result");
    expect(result).toMatchObject({ call_id: "c2", result: { message: "yes", confirmed: true }, answered_by: pixel.device_id });
    // Idempotent for the same token and action; first answer wins for everyone else.
    expect((await json("POST", "/api/push/answer", undefined, { token: tokenOf(pixel), action: "yes" })).status).toBe(200);
    const late = await json("POST", "/api/push/answer", undefined, { token: tokenOf(ipad), action: "no" });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: "already_answered", answered_by: "Pixel" } });
    expect(
      (await json("POST", "/api/push/answer", undefined, { token: "lpt1.xxxxxxxxxxxx.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", action: "yes" })).status,
    ).toBe(404);
    // The iPad's notification is replaced with the outcome; the Pixel (which answered) gets nothing more.
    await until(w.m.inbox_id, () => fake.for(ipad.endpoint).length >= 2, "the update");
    expect(fake.for(ipad.endpoint)[1]!.msg as PushUpdateMessage).toMatchObject({ kind: "update", call: "c2", outcome: "answered", by: "Pixel", answer: "yes" });
    await sleep(100);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    expect(fake.for(pixel.endpoint)).toHaveLength(1);
    w.agent.close();
  });

  it("answered from a device's notification while that device's app holds the call: the app gets the cancel naming it and the answer (issue 28 §4)", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const app = await connect(w.s.session_id, pixel.device_credential, { clientId: pixel.device_id });
    app.send({ type: "tool.list", tools: [CONFIRM] });
    confirm(w, "c9");
    await app.next((f) => f.type === "tool.call" && f.call_id === "c9");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push");
    const token = (fake.for(pixel.endpoint)[0]!.msg as PushCallMessage).token;
    expect((await json("POST", "/api/push/answer", undefined, { token, action: "yes" })).status).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({ call_id: "c9", answered_by: pixel.device_id });
    expect(await app.next("tool.cancel")).toEqual({ type: "tool.cancel", call_id: "c9", reason: "answered", answered_by: "Pixel", answer: "yes" });
    app.close();
    w.agent.close();
  });

  it("a single choice carries its options and is answered by index with the full option text", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const long = `production ${"x".repeat(60)}`;
    w.agent.send({ type: "tool.call", call_id: "ch1", name: "choice", arguments: { question: "Where?", options: ["staging", long] } });
    w.agent.send({ type: "tool.call", call_id: "ch2", name: "choice", arguments: { question: "Which?", options: ["a", "b"], multiple: true } });
    await until(w.m.inbox_id, () => fake.received.length >= 2, "two pushes");
    const one = fake.received.find((x) => x.msg.call === "ch1")!.msg as PushCallMessage;
    expect(one.options).toEqual(["staging", `${long.slice(0, 39)}…`]);
    expect((fake.received.find((x) => x.msg.call === "ch2")!.msg as PushCallMessage).options).toBeUndefined();
    expect((await json("POST", "/api/push/answer", undefined, { token: one.token, action: "opt:7" })).status).toBe(400);
    expect((await json("POST", "/api/push/answer", undefined, { token: one.token, action: "opt:1" })).status).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({ call_id: "ch1", result: { message: long, selected: [long] }, answered_by: pixel.device_id });
    w.agent.close();
  });

  it("answered in the app on another device: the notified device's notification becomes the outcome; a cancel and a timeout close the loop too", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const laptop = await device(w, "Laptop", false);
    const app = await connect(w.s.session_id, laptop.device_credential, { via: "subprotocol" });
    app.send({ type: "tool.list", tools: [CONFIRM] });
    await w.agent.next((f) => f.type === "tool.list" && JSON.stringify(f).includes("confirm"));
    confirm(w, "c3");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push");
    await app.next((f) => f.type === "tool.call" && f.call_id === "c3");
    app.send({ type: "tool.result", call_id: "c3", result: { message: "no", confirmed: false } });
    await w.agent.next("tool.result");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 2, "the update");
    expect(fake.for(pixel.endpoint)[1]!.msg).toMatchObject({ kind: "update", call: "c3", outcome: "answered", by: "Laptop", answer: "no" });
    expect(fake.for(pixel.endpoint)[1]!.headers.topic).toBe(fake.for(pixel.endpoint)[0]!.headers.topic);

    confirm(w, "c4");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 3, "push c4");
    w.agent.send({ type: "tool.cancel", call_id: "c4" });
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 4, "update c4");
    expect(fake.for(pixel.endpoint)[3]!.msg).toMatchObject({ kind: "update", call: "c4", outcome: "cancelled" });

    confirm(w, "c5", "Quick?", 1);
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 6, "push and timeout update of c5", 8000);
    expect(fake.for(pixel.endpoint)[5]!.msg).toMatchObject({ kind: "update", call: "c5", outcome: "timeout" });
    // The answer token of a timed-out call says so.
    const tok = (fake.for(pixel.endpoint)[4]!.msg as PushCallMessage).token;
    const late = await json("POST", "/api/push/answer", undefined, { token: tok, action: "yes" });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: "call_closed", outcome: "timeout" } });
    app.close();
    w.agent.close();
  });

  it("no push to a device showing that session or the Waiting list; a push once it looks elsewhere (logged as suppressed)", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const live = await inboxSocket(pixel);
    live.send({ type: "visible", view: "session", session_id: w.s.session_id });
    live.send({ type: "visible", view: "session", session_id: "bogus id with spaces" }); // refused by zod: the first stays
    await sleep(50);
    confirm(w, "v1");
    await until(w.m.inbox_id, async () => (await info(pixel.device_credential)).log.some((e) => e.call_id === "v1"), "the log entry");
    expect((await info(pixel.device_credential)).log.find((e) => e.call_id === "v1")).toMatchObject({ outcome: "suppressed", kind: "call" });
    live.send({ type: "visible", view: "home" });
    await sleep(50);
    confirm(w, "v2");
    await until(w.m.inbox_id, async () => (await info(pixel.device_credential)).log.some((e) => e.call_id === "v2"), "the log entry");
    expect((await info(pixel.device_credential)).log.find((e) => e.call_id === "v2")?.outcome).toBe("suppressed");
    live.send({ type: "visible", view: "hidden" });
    await sleep(50);
    confirm(w, "v3");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push of v3");
    expect(fake.received.map((r) => r.msg.call)).toEqual(["v3"]);
    // An evicted object still knows what the hibernated socket said.
    live.send({ type: "visible", view: "session", session_id: w.s.session_id });
    await sleep(50);
    await evictDurableObject(inboxStub(w.m.inbox_id), { webSockets: "hibernate" });
    confirm(w, "v4");
    await until(w.m.inbox_id, async () => (await info(pixel.device_credential)).log.some((e) => e.call_id === "v4"), "the log entry");
    expect((await info(pixel.device_credential)).log.find((e) => e.call_id === "v4")?.outcome).toBe("suppressed");
    live.close();
    w.agent.close();
  });

  it("410 deletes the subscription; 503 is retried from the alarm with Retry-After, across an eviction between the call and the push", async () => {
    const w = await world();
    const gone = await device(w, "Old");
    const flaky = await device(w, "Flaky");
    fake.answer = (ep, n) => (ep === gone.endpoint ? 410 : ep === flaky.endpoint && n === 0 ? { status: 503, headers: { "retry-after": "1" } } : 201);
    confirm(w, "r1");
    await until(w.m.inbox_id, async () => (await info(gone.device_credential)).log.some((e) => e.outcome === "gone"), "the 410");
    expect((await info(gone.device_credential)).subscribed).toBe(false);
    await until(w.m.inbox_id, async () => (await info(flaky.device_credential)).log.some((e) => e.outcome === "failed" && e.status === 503), "the 503");
    const failed = (await info(flaky.device_credential)).log.find((e) => e.status === 503)!;
    expect(failed.retry_at).toBeGreaterThan(failed.at);
    // Memory wiped before the retry: the queue is in storage, the alarm sends it.
    await evictDurableObject(inboxStub(w.m.inbox_id));
    await sleep(1000);
    await until(w.m.inbox_id, () => fake.for(flaky.endpoint).length >= 1, "the retried push");
    expect(fake.for(flaky.endpoint)).toHaveLength(1);
    expect(fake.for(gone.endpoint)).toHaveLength(0);
    // Nothing more goes to the deleted subscription.
    confirm(w, "r2");
    await until(w.m.inbox_id, () => fake.for(flaky.endpoint).length >= 2, "the next push");
    expect(fake.attempts.filter((a) => a.endpoint === gone.endpoint)).toHaveLength(1);
    w.agent.close();
  });

  it("429 is retried as Retry-After says, and after 5 attempts the push is given up for good (logged failed, no retry)", async () => {
    const w = await world();
    const busy = await device(w, "Busy");
    fake.answer = () => ({ status: 429, headers: { "retry-after": "0" } });
    confirm(w, "g1");
    await until(w.m.inbox_id, () => fake.attempts.filter((a) => a.endpoint === busy.endpoint).length >= 5, "five attempts", 20_000);
    await until(w.m.inbox_id, async () => (await info(busy.device_credential)).log.filter((e) => e.call_id === "g1").length >= 5, "five log entries", 10_000);
    const log = (await info(busy.device_credential)).log.filter((e) => e.call_id === "g1");
    expect(log.map((e) => [e.outcome, e.status, e.retry_at !== undefined])).toEqual([...Array(4).fill(["failed", 429, true]), ["failed", 429, false]]);
    // Given up: the alarm sends nothing more, and the subscription is kept (a busy service is not a gone one).
    await sleep(100);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id)).catch(() => false);
    expect(fake.attempts.filter((a) => a.endpoint === busy.endpoint)).toHaveLength(5);
    expect((await info(busy.device_credential)).subscribed).toBe(true);
    w.agent.close();
  });

  it("turning notifications off (DELETE /api/inbox/push) unregisters the device: no push for the next call, the other device still gets one", async () => {
    const w = await world();
    const off = await device(w, "Off");
    const on = await device(w, "On");
    const del = await json("DELETE", "/api/inbox/push", off.device_credential);
    expect(del.status).toBeLessThan(300);
    expect((await info(off.device_credential)).subscribed).toBe(false);
    confirm(w, "u1");
    await until(w.m.inbox_id, () => fake.for(on.endpoint).length >= 1, "the other device's push");
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id)).catch(() => false);
    expect(fake.attempts.filter((a) => a.endpoint === off.endpoint)).toHaveLength(0);
    // Idempotent: turning it off again changes nothing and is not an error.
    expect((await json("DELETE", "/api/inbox/push", off.device_credential)).status).toBeLessThan(300);
    w.agent.close();
  });

  it("a permission request is pushed with Allow / Deny: Allow answers as the card's Allow would, Yes is not an answer to it", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    w.agent.send({
      type: "tool.call",
      call_id: "perm1",
      name: "permission",
      arguments: { tool_name: "Bash", input: { command: "git push --force" }, suggestions: ["Bash(git push:*)"] },
      timeout_s: 600,
    });
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the permission push");
    const msg = fake.for(pixel.endpoint)[0]!.msg as PushCallMessage;
    expect(msg).toMatchObject({ kind: "call", tool: "permission", body: "Bash: git push --force" });
    expect((await json("POST", "/api/push/answer", undefined, { token: msg.token, action: "yes" })).status).toBe(400);
    const r = await json("POST", "/api/push/answer", undefined, { token: msg.token, action: "allow" });
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({
      call_id: "perm1",
      result: { message: "allow", behavior: "allow" },
      answered_by: pixel.device_id,
    });
    w.agent.close();
  });

  it("regression: a permission push with choices answers the taps it offers (the push core knew only Allow / Deny, and refused “for this session” as bad_action)", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    w.agent.send({
      type: "tool.call",
      call_id: "perm-choices",
      name: "permission",
      arguments: { tool_name: "Bash", input: { command: "make deploy" }, choices: ["once", "session", "deny"] },
      timeout_s: 600,
    });
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the permission push");
    const msg = fake.for(pixel.endpoint)[0]!.msg as PushCallMessage;
    expect(msg).toMatchObject({ kind: "call", tool: "permission", options: ["once", "session", "deny"] });
    // "always" needs the card (choosing a rule) and was not offered here: still not an answer.
    expect((await json("POST", "/api/push/answer", undefined, { token: msg.token, action: "always" })).status).toBe(400);
    const r = await json("POST", "/api/push/answer", undefined, { token: msg.token, action: "session" });
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({
      call_id: "perm-choices",
      result: { message: "session", behavior: "allow" },
      answered_by: pixel.device_id,
    });
    w.agent.close();
  });

  it('an agent\'s "waiting for you" (POST /api/inbox/push/attention) is pushed without actions or token, spared on screen, at most once a minute per session', async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const ipad = await device(w, "iPad");
    const live = await inboxSocket(ipad);
    live.send({ type: "visible", view: "session", session_id: w.s.session_id });
    await sleep(50);
    const r = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, {
      session_id: w.s.session_id,
      text: "Claude Code: waiting for your input",
    });
    expect(r.status, await r.clone().text()).toBe(202);
    expect(await r.json()).toEqual({ queued: 2 });
    await until(
      w.m.inbox_id,
      async () => fake.for(pixel.endpoint).length >= 1 && (await info(ipad.device_credential)).log.some((e) => e.kind === "attention"),
      "the attention push",
    );
    expect(fake.problems).toEqual([]);
    const got = fake.for(pixel.endpoint)[0]!;
    expect(got.msg).toEqual({
      v: 1,
      kind: "attention",
      inbox: w.m.inbox_id,
      sid: w.s.session_id,
      call: "attention",
      title: "api · laptop",
      lang: "en",
      body: "Claude Code: waiting for your input",
    });
    expect(got.headers.urgency).toBe("normal");
    expect(Number(got.headers.ttl)).toBe(3600);
    expect(fake.for(ipad.endpoint)).toHaveLength(0); // it shows that session
    expect((await info(ipad.device_credential)).log.find((e) => e.kind === "attention")).toMatchObject({
      outcome: "suppressed",
      call_id: "attention",
      session_id: w.s.session_id,
    });
    // Once a minute per session: the next is refused with Retry-After, and nothing more is sent.
    const again = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.s.session_id });
    expect(again.status).toBe(429);
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(0);
    // Only a machine of the inbox, only for a session of it, only a short text.
    expect((await json("POST", "/api/inbox/push/attention", pixel.device_credential, { session_id: w.s.session_id })).status).toBe(403);
    expect((await json("POST", "/api/inbox/push/attention", RELAY_KEY, { session_id: w.s.session_id })).status).toBe(401);
    expect((await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: "NoSuchSession12" })).status).toBe(404);
    expect((await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.s.session_id, text: "x".repeat(301) })).status).toBe(400);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id)).catch(() => false);
    expect(fake.received).toHaveLength(1);
    live.close();
    w.agent.close();
  });

  // i29-agents (issue 29 item 3): needs-input and finished pushes say why, so a push without text still says which.
  it("an attention push carries its reason (needs_input / completed) through the inbox object; an unknown reason is refused", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const r = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.s.session_id, reason: "completed" });
    expect(r.status, await r.clone().text()).toBe(202);
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the attention push");
    expect(fake.for(pixel.endpoint)[0]!.msg).toMatchObject({ kind: "attention", call: "attention", body: "", reason: "completed" });
    const bad = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.s.session_id, reason: "bored" });
    expect(bad.status).toBe(400);
    w.agent.close();
  });

  it("the inbox object evicted right after the call: the push still goes, exactly once", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    confirm(w, "e1");
    await evictDurableObject(inboxStub(w.m.inbox_id));
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push");
    await evictDurableObject(inboxStub(w.m.inbox_id));
    await sleep(100);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    expect(fake.for(pixel.endpoint)).toHaveLength(1);
    w.agent.close();
  });

  it("a push leaves from the session's report, not the alarm, and the alarm is only ever moved earlier: a second push within the first's lease leaves it where it was; run early, it sends nothing and moves on to the next due time (regression: each push moved it twice, and a move costs its commit ~1 ms)", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const alarm = () => runInDurableObject(inboxStub(w.m.inbox_id), (_o, state) => state.storage.getAlarm());
    const sent = async (n: number) => {
      const end = Date.now() + 5000;
      while ((await info(pixel.device_credential)).log.filter((e) => e.outcome === "sent").length < n) {
        if (Date.now() > end) throw new Error(`${n} pushes not sent; received ${fake.received.length}`);
        await sleep(20);
      }
    };
    confirm(w, "a1");
    await sent(1); // no alarm was run: the push left from the report's own request
    const first = await alarm();
    expect(first).not.toBeNull();
    expect(first!).toBeLessThanOrEqual(Date.now() + PUSH_LIMITS.leaseMs); // its lease's backstop, not the reminder
    confirm(w, "a2");
    await sent(2);
    expect(await alarm()).toBe(first);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    expect(fake.for(pixel.endpoint)).toHaveLength(2);
    const next = await alarm();
    expect(next).not.toBeNull();
    expect(next!).toBeGreaterThan(Date.now() + PUSH_LIMITS.leaseMs); // the calls' reminders
    w.agent.close();
  });

  it("a call reported while another push is still on its way is pushed at once, not after it (regression: pushes were sent one run at a time, and the second waited for the first's answer)", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const handle = fake.handle.bind(fake);
    let n = 0;
    fake.handle = async (req) => {
      const res = await handle(req); // recorded as received, then the first answer is held back
      if (n++ === 0) await held;
      return res;
    };
    const got = async (k: number) => {
      const end = Date.now() + 3000;
      while (fake.for(pixel.endpoint).length < k) {
        if (Date.now() > end) throw new Error(`${k} pushes not received (${fake.for(pixel.endpoint).length})`);
        await sleep(20);
      }
    };
    confirm(w, "h1");
    await got(1);
    confirm(w, "h2");
    await got(2); // the first push's service has not answered yet
    expect((fake.for(pixel.endpoint)[1]!.msg as PushCallMessage).call).toBe("h2");
    release();
    w.agent.close();
  });

  it("reminders every N minutes from the alarm, at most 3, each with a fresh token; the off switch stops them", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    const s = await json("PUT", "/api/inbox/push/settings", pixel.device_credential, { reminder_every_min: 5 });
    expect(await s.json()).toEqual({ reminders: true, reminder_every_min: 5 });
    confirm(w, "m1");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push");
    /** Makes the reminder due now (time cannot be moved in workerd): edit the stored document, evict, run the alarm. */
    const due = async () => {
      await runInDurableObject(inboxStub(w.m.inbox_id), (_i, state) => {
        // A job's row (worker/push-store.ts): `p:j:<session>/<call>`.
        for (const row of state.storage.sql.exec<{ k: string; v: string }>("SELECT k, v FROM inbox WHERE k LIKE 'p:j:%'").toArray()) {
          const j = JSON.parse(row.v) as { next_reminder_at?: number };
          if (!j.next_reminder_at) continue;
          j.next_reminder_at = Date.now() - 1;
          state.storage.sql.exec("UPDATE inbox SET v = ? WHERE k = ?", JSON.stringify(j), row.k);
        }
      });
      await evictDurableObject(inboxStub(w.m.inbox_id));
      await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    };
    for (let i = 1; i <= 3; i++) {
      await due();
      await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= i + 1, `reminder ${i}`);
      expect(fake.for(pixel.endpoint)[i]!.msg).toMatchObject({ kind: "reminder", call: "m1", reminder: i });
    }
    const tokens = fake.for(pixel.endpoint).map((r) => (r.msg as PushCallMessage).token);
    expect(new Set(tokens).size).toBe(4);
    await due();
    await sleep(100);
    expect(fake.for(pixel.endpoint)).toHaveLength(4);
    // The latest reminder's token answers.
    expect((await json("POST", "/api/push/answer", undefined, { token: tokens[3], action: "no" })).status).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({ result: { message: "no" } });

    expect((await json("PUT", "/api/inbox/push/settings", w.m.machine_credential, { reminders: false })).status).toBe(200);
    confirm(w, "m2");
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).some((r) => r.msg.call === "m2"), "push m2");
    await due();
    await sleep(100);
    expect(fake.for(pixel.endpoint).filter((r) => r.msg.call === "m2")).toHaveLength(1);
    expect((await json("PUT", "/api/inbox/push/settings", w.m.machine_credential, { reminder_every_min: 0 })).status).toBe(400);
    w.agent.close();
  });

  it("a long question is cut to fit, never refused; subscriptions are validated; revoking a device deletes its subscription; a rotated key is refused until re-subscribed", async () => {
    const w = await world();
    const pixel = await device(w, "Pixel");
    confirm(w, "q1", `汉字 ${"很长的问题".repeat(2000)}`);
    await until(w.m.inbox_id, () => fake.for(pixel.endpoint).length >= 1, "the push");
    const msg = fake.for(pixel.endpoint)[0]!;
    expect(new TextEncoder().encode(msg.plain).length).toBeLessThanOrEqual(3993);
    expect((msg.msg as PushCallMessage).body.endsWith("…")).toBe(true);

    const key = ((await (await fetchWorker("/api/push/key")).json()) as { public_key: string }).public_key;
    const other = await device(w, "Other", false);
    const sub = fake.subscriber("x");
    const put = (body: unknown) => json("PUT", "/api/inbox/push", other.device_credential, body);
    expect((await put({ subscription: { ...sub, endpoint: "http://127.0.0.1:9/push" }, application_server_key: key })).status).toBe(400);
    expect((await put({ subscription: { ...sub, keys: { ...sub.keys, auth: "AAAA" } }, application_server_key: key })).status).toBe(400);
    for (const endpoint of [
      "https://10.0.0.1/push",
      "https://push.test:8443/push",
      "https://intranet/push",
      "https://vm./push",
      "https://localhost./push",
      "https://[::ffff:7f00:1]/push",
      "https://2130706433/push",
    ]) {
      expect((await put({ subscription: { ...sub, endpoint }, application_server_key: key })).status, endpoint).toBe(400);
    }
    expect((await put({ subscription: sub, application_server_key: key, extra: 1 })).status).toBe(400);
    expect((await json("PUT", "/api/inbox/push", w.m.machine_credential, { subscription: sub, application_server_key: key })).status).toBe(403);

    expect((await fetchWorker(`/api/inbox/devices/${pixel.device_id}`, authed(w.m.machine_credential, { method: "DELETE" }))).status).toBe(204);
    confirm(w, "q2");
    await sleep(200);
    await runDurableObjectAlarm(inboxStub(w.m.inbox_id));
    expect(fake.for(pixel.endpoint)).toHaveLength(1);

    expect((await json("POST", "/api/push/rotate-key", "wrong")).status).toBe(401);
    const rotated = await json("POST", "/api/push/rotate-key", RELAY_KEY);
    const fresh = ((await rotated.json()) as { public_key: string }).public_key;
    expect(fresh).not.toBe(key);
    expect((await put({ subscription: sub, application_server_key: key })).status).toBe(409);
    expect((await put({ subscription: sub, application_server_key: fresh })).status).toBe(200);
    w.agent.close();
  });

  it("a revoked device's answer token from a push it already got is refused (404 invalid_token); the call still waits and the other device answers it", async () => {
    const w = await world("/p/revoked-token");
    const lost = await device(w, "Lost");
    const kept = await device(w, "Kept");
    confirm(w, "rv1");
    await until(w.m.inbox_id, () => fake.for(lost.endpoint).length >= 1 && fake.for(kept.endpoint).length >= 1, "both pushes");
    const tokenOf = (d: { endpoint: string }) => (fake.for(d.endpoint)[0]!.msg as PushCallMessage).token;
    expect((await fetchWorker(`/api/inbox/devices/${lost.device_id}`, authed(w.m.machine_credential, { method: "DELETE" }))).status).toBe(204);
    const r = await json("POST", "/api/push/answer", undefined, { token: tokenOf(lost), action: "yes" });
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ error: { code: "invalid_token" } });
    expect((await json("POST", "/api/push/answer", undefined, { token: tokenOf(kept), action: "no" })).status).toBe(200);
    expect(await w.agent.next("tool.result")).toMatchObject({ call_id: "rv1", result: { message: "no" }, answered_by: kept.device_id });
    w.agent.close();
  });

  it("a subscription to a trailing-dot name kept from before the name rule (https://vm./) is checked again at send time: never fetched, logged failed invalid_endpoint (issue 26 §6)", async () => {
    const w = await world("/p/send-check");
    const vm = await device(w, "Stored");
    // As an older relay would have kept it: the endpoint rewritten in the inbox object's own SQLite.
    await runInDurableObject(inboxStub(w.m.inbox_id), (_o, state) => {
      const key = `p:s:${vm.device_id}`; // its subscription's row (worker/push-store.ts)
      const sub = JSON.parse(state.storage.sql.exec<{ v: string }>("SELECT v FROM inbox WHERE k = ?", key).one().v) as { endpoint: string };
      sub.endpoint = "https://vm./push/stored";
      state.storage.sql.exec("UPDATE inbox SET v = ? WHERE k = ?", JSON.stringify(sub), key);
    });
    await evictDurableObject(inboxStub(w.m.inbox_id)); // its memory held the old copy
    const fetched: string[] = [];
    const stubbed = vi.mocked(globalThis.fetch).getMockImplementation()!;
    vi.mocked(globalThis.fetch).mockImplementation((input: RequestInfo | URL, init?: RequestInit) => {
      fetched.push(new Request(input, init).url);
      return stubbed(input, init);
    });
    confirm(w, "vm1");
    await until(w.m.inbox_id, async () => (await info(vm.device_credential, w.s.session_id)).log.some((e) => e.call_id === "vm1"), "the attempt");
    const log = (await info(vm.device_credential, w.s.session_id)).log.filter((e) => e.call_id === "vm1");
    expect(log).toEqual([expect.objectContaining({ outcome: "failed", error: "invalid_endpoint" })]);
    expect(log[0]!.retry_at).toBeUndefined();
    expect(fetched.filter((u) => u.includes("vm."))).toEqual([]);
    w.agent.close();
  });

  it("after a key rotation a subscription made with the old key is skipped and logged stale_key; one made with the new key is pushed, signed by it", async () => {
    const w = await world("/p/rotate");
    const old = await device(w, "OldPhone");
    const rotated = await json("POST", "/api/push/rotate-key", RELAY_KEY);
    expect(rotated.status).toBe(200);
    const fresh = ((await rotated.json()) as { public_key: string }).public_key;
    const renewed = await device(w, "NewPhone"); // subscribes with GET /api/push/key, now the new key
    confirm(w, "rk1");
    await until(
      w.m.inbox_id,
      async () =>
        fake.for(renewed.endpoint).length >= 1 &&
        (await info(old.device_credential, w.s.session_id)).log.some((e) => e.call_id === "rk1" && e.device_id === old.device_id),
      "the push and the skip",
    );
    expect(fake.problems).toEqual([]);
    expect(fake.for(old.endpoint)).toEqual([]);
    expect(fake.for(renewed.endpoint)[0]!.headers.authorization).toContain(`k=${fresh}`);
    const log = (await info(old.device_credential, w.s.session_id)).log.filter((e) => e.call_id === "rk1");
    expect(log.find((e) => e.device_id === old.device_id)).toMatchObject({ outcome: "failed", error: "stale_key" });
    expect(log.find((e) => e.device_id === renewed.device_id)).toMatchObject({ outcome: "sent" });
    w.agent.close();
  });
});
