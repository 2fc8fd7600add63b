// Issue 28 §5 in real Chromium against the local relay: a permission reads like a sentence — collapsed rows
// "Bash · rm -rf node_modules && npm ci", not raw JSON; a denied row shows the message that went to the model;
// the waiting list names the tool and command, not "permission"; tool icons are the app's own inline SVG,
// never a glyph (⚿ is an empty box on Chromium without that font). Light and dark, English and Chinese.
import { describe, expect, it } from "vitest";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();

const BASH = {
  tool_name: "Bash",
  input: { command: "rm -rf node_modules && npm ci", description: "Reinstall dependencies from scratch" },
  project_directory: "/home/me/web",
};
const PUSH = {
  tool_name: "Bash",
  input: { command: "git push --force origin main", description: "Force-push the rebased branch" },
  project_directory: "/home/me/web",
};

describe("permission rows (issue 28 §5)", () => {
  it("a waiting permission is titled by its tool and command; settled rows read as sentences, a denial with what the model was told; icons are SVG", async () => {
    const s = await createSession(fx.relay(), "Permission rows");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pair(page, s);
      await agent.appTools();
      agent.call("pr1", "permission", BASH);
      agent.call("pr2", "permission", PUSH);
      await page.locator('[data-call="pr2"] .perm-deny').waitFor({ timeout: 20_000 });

      // The home screen's waiting list: the tool and its command.
      await page.getByRole("button", { name: "Back" }).click();
      const rows = page.locator(".wait-row .wait-text");
      await expect
        .poll(() => rows.allTextContents(), { timeout: 10_000 })
        .toEqual(["Bash · rm -rf node_modules && npm ci", "Bash · git push --force origin main"]);
      await page.locator('.wait-row[data-call="pr1"]').click();

      await page.locator('[data-call="pr1"]').getByRole("button", { name: "Allow", exact: true }).click();
      expect((await agent.result("pr1")).result).toMatchObject({ behavior: "allow" });
      const deny = page.locator('[data-call="pr2"]');
      await deny.getByLabel("Message to the agent (optional)").fill("Never force-push main; open a PR.");
      await deny.getByRole("button", { name: "Deny", exact: true }).click();
      expect((await agent.result("pr2")).result).toMatchObject({ behavior: "deny", feedback: "Never force-push main; open a PR." });

      const r1 = page.locator('[data-call="pr1"][data-state="answered"]');
      const r2 = page.locator('[data-call="pr2"][data-state="answered"]');
      await r2.waitFor({ timeout: 10_000 });
      expect(await r1.locator(".q").textContent()).toBe("Bash · rm -rf node_modules && npm ci");
      expect(await r1.locator("summary b").textContent()).toBe("Allowed");
      expect(await r2.locator(".q").textContent()).toBe("Bash · git push --force origin main");
      expect(await r2.locator("summary b").textContent()).toBe("Denied · “Never force-push main; open a PR.”");
      // Every card's tool icon is an inline SVG, and no glyph stands in for one.
      expect(await page.locator("article.card .ico svg").count()).toBe(2);
      expect(await page.locator("article.card .ico").evaluateAll((els) => els.map((e) => e.textContent))).toEqual(["", ""]);
      await shot(page, "permission-rows-en-light");
      await page.emulateMedia({ colorScheme: "dark" });
      await shot(page, "permission-rows-en-dark");

      await page.evaluate(() => localStorage.setItem("lineup.lang", JSON.stringify("zh")));
      await page.reload();
      await page.locator('[data-call="pr2"][data-state="answered"]').waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-call="pr2"] summary b').textContent()).toBe("已拒绝 · “Never force-push main; open a PR.”");
      await shot(page, "permission-rows-zh-dark");
      await page.emulateMedia({ colorScheme: "light" });
      await shot(page, "permission-rows-zh-light");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);
});
