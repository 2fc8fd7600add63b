// Issue 29 items 1 and 2 in a sealed (E2E) session, real Chromium against the real relay (`wrangler dev`):
// the machine is the CLI itself (`lineup e2e on`, `lineup pair`), the page pairs from its `#pair=…&k=…` link,
// the hook sponsors it and puts its sealed card up; the page opens the question set with its own key and the
// human's taps come back as the exact stdout Claude Code expects. Stdin as documented at
// https://code.claude.com/docs/en/hooks (PreToolUse with AskUserQuestion; Elicitation).
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/adapter-helpers.js";
import { useBrowser } from "../helpers/browser.js";
import { askUserQuestion, e2eHookEnv, elicitation, project, runHook, TWO_QUESTIONS as QUESTIONS } from "../helpers/hooks-helpers.js";

const fx = useBrowser();

type Project = ReturnType<typeof project>;
const envFor = (p: Project): Record<string, string> => e2eHookEnv(fx.relay(), p);

/** An E2E machine, a phone page paired to it from its link, and the hook run (which sponsors the page). */
async function sealedPhone(p: Project, args: string[], stdin: string) {
  const cli = async (a: string[]) => {
    const r = await runCli(a, envFor(p), p.dir);
    expect(r.code, r.stderr).toBe(0);
    return r;
  };
  await cli(["e2e", "on", "--json"]);
  const { url } = JSON.parse((await cli(["pair", "--json"])).stdout.trim().split("\n").pop()!) as { url: string };
  const ctx = await fx.context("phone");
  const page = await ctx.newPage();
  await page.goto(url);
  const run = runHook(args, stdin, envFor(p), p.dir, 120_000);
  // The session row appears once the hook's sealed session exists; its card opens with the page's key.
  await page.locator(".session-row a").first().click({ timeout: 40_000 });
  return { page, run, close: () => ctx.close() };
}

const asks = (page: Page) => page.locator("article.card.pending .asks").last();

describe("sealed sessions in the browser", () => {
  it("AskUserQuestion: the sealed question set opens and is answered on the paired page", async () => {
    const p = project();
    const stdin = askUserQuestion(p.dir, QUESTIONS, "toolu_01");
    const { page, run, close } = await sealedPhone(p, ["ask-user-question", "--wait", "90"], stdin);
    try {
      await asks(page).waitFor({ timeout: 30_000 });
      expect(await page.locator("article.card.pending header .lock").last().getAttribute("data-sealed")).toBe("true");
      await asks(page).locator(".ask-q").nth(0).getByText("PostgreSQL", { exact: true }).click();
      await asks(page).locator(".ask-q").nth(1).getByText("Search", { exact: true }).click();
      await asks(page).getByLabel("Your own answer to “Which features?”").fill("Export");
      await asks(page).getByRole("button", { name: "Send answers" }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "allow",
            permissionDecisionReason: "Answered in the LineUp app",
            updatedInput: { questions: QUESTIONS, answers: { "Which database?": "PostgreSQL", "Which features?": "Search, Export" } },
          },
        },
      ]);
    } finally {
      if (run.child.exitCode === null) run.child.kill("SIGKILL");
      await close();
    }
  }, 150_000);

  it("Elicitation: the sealed form opens and is answered on the paired page", async () => {
    const p = project();
    const stdin = elicitation(p.dir, {
      message: "Your billing contact",
      mode: "form",
      requested_schema: { type: "object", properties: { email: { type: "string", format: "email", title: "Email" } }, required: ["email"] },
    });
    const { page, run, close } = await sealedPhone(p, ["elicitation", "--wait", "90"], stdin);
    try {
      const c = page.locator("article.card.pending .elicit").last();
      await c.waitFor({ timeout: 30_000 });
      expect(await page.locator("article.card.pending header .lock").last().getAttribute("data-sealed")).toBe("true");
      await c.getByLabel("Email").fill("me@example.com");
      await c.getByRole("button", { name: "Send", exact: true }).click();
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "Elicitation", action: "accept", content: { email: "me@example.com" } } },
      ]);
    } finally {
      if (run.child.exitCode === null) run.child.kill("SIGKILL");
      await close();
    }
  }, 150_000);
});
