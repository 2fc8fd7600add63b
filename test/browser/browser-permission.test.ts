// The permission card in real Chromium (issue 17): `lineup hook permission-request` run as Claude Code runs
// it, the card on a phone-sized page (agent, project, the command in monospace, an edit as a diff), Allow /
// Deny with a message / Always allow clicked by the human, the exact hook output; 44 px touch targets; the
// Chinese strings; and the policy editor in Settings against the inbox policy endpoints.
// The app comes from LINEUP_TEST_WEB_DIR when set (a fresh `vite build --outDir`), else dist/web.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { shot } from "../helpers/browser.js";
import { type PhoneOptions, useLanPhone } from "../helpers/browser-lan.js";
import { inboxPolicyStub, permissionRequest, runHook } from "../helpers/hooks-helpers.js";

const TOKEN = "browser-permission-token-0123456789";
const relay = useLanPhone(TOKEN);
const fx = relay.fx;
const phone = (locale = "en-US", rules?: PhoneOptions["rules"]) => relay.phone({ tool: "permission", locale, ...(rules ? { rules } : {}) });

const card = (page: Page) => page.locator("article.card.pending .perm").last();

async function touchTargetsOk(page: Page): Promise<void> {
  const boxes = await card(page)
    .locator("button, label.perm-rule")
    .evaluateAll((els) =>
      els.map((e) => ({ t: (e.textContent ?? "").trim().slice(0, 30), h: e.getBoundingClientRect().height, w: e.getBoundingClientRect().width })),
    );
  expect(boxes.length).toBeGreaterThanOrEqual(4);
  for (const b of boxes) expect({ t: b.t, ok: b.h >= 44 && b.w >= 44 }).toEqual({ t: b.t, ok: true });
}

describe("the permission card in the browser", () => {
  it("shows a Bash request for what it is; Allow answers the hook", async () => {
    const { page, p, env, close } = await phone("en-US", { ask: ["Bash(git push *)"] });
    try {
      const input = { command: "git push --force-with-lease origin main", description: "Push the rebased branch" };
      const run = runHook(["permission-request"], permissionRequest(p.dir, "Bash", input), env, p.dir);
      await card(page).waitFor({ timeout: 20_000 });
      await expect.poll(() => card(page).locator(".perm-cmd").textContent()).toBe("git push --force-with-lease origin main");
      expect(
        await card(page)
          .locator(".perm-cmd")
          .evaluate((e) => getComputedStyle(e).fontFamily),
      ).toMatch(/mono/i);
      expect(await card(page).locator(".perm-who").textContent()).toBe("Claude Code wants to use Bash");
      expect(await card(page).locator(".project code").textContent()).toBe(p.dir);
      expect(await card(page).locator(".perm-desc").textContent()).toBe("Push the rebased branch");
      expect(await card(page).locator(".perm-reason").textContent()).toContain("Bash(git push *)");
      expect(await card(page).locator(".perm-rule code").allTextContents()).toEqual(["Bash(git push:*)"]);
      await touchTargetsOk(page);
      await shot(page, "phone-permission-bash");
      await card(page).getByRole("button", { name: "Allow", exact: true }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input } } },
      ]);
      // The collapsed card and the tool log say what was decided.
      await page.locator('article.card.done[data-state="answered"]').first().waitFor({ timeout: 10_000 });
      expect(await page.locator("article.card.done .ans b").last().textContent()).toBe("Allowed"); // in words (issue 13)
      expect(await page.locator("article.card.done").last().getAttribute("data-outcome")).toBe("allowed");
    } finally {
      await close();
    }
  }, 90_000);

  it("shows an Edit as a diff; Deny sends the human's message to the model", async () => {
    const { page, p, env, close } = await phone();
    try {
      const edit = {
        file_path: join(p.dir, "src/config.ts"),
        old_string: "const a = 1;\nexport const port = 8080;\nconst c = 3;",
        new_string: "const a = 1;\nexport const port = 443;\nconst c = 3;",
      };
      const run = runHook(["permission-request"], permissionRequest(p.dir, "Edit", edit), env, p.dir);
      await card(page).waitFor({ timeout: 20_000 });
      expect(await card(page).locator(".perm-path").first().textContent()).toBe(edit.file_path);
      await expect.poll(() => card(page).locator(".perm-diff .del").allTextContents()).toEqual(["-removed: export const port = 8080;\n"]);
      expect(await card(page).locator(".perm-diff .add").allTextContents()).toEqual(["+added: export const port = 443;\n"]);
      expect(await card(page).locator(".perm-diff .ctx").count()).toBe(2);
      await shot(page, "phone-permission-edit");
      await card(page).getByLabel("Message to the agent (optional)").fill("Keep port 8080; change the proxy instead.");
      await card(page).getByRole("button", { name: "Deny", exact: true }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "Keep port 8080; change the proxy instead." } } },
      ]);
    } finally {
      await close();
    }
  }, 90_000);

  it("Always allow with a chosen rule: updatedPermissions, the local policy, and no card next time", async () => {
    const { page, p, env, close } = await phone();
    try {
      const suggestion = { type: "addRules", rules: [{ toolName: "Bash", ruleContent: "npm run build" }], behavior: "allow", destination: "localSettings" };
      const input = { command: "npm run build -- --prod" };
      const run = runHook(["permission-request"], permissionRequest(p.dir, "Bash", input, { permission_suggestions: [suggestion] }), env, p.dir);
      await card(page).waitFor({ timeout: 20_000 });
      expect(await card(page).locator(".perm-rule code").allTextContents()).toEqual(["Bash(npm run build)", "Bash(npm run build:*)"]);
      await card(page).locator(".perm-rule", { hasText: "Bash(npm run build:*)" }).click();
      // A typed rule is checked before it can be sent.
      await card(page).locator(".perm-rule", { hasText: "Another rule" }).click();
      await card(page).locator(".perm-always input[type=text]").fill("bash(npm *)");
      await expect.poll(() => card(page).locator(".perm-always .err").textContent()).toContain("case-sensitive");
      expect(await card(page).locator(".perm-always-btn").isDisabled()).toBe(true);
      await card(page).locator(".perm-rule", { hasText: "Bash(npm run build:*)" }).click();
      await shot(page, "phone-permission-always");
      await card(page).locator(".perm-always-btn").click();
      const r = await run;
      expect(JSON.parse(r.stdout)).toEqual({
        hookSpecificOutput: {
          hookEventName: "PermissionRequest",
          decision: {
            behavior: "allow",
            updatedInput: input,
            updatedPermissions: [
              { type: "addRules", rules: [{ toolName: "Bash", ruleContent: "npm run build:*" }], behavior: "allow", destination: "localSettings" },
            ],
          },
        },
      });
      expect(JSON.parse(readFileSync(join(p.stateDir, "policy.json"), "utf8")).permissions.allow).toEqual(["Bash(npm run build:*)"]);
      const next = await runHook(["permission-request"], permissionRequest(p.dir, "Bash", { command: "npm run build" }), env, p.dir);
      expect(JSON.parse(next.stdout).hookSpecificOutput.decision.behavior).toBe("allow");
      expect(await page.locator("article.card.pending").count()).toBe(0);
    } finally {
      await close();
    }
  }, 90_000);

  it("speaks Chinese when the phone does", async () => {
    const { page, p, env, close } = await phone("zh-CN");
    try {
      const run = runHook(
        ["permission-request"],
        permissionRequest(p.dir, "WebFetch", { url: "https://docs.example.com/guide", prompt: "Summarize" }),
        env,
        p.dir,
      );
      await card(page).waitFor({ timeout: 20_000 });
      expect(await card(page).getByRole("button", { name: "允许", exact: true }).count()).toBe(1);
      expect(await card(page).locator(".perm-who").textContent()).toBe("Claude Code 想要使用 WebFetch");
      expect(await card(page).locator(".perm-rule code").allTextContents()).toEqual(["WebFetch(domain:docs.example.com)"]);
      await shot(page, "phone-permission-zh");
      await card(page).getByRole("button", { name: "拒绝", exact: true }).click();
      expect(JSON.parse((await run).stdout).hookSpecificOutput.decision).toEqual({ behavior: "deny", message: "The human denied this in the LineUp app." });
    } finally {
      await close();
    }
  }, 90_000);
});

describe("the policy editor in Settings", () => {
  // Regression (issue 18 audit): the LAN server has no OAuth, yet its app offered "Connect an app", whose
  // screen then failed with a bare "not found".
  it("an inbox on the LAN server offers no Connect an app, and /connect says why", async () => {
    const post = async <T>(path: string, token: string | undefined, body: unknown = {}): Promise<T> => {
      const r = await fetch(`${relay.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      expect(r.status, await r.clone().text()).toBeLessThan(300);
      return (await r.json()) as T;
    };
    const m = await post<{ machine_credential: string }>("/api/inboxes", TOKEN, { machine_name: "laptop" });
    const code = await post<{ url: string }>("/api/inbox/pairings", m.machine_credential);
    const ctx = await fx.context("phone");
    try {
      const page = await ctx.newPage();
      await page.goto(code.url);
      await expect
        .poll(async () => JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes"))) ?? "[]").length, { timeout: 15_000 })
        .toBe(1);
      await page.goto(`${relay.url}/devices`);
      await page.getByText("Add a device").first().waitFor({ timeout: 15_000 });
      // The entry goes once the probe of the OAuth API answers 404 (before the fix it stayed).
      await expect.poll(() => page.getByRole("link", { name: "Connect an app (claude.ai, ChatGPT, …)" }).count(), { timeout: 5_000 }).toBe(0);
      await page.goto(`${relay.url}/connect`);
      await page.getByText("This relay has no app connectors").waitFor({ timeout: 15_000 });
      expect(await page.getByLabel("Code shown on your computer").count()).toBe(0);
    } finally {
      await ctx.close();
    }
  });

  it("lists, adds (checked), removes and saves the inbox policy with the device credential", async () => {
    const device = `lud1.inboxABCDEFG.dv_device0001.${"d".repeat(43)}`;
    const stub = await inboxPolicyStub(device, { allow: ["Bash(npm test:*)"], deny: ["Read(./.env)"] });
    const ctx = await fx.context("phone");
    try {
      const page = await ctx.newPage();
      await page.goto(`${relay.url}/settings`);
      // The inbox as the PWA stores it at pairing (web/src/storage.ts SavedInbox).
      await page.evaluate(
        (v) => localStorage.setItem("lineup.inboxes", v),
        JSON.stringify([
          { origin: stub.url, inbox_id: "inboxABCDEFG", device_id: "dv_device0001", device_credential: device, name: "Phone", pairedAt: Date.now() },
        ]),
      );
      await page.reload();
      await page.getByRole("button", { name: "Edit the policy" }).click();
      const allow = page.locator('.policy-group[data-list="allow"]');
      await allow.locator("li code").first().waitFor({ timeout: 15_000 });
      expect(await allow.locator("li code").allTextContents()).toEqual(["Bash(npm test:*)"]);
      expect(await page.locator('.policy-group[data-list="deny"] li code').allTextContents()).toEqual(["Read(./.env)"]);
      // A rule that does not parse is refused with the parser's reason.
      await page.getByLabel("New rule for Ask").fill("bash(git push *)");
      await page.locator('.policy-group[data-list="ask"]').getByRole("button", { name: "Add" }).click();
      expect(await page.locator('.policy-group[data-list="ask"] .err').textContent()).toContain('did you mean "Bash"');
      await page.getByLabel("New rule for Ask").fill("Bash(git push *)");
      await page.locator('.policy-group[data-list="ask"]').getByRole("button", { name: "Add" }).click();
      await page.getByRole("button", { name: "Remove Bash(npm test:*)" }).click();
      expect(await allow.locator("li").count()).toBe(0);
      await shot(page, "phone-policy-editor");
      const boxes = await page.locator(".policy-screen button").evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
      for (const h of boxes) expect(h).toBeGreaterThanOrEqual(44);
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Saved (version 2).").waitFor({ timeout: 10_000 });
      expect(stub.requests.find((r) => r.method === "PUT")?.body).toEqual({
        permissions: { allow: [], ask: ["Bash(git push *)"], deny: ["Read(./.env)"] },
        base_version: 1,
      });
      expect(stub.state).toMatchObject({ version: 2, permissions: { allow: [], ask: ["Bash(git push *)"], deny: ["Read(./.env)"] } });
      // Somebody else saved meanwhile: 409, reloaded, said so.
      stub.state.version = 5;
      await page.getByLabel("New rule for Deny").fill("Bash(rm -rf *)");
      await page.locator('.policy-group[data-list="deny"]').getByRole("button", { name: "Add" }).click();
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Somebody changed the policy meanwhile").waitFor({ timeout: 10_000 });
      // The notice shows while the reload is under way (regression: read at once, this flaked at "2").
      await expect.poll(() => page.locator(".policy").getAttribute("data-version"), { timeout: 10_000 }).toBe("5");
      expect(await page.locator('.policy-group[data-list="deny"] li code').allTextContents()).toEqual(["Read(./.env)"]);
    } finally {
      await ctx.close();
      await stub.close();
    }
  }, 90_000);
});
