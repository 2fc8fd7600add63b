// Issue 28 §6 in real Chromium against the local relay: text typed into a pending input card, an
// ask_question's reply box and the chat box survives a reload and closing the app (a new page of the same
// browser profile), per call and per session, and is gone once sent.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();

const drafts = (page: Page) =>
  page.evaluate(() =>
    Object.keys(localStorage)
      .filter((k) => k.startsWith("lineup.draft."))
      .sort(),
  );

describe("drafts (issue 28 §6)", () => {
  it("typed text is kept per call and per session across a reload and closing the app, and cleared when sent", async () => {
    const s = await createSession(fx.relay(), "Drafts");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    let page = await ctx.newPage();
    try {
      await pair(page, s);
      await agent.appTools();
      agent.call("d1", "input", { question: "Release name?" });
      agent.call("d2", "ask_question", { question: "What should the changelog say?", project_directory: "/home/me/web" });
      await page.locator('[data-call="d2"] textarea').waitFor({ timeout: 15_000 });
      await page.locator('[data-call="d1"] input').fill("Bluebird");
      await page.locator('[data-call="d2"] textarea').fill("Faster pairing, fewer prompts.");
      // The chat box shows when no card is waiting for a reply: answer nothing yet, so read its draft after.
      await page.reload();
      await page.locator('[data-call="d2"] textarea').waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-call="d1"] input').inputValue()).toBe("Bluebird");
      expect(await page.locator('[data-call="d2"] textarea').inputValue()).toBe("Faster pairing, fewer prompts.");
      await shot(page, "drafts-after-reload");

      // The app closes and opens again (same profile): still there.
      const url = page.url();
      await page.close();
      page = await ctx.newPage();
      await page.goto(url);
      await page.locator('[data-call="d1"] input').waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-call="d1"] input').inputValue()).toBe("Bluebird");

      // Sent: the agent gets it and the draft is gone.
      await page.locator('[data-call="d1"]').getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("d1")).result).toEqual({ message: "Bluebird" });
      await page.locator('[data-call="d2"]').getByRole("button", { name: "Send" }).click();
      expect((await agent.result("d2")).result).toMatchObject({ message: "Faster pairing, fewer prompts." });
      await expect.poll(() => drafts(page)).toEqual([]);

      // The chat box (shown now that no card waits for a reply): per session, across a reload, cleared when sent.
      const box = page.getByLabel("Message the agent");
      await box.fill("Also bump the version");
      await page.reload();
      await expect.poll(() => page.getByLabel("Message the agent").inputValue(), { timeout: 15_000 }).toBe("Also bump the version");
      await page.getByLabel("Message the agent").press("Enter");
      await expect.poll(() => drafts(page)).toEqual([]);
      expect(await page.getByLabel("Message the agent").inputValue()).toBe("");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);
});
