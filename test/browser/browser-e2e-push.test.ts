// Push for sealed sessions (issue 19, docs/push.md "Sealed sessions in the service worker") in Chromium: the
// relay pushes the sealed preview (the fake push service of test/helpers/fake-push.ts decrypts the Web Push
// layer and sees only ciphertext); CDP `ServiceWorker.deliverPushMessage` hands it to the real service
// worker, which opens it with this device's key from IndexedDB and shows the question; a synthetic
// notificationclick on "Yes" is sealed there and reaches the agent as a sealed tool.result. A preview that
// does not open shows the generic "An agent is waiting for you", never anything else.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { CONFIRM } from "../../shared/contract/builtin-tools.js";
import * as E2E from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired } from "../../shared/contract/inbox.js";
import type { FakePushService } from "../helpers/fake-push.js";
import { startFakePush } from "../helpers/fake-push-server.js";
import { registrationId, shown, stubPushManager, tap } from "../helpers/browser-push.js";
import { shot, useBrowser } from "../helpers/browser.js";
import { Machine, SealedAgent, ok, pairSealed } from "../helpers/e2e-browser.js";

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

/** As in browser-push.test.ts: a PushManager whose subscription points at the fake push service. */
const callOf = (m: Record<string, unknown>) => m.call as string | undefined;

describe("push for sealed sessions", () => {
  it("the service worker opens the sealed preview, seals the answer from a notification, falls back when it cannot open, and 'answered elsewhere' names only the device", async () => {
    const mc = await Machine.create(relay());
    const origin = new URL(relay()).origin;
    const ctx = await fx.context("phone");
    await ctx.grantPermissions(["notifications"], { origin });
    await ctx.addInitScript(stubPushManager, fake.base);
    let page: Page = await ctx.newPage();
    const paired = await pairSealed(page, mc);
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
    await page.getByRole("button", { name: "Settings" }).click();
    const sw = page.getByRole("switch", { name: "Notifications" });
    await expect.poll(() => sw.isEnabled(), { timeout: 10_000 }).toBe(true);
    await sw.click();
    await expect.poll(() => sw.isChecked(), { timeout: 15_000 }).toBe(true);
    const saved = JSON.parse((await page.evaluate(() => localStorage.getItem("test.push.subscription")))!) as { endpoint: string; d: string; auth: string };
    fake.addSubscriber(saved.endpoint, saved.d, saved.auth);

    const s = await mc.sealedSession("/home/me/push");
    const agent = await SealedAgent.connect(mc, s, "agent-push");
    const cdp0 = await ctx.newCDPSession(page);
    const regId = await registrationId(cdp0, origin);
    await page.close();
    page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("ServiceWorker.enable");

    try {
      await agent.call("sp1", "confirm", { question: "Deploy SEALED-PUSH-MARKER?" }, undefined, {
        text: "Deploy SEALED-PUSH-MARKER?",
        yes_label: "Ship",
        no_label: "Hold",
      });
      await expect
        .poll(() => fake.for(saved.endpoint).filter((r) => callOf(r.msg as unknown as Record<string, unknown>) === "sp1").length, { timeout: 20_000 })
        .toBe(1);
      const p = fake.for(saved.endpoint).find((r) => callOf(r.msg as unknown as Record<string, unknown>) === "sp1")!;
      // What the push service (and the relay) handled: the sealed preview, never the question.
      expect(p.plain).not.toContain("SEALED-PUSH-MARKER");
      expect(p.msg).toMatchObject({
        kind: "call",
        body: "",
        sealed: { session_id: s.session_id, call_id: "sp1", name: "confirm", from: "agent:agent-push", epoch: 1, preview: { v: 1, e: 1 } },
      });
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: p.plain });
      await expect
        .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp1")), { timeout: 15_000 })
        .toMatchObject({ body: "Deploy SEALED-PUSH-MARKER?", actions: ["yes", "no"] });

      // "Yes" on the notification: sealed by the service worker, opened by the agent.
      await tap(ctx, "sp1", "yes");
      const r = await agent.result("sp1");
      expect(r.open.result).toEqual({ message: "yes", confirmed: true });
      expect(r.raw.answered_by).toBe(paired.device_id);

      // A sealed permission request: Allow / Deny from the opened preview; "allow" sealed by the service worker.
      await agent.call("sp-perm", "permission", { tool_name: "Bash", input: { command: "git push SEALED-PERM" } }, undefined, {
        text: "Bash: git push SEALED-PERM",
        tool: "permission",
      });
      await expect
        .poll(() => fake.for(saved.endpoint).filter((x) => callOf(x.msg as unknown as Record<string, unknown>) === "sp-perm").length, { timeout: 20_000 })
        .toBe(1);
      const pp = fake.for(saved.endpoint).find((x) => callOf(x.msg as unknown as Record<string, unknown>) === "sp-perm")!;
      expect(pp.plain).not.toContain("SEALED-PERM");
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: pp.plain });
      await expect
        .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp-perm")), { timeout: 15_000 })
        .toMatchObject({ body: "Bash: git push SEALED-PERM", actions: ["allow", "deny"] });
      await tap(ctx, "sp-perm", "allow");
      expect((await agent.result("sp-perm")).open.result).toEqual({ message: "allow", behavior: "allow" });

      // Regression (issue 26 audit): the relay relabels the sealed permission card as a "confirm" (the tool name
      // beside the envelope is plaintext): the preview names its own tool, so the card shows the generic text and
      // offers no button that would answer with another tool's meaning. Before, it showed the question with Yes/No.
      const relabelled = JSON.parse(pp.plain) as { tool?: string; sealed: Record<string, unknown> };
      const asConfirm = { ...relabelled, tool: "confirm", sealed: { ...relabelled.sealed, name: "confirm" } };
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: JSON.stringify(asConfirm) });
      await expect
        .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp-perm")), { timeout: 15_000 })
        .toMatchObject({ body: "An agent is waiting for you", actions: [] });

      // A preview moved to another call (or of a key this device lacks) does not open: the generic text.
      const orig = JSON.parse(p.plain) as { call: string; sealed: Record<string, unknown> };
      const moved = { ...orig, call: "sp-moved", sealed: { ...orig.sealed, call_id: "sp-moved" } };
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: JSON.stringify(moved) });
      await expect
        .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp-moved")), { timeout: 15_000 })
        .toMatchObject({ body: "An agent is waiting for you", actions: [] });
      await shot(page, "push-e2e");

      // Answered on another device (played by the test: a paired device holding the key): the update
      // names that device and never carries the answer.
      const code2 = await ok<CodeIssued>(relay(), "POST", "/api/inbox/pairings", mc.cred);
      const other = await ok<DevicePaired>(relay(), "POST", "/api/pair", undefined, { code: code2.code, name: "Laptop" });
      const ctxO = { session_id: s.session_id, sender: `app:${other.device_id}` };
      const ws = new WebSocket(`${s.ws_url}?client_id=${other.device_id}`, ["lineup.v1", `lineup.token.${other.device_credential}`]);
      const frames: Record<string, unknown>[] = [];
      ws.on("message", (d: WebSocket.RawData) => d.toString() !== "pong" && frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
      await new Promise((r) => ws.once("open", r));
      ws.send(JSON.stringify(await E2E.sealFrame(mc.current(), ctxO, { type: "tool.list", tools: [CONFIRM] })));
      await agent.call("sp2", "confirm", { question: "Rotate SEALED-KEYS-MARKER?" });
      await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "sp2").length, { timeout: 20_000 }).toBe(1);
      await cdp.send("ServiceWorker.deliverPushMessage", {
        origin,
        registrationId: regId,
        data: fake.for(saved.endpoint).find((r) => r.msg.call === "sp2")!.plain,
      });
      await expect.poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp2"))?.body, { timeout: 15_000 }).toBe("Rotate SEALED-KEYS-MARKER?");
      await expect.poll(() => frames.some((f) => f.type === "tool.call" && f.call_id === "sp2"), { timeout: 15_000 }).toBe(true);
      ws.send(
        JSON.stringify(
          await E2E.sealFrame(mc.current(), ctxO, {
            type: "tool.result",
            call_id: "sp2",
            name: "confirm",
            result: { message: "ANSWER-MARKER", confirmed: false },
          }),
        ),
      );
      expect((await agent.result("sp2")).open.result).toEqual({ message: "ANSWER-MARKER", confirmed: false });
      await expect.poll(() => fake.for(saved.endpoint).filter((r) => r.msg.call === "sp2").length, { timeout: 20_000 }).toBe(2);
      const update = fake.for(saved.endpoint).filter((r) => r.msg.call === "sp2")[1]!;
      expect(update.msg).toMatchObject({ kind: "update", outcome: "answered", by: "Laptop" });
      expect(update.plain).not.toContain("ANSWER-MARKER");
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: update.plain });
      await expect.poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/sp2"))?.body, { timeout: 15_000 }).toBe("Answered on Laptop");
      ws.close();
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 120_000);
});
