// The home row's "needs you" / "finished" (issue 29 item 3, i29-room; docs/inbox.md "Needs you and finished") in real
// Chromium on a 390×844 phone: an agent's attention report with a reason marks its session's row, in English and
// Chinese, light and dark, with no accessibility violation; opening the session (the URL a tapped push opens) clears
// the mark on the relay, so the row is plain when the person comes back and the other session keeps its own.
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;

async function ok<T>(method: string, path: string, token: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${relay()}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const axe = async (page: Page) =>
  (await new AxeBuilder({ page }).analyze()).violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
const mark = (page: Page, sid: string) => page.locator(`.session-row[data-sid="${sid}"] .row-mark`);

describe("the home row's needs you / finished", () => {
  it("marks the rows of sessions whose agent needs you or finished, in en and zh, light and dark; opening one clears its mark only", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const api = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/api-server", host: "laptop" });
    const web = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/web-app", host: "laptop" });
    const quiet = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/docs", host: "laptop" });
    await ok("POST", "/api/inbox/push/attention", m.machine_credential, {
      session_id: api.session_id,
      reason: "needs_input",
      text: "Claude needs you in api-server",
    });
    await ok("POST", "/api/inbox/push/attention", m.machine_credential, {
      session_id: web.session_id,
      reason: "completed",
      text: "Claude finished in web-app",
    });

    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
      await page.goto(code.url!);
      await page.locator(`.session-row[data-sid="${quiet.session_id}"]`).waitFor({ timeout: 15_000 });
      for (const theme of ["light", "dark"] as const) {
        for (const lang of ["en", "zh"] as const) {
          await page.emulateMedia({ colorScheme: theme });
          await page.evaluate(
            ([l, th]) => {
              localStorage.setItem("lineup.lang", JSON.stringify(l));
              localStorage.setItem("lineup.theme", JSON.stringify(th));
            },
            [lang, theme] as const,
          );
          await page.goto(`${relay()}/`);
          await mark(page, api.session_id).waitFor({ timeout: 15_000 });
          await expect.poll(() => mark(page, api.session_id).textContent(), { timeout: 5_000 }).toBe(lang === "en" ? "Needs you" : "需要你");
          expect(await mark(page, web.session_id).textContent()).toBe(lang === "en" ? "Finished" : "已完成");
          expect(await mark(page, api.session_id).getAttribute("class")).toBe("row-mark needs");
          expect(await mark(page, web.session_id).getAttribute("class")).toBe("row-mark done");
          expect(await mark(page, quiet.session_id).count()).toBe(0);
          expect(await axe(page), `${theme}-${lang}`).toEqual([]);
          await shot(page, `row-mark-${theme}-${lang}`);
        }
      }

      // A tapped push opens /s/<sid>: the person sees the session, the relay forgets its mark.
      await page.goto(`${relay()}/s/${api.session_id}`);
      await page.locator("header .back").waitFor({ timeout: 10_000 });
      await expect
        .poll(async () => (await ok<InboxState>("GET", "/api/inbox", m.machine_credential)).sessions.find((s) => s.session_id === api.session_id)?.attention, {
          timeout: 15_000,
        })
        .toBeUndefined();
      await page.locator("header .back").click();
      await page.locator(`.session-row[data-sid="${api.session_id}"]`).waitFor({ timeout: 10_000 });
      expect(await mark(page, api.session_id).count()).toBe(0);
      expect(await mark(page, web.session_id).textContent()).toBe("已完成"); // the last language chosen above
    } finally {
      await ctx.close();
    }
  }, 60_000);
});
