// Accessibility to a standard, not by eye (issue 13): axe-core with the WCAG 2.1 A and AA rules finds nothing
// on the main screens — home, a session with every built-in card (and settled ones), the tool log, settings
// and devices — in light and dark, English and Chinese, on a phone; every control's touch target is at
// least 44×44 px. Screenshots of each screen are kept in test-artifacts/screenshots/.
// The app comes from LINEUP_TEST_WEB_DIR when set (a fresh `vite build --outDir`), else dist/web.
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;

async function ok<T>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${relay()}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const WCAG21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

async function axe(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).withTags(WCAG21_AA).analyze();
  return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} ${n.target.join(" ")}: ${(n.failureSummary ?? "").replace(/\s+/g, " ").slice(0, 220)}`));
}

/**
 * Controls whose touch target is under 44×44 px. A checkbox or radio counts its <label> (a tap on it toggles
 * the input); links inside agent text are inline text, not controls (WCAG 2.5.8's exception).
 */
const smallTargets = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>("button, a[href], input, select, textarea, summary"))
      .filter((e) => e.offsetParent !== null && !e.closest(".md") && !e.classList.contains("sr-only") && e.getAttribute("aria-hidden") !== "true")
      .map((e) => {
        const label = e instanceof HTMLInputElement && (e.type === "checkbox" || e.type === "radio") ? (e.closest("label") ?? e.labels?.[0]) : null;
        return { e, r: (label ?? e).getBoundingClientRect() };
      })
      .filter(({ r }) => r.height < 44 || r.width < 44)
      .map(
        ({ e, r }) => `${e.tagName.toLowerCase()}.${e.className} "${(e.textContent ?? "").trim().slice(0, 30)}" ${Math.round(r.width)}×${Math.round(r.height)}`,
      ),
  );

describe("axe-core WCAG 2.1 AA and 44 px targets on the main screens", () => {
  it("home, a session with every built-in card, the tool log, settings and devices — phone and desktop, light and dark, English and Chinese", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, {
      project_dir: "/home/me/work/clients/acme/billing-service",
      host: "laptop",
    });
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential, {});
      await page.goto(code.url!);
      await expect.poll(() => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
      await agent.appTools();

      // Settled calls first (history rows), then one of every card left waiting, and messages both ways.
      await page.goto(`${relay()}/s/${s.session_id}`);
      agent.call("d1", "work_report", { project_directory: "/srv", summary: "Migrated the **invoices** table" });
      agent.call("d2", "confirm", { question: "Rotate the keys?" });
      await page.locator('[data-call="d1"]').getByRole("button", { name: "Approve" }).click();
      await page.locator('[data-call="d2"]').getByRole("button", { name: "Decline" }).click();
      await agent.result("d1");
      await agent.result("d2");
      agent.send({
        type: "message",
        content: [
          {
            type: "text",
            text: "Here is the plan:\n\n1. shadow table\n   - zero downtime\n2. window\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nALTER TABLE invoices ADD COLUMN currency text NOT NULL DEFAULT 'EUR';\n```",
          },
        ],
      });
      await page.locator(".bubble.agent .md-table").waitFor({ timeout: 10_000 });
      await page.locator("#chat-text").fill("Looks right to me");
      await page.locator("#chat-text").press("Enter");
      agent.call("c1", "choice", { question: "Deploy where?", options: ["staging", "production"] });
      agent.call("c2", "choice", { question: "Which checks?", options: ["unit", "e2e", "lint"], multiple: true });
      agent.call("c3", "confirm", { question: "Ship it?" }, undefined, 240);
      agent.call("c4", "input", { question: "Release name?", placeholder: "e.g. v1.2" });
      agent.call("c5", "ask_question", {
        project_directory: "/home/me/work/clients/acme/billing-service",
        question: "Which **migration**?\n\n1. shadow table\n2. window",
      });
      agent.call("c6", "work_report", { project_directory: "/srv", summary: "Added the currency column; **tests pass**." });
      agent.call("c7", "permission", {
        tool_name: "Bash",
        input: { command: "npm test" },
        agent: "Claude Code",
        project_directory: "/srv",
        suggestions: ["Bash(npm test:*)"],
      });
      agent.call("c8", "canvas", { width: 200, height: 120 }, "open");
      const id = ((await agent.result("c8")).result as { instance_id: string }).instance_id;
      agent.call("c9", "canvas", { instance_id: id, path: "M10 10 L150 90", color: "#e53935", width: 6 }, "draw");
      await agent.result("c9");

      // The phone context, and the same screens at a desktop window size.
      for (const size of ["phone", "desktop"] as const) {
        if (size === "desktop") await page.setViewportSize({ width: 1280, height: 800 });
        for (const theme of ["light", "dark"] as const) {
          for (const lang of ["en", "zh"] as const) {
            const tag = `${size === "phone" ? "" : "desktop-"}${theme}-${lang}`;
            await page.emulateMedia({ colorScheme: theme });
            await page.evaluate(
              ([l, th]) => {
                localStorage.setItem("lineup.lang", JSON.stringify(l));
                localStorage.setItem("lineup.theme", JSON.stringify(th));
              },
              [lang, theme] as const,
            );
            const check = async (screen: string) => {
              expect(await axe(page), `${screen}, ${tag}`).toEqual([]);
              expect(await smallTargets(page), `${screen}, ${tag}`).toEqual([]);
              await shot(page, `a11y-${screen}-${tag}`);
            };

            await page.goto(`${relay()}/`);
            await page.locator('.wait-row[data-call="c1"]').waitFor({ timeout: 10_000 });
            await page.locator(".session-row .presence.on").waitFor({ timeout: 10_000 });
            expect(await page.evaluate(() => document.documentElement.lang)).toBe(lang === "zh" ? "zh-CN" : "en");
            await check("home");

            await page.goto(`${relay()}/s/${s.session_id}`);
            await page.locator('[data-call="c7"] .perm').waitFor({ timeout: 10_000 });
            await page.locator(`svg[data-instance="${id}"] path`).waitFor({ timeout: 10_000 });
            await page.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 10_000 });
            await page.locator('[data-call="c2"] label.option').first().click(); // a marked option, too
            await check("session");

            await page.getByRole("tab", { name: /Tool log|工具日志/ }).click();
            await page.locator(".log-row").first().waitFor({ timeout: 5_000 });
            await check("tool-log");

            await page.goto(`${relay()}/settings`);
            await page.locator("#lan-url").waitFor({ timeout: 5_000 });
            await check("settings");

            await page.goto(`${relay()}/devices`);
            await page.locator(".member-name").first().waitFor({ timeout: 10_000 });
            await check("devices");
          }
        }
      }
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 300_000);
});
