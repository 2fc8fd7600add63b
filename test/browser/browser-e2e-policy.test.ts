// The policy screen of an end-to-end encrypted inbox in real Chromium (issue 26, docs/e2e.md "The inbox
// policy"): the page is paired from a `#pair=…&k=…` link (the test is the sponsoring machine), opens the
// sealed policy with its own key, and saves it sealed — the relay (the real `wrangler dev`) only ever gets
// an envelope, which the machine opens. A plaintext policy from before E2E is shown with a warning and
// saved sealed.
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import * as E2E from "../../shared/crypto/e2e/index.js";
import type { InboxPolicy } from "../../shared/contract/inbox.js";
import { shot, useBrowser } from "../helpers/browser.js";
import { Machine, ok, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();
const relay = fx.relay;

async function openEditor(page: Page): Promise<void> {
  await page.goto(`${relay()}/settings`);
  await page.getByRole("button", { name: "Edit the policy" }).click();
}
const rulesOf = (page: Page, list: string) => page.locator(`.policy-group[data-list="${list}"] li code`).allTextContents();
/** The bodies of the page's `PUT /api/inbox/policy` requests, as sent. */
function recordPuts(page: Page): string[] {
  const puts: string[] = [];
  page.on("request", (r) => {
    if (r.method() === "PUT" && new URL(r.url()).pathname === "/api/inbox/policy") puts.push(r.postData() ?? "");
  });
  return puts;
}

describe("the policy screen of an E2E inbox", () => {
  it("opens a sealed policy with the device's key and saves it sealed: the relay gets only an envelope", async () => {
    const mc = await Machine.create(relay());
    const ctx = await fx.context("phone");
    try {
      const page = await ctx.newPage();
      const paired = await pairSealed(page, mc);
      const mark = `tok${Math.random().toString(36).slice(2, 12)}`;
      const lists = { allow: [`Bash(curl -s https://api.example.test/${mark}/upload)`], ask: [], deny: ["Read(./.env)"] };
      await ok(relay(), "PUT", "/api/inbox/policy", mc.cred, { sealed: await E2E.sealPolicy(mc.current(), mc.inbox, 1, mc.self.id, lists), base_version: 0 });
      const puts = recordPuts(page);
      await openEditor(page);
      const editor = page.locator('.policy[data-sealed="sealed"]');
      await editor.waitFor({ timeout: 15_000 });
      expect(await rulesOf(page, "allow")).toEqual(lists.allow);
      expect(await rulesOf(page, "deny")).toEqual(lists.deny);
      expect(await editor.locator(".policy-sealed").textContent()).toContain("End-to-end encrypted");
      await page.getByLabel("New rule for Ask").fill("Bash(git push *)");
      await page.locator('.policy-group[data-list="ask"]').getByRole("button", { name: "Add" }).click();
      await shot(page, "phone-policy-sealed");
      expect((await new AxeBuilder({ page }).analyze()).violations.map((v) => v.id)).toEqual([]);
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Saved sealed (version 2).").waitFor({ timeout: 15_000 });

      expect(puts).toHaveLength(1);
      expect(Object.keys(JSON.parse(puts[0]!) as object).sort()).toEqual(["base_version", "sealed"]);
      expect(puts[0]).not.toContain(mark);
      expect(puts[0]).not.toContain("git push");
      const got = await ok<InboxPolicy>(relay(), "GET", "/api/inbox/policy", mc.cred);
      expect(got).toMatchObject({ version: 2, permissions: { allow: [], ask: [], deny: [] }, sealed_by: paired.device_id });
      expect(JSON.stringify(got)).not.toContain(mark);
      expect(await E2E.openPolicy(mc.current(), mc.inbox, got.version, got.sealed_by!, got.sealed)).toEqual({ ...lists, ask: ["Bash(git push *)"] });
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it("shows a plaintext policy from before E2E with a warning, and Save seals it", async () => {
    const mc = await Machine.create(relay(), { on: false });
    const lists = { allow: ["Bash(make:*)"], ask: [], deny: ["Bash(rm -rf *)"] };
    await ok(relay(), "PUT", "/api/inbox/policy", mc.cred, { permissions: lists, base_version: 0 });
    await mc.turnOn();
    const ctx = await fx.context("phone");
    try {
      const page = await ctx.newPage();
      await pairSealed(page, mc);
      const puts = recordPuts(page);
      await openEditor(page);
      const editor = page.locator('.policy[data-sealed="unsealed"]');
      await editor.waitFor({ timeout: 15_000 });
      expect(await rulesOf(page, "allow")).toEqual(lists.allow);
      expect(await editor.getByRole("status").first().textContent()).toContain("Agents apply only its Ask and Deny rules");
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Saved sealed (version 2).").waitFor({ timeout: 15_000 });
      expect(await page.locator(".policy").getAttribute("data-sealed")).toBe("sealed");
      expect(Object.keys(JSON.parse(puts[0]!) as object).sort()).toEqual(["base_version", "sealed"]);
      const got = await ok<InboxPolicy>(relay(), "GET", "/api/inbox/policy", mc.cred);
      expect(await E2E.openPolicy(mc.current(), mc.inbox, got.version, got.sealed_by!, got.sealed)).toEqual(lists);
    } finally {
      await ctx.close();
    }
  }, 90_000);
});
