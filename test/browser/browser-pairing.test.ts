// The PWA in real Chromium against the local relay, with a scripted agent: pairing, answering `choice`,
// first answer wins across two devices, and opening offline from the service worker's cache.
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;

describe("the PWA pairs and answers", () => {
  it("pairs from an app_url, keeps the token out of the address bar, and registers the built-in tools", async () => {
    const s = await createSession(relay(), "Pairing agent");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pair(page, s);
      expect(page.url()).not.toContain(s.app_token);
      expect(page.url()).toMatch(new RegExp(`/s/${s.session_id}$`));
      const list = await agent.appTools();
      const names = (list.tools as Array<{ name: string }>).map((t) => t.name).sort();
      expect(names).toEqual([
        "ask_question",
        "ask_questions",
        "calculator",
        "canvas",
        "choice",
        "confirm",
        "elicitation",
        "input",
        "permission",
        "work_report",
      ]);
      const saved = await page.evaluate(() => localStorage.getItem("lineup.sessions"));
      expect(saved).toContain(s.app_token);
      await expect.poll(() => page.locator("h1").textContent(), { timeout: 10_000 }).toBe("Pairing agent");
      await shot(page, "phone-session-empty");

      agent.send({ type: "status", state: "working", detail: "running tests" });
      await page.getByText("working — running tests").waitFor({ timeout: 10_000 });
      await page.getByRole("button", { name: "Back" }).click();
      const row = page.locator(`.session-row[data-sid="${s.session_id}"]`);
      await row.locator(".presence.on").waitFor({ timeout: 10_000 });
      expect(await row.locator(".label").textContent()).toBe("Pairing agent");
      await shot(page, "phone-home");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("answering a choice card sends the chosen option to the agent, and the card collapses to it", async () => {
    const s = await createSession(relay(), "Choice agent");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pair(page, s);
      await agent.appTools();
      agent.call("c1", "choice", { question: "Deploy where?", options: ["staging", "pre-release", "production"] }, "select");
      const card = page.locator('[data-call="c1"]');
      await card.getByRole("radio", { name: "pre-release" }).waitFor({ timeout: 10_000 });
      await shot(page, "phone-choice-card");
      // Select, then submit (docs/pwa.md "Mis-taps").
      await card.getByRole("radio", { name: "pre-release" }).check();
      await card.getByRole("button", { name: "Submit" }).click();
      const r = await agent.result("c1");
      expect(r.result).toEqual({ message: "pre-release", selected: ["pre-release"] });
      expect(r.action).toBe("select");
      await page.locator('[data-call="c1"][data-state="answered"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('[data-call="c1"] summary b').textContent()).toBe("pre-release");

      // The tool log lists the call with its result and who answered.
      await page.getByRole("tab", { name: /Tool log/ }).click();
      const row = page.locator('.log-row[data-call="c1"]');
      await row.waitFor({ timeout: 5_000 });
      const text = (await row.textContent()) ?? "";
      expect(text).toContain("choice");
      expect(text).toContain("pre-release");
      expect(text).toContain("You");
      await shot(page, "phone-tool-log");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("with two devices the first answer wins and the other device shows it was answered elsewhere", async () => {
    const s = await createSession(relay(), "Race agent");
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("desktop");
    try {
      const pa = await a.newPage();
      const pb = await b.newPage();
      await pair(pa, s);
      await pair(pb, s);
      agent.call("race", "confirm", { question: "Ship it?" });
      await pa.locator('[data-call="race"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 10_000 });
      await pb.locator('[data-call="race"]').getByRole("button", { name: "No" }).waitFor({ timeout: 10_000 });
      await shot(pb, "desktop-confirm-card");
      await pa.locator('[data-call="race"]').getByRole("button", { name: "Yes" }).click();
      const r = await agent.result("race");
      expect(r.result).toEqual({ message: "yes", confirmed: true });
      await pb.locator('[data-call="race"][data-state="elsewhere"]').waitFor({ timeout: 10_000 });
      expect(await pb.locator('[data-call="race"]').textContent()).toContain("Answered on another device");
      await shot(pb, "desktop-answered-elsewhere");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 60_000);

  it("a call that times out or is cancelled by the agent collapses and says so", async () => {
    const s = await createSession(relay(), "Cancel agent");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pair(page, s);
      await agent.appTools();
      agent.call("t1", "confirm", { question: "Quick?" }, undefined, 1);
      agent.call("x1", "input", { question: "Your name?" });
      await page.locator('[data-call="x1"] input').waitFor({ timeout: 10_000 });
      agent.send({ type: "tool.cancel", call_id: "x1" });
      await page.locator('[data-call="x1"][data-state="cancelled"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('[data-call="x1"]').textContent()).toContain("Cancelled by the agent");
      expect((await agent.result("t1")).error).toMatchObject({ code: "timeout" });
      await page.locator('[data-call="t1"][data-state="timeout"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('[data-call="t1"]').textContent()).toContain("Timed out");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("an answer queued offline that lost the race says another device answered first", async () => {
    const s = await createSession(relay(), "Lost race agent");
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("phone");
    try {
      const pa = await a.newPage();
      const pb = await b.newPage();
      await pair(pa, s);
      await pair(pb, s);
      agent.call("lr", "choice", { question: "Pick", options: ["red", "blue"] });
      await pb.locator('[data-call="lr"]').getByRole("radio", { name: "blue" }).waitFor({ timeout: 10_000 });
      await pa.locator('[data-call="lr"]').getByRole("radio", { name: "red" }).waitFor({ timeout: 10_000 });
      await b.setOffline(true);
      await pb.locator('header .conn-line[data-conn="no-network"]').waitFor({ timeout: 5_000 });
      await pb.locator('[data-call="lr"]').getByRole("radio", { name: "blue" }).check();
      await pb.locator('[data-call="lr"]').getByRole("button", { name: "Submit" }).click();
      await pb.locator('[data-call="lr"][data-state="queued"]').waitFor({ timeout: 5_000 });
      await pa.locator('[data-call="lr"]').getByRole("radio", { name: "red" }).check();
      await pa.locator('[data-call="lr"]').getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("lr")).result).toEqual({ message: "red", selected: ["red"] });
      await b.setOffline(false);
      await pb.locator('[data-call="lr"][data-state="lost"]').waitFor({ timeout: 30_000 });
      expect(await pb.locator('[data-call="lr"]').textContent()).toContain("Another device answered first");
      await shot(pb, "phone-lost-race");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 90_000);

  it("Settings pairs with a direct agent by address and token, and Forget removes a session from the device", async () => {
    // The relay accepts POST /api/sessions with a Bearer key exactly as `lineup serve` does with its token.
    const ctx = await fx.context("desktop");
    const page = await ctx.newPage();
    try {
      await page.goto(`${relay()}/settings`);
      await page.locator("#lan-url").fill(relay());
      await page.locator("#lan-token").fill(DEV_RELAY_KEY);
      await shot(page, "desktop-settings");
      await page.getByRole("button", { name: "Connect" }).click();
      await page.waitForURL(/\/s\/[A-Za-z0-9_-]+$/, { timeout: 10_000 });
      const sid = new URL(page.url()).pathname.split("/").pop()!;
      await page.locator(".presence.off").waitFor({ timeout: 10_000 }); // connected, no agent yet
      expect(await page.evaluate(() => localStorage.getItem("lineup.sessions"))).toContain(sid);

      await page.getByRole("button", { name: "Back" }).click();
      const row = page.locator(`.session-row[data-sid="${sid}"]`);
      await row.waitFor({ timeout: 5_000 });
      page.once("dialog", (d) => void d.accept());
      await row.getByRole("button", { name: /Forget/ }).click();
      await row.waitFor({ state: "detached", timeout: 5_000 });
      expect(await page.evaluate(() => localStorage.getItem("lineup.sessions"))).toBe("[]");
      await shot(page, "desktop-home-empty");
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("a second tab of the same device takes over and the first says why it stopped (close 4409)", async () => {
    const s = await createSession(relay(), "Tabs agent");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    try {
      const first = await ctx.newPage();
      await pair(first, s);
      const second = await ctx.newPage();
      await second.goto(`${relay()}/s/${s.session_id}`);
      await second.locator(".presence.on").waitFor({ timeout: 15_000 });
      await first.getByText("open in another tab").waitFor({ timeout: 10_000 });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("reloaded while offline the app still opens, and an answer given offline is sent on reconnect", async () => {
    const s = await createSession(relay(), "Offline agent");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pair(page, s);
      await agent.appTools();
      await page.evaluate(async () => {
        await navigator.serviceWorker.ready;
      });
      agent.call("off1", "input", { question: "Name the release" });
      await page.locator('[data-call="off1"] input').waitFor({ timeout: 10_000 });

      await ctx.setOffline(true);
      await page.reload();
      await page.locator("header h1").waitFor({ timeout: 10_000 });
      expect(await page.locator("header h1").textContent()).toBe("Offline agent");
      // Chromium may still report navigator.onLine after an offline reload: then the relay is "unreachable".
      await page.locator('header .conn-line:is([data-conn="no-network"], [data-conn="unreachable"])').waitFor({ timeout: 5_000 });
      // The pending call survived the reload (kept on the device); answer it while offline.
      await page.locator('[data-call="off1"] input').fill("v1.2");
      await page.locator('[data-call="off1"]').getByRole("button", { name: "Submit" }).click();
      await page.locator('[data-call="off1"][data-state="queued"]').waitFor({ timeout: 5_000 });
      await shot(page, "phone-offline-queued");

      await ctx.setOffline(false);
      const r = await agent.result("off1", 30_000);
      expect(r.result).toEqual({ message: "v1.2" });
      await page.locator('[data-call="off1"][data-state="answered"]').waitFor({ timeout: 10_000 });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);
});
