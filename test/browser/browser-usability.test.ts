// The app a person can trust at a glance (issue 13), in real Chromium against the local relay: nothing widens
// the page or pushes the header and composer away; the human's own messages sit on their side on every
// device; the connection state stays in view and tells no network, an unreachable relay and an offline agent
// apart; a replaced tab refuses answers and takes over in one tap; new items scroll in or wait behind a
// pill; the waiting card is the keyboard's first stop; an ask_question has one composer; history rows say
// how each call ended; a choice is selected, then submitted; short deadlines count down; the "Direct LAN
// agent" form lands in the agent's own session and says when an origin is refused.
// The app comes from LINEUP_TEST_WEB_DIR when set (a fresh `vite build --outDir`), else dist/web.
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { startLanServer } from "../../adapter/lan/server.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";
import { connect, wsUrl } from "../helpers/raw-client.js";
import { freePort } from "../helpers/relay.js";

const fx = useBrowser();
const relay = fx.relay;

async function ok<T>(method: string, path: string, token?: string, body?: unknown, base = relay()): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

type Setup = { s: SessionCreated; agent: Agent; ctx: BrowserContext; page: Page; close: () => Promise<void> };

/** A guest session with its agent online and a phone (or desktop) page paired to it. */
async function setup(label: string, kind: "phone" | "desktop" = "phone", locale = "en-US"): Promise<Setup> {
  const s = await createSession(relay(), label);
  const agent = await Agent.connect(s);
  const ctx = await fx.context(kind, locale);
  const page = await ctx.newPage();
  await pair(page, s);
  await agent.appTools();
  return {
    s,
    agent,
    ctx,
    page,
    close: async () => {
      agent.close();
      await ctx.close();
    },
  };
}

const say = (agent: Agent, text: string) => agent.send({ type: "message", content: [{ type: "text", text }] });
const width = (page: Page) => page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, viewport: innerWidth }));
/** The element's box against the viewport: fully on screen? */
const onScreen = (page: Page, sel: string) =>
  page
    .locator(sel)
    .first()
    .evaluate((e) => {
      const r = e.getBoundingClientRect();
      return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 0.5 && r.right <= innerWidth + 0.5 && r.height > 0;
    });

describe("a layout that never breaks", () => {
  for (const [kind, locale] of [
    ["phone", "en-US"],
    ["phone", "zh-CN"],
    ["desktop", "en-US"],
  ] as const) {
    it(`a 300-character URL, option, path and code line (${kind}, ${locale}): never wider than the viewport; header and composer stay on screen`, async () => {
      const { agent, page, close } = await setup(`Layout agent ${kind} ${locale}`, kind, locale);
      try {
        const url = `https://example.com/${"a/very/long/path/that/does/not/stop/".repeat(9)}`.slice(0, 300);
        const path = `/srv/${"very_long_directory_name_without_any_spaces_".repeat(7)}`.slice(0, 300);
        const option = `${"x".repeat(150)}/${"y".repeat(149)}`;
        expect([url.length, path.length, option.length]).toEqual([300, 300, 300]);
        say(agent, `See ${url}\n\n\`\`\`\n${"const wide = 1; ".repeat(30)}\n\`\`\`\n\n${path}`);
        for (let i = 0; i < 12; i++) say(agent, `filler message ${i} with some ordinary words in it`);
        agent.call("lo1", "choice", { question: `Which file? ${path}`, options: [option, path, "the short one"] });
        const card = page.locator('[data-call="lo1"]');
        await card.getByRole("radio", { name: "the short one" }).waitFor({ timeout: 10_000 });
        const w = await width(page);
        expect(w.scroll).toBeLessThanOrEqual(w.viewport);
        for (const sel of ['[data-call="lo1"] .option', '[data-call="lo1"] .question']) {
          const right = await page
            .locator(sel)
            .first()
            .evaluate((e) => e.getBoundingClientRect().right);
          expect(right, sel).toBeLessThanOrEqual(w.viewport);
        }
        // Scrolled to the top and to the middle, the header (with the connection state) and the composer are on screen.
        for (const y of [0, 0.5]) {
          await page.evaluate((f) => scrollTo(0, (document.documentElement.scrollHeight - innerHeight) * f), y);
          await page.waitForTimeout(100);
          expect(await onScreen(page, "header.top"), `header at ${y}`).toBe(true);
          expect(await onScreen(page, "header .conn-line"), `status at ${y}`).toBe(true);
          expect(await onScreen(page, ".dock"), `composer at ${y}`).toBe(true);
        }
        await shot(page, `${kind}-${locale}-long-content`);
      } finally {
        await close();
      }
    }, 60_000);
  }

  it("a session title that is a long path keeps its distinguishing end", async () => {
    const { page, close } = await setup("/home/dev/projects/clients/acme-corporation/services/billing-service");
    try {
      await page.locator("header h1 .tailclip").waitFor({ timeout: 10_000 });
      const seen = await page.locator("header h1").evaluate((h) => {
        const box = h.getBoundingClientRect();
        const text = h.querySelector("bdi")!.firstChild as Text;
        const at = (i: number) => {
          const r = document.createRange();
          r.setStart(text, i);
          r.setEnd(text, i + 1);
          const b = r.getBoundingClientRect();
          return b.left >= box.left - 0.5 && b.right <= box.right + 0.5;
        };
        return { first: at(0), last: at(text.length - 1), overflows: h.querySelector(".tailclip")!.scrollWidth > h.clientWidth };
      });
      expect(seen).toEqual({ first: false, last: true, overflows: true });
    } finally {
      await close();
    }
  }, 60_000);
});

describe("whose message is whose", () => {
  it("the human's messages from another of their devices sit on their side, named, never on the agent's", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/own", host: "laptop" });
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("desktop");
    try {
      const pa = await a.newPage();
      const pb = await b.newPage();
      for (const [page, name] of [
        [pa, "Phone A"],
        [pb, "Desk B"],
      ] as const) {
        const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential, {});
        await page.goto(code.url!);
        await expect.poll(() => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
        const dev = (
          JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes")))!) as Array<{ device_id: string; device_credential: string }>
        )[0]!;
        await ok("PATCH", `/api/inbox/devices/${dev.device_id}`, dev.device_credential, { name });
        await page.goto(`${relay()}/s/${s.session_id}`);
        await page.locator(`header .presence.on`).waitFor({ timeout: 15_000 });
      }
      await agent.appTools();
      say(agent, "hello from the agent");
      await pa.locator(".bubble.agent").waitFor({ timeout: 10_000 });
      await pa.locator("#chat-text").fill("sent from phone A");
      await pa.locator("#chat-text").press("Enter");
      expect((await agent.next((f) => f.type === "message" && JSON.stringify(f.content).includes("phone A"))).from).toMatchObject({ role: "app" });
      // On A: mine. On B: also on the human's side, saying which device, not the agent's.
      await pa.locator(".bubble.mine", { hasText: "sent from phone A" }).waitFor({ timeout: 10_000 });
      const onB = pb.locator(".bubble", { hasText: "sent from phone A" });
      await onB.waitFor({ timeout: 10_000 });
      expect(await onB.getAttribute("class")).toMatch(/\bmine\b/);
      await expect.poll(() => onB.locator(".who").textContent(), { timeout: 10_000 }).toBe("from Phone A");
      const sides = await pb.evaluate(() => {
        const mine = document.querySelector(".bubble.mine")!.getBoundingClientRect();
        const agentB = document.querySelector(".bubble.agent")!.getBoundingClientRect();
        return { mineRight: mine.right, agentLeft: agentB.left, thread: document.querySelector(".thread")!.getBoundingClientRect() };
      });
      expect(sides.thread.right - sides.mineRight).toBeLessThan(2); // right-aligned
      expect(sides.agentLeft - sides.thread.left).toBeLessThan(2); // the agent stays left
      // After a reload the history keeps the sides.
      await pb.reload();
      await pb.locator(".bubble.mine", { hasText: "sent from phone A" }).waitFor({ timeout: 10_000 });
      await shot(pb, "desktop-own-message-from-other-device");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 90_000);

  it("in a guest session, a message from another browser holding the link is the human's too", async () => {
    const { s, agent, page, close } = await setup("Guest own agent");
    const other = await fx.context("desktop");
    try {
      const p2 = await other.newPage();
      await pair(p2, s);
      await p2.locator("#chat-text").fill("typed on the desktop");
      await p2.locator("#chat-text").press("Enter");
      const bubble = page.locator(".bubble", { hasText: "typed on the desktop" });
      await bubble.waitFor({ timeout: 10_000 });
      expect(await bubble.getAttribute("class")).toMatch(/\bmine\b/);
      expect(await bubble.locator(".who").textContent()).toBe("from your other device");
    } finally {
      await other.close();
      await close();
    }
    void agent;
  }, 60_000);
});

describe("honest connection state, always in view", () => {
  it("stays on screen while scrolled; tells no network, an unreachable relay and an offline agent apart; cards say what happens to an answer", async () => {
    const { s, agent, ctx, page, close } = await setup("Status agent");
    try {
      for (let i = 0; i < 25; i++) say(agent, `line ${i}: ${"words ".repeat(12)}`);
      agent.call("st1", "confirm", { question: "Still good?" });
      await page.locator('[data-call="st1"]').waitFor({ timeout: 10_000 });
      const line = page.locator("header .conn-line");
      expect(await line.getAttribute("data-conn")).toBe("online");
      expect(await line.textContent()).toContain("Agent online");
      await page.evaluate(() => scrollTo(0, document.documentElement.scrollHeight / 3));
      expect(await onScreen(page, "header .conn-line")).toBe(true);

      // The browser goes offline.
      await ctx.setOffline(true);
      await page.locator('header .conn-line[data-conn="no-network"]').waitFor({ timeout: 5_000 });
      expect(await onScreen(page, "header .conn-line")).toBe(true);
      expect(await page.locator('[data-call="st1"] .card-note').textContent()).toContain("sent when the connection is back");
      await shot(page, "phone-status-no-network");
      await ctx.setOffline(false);
      await page.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 20_000 });

      // The agent leaves: the status says so, and the card says the answer reaches it when it returns.
      agent.close();
      await page.locator('header .conn-line[data-conn="agent-away"]').waitFor({ timeout: 10_000 });
      expect(await page.locator("header .conn-line").textContent()).toContain("Agent offline");
      const note = page.locator('[data-call="st1"] .card-note[data-note="agent-away"]');
      await note.waitFor({ timeout: 5_000 });
      expect(await note.textContent()).toContain("reaches it when it returns");
      await shot(page, "phone-status-agent-away");
      await page.locator('[data-call="st1"]').getByRole("button", { name: "Yes" }).click();
      await page.locator('[data-call="st1"][data-state="answered"]').waitFor({ timeout: 5_000 });
      // The relay kept the result for the agent: it gets it when it comes back.
      const back = await Agent.connect(s);
      try {
        expect((await back.result("st1")).result).toEqual({ message: "yes", confirmed: true });
      } finally {
        back.close();
      }
      // Last: the relay cannot be reached although the browser is online (sockets and requests to it fail).
      await page.routeWebSocket(/\/api\/sessions\//, (ws) => ws.close({ code: 1011, reason: "down" }));
      await page.route(/\/api\/sessions\//, (r) => r.abort("connectionrefused"));
      await page.evaluate(() => {
        dispatchEvent(new Event("offline"));
        dispatchEvent(new Event("online"));
      });
      await page.locator('header .conn-line[data-conn="unreachable"]').waitFor({ timeout: 15_000 });
      expect(await page.locator("header .conn-line").textContent()).toContain("Relay unreachable");
      expect(await onScreen(page, "header .conn-line")).toBe(true);
      await shot(page, "phone-status-relay-unreachable");
    } finally {
      await close();
    }
  }, 90_000);

  it("a tab another tab replaced (4409) refuses answers instead of queueing them, and takes over in one tap", async () => {
    const { s, agent, ctx, page: first, close } = await setup("Replaced tab agent");
    try {
      agent.call("rt1", "choice", { question: "Which?", options: ["alpha", "beta"] });
      await first.locator('[data-call="rt1"]').getByRole("radio", { name: "alpha" }).waitFor({ timeout: 10_000 });
      const second = await ctx.newPage();
      await second.goto(`${relay()}/s/${s.session_id}`);
      await second.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 15_000 });
      await first.locator('header .conn-line[data-conn="replaced"]').waitFor({ timeout: 10_000 });
      expect(await first.locator("header .conn-line").textContent()).toContain("Open in another tab");
      const card = first.locator('[data-call="rt1"]');
      expect(await card.locator(".card-note").textContent()).toContain("another tab of this device took over");
      // Nothing in the card answers, and nothing is queued as "sent when back online".
      expect(await card.locator("fieldset.card-body").evaluate((f) => (f as HTMLFieldSetElement).disabled)).toBe(true);
      expect(await card.getByRole("radio", { name: "alpha" }).isDisabled()).toBe(true);
      await card.getByRole("radio", { name: "alpha" }).click({ force: true });
      await card.getByRole("button", { name: "Submit" }).click({ force: true });
      await first.waitForTimeout(500);
      expect(await card.getAttribute("data-state")).toBe("pending");
      expect(await first.evaluate((sid) => localStorage.getItem(`lineup.outbox.${sid}`), s.session_id)).toBeNull();
      expect(await first.locator(".dock textarea").count()).toBe(0); // no chat box either
      await shot(first, "phone-replaced-tab");

      // One tap takes over; the other tab is the replaced one now.
      await card.getByRole("button", { name: "Use here" }).click();
      await first.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 15_000 });
      await second.locator('header .conn-line[data-conn="replaced"]').waitFor({ timeout: 10_000 });
      await card.getByRole("radio", { name: "beta" }).check();
      await card.getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("rt1")).result).toEqual({ message: "beta", selected: ["beta"] });
    } finally {
      await close();
    }
  }, 90_000);
});

describe("thread behaviour", () => {
  it("new items scroll into view at the end; scrolled up, a 'new below' pill brings them", async () => {
    const { agent, page, close } = await setup("Scroll agent");
    try {
      for (let i = 0; i < 30; i++) say(agent, `history ${i}: ${"text ".repeat(15)}`);
      await page.locator(".bubble.agent", { hasText: "history 29" }).waitFor({ timeout: 10_000 });
      await page.waitForTimeout(300);
      const lastVisible = (text: string) =>
        page
          .locator(".bubble, .card", { hasText: text })
          .last()
          .evaluate((e) => {
            const r = e.getBoundingClientRect();
            const dock = document.querySelector(".dock")?.getBoundingClientRect().top ?? innerHeight;
            return r.bottom <= dock + 1 && r.top >= 0;
          });
      say(agent, "arrives at the end");
      await page.locator(".bubble", { hasText: "arrives at the end" }).waitFor({ timeout: 10_000 });
      await expect.poll(() => lastVisible("arrives at the end"), { timeout: 5_000 }).toBe(true);

      await page.evaluate(() => scrollTo(0, 0));
      await page.waitForTimeout(300);
      agent.call("sc1", "confirm", { question: "Arrived while reading?" });
      const pill = page.locator(".pill-below");
      await pill.waitFor({ timeout: 10_000 });
      expect(await pill.textContent()).toContain("1 new below");
      expect(await page.evaluate(() => scrollY)).toBe(0); // not yanked away from what is being read
      await shot(page, "phone-new-below-pill");
      await pill.click();
      await expect.poll(() => lastVisible("Arrived while reading?"), { timeout: 5_000 }).toBe(true);
      await pill.waitFor({ state: "detached", timeout: 5_000 });
    } finally {
      await close();
    }
  }, 60_000);

  it("the waiting card is the keyboard's first stop, and an ask_question has one composer", async () => {
    const { s, agent, page, close } = await setup("Keyboard agent");
    try {
      for (let i = 0; i < 5; i++) say(agent, `before ${i}`);
      agent.call("kb1", "ask_question", { project_directory: "/srv/app", question: "Which **migration**?" });
      await page.locator('[data-call="kb1"] textarea').waitFor({ timeout: 10_000 });
      // One text box: the card's. The dock offers the way to it instead of a second composer.
      expect(await page.locator("textarea").count()).toBe(1);
      expect(await page.locator("#chat-text").count()).toBe(0);
      await page.getByRole("button", { name: "Reply in the question above" }).click();
      expect(await page.evaluate(() => document.activeElement?.closest("[data-call]")?.getAttribute("data-call"))).toBe("kb1");

      // Opened afresh, the first Tab lands inside the waiting card.
      await page.goto(`${relay()}/`);
      await page.locator(`.session-row[data-sid="${s.session_id}"]`).waitFor({ timeout: 10_000 });
      await page.goto(`${relay()}/s/${s.session_id}`);
      // The app's card, not the early script's one drawn before the app started (web/src/early-card.ts: typing begun
      // there goes on in the app's card, browser-phone-open "keeps typing begun on the early card going…").
      await page.locator('#app [data-call="kb1"] textarea').waitFor({ timeout: 10_000 });
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.closest("[data-call]")?.getAttribute("data-call"))).toBe("kb1");
      await page.keyboard.type("the shadow table");
      await page.keyboard.press("Control+Enter");
      expect((await agent.result("kb1")).result).toEqual({ message: "the shadow table" });
      // Answered: the chat composer is back.
      await page.locator("#chat-text").waitFor({ timeout: 5_000 });
    } finally {
      await close();
    }
  }, 60_000);
});

describe("history that reads", () => {
  it("collapsed rows show the question and the outcome in words; approved, changes requested and declined look different", async () => {
    const { agent, page, close } = await setup("History agent");
    try {
      agent.call("h1", "work_report", { project_directory: "/srv/a", summary: "Migrated the **invoices** table to the new currency column" });
      agent.call("h2", "work_report", { project_directory: "/srv/a", summary: "Rewrote the billing export job in streaming mode" });
      agent.call("h3", "work_report", { project_directory: "/srv/a", summary: "Dropped the legacy discounts table after the backup" });
      agent.call("h4", "confirm", { question: "Rotate the API keys now?", yes_label: "Rotate", no_label: "Keep" });
      const card = (id: string) => page.locator(`[data-call="${id}"]`);
      await card("h4").getByRole("button", { name: "Keep" }).waitFor({ timeout: 10_000 });
      await card("h1").getByRole("button", { name: "Approve" }).click();
      await card("h2").locator("textarea").fill("keep the old export for a week");
      await card("h2").getByRole("button", { name: "Request changes" }).click();
      await card("h3").getByRole("button", { name: "Decline" }).click();
      await card("h4").getByRole("button", { name: "Keep" }).click();
      for (const id of ["h1", "h2", "h3", "h4"]) await agent.result(id);
      const row = async (id: string) => {
        const r = card(id);
        await r.locator("summary").waitFor({ timeout: 5_000 });
        return {
          outcome: await r.getAttribute("data-outcome"),
          q: await r.locator("summary .q").textContent(),
          said: await r.locator("summary .outcome b").textContent(),
          color: await r.locator("summary .outcome").evaluate((e) => getComputedStyle(e).color),
          edge: await r.evaluate((e) => getComputedStyle(e).borderLeftColor),
        };
      };
      const [a, b, c, d] = [await row("h1"), await row("h2"), await row("h3"), await row("h4")];
      expect([a.outcome, b.outcome, c.outcome, d.outcome]).toEqual(["approved", "changes", "declined", "no"]);
      expect(a.q).toBe("Migrated the invoices table to the new currency column");
      expect(a.said).toBe("Approved");
      expect(b.said).toBe("Changes requested: keep the old export for a week");
      expect(c.said).toBe("Declined");
      expect(d.said).toBe("Keep");
      expect(d.q).toBe("Rotate the API keys now?");
      expect(new Set([a.color, b.color, c.color]).size).toBe(3);
      expect(new Set([a.edge, b.edge, c.edge]).size).toBe(3);
      await shot(page, "phone-history-outcomes");
    } finally {
      await close();
    }
  }, 60_000);
});

describe("mis-taps are recoverable", () => {
  it("a choice is selected, can be changed, and is sent only by Submit; a short deadline counts down", async () => {
    const { agent, page, close } = await setup("Mis-tap agent");
    try {
      agent.call("mt1", "choice", { question: "Deploy where?", options: ["staging", "production"] }, undefined, 90);
      const card = page.locator('[data-call="mt1"]');
      await card.getByRole("radio", { name: "production" }).waitFor({ timeout: 10_000 });
      expect(await card.getByRole("button", { name: "Submit" }).isDisabled()).toBe(true);
      await card.getByRole("radio", { name: "production" }).check(); // the mis-tap
      await page.waitForTimeout(1_000);
      expect(await card.getAttribute("data-state")).toBe("pending"); // nothing sent yet
      await card.getByRole("radio", { name: "staging" }).check();
      expect(await card.getByRole("radio", { name: "production" }).isChecked()).toBe(false);
      // The countdown: role=timer, m:ss, going down.
      const timer = card.getByRole("timer");
      const read = async () => /(\d+):(\d\d) left/.exec((await timer.textContent()) ?? "");
      const t1 = await read();
      expect(t1).not.toBeNull();
      const s1 = Number(t1![1]) * 60 + Number(t1![2]);
      expect(s1).toBeGreaterThan(60);
      expect(s1).toBeLessThanOrEqual(90);
      await page.waitForTimeout(2_100);
      const t2 = await read();
      expect(Number(t2![1]) * 60 + Number(t2![2])).toBeLessThan(s1);
      await shot(page, "phone-choice-selected-countdown");
      await card.getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("mt1")).result).toEqual({ message: "staging", selected: ["staging"] });

      // A multiple choice: boxes checked and unchecked freely; Submit sends what is checked then.
      agent.call("mt2", "choice", { question: "Which checks?", options: ["unit", "e2e", "lint"], multiple: true });
      const multi = page.locator('[data-call="mt2"]');
      await multi.getByRole("checkbox", { name: "unit" }).waitFor({ timeout: 10_000 });
      expect(await multi.getByRole("button", { name: "Submit" }).isDisabled()).toBe(true);
      await multi.getByRole("checkbox", { name: "unit" }).check();
      await multi.getByRole("checkbox", { name: "lint" }).check();
      await multi.getByRole("checkbox", { name: "unit" }).uncheck();
      await page.waitForTimeout(500);
      expect(await multi.getAttribute("data-state")).toBe("pending");
      await multi.getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("mt2")).result).toMatchObject({ selected: ["lint"] });

      // A new card at the end, while at the end: it scrolls into view by itself (no pill).
      agent.call("mt3", "confirm", { question: "One more at the end?" });
      const last = page.locator('[data-call="mt3"]');
      await last.waitFor({ timeout: 10_000 });
      await expect
        .poll(
          () =>
            last.evaluate((e) => {
              const r = e.getBoundingClientRect();
              const dock = document.querySelector(".dock")?.getBoundingClientRect().top ?? innerHeight;
              return r.top < dock && r.bottom > 0;
            }),
          { timeout: 5_000 },
        )
        .toBe(true);
      expect(await page.locator(".pill-below").count()).toBe(0);
    } finally {
      await close();
    }
  }, 60_000);
});

describe("the Direct LAN agent form", () => {
  it("lands in the session `lineup serve` made, where the question waits; from another origin it says the origin is refused", async () => {
    const token = "usability-lan-token-0123456789";
    const lan = await startLanServer({
      port: await freePort(),
      host: "127.0.0.1",
      token,
      ...(process.env.LINEUP_TEST_WEB_DIR ? { webDir: process.env.LINEUP_TEST_WEB_DIR } : {}),
    });
    const ctx = await fx.context("phone");
    try {
      // What `lineup serve` does at start: one session with the pre-shared token, its agent online and asking.
      const served = await ok<SessionCreated>("POST", "/api/sessions", token, { label: "lineup serve /srv/app" }, lan.url);
      // A raw socket: its queue is attached before `open` (the in-process server says hello at once).
      const agent = await connect(wsUrl(lan.url, served.session_id), { token: served.agent_token, clientId: "agent-main" });
      try {
        await agent.next("hello");
        agent.send({ type: "tool.call", call_id: "lan1", name: "confirm", arguments: { question: "Run the migration?" }, timeout_s: 300 });
        const page = await ctx.newPage();
        await page.goto(`${lan.url}/settings`);
        await page.locator("#lan-url").fill(lan.url);
        await page.locator("#lan-token").fill(token);
        await page.getByRole("button", { name: "Connect" }).click();
        await page.waitForURL(new RegExp(`/s/${served.session_id}$`), { timeout: 10_000 });
        await page.locator('[data-call="lan1"]').getByRole("button", { name: "Yes" }).click();
        expect((await agent.next((f) => f.type === "tool.result" && f.call_id === "lan1", 15_000)).result).toEqual({ message: "yes", confirmed: true });
        expect(await page.locator("header h1").textContent()).toBe("lineup serve /srv/app");

        // The list needs the token and never hands out the agent's.
        const listed = await ok<{ sessions: Array<Record<string, unknown>> }>("GET", "/api/sessions", token, undefined, lan.url);
        expect(listed.sessions.map((x) => x.session_id)).toEqual([served.session_id]);
        expect(JSON.stringify(listed)).not.toContain(served.agent_token);
        expect((await fetch(`${lan.url}/api/sessions`, { headers: { authorization: "Bearer wrong-token-0123456789" } })).status).toBe(401);
        // The relay has no such list: its key only creates.
        expect((await fetch(`${relay()}/api/sessions`, { headers: { authorization: `Bearer ${DEV_RELAY_KEY}` } })).status).toBe(404);

        // The relay's page (another origin) cannot use this agent: say so, with what to do.
        const other = await ctx.newPage();
        await other.goto(`${relay()}/settings`);
        await other.locator("#lan-url").fill(lan.url);
        await other.locator("#lan-token").fill(token);
        await other.getByRole("button", { name: "Connect" }).click();
        const err = other.locator(".settings .err");
        await err.waitFor({ timeout: 10_000 });
        const text = (await err.textContent()) ?? "";
        expect(text).toContain("This agent refuses this page's origin");
        expect(text).toContain(`Open ${lan.url}/ in this browser`);
        expect(text).not.toContain("Failed to fetch");
        await shot(other, "phone-lan-origin-refused");
        // A wrong token says that, on the agent's own page.
        await page.goto(`${lan.url}/settings`);
        await page.locator("#lan-url").fill(lan.url);
        await page.locator("#lan-token").fill("wrong-token-0123456789");
        await page.getByRole("button", { name: "Connect" }).click();
        await page.getByText("The agent refused the token").waitFor({ timeout: 10_000 });
      } finally {
        await agent.close();
      }
    } finally {
      await ctx.close();
      await lan.close();
    }
  }, 90_000);
});
