// Issue 28 items 1–3 in real Chromium against the local relay: the home screen names sessions by project then
// machine (never a cut temp path), shows one row per project and machine, orders rows waiting first then by
// activity — the same live and after a reload —, lets a session whose agent left be removed from the device,
// says "waiting" only while a call waits (translated), and a sealed thread's empty state says why it is empty.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, InboxSession, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { homeRows, labelsFor } from "../../shared/inbox/names.js";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";
import { Machine, ok, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();
const relay = fx.relay;

const TMP = "/tmp/tmp.5aCK2qwSs9";
const createInbox = () => ok<MachineCreated>(relay(), "POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "vm" });
const inboxSession = (m: MachineCreated, project_dir: string, host = "vm") =>
  ok<SessionCreated & { inbox_id: string }>(relay(), "POST", "/api/inbox/sessions", m.machine_credential, { project_dir, host });

/** Opens a fresh `#pair=` link and waits until the inbox is stored on the device. */
async function pairPage(page: Page, m: MachineCreated): Promise<void> {
  const code = await ok<CodeIssued>(relay(), "POST", "/api/inbox/pairings", m.machine_credential);
  await page.goto(code.url!);
  await expect.poll(() => page.evaluate(() => localStorage.getItem("lineup.inboxes")?.includes("device_credential") ?? false), { timeout: 15_000 }).toBe(true);
}

const rowIds = (page: Page) => page.locator(".session-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-sid")));

async function look(page: Page, theme: "light" | "dark", lang: "en" | "zh", path = "/"): Promise<void> {
  await page.emulateMedia({ colorScheme: theme });
  await page.evaluate(
    ([l, th]) => {
      localStorage.setItem("lineup.lang", JSON.stringify(l));
      localStorage.setItem("lineup.theme", JSON.stringify(th));
    },
    [lang, theme] as const,
  );
  await page.goto(`${relay()}${path}`);
}

describe("session names and the home order (shared/inbox/names.ts)", () => {
  const sess = (id: string, project_dir: string, o: Partial<InboxSession> = {}): InboxSession => ({
    session_id: id,
    label: "",
    project_dir,
    host: "vm",
    machine_id: "mc_1",
    created_at: 0,
    expires_at: 0,
    agent_online: false,
    pending: 0,
    last_activity: 0,
    waiting: [],
    ...o,
  });
  it("twins of one project and machine keep the project's name instead of a left-cut temp path (the E2E switch made them)", () => {
    const l = labelsFor([sess("plain", `${TMP}/projB`), sess("sealed", `${TMP}/projB`, { sealed: true }), sess("p", `${TMP}/p`)]);
    expect(l.get("plain")).toBe("projB · vm");
    expect(l.get("sealed")).toBe("projB · vm");
    expect(l.get("p")).toBe("p · vm");
  });
  it("lists one row per project and machine, waiting first then the newest activity; an older twin only while it waits", () => {
    const old = sess("old", `${TMP}/projB`, { created_at: 1, last_activity: 50 });
    const cur = sess("cur", `${TMP}/projB`, { created_at: 2, last_activity: 10 });
    const c = sess("c", `${TMP}/projC`, { created_at: 3, last_activity: 30 });
    const d = sess("d", `${TMP}/projD`, { created_at: 4, last_activity: 20, waiting: [{ call_id: "x", name: "confirm", text: "?", created_at: 5 }] });
    const waits = (s: InboxSession) => s.waiting.length > 0;
    expect(homeRows([old, cur, c, d], waits).map((s) => s.session_id)).toEqual(["d", "c", "cur"]);
    const oldWaiting = { ...old, waiting: d.waiting };
    expect(homeRows([oldWaiting, cur, c, d], waits).map((s) => s.session_id)).toEqual(["old", "d", "c", "cur"]);
  });
});

describe("the home screen (issue 28)", () => {
  it("names rows by project then machine with the project's initial, one row per project, waiting first, the same after a reload; light, dark, English, Chinese", async () => {
    const m = await createInbox();
    const oldB = await inboxSession(m, `${TMP}/projB`);
    await new Promise((r) => setTimeout(r, 1100)); // twins started in different seconds, as they are in life
    const b = await inboxSession(m, `${TMP}/projB`);
    const p = await inboxSession(m, `${TMP}/p`);
    const c = await inboxSession(m, `${TMP}/projC`);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const agents: Agent[] = [];
    try {
      await pairPage(page, m);
      await page.goto(`${relay()}/`);
      const row = (s: SessionCreated) => page.locator(`.session-row[data-sid="${s.session_id}"]`);
      await row(c).waitFor({ timeout: 10_000 });
      expect(await row(b).locator(".label").textContent()).toBe("projB · vm");
      expect(await row(p).locator(".label").textContent()).toBe("p · vm");
      expect(await row(c).locator(".avatar").textContent()).toBe("P");
      expect(await row(b).locator(".host").textContent()).toBe(`${TMP}/projB`);
      // The older session of projB on vm is not a second, identical row.
      expect(await row(oldB).count()).toBe(0);
      expect(await page.locator(".session-row").count()).toBe(3);

      // A call of p waits: p comes first, live and after a reload, in the same order.
      const ap = await Agent.connect(p);
      agents.push(ap);
      await ap.appTools();
      ap.call("w1", "confirm", { question: "Deploy p?" });
      await page.locator('.wait-row[data-call="w1"]').waitFor({ timeout: 10_000 });
      await expect.poll(async () => (await rowIds(page))[0], { timeout: 10_000 }).toBe(p.session_id);
      const live = await rowIds(page);
      await page.reload();
      await page.locator('.wait-row[data-call="w1"]').waitFor({ timeout: 10_000 });
      await expect.poll(() => rowIds(page), { timeout: 10_000 }).toEqual(live);

      for (const theme of ["light", "dark"] as const) {
        for (const lang of ["en", "zh"] as const) {
          await look(page, theme, lang);
          await page.locator('.wait-row[data-call="w1"]').waitFor({ timeout: 10_000 });
          await expect.poll(() => rowIds(page), { timeout: 10_000 }).toEqual(live);
          await page.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 10_000 });
          await shot(page, `phone-home-names-${theme}-${lang}`);
        }
      }

      // The older projB session gets a call: it is listed while it waits, told apart by when each started.
      await look(page, "light", "en");
      const ao = await Agent.connect(oldB);
      agents.push(ao);
      await ao.appTools();
      ao.call("w2", "confirm", { question: "Old session asks?" });
      await row(oldB).waitFor({ timeout: 10_000 });
      expect(await row(oldB).locator(".label").textContent()).toBe("projB · vm");
      const started = async (s: SessionCreated) => ((await row(s).locator(".host").textContent()) ?? "").replace(`${TMP}/projB`, "");
      expect(await started(oldB)).toMatch(/^ · .*\d/);
      expect(await started(b)).toMatch(/^ · .*\d/);
      expect(await started(oldB)).not.toBe(await started(b));
      expect(await row(p).locator(".host").textContent()).toBe(`${TMP}/p`);
      await page.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 10_000 });
      await shot(page, "phone-home-names-twins-waiting");
    } finally {
      for (const a of agents) a.close();
      await ctx.close();
    }
  }, 120_000);

  it("an inbox session whose agent left can be removed from the device; it stays removed after a reload and comes back when its agent does", async () => {
    const m = await createInbox();
    const gone = await inboxSession(m, "/srv/old-project");
    const kept = await inboxSession(m, "/srv/api-server");
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pairPage(page, m);
      await page.goto(`${relay()}/`);
      const row = page.locator(`.session-row[data-sid="${gone.session_id}"]`);
      await row.waitFor({ timeout: 10_000 });
      page.once("dialog", (d) => void d.accept());
      await row.getByRole("button", { name: /Forget/ }).click();
      await row.waitFor({ state: "detached", timeout: 10_000 });
      await page.reload();
      await page.locator(`.session-row[data-sid="${kept.session_id}"]`).waitFor({ timeout: 10_000 });
      expect(await row.count()).toBe(0);
      // Its agent comes back: the session is active again, so it is listed again.
      const a = await Agent.connect(gone);
      try {
        await row.waitFor({ timeout: 15_000 });
      } finally {
        a.close();
      }
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it('an agent\'s left-over "waiting" status is not shown while nothing waits (a permission hook that exited left it); shown translated while a call waits', async () => {
    const m = await createInbox();
    const s = await inboxSession(m, "/srv/hooks");
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const agent = await Agent.connect(s);
    try {
      await pairPage(page, m);
      await agent.appTools();
      agent.send({ type: "status", state: "waiting", detail: "permission: Bash" });
      await page.goto(`${relay()}/s/${s.session_id}`);
      const header = page.locator("header .conn-line");
      await page.locator('header .conn-line[data-conn="online"]').waitFor({ timeout: 10_000 });
      // The status reached the page (a second status after it proves the first was taken in)…
      agent.send({ type: "status", state: "working" });
      await header.locator(".status", { hasText: "working" }).waitFor({ timeout: 10_000 });
      agent.send({ type: "status", state: "waiting", detail: "permission: Bash" });
      await expect.poll(() => header.locator(".status").count(), { timeout: 10_000 }).toBe(0);
      expect(await header.innerText()).not.toContain("waiting");
      await shot(page, "phone-status-no-stale-waiting");

      agent.call("c1", "confirm", { question: "Run rm -rf node_modules?" });
      await header.locator(".status", { hasText: "waiting — permission: Bash" }).waitFor({ timeout: 10_000 });
      for (const theme of ["light", "dark"] as const) {
        await look(page, theme, "zh", `/s/${s.session_id}`);
        await header.locator(".status", { hasText: "等待中 — permission: Bash" }).waitFor({ timeout: 10_000 });
        await shot(page, `phone-status-waiting-${theme}-zh`);
      }
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);

  it("a sealed thread that is empty after a reload says earlier messages are not kept on this device, in English and Chinese", async () => {
    const mc = await Machine.create(relay());
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pairSealed(page, mc);
      const s = await mc.sealedSession("/srv/sealed-project");
      await page.goto(`${relay()}/s/${s.session_id}`);
      await page.locator(".thread .empty", { hasText: "not kept on" }).waitFor({ timeout: 15_000 });
      expect(await page.locator(".thread .empty").innerText()).not.toContain("Nothing here yet");
      for (const theme of ["light", "dark"] as const) {
        for (const lang of ["en", "zh"] as const) {
          await look(page, theme, lang, `/s/${s.session_id}`);
          await page.locator(".thread .empty", { hasText: lang === "en" ? "not kept on" : "不会保存在本设备上" }).waitFor({ timeout: 15_000 });
          await shot(page, `phone-sealed-empty-${theme}-${lang}`);
        }
      }
    } finally {
      await ctx.close();
    }
  }, 120_000);

  it("a remote-MCP card does not say the agent is offline while its caller (POST /mcp) waits; an agent's own call still does", async () => {
    const s = await createSession(relay(), "mcp project");
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const ac = new AbortController();
    try {
      const a = await Agent.connect(s);
      await pair(page, s);
      // The agent's own call, then the agent leaves: that card says so.
      a.call("own1", "confirm", { question: "Asked by the agent?" });
      await page.locator('[data-call="own1"]').waitFor({ timeout: 10_000 });
      a.close();
      await page.locator('header .conn-line[data-conn="agent-away"]').waitFor({ timeout: 10_000 });
      await page.locator('[data-call="own1"] .card-note[data-note="agent-away"]').waitFor({ timeout: 10_000 });
      // A remote-MCP client asks and waits on its open stream.
      const res = fetch(`${relay()}/mcp`, {
        method: "POST",
        signal: ac.signal,
        headers: { authorization: `Bearer ${s.agent_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "confirm", arguments: { question: "Asked over MCP?" } } }),
      });
      res.catch(() => undefined);
      const card = page.locator(".card", { hasText: "Asked over MCP?" });
      await card.waitFor({ timeout: 10_000 });
      expect(await page.locator('header .conn-line[data-conn="agent-away"]').count()).toBe(1);
      expect(await card.locator(".card-note").count()).toBe(0);
      await shot(page, "phone-mcp-card-caller-waiting");
    } finally {
      ac.abort();
      await ctx.close();
    }
  }, 90_000);
});
