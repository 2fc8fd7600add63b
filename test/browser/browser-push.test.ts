// Web Push end to end in real Chromium against the local relay (docs/push.md). Headless Chromium cannot
// subscribe without a real push service, so the test page — and only it — stubs PushManager.prototype
// .subscribe/getSubscription: the subscription's endpoint is a fake push service on 127.0.0.1
// (test/helpers/fake-push.ts: VAPID checked, body decrypted by http_ece) and its p256dh/auth keys are real,
// made in the page with WebCrypto. What the fake decrypted is handed to the real service worker with CDP
// `ServiceWorker.deliverPushMessage`; its notifications are read with `registration.getNotifications()`
// and answered with a synthetic `notificationclick`, as a tap on "Yes" would.
// The app comes from LINEUP_TEST_WEB_DIR when set (a fresh `vite build --outDir`), else dist/web.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { CONFIRM } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { PushInfo } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { FakePushService } from "../helpers/fake-push.js";
import { startFakePush } from "../helpers/fake-push-server.js";
import { registrationId, shown, stubPushManager, tap } from "../helpers/browser-push.js";
import { Agent, shot, useBrowser } from "../helpers/browser.js";

let fakePush: Awaited<ReturnType<typeof startFakePush>> | undefined;
let fake: FakePushService;
const fx = useBrowser({
  setup: async () => {
    fakePush = await startFakePush();
    fake = fakePush.fake;
  },
  teardown: async () => {
    await fakePush?.close();
  },
});
const relay = fx.relay;

async function ok<T>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const r = await fetch(`${relay()}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

describe("Web Push in Chromium", () => {
  it("notifications on, app closed: a confirm arrives as a notification with Yes/No, Yes answers the agent, an answer elsewhere replaces it", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/api-server", host: "laptop" });
    const agent = await Agent.connect(s, "agent-push");
    const origin = new URL(relay()).origin;

    const ctx = await fx.context("phone");
    await ctx.grantPermissions(["notifications"], { origin });
    await ctx.addInitScript(stubPushManager, fake.base);
    let page: Page = await ctx.newPage();
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(e.message));
    const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
    await page.goto(code.url!);
    await expect.poll(async () => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
    const dev = (JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes")))!) as { device_id: string; device_credential: string }[])[0]!;
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));

    // The home screen's settings button, then the switch (the permission prompt comes from this tap).
    await page.getByRole("button", { name: "Settings" }).click();
    const sw = page.getByRole("switch", { name: "Notifications" });
    await expect.poll(() => sw.isEnabled(), { timeout: 10_000 }).toBe(true);
    await sw.click();
    await expect.poll(() => sw.isChecked(), { timeout: 15_000 }).toBe(true);
    await shot(page, "push-settings-on");
    const saved = JSON.parse((await page.evaluate(() => localStorage.getItem("test.push.subscription")))!) as { endpoint: string; d: string; auth: string };
    fake.addSubscriber(saved.endpoint, saved.d, saved.auth);
    expect((await ok<PushInfo>("GET", "/api/inbox/push", dev.device_credential)).subscribed).toBe(true);

    // While the app shows the Waiting list, a call is not pushed (the relay logs it as suppressed).
    await page.getByRole("button", { name: "Back" }).click();
    await page.waitForTimeout(300);
    agent.call("p0", "confirm", { question: "Seen on screen?" });
    await expect
      .poll(async () => (await ok<PushInfo>("GET", "/api/inbox/push", dev.device_credential)).log.find((e) => e.call_id === "p0")?.outcome, { timeout: 15_000 })
      .toBe("suppressed");
    agent.send({ type: "tool.cancel", call_id: "p0" });

    // The CDP registration id, then the app closes.
    const cdp0 = await ctx.newCDPSession(page);
    const regId = await registrationId(cdp0, origin);
    await page.close();
    page = await ctx.newPage(); // about:blank: a CDP target that is not the app
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("ServiceWorker.enable");

    agent.call("p1", "confirm", { question: "Deploy to staging?" });
    await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "p1").length, { timeout: 20_000 }).toBe(1);
    expect(fake.problems).toEqual([]);
    const p1 = fake.for(saved.endpoint).find((r) => r.msg.call === "p1")!;
    expect(p1.msg).toMatchObject({ kind: "call", title: "api-server · laptop", body: "Deploy to staging?", tool: "confirm" });
    await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: p1.plain });
    await expect
      .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/p1")), { timeout: 15_000 })
      .toMatchObject({ title: "api-server · laptop", body: "Deploy to staging?", actions: ["yes", "no"] });

    // A tap on "Yes": the service worker answers with the payload's token, as this device.
    await tap(ctx, "p1", "yes");
    const r1 = await agent.result("p1", 15_000);
    expect(r1).toMatchObject({ result: { message: "yes", confirmed: true }, answered_by: dev.device_id });
    await expect.poll(async () => (await shown(ctx)).filter((n) => n.tag.endsWith("/p1")).length, { timeout: 10_000 }).toBe(0);

    // Answered on another device: this one's notification is replaced with who answered what.
    const code2 = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
    const other = await ok<DevicePaired>("POST", "/api/pair", undefined, { code: code2.code, name: "Laptop" });
    const ws = new WebSocket(s.ws_url, ["lineup.v1", `lineup.token.${other.device_credential}`]);
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (d: WebSocket.RawData) => d.toString() !== "pong" && frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "tool.list", tools: [CONFIRM] }));
    agent.call("p2", "confirm", { question: "Run the migration?" });
    await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "p2").length, { timeout: 20_000 }).toBe(1);
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin,
      registrationId: regId,
      data: fake.for(saved.endpoint).find((r) => r.msg.call === "p2")!.plain,
    });
    await expect.poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/p2"))?.body, { timeout: 15_000 }).toBe("Run the migration?");
    await expect.poll(() => frames.some((f) => f.type === "tool.call" && f.call_id === "p2"), { timeout: 15_000 }).toBe(true);
    ws.send(JSON.stringify({ type: "tool.result", call_id: "p2", result: { message: "no", confirmed: false } }));
    expect(await agent.result("p2", 15_000)).toMatchObject({ result: { message: "no" }, answered_by: other.device_id });
    await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "p2").length, { timeout: 20_000 }).toBe(2);
    const update = fake.for(saved.endpoint).filter((r) => r.msg.call === "p2")[1]!;
    expect(update.msg).toMatchObject({ kind: "update", outcome: "answered", by: "Laptop", answer: "no" });
    await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: update.plain });
    await expect
      .poll(async () => (await shown(ctx)).filter((n) => n.tag.endsWith("/p2")), { timeout: 15_000 })
      .toEqual([{ title: "api-server · laptop", body: "Answered on Laptop: no", tag: expect.stringMatching(/\/p2$/), actions: [] }]);

    // The agent waits with no call (lineup hook notify): a plain notification, no actions, a tap opens the session.
    await ok("POST", "/api/inbox/push/attention", m.machine_credential, { session_id: s.session_id, text: "Claude Code: Claude is waiting for your input" });
    await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.kind === "attention").length, { timeout: 20_000 }).toBe(1);
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin,
      registrationId: regId,
      data: fake.for(saved.endpoint).find((r) => r.msg.kind === "attention")!.plain,
    });
    await expect
      .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/attention")), { timeout: 15_000 })
      .toEqual({
        title: "api-server · laptop",
        body: "Claude Code: Claude is waiting for your input",
        tag: `lineup:${s.session_id}/attention`,
        actions: [],
      });
    // i29-agents (issue 29 item 3): a needs-input / finished push with no text (a sealed session's) carries its
    // reason, and the service worker says which in its own words; same tag, so a tap still opens the session.
    for (const [reason, body] of [
      ["needs_input", "The agent needs you"],
      ["completed", "The agent finished"],
    ] as const) {
      const data = {
        v: 1,
        kind: "attention",
        inbox: m.inbox_id,
        sid: s.session_id,
        call: "attention",
        title: "api-server · laptop",
        lang: "en",
        body: "",
        reason,
      };
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: JSON.stringify(data) });
      await expect.poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/attention"))?.body, { timeout: 15_000 }).toBe(body);
    }

    // A permission request (Claude Code's dialog): Allow / Deny on the notification; Allow answers the hook's card.
    agent.call("p3", "permission", { tool_name: "Bash", input: { command: "git push --force" } });
    await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "p3").length, { timeout: 20_000 }).toBe(1);
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin,
      registrationId: regId,
      data: fake.for(saved.endpoint).find((r) => r.msg.call === "p3")!.plain,
    });
    await expect
      .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/p3")), { timeout: 15_000 })
      .toMatchObject({ body: "Bash: git push --force", actions: ["allow", "deny"] });
    await tap(ctx, "p3", "allow");
    expect(await agent.result("p3", 15_000)).toMatchObject({ result: { message: "allow", behavior: "allow" }, answered_by: dev.device_id });

    // Every attempt is in the log the tool log shows: sent, and the suppressed one.
    const log = (await ok<PushInfo>("GET", `/api/inbox/push?session_id=${s.session_id}`, dev.device_credential)).log;
    expect(log.map((e) => `${e.call_id} ${e.kind} ${e.outcome}`)).toEqual(
      expect.arrayContaining(["p0 call suppressed", "p1 call sent", "p2 call sent", "p2 update sent"]),
    );
    // …and the app's tool log shows them under the calls this device saw (p0 came while it was open).
    // A plain tap (the attention notification has no actions): the open app is told, and shows that session.
    const app = await ctx.newPage();
    await app.goto(`${relay()}/`);
    await app.getByRole("button", { name: "Settings" }).waitFor({ timeout: 15_000 });
    await tap(ctx, "attention", "");
    await expect.poll(() => new URL(app.url()).pathname, { timeout: 15_000 }).toBe(`/s/${s.session_id}`);
    expect((await shown(ctx)).filter((n) => n.tag.endsWith("/attention"))).toEqual([]); // the tap closed it
    await app.locator("#tab-log").click();
    await expect
      .poll(
        () =>
          app
            .locator('.log-row[data-call="p0"] .push-log')
            .innerText({ timeout: 1000 })
            .catch(() => ""),
        { timeout: 15_000 },
      )
      .toMatch(/not sent \(on screen\)/);
    await shot(app, "push-tool-log");
    expect(problems).toEqual([]);
    ws.close();
    agent.close();
    await ctx.close();
  });

  it("Settings: the subscription is registered again whenever the app opens, the reminder controls save the inbox's setting, and the switch turns it all off", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const origin = new URL(relay()).origin;
    const ctx = await fx.context("phone");
    await ctx.grantPermissions(["notifications"], { origin });
    await ctx.addInitScript(stubPushManager, fake.base);
    const page = await ctx.newPage();
    const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
    await page.goto(code.url!);
    await expect.poll(async () => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
    const dev = (JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes")))!) as { device_credential: string }[])[0]!;
    const info = () => ok<PushInfo>("GET", "/api/inbox/push", dev.device_credential);
    const endpoint = async () =>
      (JSON.parse((await page.evaluate(() => localStorage.getItem("test.push.subscription"))) ?? "null") as { endpoint: string } | null)?.endpoint;
    await page.getByRole("button", { name: "Settings" }).click();
    const sw = page.getByRole("switch", { name: "Notifications" });
    await expect.poll(() => sw.isEnabled(), { timeout: 10_000 }).toBe(true);
    await sw.click();
    await expect.poll(async () => (await info()).subscribed, { timeout: 15_000 }).toBe(true);
    const first = await endpoint();
    expect(first).toContain(fake.base);

    // The relay lost the subscription (a push service's 410, an expiry): opening the app registers it again.
    await ok("DELETE", "/api/inbox/push", dev.device_credential);
    expect((await info()).subscribed).toBe(false);
    await page.reload();
    await expect.poll(async () => (await info()).subscribed, { timeout: 15_000 }).toBe(true);
    expect(await endpoint()).toBe(first);

    // Reminders: on by default every 10 minutes; the controls write the inbox's setting.
    await page.goto(`${relay()}/`);
    await page.getByRole("button", { name: "Settings" }).click();
    const remind = page.getByLabel("Remind me while a call waits");
    const every = page.getByLabel("Every");
    await remind.waitFor({ timeout: 10_000 });
    expect([await remind.isChecked(), await every.inputValue()]).toEqual([true, "10"]);
    await every.selectOption("30");
    await expect.poll(async () => (await info()).settings, { timeout: 10_000 }).toEqual({ reminders: true, reminder_every_min: 30 });
    await remind.uncheck();
    await expect.poll(async () => (await info()).settings.reminders, { timeout: 10_000 }).toBe(false);
    // The relay has the setting before the page has re-rendered the control (regression: CI saw it still enabled).
    await expect.poll(() => every.isDisabled(), { timeout: 5_000 }).toBe(true);

    // Off: unregistered on the relay and unsubscribed in the browser, and opening the app again keeps it off.
    await sw.click();
    await expect.poll(async () => (await info()).subscribed, { timeout: 15_000 }).toBe(false);
    await expect.poll(endpoint, { timeout: 10_000 }).toBeUndefined();
    expect(await sw.isChecked()).toBe(false);
    await page.reload();
    await page.getByRole("switch", { name: "Notifications" }).waitFor({ timeout: 10_000 });
    await page.waitForTimeout(1000);
    expect([(await info()).subscribed, await endpoint()]).toEqual([false, undefined]);
    await ctx.close();
  });

  it("asks the browser's permission only from the switch's tap, never on load; says so when it is blocked", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const ctx = await fx.context("phone"); // notifications not granted: the prompt is answered "denied"
    await ctx.addInitScript(() => {
      const w = window as unknown as { __asked: number };
      w.__asked = 0;
      const real = Notification.requestPermission.bind(Notification);
      Notification.requestPermission = ((...a: Parameters<typeof Notification.requestPermission>) => (
        w.__asked++, real(...a)
      )) as typeof Notification.requestPermission;
    });
    await ctx.addInitScript(stubPushManager, fake.base);
    const page = await ctx.newPage();
    const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
    await page.goto(code.url!);
    await expect.poll(async () => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
    await page.getByRole("button", { name: "Settings" }).click();
    const sw = page.getByRole("switch", { name: "Notifications" });
    await expect.poll(() => sw.isEnabled(), { timeout: 10_000 }).toBe(true);
    await page.reload();
    await sw.waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (window as unknown as { __asked: number }).__asked)).toBe(0);
    await sw.click();
    await expect.poll(() => page.evaluate(() => (window as unknown as { __asked: number }).__asked), { timeout: 10_000 }).toBe(1);
    await page.getByText("Notifications are blocked for this site").waitFor({ timeout: 10_000 });
    expect(await sw.isChecked()).toBe(false);
    await ctx.close();
  });

  it("the switch is “通知” in Chinese, behind the home screen's “设置” button", async () => {
    const ctx = await fx.context("phone", "zh-CN");
    const page = await ctx.newPage();
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
    await page.goto(code.url!);
    await expect.poll(async () => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
    await page.getByRole("button", { name: "设置" }).click();
    const sw = page.getByRole("switch", { name: "通知" });
    await sw.waitFor({ timeout: 10_000 });
    expect(await sw.isChecked()).toBe(false);
    await ctx.close();
  });
});
