// Issue 28 items 7 and 9 on the phone (390×844, light and dark, English and Chinese): switching E2E on shows one
// banner with one instruction and commands as code; push settings say in a sentence why notifications cannot
// be turned on; the Waiting list's preview has no markdown table pipes; "2 apps connected".
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Machine, ok } from "../helpers/e2e-browser.js";
import { Agent, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;
const VARIANTS = [
  { locale: "en-US", lang: "en", scheme: "light" },
  { locale: "en-US", lang: "en", scheme: "dark" },
  { locale: "zh-CN", lang: "zh", scheme: "light" },
  { locale: "zh-CN", lang: "zh", scheme: "dark" },
] as const;

async function stored(page: Page): Promise<number> {
  return page.evaluate(() => (JSON.parse(localStorage.getItem("lineup.inboxes") ?? "[]") as unknown[]).length);
}

describe("issue 28: E2E switching on, push settings, previews", () => {
  // Before: a device pairing with a `&k=` link showed "waiting for the key" AND the red "paired before
  // encryption was turned on, pair again" banner at once, both with literal backticks.
  it("a device waiting for its key shows one banner, with the command as code; then the comparison code", async () => {
    for (const v of VARIANTS) {
      const mc = await Machine.create(relay());
      const s = await mc.sealedSession(`/home/me/${v.lang}-${v.scheme}-api`);
      const ctx = await fx.context("phone", v.locale);
      const page = await ctx.newPage();
      try {
        await page.emulateMedia({ colorScheme: v.scheme });
        const link = await mc.pairingLink();
        await page.goto(link.url);
        await expect.poll(() => stored(page), { timeout: 15_000 }).toBe(1);
        const notice = page.locator(".banner.notice");
        await notice.locator("code", { hasText: "lineup e2e status" }).waitFor({ timeout: 15_000 });
        // The inbox state has come (the sealed session is listed), so the key check has run.
        await page.locator(`.session-row[data-sid="${s.session_id}"]`).waitFor({ timeout: 15_000 });
        await page.waitForTimeout(1_500);
        expect(await page.locator(".banner").count()).toBe(1);
        expect(await page.locator(".e2e-no-key").count()).toBe(0);
        expect(await notice.innerText()).not.toContain("`");
        await shot(page, `i28-e2e-waiting-key-${v.lang}-${v.scheme}`);
        const { comparisonCode } = await mc.sponsor(link.code, link.secret);
        await notice.filter({ hasText: comparisonCode }).waitFor({ timeout: 20_000 });
        expect(await page.locator(".e2e-no-key").count()).toBe(0);
        if (v.lang === "en" && v.scheme === "light") await shot(page, "i28-e2e-paired-comparison");
      } finally {
        await ctx.close();
      }
    }
  }, 180_000);

  // Before: headless Chromium has no push service and the status said the browser's raw
  // "Registration failed - permission denied".
  it("push settings say in a sentence why notifications cannot be turned on, and leave no gap under the switch", async () => {
    for (const v of VARIANTS) {
      const m = await ok<MachineCreated>(relay(), "POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
      const ctx = await fx.context("phone", v.locale);
      await ctx.grantPermissions(["notifications"], { origin: new URL(relay()).origin });
      const page = await ctx.newPage();
      try {
        await page.emulateMedia({ colorScheme: v.scheme });
        const code = await ok<CodeIssued>(relay(), "POST", "/api/inbox/pairings", m.machine_credential);
        await page.goto(code.url!);
        await expect.poll(() => stored(page), { timeout: 15_000 }).toBe(1);
        await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
        await page.goto(`${relay()}/settings`);
        const sw = page.locator("#push");
        await expect.poll(() => sw.isEnabled(), { timeout: 10_000 }).toBe(true);
        // The switch, then the reminder setting right under it: no empty status line between them.
        await page.locator("#push-remind").waitFor({ timeout: 10_000 });
        const gap = async () => {
          const a = (await page.locator(".push-card .field.check").first().boundingBox())!;
          const b = (await page.locator("#push-remind").boundingBox())!;
          return b.y - (a.y + a.height);
        };
        // The card's own spacing (.6rem), not an empty status paragraph with its margins (69 px before, 31 after).
        expect(await gap()).toBeLessThan(40);
        await sw.click();
        const status = page.locator("#push-status");
        await expect.poll(async () => (await status.innerText()).trim().length, { timeout: 15_000 }).toBeGreaterThan(0);
        const text = await status.innerText();
        expect(text).not.toMatch(/Registration failed|permission denied|AbortError|NotAllowedError/i);
        expect(text).toMatch(
          v.lang === "en" ? /This browser would not sign up for notifications|push service did not answer/ : /此浏览器无法订阅通知|推送服务没有响应/,
        );
        await shot(page, `i28-e2e-push-settings-${v.lang}-${v.scheme}`);
      } finally {
        await ctx.close();
      }
    }
  }, 180_000);

  it("the Waiting list previews a markdown table without pipes, and a session with two apps says '2 apps connected'", async () => {
    const m = await ok<MachineCreated>(relay(), "POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>(relay(), "POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/billing", host: "vm" });
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const ctx2 = await fx.context("phone");
    const other = await ctx2.newPage();
    try {
      const code = await ok<CodeIssued>(relay(), "POST", "/api/inbox/pairings", m.machine_credential);
      await page.goto(code.url!);
      await expect.poll(() => stored(page), { timeout: 15_000 }).toBe(1);
      await agent.appTools();
      agent.call("md1", "ask_question", {
        project_directory: "/home/me/billing",
        question: "## Migration plan\n\n| Option | Risk |\n|---|---|\n| Big bang | high |\n| Dual write | low |",
      });
      const row = page.locator('.wait-row[data-call="md1"] .wait-text');
      await row.waitFor({ timeout: 15_000 });
      await expect.poll(() => row.innerText(), { timeout: 10_000 }).toContain("Big bang · high");
      expect(await row.innerText()).not.toContain("|");
      await shot(page, "i28-e2e-waiting-markdown");
      // A second app of the same session: the session's status line counts both.
      await page.locator(`.session-row[data-sid="${s.session_id}"] a`).click();
      const code2 = await ok<CodeIssued>(relay(), "POST", "/api/inbox/pairings", m.machine_credential);
      await other.goto(code2.url!);
      await expect.poll(() => stored(other), { timeout: 15_000 }).toBe(1);
      await other.goto(`${relay()}/s/${s.session_id}`);
      await expect.poll(() => page.locator(".conn-line .apps").innerText(), { timeout: 15_000 }).toBe("· 2 apps connected");
      // "Connect an app" reads as a button: centred label, outlined in the accent colour like the app's buttons.
      await page.goto(`${relay()}/devices`);
      const entry = page.getByRole("link", { name: "Connect an app (claude.ai, ChatGPT, …)" });
      await entry.waitFor({ timeout: 15_000 });
      const look = await entry.evaluate((el) => {
        const card = document.querySelector(".devices .card");
        return {
          align: getComputedStyle(el).textAlign,
          border: getComputedStyle(el).borderTopColor,
          cardBorder: card ? getComputedStyle(card).borderTopColor : "",
        };
      });
      expect(look.align).toBe("center");
      expect(look.border).not.toBe(look.cardBorder);
      await shot(page, "i28-e2e-devices-connect-entry");
    } finally {
      agent.close();
      await ctx.close();
      await ctx2.close();
    }
  }, 90_000);
});
