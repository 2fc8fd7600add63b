// Agent content in real Chromium: markdown keeps its meaning (nested lists, tables, code), raw HTML and
// unsafe links stay inert, pathological text does not hang the page, one block that fails to render does
// not take the thread down, nothing widens a phone's page, and the app's security headers are served and
// violated by nothing the app does. The agent side is a raw socket.
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { APP_SECURITY_HEADERS } from "../../shared/edge/csp.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;

// A 2x2 PNG and a few bytes of audio, so image and audio blocks render through data: URLs.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==";
const WAV = Buffer.from("UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=", "base64").toString("base64");

type Setup = { s: SessionCreated; agent: Agent; ctx: BrowserContext; page: Page };

async function setup(label: string, before?: (ctx: BrowserContext) => Promise<void>): Promise<Setup> {
  const s = await createSession(relay(), label);
  const agent = await Agent.connect(s);
  const ctx = await fx.context("phone");
  await before?.(ctx);
  const page = await ctx.newPage();
  await pair(page, s);
  await agent.appTools();
  return { s, agent, ctx, page };
}

const say = (agent: Agent, ...content: Array<Record<string, unknown>>) => agent.send({ type: "message", content });
const text = (t: string) => ({ type: "text", text: t });

/** Resolves with the page's answer to a trivial expression, or fails when the page is stuck. */
async function responsive(page: Page, boundMs = 5_000): Promise<void> {
  const answer = await Promise.race([page.evaluate(() => 1 + 1), new Promise<"stuck">((r) => setTimeout(() => r("stuck"), boundMs))]);
  expect(answer).toBe(2);
}

const noWiderThanViewport = (page: Page) => page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, viewport: innerWidth }));

// The walk-through's question (../shared/ux/markdown-nested-list-renumbered.png), verbatim in structure.
const MIGRATION = [
  "**Migration plan for the billing service**",
  "",
  "I found **three** ways to migrate the `invoices` table. Please pick one, or tell me what to change.",
  "",
  "**Options**",
  "1. Online migration with a shadow table",
  "   - zero downtime",
  "   - takes ~4 hours on production",
  "2. Maintenance window (15 min)",
  "3. Do nothing for now",
  "",
  "**What I would run**",
  "```sql",
  "ALTER TABLE invoices ADD COLUMN currency text NOT NULL DEFAULT 'EUR';",
  "CREATE INDEX CONCURRENTLY idx_invoices_currency ON invoices (currency);",
  "```",
  "",
  "| option | downtime | risk | effort |",
  "|:---|:---:|---|--:|",
  "| shadow table | none | low | high |",
  "| window | 15 min | medium | low |",
  "| nothing | none | high later | none |",
  "",
  "> Note: the last backup finished at 03:12 UTC.",
  "",
  "See [the runbook](https://example.com/runbook) for details.",
].join("\n");

describe("agent content in the browser", () => {
  it("keeps a numbered list's numbering when its first option has nested bullets, and renders GFM tables, code, tasks and quotes", async () => {
    const { agent, ctx, page } = await setup("Markdown agent");
    try {
      agent.call("m1", "ask_question", { project_directory: "/home/dev/projects/billing-service", question: MIGRATION });
      const md = page.locator('[data-call="m1"] .md');
      await md.waitFor({ timeout: 10_000 });
      const outer = md.locator(":scope > ol");
      expect(await outer.count()).toBe(1);
      const items = outer.locator(":scope > li");
      expect(await items.count()).toBe(3);
      expect((await items.nth(1).textContent())?.trim()).toBe("Maintenance window (15 min)");
      expect(await items.nth(0).locator(":scope > ul > li").allTextContents()).toEqual(["zero downtime", "takes ~4 hours on production"]);
      expect(await outer.getAttribute("start")).toBeNull(); // starts at 1

      const table = md.locator(".md-table > table");
      expect(await table.locator("thead th").allTextContents()).toEqual(["option", "downtime", "risk", "effort"]);
      expect(await table.locator("tbody tr").count()).toBe(3);
      expect(await table.locator("thead th").nth(1).getAttribute("class")).toBe("al-c");
      expect(await table.locator("tbody tr").first().locator("td").nth(3).getAttribute("class")).toBe("al-r");
      expect(await md.locator("pre > code").textContent()).toContain("CREATE INDEX CONCURRENTLY");
      expect(await md.locator("blockquote").textContent()).toContain("03:12 UTC");
      const link = md.locator('a[href="https://example.com/runbook"]');
      expect(await link.getAttribute("target")).toBe("_blank");
      expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
      await shot(page, "phone-markdown-migration");

      say(agent, text("3. third\n4. fourth\n\n- [x] done\n- [ ] open\n\n~~old~~ new  \nnext line\n\n## Heading\n\n---\n\nA &amp; B &lt;ok&gt;"));
      const bubble = page.locator(".bubble.agent").last();
      await bubble.locator("del").waitFor({ timeout: 10_000 });
      expect(await bubble.locator('ol[start="3"] > li').allTextContents()).toEqual(["third", "fourth"]);
      expect(
        await bubble
          .locator('ul.md-tasks input[type="checkbox"]')
          .evaluateAll((els) => els.map((e) => [(e as HTMLInputElement).checked, (e as HTMLInputElement).disabled])),
      ).toEqual([
        [true, true],
        [false, true],
      ]);
      expect(await bubble.locator("br").count()).toBe(1);
      expect(await bubble.locator("h4").textContent()).toBe("Heading"); // ## sits below the screen's own headings
      expect(await bubble.locator("hr").count()).toBe(1);
      expect(await bubble.getByText("A & B <ok>").count()).toBe(1);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("shows raw HTML as text and creates no element from it; javascript: links are not links and images are only links", async () => {
    const requests: string[] = [];
    const dialogs: string[] = [];
    const { agent, ctx, page } = await setup("HTML agent");
    try {
      page.on("request", (r) => requests.push(r.url()));
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      say(
        agent,
        text(
          [
            "Inline <img src=x onerror=alert(1)> and <b>bold?</b> here.",
            "",
            "<script>window.__pwned = 1; alert(2)</script>",
            "",
            '<iframe src="https://frame.invalid/"></iframe>',
            "",
            "[click me](javascript:alert(3)) [data](data:text/html,<script>alert(4)</script>) [ok](https://example.com/ok)",
            "",
            "![pixel](https://tracker.invalid/p.png)",
          ].join("\n"),
        ),
      );
      const bubble = page.locator(".bubble.agent").last();
      await bubble.getByText("click me").waitFor({ timeout: 10_000 });
      // The renderer is a lazy chunk: until it arrives the text shows as written (.md-wait), with no links at all.
      await bubble.locator(".md-wait").waitFor({ state: "detached", timeout: 10_000 });
      expect(await bubble.locator("img, script, iframe, b").count()).toBe(0);
      const shown = (await bubble.textContent()) ?? "";
      expect(shown).toContain("<img src=x onerror=alert(1)>");
      expect(shown).toContain("<script>window.__pwned = 1; alert(2)</script>");
      expect(shown).toContain('<iframe src="https://frame.invalid/"></iframe>');
      expect(await bubble.locator("a").evaluateAll((as) => as.map((a) => a.getAttribute("href")))).toEqual([
        "https://example.com/ok",
        "https://tracker.invalid/p.png",
      ]);
      expect(await bubble.getByText("click me").evaluate((e) => e.closest("a"))).toBeNull();
      expect(await bubble.locator("a.md-img").textContent()).toContain("pixel");
      await page.waitForTimeout(300); // a handler or image load would have fired by now
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(dialogs).toEqual([]);
      expect(requests.filter((u) => u.includes(".invalid"))).toEqual([]);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("renders pathological text without hanging the page, also when it comes back from history after a reload", async () => {
    const { agent, ctx, page } = await setup("Hostile agent");
    try {
      const nested = (n: number, unit: (i: number) => string) => Array.from({ length: n }, (_, i) => unit(i)).join("\n");
      const inputs = [
        "[".repeat(200_000),
        "*".repeat(100_000),
        "_a".repeat(50_000),
        "a*_a".repeat(8_000 - 1), // just under the 32 KiB parse bound: the inline budget applies
        `${">".repeat(5_000)} deep`,
        `${"- ".repeat(5_000)}x`, // a list 5000 deep on one line
        nested(700, (i) => `${"  ".repeat(i)}- x`), // 700 deep by indentation (490 KB; 5000 would be 25 MB)
        "word ".repeat(Math.floor((1024 * 1024 - 1024) / 5)), // one line of 1 MiB less 1 KiB: room for the frame around it
      ];
      for (const input of inputs) say(agent, text(input));
      say(agent, text("**still** here"));
      const last = page.locator(".bubble.agent strong", { hasText: "still" });
      await last.waitFor({ timeout: 30_000 });
      await responsive(page);
      expect(await page.locator(".bubble.agent").count()).toBe(inputs.length + 1);
      expect(await page.locator(".bubble.agent .md-plain").count()).toBe(7); // all but "a*_a" are over the length or depth bound
      expect((await noWiderThanViewport(page)).scroll).toBeLessThanOrEqual(390);

      await page.reload();
      await page.locator(".presence.on").waitFor({ timeout: 15_000 });
      await last.waitFor({ timeout: 30_000 });
      await responsive(page);
      expect(await page.locator(".bubble.agent").count()).toBe(inputs.length + 1);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 120_000);

  it("shows a resource whose uri has a malformed percent escape under its name as written, with the rest of the thread", async () => {
    const { agent, ctx, page } = await setup("Resource agent");
    try {
      say(agent, text("before the file"));
      say(agent, { type: "resource", resource: { uri: "https://x.test/%", mimeType: "text/plain", blob: Buffer.from("hi").toString("base64") } });
      say(agent, text("after the file"));
      await page.locator(".bubble.agent", { hasText: "after the file" }).waitFor({ timeout: 10_000 });
      expect(await page.locator(".bubble.agent", { hasText: "before the file" }).count()).toBe(1);
      expect(await page.locator('.bubble.agent a.file[download="%"]').count()).toBe(1);
      expect(await page.locator(".block-failed").count()).toBe(0);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("replaces a block that throws while rendering with a notice, and keeps the rest of the thread and the message", async () => {
    // Fault injection: the DOM refuses one link target, as a renderer bug would throw mid-render.
    const { agent, ctx, page } = await setup("Faulty agent", async (c) => {
      await c.addInitScript(() => {
        const refuse = (v: unknown) => {
          if (String(v).includes("boom.invalid")) throw new Error("injected rendering fault");
        };
        const set = Element.prototype.setAttribute;
        Element.prototype.setAttribute = function (name: string, value: string) {
          refuse(value);
          return set.call(this, name, value);
        };
        const href = Object.getOwnPropertyDescriptor(HTMLAnchorElement.prototype, "href")!;
        Object.defineProperty(HTMLAnchorElement.prototype, "href", {
          ...href,
          set(v: string) {
            refuse(v);
            href.set!.call(this, v);
          },
        });
      });
    });
    try {
      say(agent, text("first message"));
      say(agent, text("see [this](https://boom.invalid/x)"), text("the block after the bad one"));
      say(agent, text("last message"));
      await page.locator(".bubble.agent", { hasText: "last message" }).waitFor({ timeout: 10_000 });
      const bad = page.locator(".bubble.agent", { has: page.locator(".block-failed") });
      // The renderer (a lazy chunk) may come after the text: its text shows as written until then.
      await bad.waitFor({ timeout: 10_000 });
      expect(await bad.count()).toBe(1);
      expect(await bad.locator(".block-failed").textContent()).toBe("This block could not be shown");
      expect(await bad.textContent()).toContain("the block after the bad one");
      expect(await page.locator(".bubble.agent", { hasText: "first message" }).count()).toBe(1);
      // The app still works: the human's message goes out and shows.
      await page.locator("#chat-text").fill("still working");
      await page.locator("#chat-text").press("Enter");
      expect((await agent.next((f) => f.type === "message")).content).toEqual([{ type: "text", text: "still working" }]);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("never makes a phone's page wider than its 390 px viewport: long URLs, paths, code lines and tables", async () => {
    const { agent, ctx, page } = await setup("Wide agent");
    try {
      const url = `https://example.com/${"a/very/long/path/that/does/not/stop/".repeat(9)}end`.slice(0, 300);
      const path = `/home/dev/${"very_long_directory_name_without_any_spaces/".repeat(8)}file.txt`;
      const wideTable = `| ${Array.from({ length: 12 }, (_, i) => `column_${i}_header`).join(" | ")} |\n|${"---|".repeat(12)}\n| ${Array.from({ length: 12 }, (_, i) => `value_${i}_content`).join(" | ")} |`;
      const md = `A long URL: ${url}\n\nA path: ${path}\n\n\`\`\`\n${"const x = 1; ".repeat(40)}\n\`\`\`\n\n${wideTable}\n\nInline \`${path}\``;
      say(agent, text(md));
      agent.call("w1", "ask_question", { project_directory: path, question: md });
      agent.call("w2", "choice", { question: "Which file?", options: [path, "the short one"] });
      await page.locator('[data-call="w2"]').getByRole("radio", { name: "the short one" }).waitFor({ timeout: 10_000 });
      await page.locator('[data-call="w1"] .md-table').waitFor({ timeout: 10_000 });
      const { scroll, viewport } = await noWiderThanViewport(page);
      expect(viewport).toBe(390);
      expect(scroll).toBeLessThanOrEqual(viewport);
      // The code block and the table scroll inside their own boxes instead.
      for (const sel of [".bubble.agent pre", ".bubble.agent .md-table", '[data-call="w1"] pre', '[data-call="w1"] .md-table']) {
        const box = await page
          .locator(sel)
          .first()
          .evaluate((e) => ({ sw: e.scrollWidth, cw: e.clientWidth, right: e.getBoundingClientRect().right }));
        expect(box.sw, sel).toBeGreaterThan(box.cw);
        expect(box.right, sel).toBeLessThanOrEqual(390);
      }
      await shot(page, "phone-wide-content");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  // i29-room: the markdown renderer (and marked) is a lazy chunk outside the initial JavaScript budget.
  it("shows a question as its plain text and still takes the answer when the markdown chunk cannot load (offline before it was cached)", async () => {
    const { agent, ctx, page } = await setup("Offline markdown agent", async (c) => {
      await c.route(/\/assets\/markdown-render-[^/]+\.js$/, (r) => r.abort());
    });
    try {
      agent.call("p1", "ask_question", { project_directory: "/tmp", question: "Ship **v2** now?\n\n- yes\n- <b>no</b>" });
      const card = page.locator('[data-call="p1"]');
      const plain = card.locator(".md-wait");
      await plain.waitFor({ timeout: 10_000 });
      expect(await plain.textContent()).toBe("Ship **v2** now?\n\n- yes\n- <b>no</b>");
      expect(await card.locator(".md, strong, li, b").count()).toBe(0); // never formatted, never HTML
      await card.locator("textarea").fill("yes");
      await card.getByRole("button", { name: "Send" }).click();
      expect((await agent.result("p1")).result).toMatchObject({ message: "yes" });
    } finally {
      agent.close();
      await ctx.close();
    }
  });
});

describe("security headers", () => {
  it("serves the app's pages and files from wrangler dev with the Content-Security-Policy and the other headers", async () => {
    const html = await (await fetch(`${relay()}/`)).text();
    const script = /<script[^>]*src="([^"]+\.js)"/.exec(html)?.[1];
    expect(script).toMatch(/^\/assets\/.+\.js$/);
    for (const path of ["/", "/index.html", "/s/abc", "/settings", script!, "/sw.js", "/manifest.webmanifest"]) {
      const r = await fetch(`${relay()}${path}`, { redirect: "manual" });
      expect(r.status, path).toBeLessThan(400);
      for (const [name, value] of Object.entries(APP_SECURITY_HEADERS)) expect(r.headers.get(name), `${name} on ${path}`).toBe(value);
    }
    expect(APP_SECURITY_HEADERS["Content-Security-Policy"]).toMatch(/frame-ancestors 'none'/);
    expect(APP_SECURITY_HEADERS["Content-Security-Policy"]).toMatch(/script-src 'self'(;|$)/);
    // The rules file itself is not served as a file (the SPA shell answers instead).
    expect(await (await fetch(`${relay()}/_headers`)).text()).not.toContain("Content-Security-Policy");
  });

  it("the main screens render with nothing blocked by the policy, and the policy does block an inline script", async () => {
    const problems: string[] = [];
    const { agent, ctx, page } = await setup("CSP agent", async (c) => {
      await c.addInitScript(() => {
        const w = window as unknown as { __csp: string[] };
        w.__csp = [];
        document.addEventListener("securitypolicyviolation", (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
    });
    const violations = () => page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
    try {
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      say(agent, text(MIGRATION), { type: "image", mimeType: "image/png", data: PNG }, { type: "audio", mimeType: "audio/wav", data: WAV });
      await page.locator(".bubble.agent .md-table").waitFor({ timeout: 10_000 });
      await page.locator(".bubble.agent img.att-img").waitFor({ timeout: 10_000 });
      agent.call("c1", "canvas", { width: 200, height: 120 }, "open");
      const id = ((await agent.result("c1")).result as { instance_id: string }).instance_id;
      agent.call("c2", "canvas", { instance_id: id, path: "M10 10 L150 90", color: "#e53935", width: 6 }, "draw");
      await agent.result("c2");
      agent.call("q1", "ask_question", { project_directory: "/srv", question: "Ready?" });
      await page.locator('[data-call="q1"] textarea').waitFor({ timeout: 10_000 });
      await page.getByRole("tab", { name: /Tool log/ }).click();
      await page.locator(".log-row").first().waitFor({ timeout: 10_000 });
      await page.getByRole("button", { name: "Settings" }).click();
      await page.locator("#theme").selectOption("dark");
      await page.getByText("Direct LAN agent").waitFor({ timeout: 5_000 });
      await page.goto(`${relay()}/`);
      await page.locator(".session-row").first().waitFor({ timeout: 10_000 });
      expect(await violations()).toEqual([]);
      expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);

      // The policy is in force: an inline script is refused and reported.
      await page.evaluate(() => {
        const s = document.createElement("script");
        s.textContent = "window.__inlineRan = true";
        document.body.append(s);
      });
      await expect.poll(violations, { timeout: 5_000 }).toEqual([expect.stringMatching(/^script-src/)]);
      expect(await page.evaluate(() => (window as unknown as { __inlineRan?: boolean }).__inlineRan)).toBeUndefined();
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);
});
