// Claude Code's own questions on the phone (issue 29 items 1 and 2), in real Chromium: `lineup hook
// ask-user-question` and `lineup hook elicitation` run through the real bin with the stdin Claude Code
// documents (https://code.claude.com/docs/en/hooks — PreToolUse input: session_id, transcript_path, cwd,
// permission_mode, hook_event_name, tool_name, tool_input, tool_use_id; Elicitation input: mcp_server_name,
// message, mode, url, elicitation_id, requested_schema; AskUserQuestion's tool_input: questions of question,
// header, options {label, description}, multiSelect), answered by a human tapping a paired phone, and the exact
// stdout JSON. The relay is `lineup serve`'s in-process one; the app comes from LINEUP_TEST_WEB_DIR or dist/web.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { shot } from "../helpers/browser.js";
import { useLanPhone } from "../helpers/browser-lan.js";
import { askUserQuestion as askInput, elicitation as elicitInput, runHook } from "../helpers/hooks-helpers.js";

const relay = useLanPhone("browser-asks-token-0123456789abcdef");
const phone = (locale = "en-US") => relay.phone({ tool: "elicitation", locale });

const asks = (page: Page) => page.locator("article.card.pending .asks").last();
const elicit = (page: Page) => page.locator("article.card.pending .elicit").last();

const FOUR = [
  {
    question: "Which **database** should the app use?",
    header: "Database",
    multiSelect: false,
    options: [
      { label: "PostgreSQL", description: "A server; best for many writers" },
      { label: "SQLite", description: "One file; nothing to run" },
    ],
  },
  {
    question: "Which features should ship first?",
    header: "Features",
    multiSelect: true,
    options: [
      { label: "Auth", description: "Sign-in with passkeys" },
      { label: "Search", description: "Full-text search" },
      { label: "Billing", description: "Stripe checkout" },
    ],
  },
  {
    question: "部署到哪个区域?",
    header: "区域",
    multiSelect: false,
    options: [
      { label: "北京", description: "华北" },
      { label: "上海", description: "华东" },
    ],
  },
  {
    question: "What should the project be called?",
    header: "Name",
    multiSelect: false,
    options: [
      { label: "lineup", description: "The current name" },
      { label: "relay", description: "Shorter" },
    ],
  },
];

describe("AskUserQuestion on the phone", () => {
  it("four questions on one card (markdown, descriptions, multi-select, Chinese, a typed Other) answer the hook in Claude Code's shape", async () => {
    const { page, p, env, close } = await phone();
    try {
      const run = runHook(["ask-user-question", "--wait", "60"], askInput(p.dir, FOUR), env, p.dir, 90_000);
      await asks(page).waitFor({ timeout: 20_000 });
      const c = asks(page);
      expect(await c.locator(".ask-q").count()).toBe(4);
      expect(await c.locator(".chip").allTextContents()).toEqual(["Database", "Features", "区域", "Name"]);
      expect(await c.locator(".ask-q").first().locator("strong").textContent()).toBe("database");
      expect(await c.locator(".opt-desc").first().textContent()).toBe("A server; best for many writers");
      expect(await c.locator(".project code").textContent()).toBe(p.dir);
      // Nothing goes before every question has an answer.
      expect(await c.getByRole("button", { name: "Send answers" }).isDisabled()).toBe(true);
      await c.locator(".ask-q").nth(0).getByText("SQLite", { exact: true }).click();
      await c.locator(".ask-q").nth(1).getByText("Auth", { exact: true }).click();
      await c.locator(".ask-q").nth(1).getByText("Billing", { exact: true }).click();
      await c.locator(".ask-q").nth(2).getByText("上海", { exact: true }).click();
      await c.getByLabel("Your own answer to “What should the project be called?”").fill("bluebird");
      await shot(page, "phone-ask-user-question");
      await c.getByRole("button", { name: "Send answers" }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "allow",
            permissionDecisionReason: "Answered in the LineUp app",
            updatedInput: {
              questions: FOUR,
              answers: {
                "Which **database** should the app use?": "SQLite",
                "Which features should ship first?": "Auth, Billing",
                "部署到哪个区域?": "上海",
                "What should the project be called?": "bluebird",
              },
            },
          },
        },
      ]);
      await page.locator('article.card.done[data-state="answered"]').first().waitFor({ timeout: 10_000 });
    } finally {
      await close();
    }
  }, 120_000);

  it("nobody answers within --wait: the card is cancelled and the hook prints nothing, so the terminal's dialog asks (never both answers)", async () => {
    const { page, p, env, close } = await phone("zh-CN");
    try {
      const run = runHook(["ask-user-question", "--wait", "10"], askInput(p.dir, [FOUR[2]]), env, p.dir, 60_000);
      await asks(page).waitFor({ timeout: 20_000 });
      expect(await asks(page).locator(".opt-text").last().textContent()).toBe("其他");
      const r = await run;
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(r.stderr).toContain("no answer in time");
      await page.locator('article.card.done[data-state="cancelled"]').first().waitFor({ timeout: 15_000 });
      expect(await page.locator("article.card.pending").count()).toBe(0);
    } finally {
      await close();
    }
  }, 90_000);

  it("Decline on the card denies the tool with a reason for Claude, never a made-up answer", async () => {
    const { page, p, env, close } = await phone();
    try {
      const run = runHook(["ask-user-question", "--wait", "60"], askInput(p.dir, [FOUR[0]]), env, p.dir, 90_000);
      await asks(page).waitFor({ timeout: 20_000 });
      await page.locator("article.card.pending").last().getByRole("button", { name: "Decline" }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "deny",
            permissionDecisionReason: "The human declined to answer these questions in the LineUp app.",
          },
        },
      ]);
    } finally {
      await close();
    }
  }, 90_000);
});

const EVERY_KIND = {
  type: "object",
  properties: {
    email: { type: "string", format: "email", title: "Email" },
    start: { type: "string", format: "date", title: "Start date" },
    note: { type: "string", title: "Note", maxLength: 50 },
    seats: { type: "integer", minimum: 1, maximum: 10, title: "Seats" },
    budget: { type: "number", title: "Budget" },
    agree: { type: "boolean", title: "I agree to the terms" },
    region: { type: "string", enum: ["eu", "us"], title: "Region" },
    plan: {
      type: "string",
      title: "Plan",
      oneOf: [
        { const: "free", title: "Free plan" },
        { const: "pro", title: "Pro plan" },
      ],
    },
    tags: {
      type: "array",
      title: "Tags",
      items: {
        anyOf: [
          { const: "a", title: "Alpha" },
          { const: "b", title: "Beta" },
          { const: "c", title: "Gamma" },
        ],
      },
    },
  },
  required: ["email", "seats", "plan"],
};

describe("MCP elicitations on the phone", () => {
  it("a form with every field kind: the schema form's values return as accept with content", async () => {
    const { page, p, env, close } = await phone();
    try {
      const run = runHook(
        ["elicitation", "--wait", "60"],
        elicitInput(p.dir, { mode: "form", elicitation_id: "el-1", requested_schema: EVERY_KIND }),
        env,
        p.dir,
        90_000,
      );
      await elicit(page).waitFor({ timeout: 20_000 });
      const c = elicit(page);
      expect(await c.locator(".elicit-who").textContent()).toBe("billing (an MCP server of Claude Code) asks:");
      expect(await c.locator("strong").first().textContent()).toBe("billing");
      expect(await page.locator('article.card.pending header span[id^="h-"]').textContent()).toBe("billing");
      await c.getByLabel("Email").fill("me@example.com");
      await c.getByLabel("Start date").fill("2026-12-24");
      await c.getByLabel("Note").fill("hi");
      await c.getByLabel("Seats").fill("3");
      await c.getByLabel("Budget").fill("12.5");
      await c.getByLabel("I agree to the terms").check();
      await c.getByLabel("Region").selectOption({ label: "us" });
      await c.getByLabel("Plan").selectOption({ label: "Pro plan" });
      await c.getByLabel("Alpha").check();
      await c.getByLabel("Gamma").check();
      await shot(page, "phone-elicitation-form");
      await c.getByRole("button", { name: "Send", exact: true }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "Elicitation",
            action: "accept",
            content: {
              email: "me@example.com",
              start: "2026-12-24",
              note: "hi",
              seats: 3,
              budget: 12.5,
              agree: true,
              region: "us",
              plan: "pro",
              tags: ["a", "c"],
            },
          },
        },
      ]);
    } finally {
      await close();
    }
  }, 120_000);

  it("Decline on the card answers decline; Cancel answers cancel", async () => {
    const { page, p, env, close } = await phone();
    try {
      const input = elicitInput(p.dir, { mode: "form", requested_schema: { type: "object", properties: { name: { type: "string" } } } });
      const first = runHook(["elicitation", "--wait", "60"], input, env, p.dir, 90_000);
      await elicit(page).waitFor({ timeout: 20_000 });
      await page.locator("article.card.pending").last().getByRole("button", { name: "Decline" }).click();
      expect(JSON.parse((await first).stdout)).toEqual({ hookSpecificOutput: { hookEventName: "Elicitation", action: "decline" } });
      const second = runHook(["elicitation", "--wait", "60"], input, env, p.dir, 90_000);
      await elicit(page).waitFor({ timeout: 20_000 });
      await elicit(page).getByRole("button", { name: "Cancel" }).click();
      expect(JSON.parse((await second).stdout)).toEqual({ hookSpecificOutput: { hookEventName: "Elicitation", action: "cancel" } });
    } finally {
      await close();
    }
  }, 120_000);

  it("a URL-mode request shows the domain and the whole URL, opens nothing by itself, and Done accepts", async () => {
    const { page, ctx, p, env, close } = await phone();
    try {
      const url = "https://auth.example.com/connect?state=xyz&client=lineup";
      const run = runHook(["elicitation", "--wait", "60"], elicitInput(p.dir, { mode: "url", url, elicitation_id: "el-url" }), env, p.dir, 90_000);
      await elicit(page).waitFor({ timeout: 20_000 });
      const c = elicit(page);
      expect(await c.locator(".elicit-domain b").textContent()).toBe("auth.example.com");
      expect(await c.locator(".elicit-url code").textContent()).toBe(url);
      const link = c.getByRole("link", { name: "Open the page" });
      expect([await link.getAttribute("href"), await link.getAttribute("target"), await link.getAttribute("rel")]).toEqual([
        url,
        "_blank",
        "noopener noreferrer",
      ]);
      expect(ctx.pages().length).toBe(1);
      await shot(page, "phone-elicitation-url");
      await c.getByRole("button", { name: "Done" }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([0, { hookSpecificOutput: { hookEventName: "Elicitation", action: "accept" } }]);
      expect(ctx.pages().length).toBe(1);
    } finally {
      await close();
    }
  }, 90_000);

  it("a URL-mode request whose URL is not http(s) never reaches the phone: no output, the terminal asks", async () => {
    const { page, p, env, close } = await phone();
    try {
      const r = await runHook(["elicitation", "--wait", "30"], elicitInput(p.dir, { mode: "url", url: "javascript:alert(1)" }), env, p.dir, 60_000);
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(r.stderr).toContain("no http(s) URL");
      expect(await page.locator("article.card").count()).toBe(0);
    } finally {
      await close();
    }
  }, 60_000);
});
