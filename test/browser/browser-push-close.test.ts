// Issue 28 §3 (its notification part) in real Chromium: when the app answers a call, that call's notification
// is closed at once — not only at the inbox's next update, so tapping No and closing the app leaves no live
// Yes/No in the tray. The real service worker shows the notification from a push message delivered with CDP
// `ServiceWorker.deliverPushMessage` (as test/browser/browser-push.test.ts does); the session is a guest link's,
// whose page gets no inbox updates at all, so nothing but the answer itself can close it.
import { describe, expect, it } from "vitest";
import { registrationId, shown } from "../helpers/browser-push.js";
import { Agent, createSession, pair, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();

describe("a notification of a call answered in the app (issue 28 §3)", () => {
  it("is closed when the app sends the answer", async () => {
    const s = await createSession(fx.relay(), "Tray");
    const agent = await Agent.connect(s);
    const origin = new URL(fx.relay()).origin;
    const ctx = await fx.context("phone");
    await ctx.grantPermissions(["notifications"], { origin });
    const page = await ctx.newPage();
    try {
      const cdp = await ctx.newCDPSession(page);
      const regId = registrationId(cdp, origin);
      await pair(page, s);
      await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
      await agent.appTools();
      agent.call("n1", "confirm", { question: "Deploy to staging?" });
      agent.call("n2", "confirm", { question: "Run the migration?" });
      await page.locator('[data-call="n1"]').getByRole("button", { name: "No" }).waitFor({ timeout: 15_000 });

      // The push of each call, as the relay sends it (shared/contract/push.ts), shown by the real service worker.
      for (const [call, body] of [
        ["n1", "Deploy to staging?"],
        ["n2", "Run the migration?"],
      ] as const) {
        const data = JSON.stringify({ v: 1, kind: "call", inbox: "ib_test", sid: s.session_id, call, title: "Tray", body, tool: "confirm", lang: "en" });
        await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: await regId, data });
        await expect.poll(async () => (await shown(ctx)).map((n) => n.tag), { timeout: 15_000 }).toContain(`lineup:${s.session_id}/${call}`);
      }
      expect((await shown(ctx)).map((n) => n.tag).sort()).toEqual([`lineup:${s.session_id}/n1`, `lineup:${s.session_id}/n2`]);

      // "No" in the app: the agent has it, and n1's notification is gone; n2's, still waiting, stays.
      await page.locator('[data-call="n1"]').getByRole("button", { name: "No" }).click();
      expect((await agent.result("n1")).result).toEqual({ message: "no", confirmed: false });
      await expect.poll(async () => (await shown(ctx)).map((n) => n.tag), { timeout: 10_000 }).toEqual([`lineup:${s.session_id}/n2`]);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);
});
