// Issue 34 item 2 in real Chromium: a `permission` call with `choices` (Hermes' allowed_choices) shows exactly
// those buttons — no rule picker — and "Allow this session" answers `{message: "session", behavior: "allow"}`;
// a deny carries the typed message; the settled card says "Allowed for this session" (zh too). Claude Code's card (no `choices`) is browser-permission.test.ts.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { useLanPhone } from "../helpers/browser-lan.js";

const relay = useLanPhone("browser-perm-choices-token-0123456789");
const phone = (locale = "en-US") => relay.phone({ tool: "permission", locale, clientId: "hermes" });

const card = (page: Page) => page.locator("article.card.pending .perm").last();
const settled = (page: Page, id: string) => page.locator(`article.card.done[data-call="${id}"] .outcome b`);
const hermesCall = (call_id: string, choices: string[]) => ({
  type: "tool.call",
  call_id,
  name: "permission",
  arguments: {
    tool_name: "terminal",
    input: { command: "rm -rf build", description: "recursive delete" },
    project_directory: "/home/me/api",
    agent: "Hermes",
    reason: "recursive delete",
    choices,
  },
});

describe("the permission card with the caller's choices", () => {
  it("offers exactly Hermes' choices and answers Allow this session as session", async () => {
    const { agent, page, close } = await phone();
    try {
      agent.send(hermesCall("h1", ["once", "session", "deny"]));
      await card(page).waitFor({ timeout: 20_000 });
      await expect.poll(() => card(page).locator(".perm-cmd").textContent()).toBe("rm -rf build");
      expect(await card(page).locator(".perm-choices button").allTextContents()).toEqual(["Allow once", "Allow this session", "Deny"]);
      expect(await card(page).locator(".perm-always").count()).toBe(0);
      await card(page).getByRole("button", { name: "Allow this session" }).click();
      const r = await agent.next((f) => f.type === "tool.result" && f.call_id === "h1", 15_000);
      expect(r.result).toEqual({ message: "session", behavior: "allow" });
      // The settled card says what was allowed: for this session, not just "Allowed".
      await expect.poll(() => settled(page, "h1").textContent(), { timeout: 10_000 }).toBe("Allowed for this session");
    } finally {
      await close();
    }
  });

  it("in Chinese, a settled session answer reads 已允许（本会话）", async () => {
    const { agent, page, close } = await phone("zh-CN");
    try {
      agent.send(hermesCall("h3", ["once", "session", "deny"]));
      await card(page).waitFor({ timeout: 20_000 });
      await card(page).locator(".perm-choices button.perm-session").click();
      await agent.next((f) => f.type === "tool.result" && f.call_id === "h3", 15_000);
      await expect.poll(() => settled(page, "h3").textContent(), { timeout: 10_000 }).toBe("已允许（本会话）");
    } finally {
      await close();
    }
  });

  it("offers Always allow only when passed, and a deny carries the typed message", async () => {
    const { agent, page, close } = await phone();
    try {
      agent.send(hermesCall("h2", ["deny", "always", "once"]));
      await card(page).waitFor({ timeout: 20_000 });
      expect(await card(page).locator(".perm-choices button").allTextContents()).toEqual(["Allow once", "Always allow", "Deny"]);
      await card(page).locator(".perm-feedback textarea").fill("use git clean instead");
      await card(page).getByRole("button", { name: "Deny" }).click();
      const r = await agent.next((f) => f.type === "tool.result" && f.call_id === "h2", 15_000);
      expect(r.result).toEqual({ message: "deny", behavior: "deny", feedback: "use git clean instead" });
    } finally {
      await close();
    }
  });
});
