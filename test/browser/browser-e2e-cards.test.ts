// Issue 28 §5 and §6 in a sealed session, real Chromium against the local relay (the test is the sponsoring
// machine, test/helpers/e2e-browser.ts): a waiting permission is titled by its tool and command from the call
// this device opened, never "permission"; typed text is kept across screens in memory only — no plaintext draft
// in localStorage (docs/e2e.md) — so a reload does not bring it back.
import { describe, expect, it } from "vitest";
import { shot, useBrowser } from "../helpers/browser.js";
import { Machine, SealedAgent, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();

describe("sealed session cards (issue 28)", () => {
  it("a waiting sealed permission reads 'Bash · command'; a sealed draft survives switching screens, never reaches localStorage, and not a reload", async () => {
    const mc = await Machine.create(fx.relay());
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    await pairSealed(page, mc);
    const s = await mc.sealedSession("/home/me/sealed-cards");
    const agent = await SealedAgent.connect(mc, s);
    try {
      await agent.appTools();
      await page.locator(`.session-row[data-sid="${s.session_id}"] a`).click({ timeout: 15_000 });
      await agent.call("sp1", "permission", { tool_name: "Bash", input: { command: "git push --force origin main" } }, undefined, { text: "" });
      await agent.call("si1", "input", { question: "Release name?" });
      await page.locator("#in-si1").fill("Bluebird", { timeout: 15_000 });
      await page.locator('[data-call="sp1"] .perm-deny').waitFor({ timeout: 15_000 });

      await page.getByRole("button", { name: "Back" }).click();
      await expect
        .poll(() => page.locator('.wait-row[data-call="sp1"] .wait-text').textContent(), { timeout: 10_000 })
        .toBe("Bash · git push --force origin main");
      // The waiting rows' icons are the app's inline SVG too, never a glyph.
      expect(await page.locator(".wait-row .ico svg").count()).toBe(2);
      await shot(page, "sealed-permission-waiting");
      expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("lineup.draft.")))).toEqual([]);

      await page.locator('.wait-row[data-call="si1"]').click();
      expect(await page.locator("#in-si1").inputValue({ timeout: 15_000 })).toBe("Bluebird");
      await page.reload();
      await page.locator("#in-si1").waitFor({ timeout: 20_000 });
      expect(await page.locator("#in-si1").inputValue()).toBe("");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 120_000);
});
