// Issue 28 §4 in real Chromium against the local relay: a device whose answer lost is told what won and where
// ("Yes · <device> answered first; your answer was not used"), never just "another device answered first";
// two tabs of one device say "another tab", and the tab that answered keeps its "Answered on this device".
// The race is made exact, not timed: device B's session socket goes through a route that holds the relay's
// tool.cancel until B has sent its own answer — the order of a real race, where both answers cross.
import type { BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, shot, useBrowser } from "../helpers/browser.js";
import { Machine, SealedAgent, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();

async function ok<T>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const r = await fetch(`${fx.relay()}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const inboxes = (page: Page) => page.evaluate(() => JSON.parse(localStorage.getItem("lineup.inboxes") ?? "[]") as { name: string; device_id: string }[]);

/** Pairs `page` with the inbox from a fresh `#pair=` link; this device's name in the inbox. */
async function pairPage(page: Page, m: MachineCreated): Promise<string> {
  const code = await ok<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential);
  await page.goto(code.url!);
  await expect.poll(async () => (await inboxes(page)).length, { timeout: 15_000 }).toBe(1);
  return (await inboxes(page))[0]!.name;
}

/** B's session sockets: the relay's tool.cancel of a call waits until B has sent its own tool.result for it. */
async function holdCancels(ctx: BrowserContext): Promise<void> {
  await ctx.routeWebSocket(/\/api\/sessions\/[^/]+\/ws/, (ws: WebSocketRoute) => {
    const server = ws.connectToServer();
    const held = new Map<string, string>();
    const answered = new Set<string>();
    ws.onMessage((m) => {
      server.send(m);
      if (m === "ping") return;
      const f = JSON.parse(String(m)) as { type?: string; call_id?: string };
      if (f.type !== "tool.result" || !f.call_id) return;
      answered.add(f.call_id);
      const c = held.get(f.call_id);
      if (c !== undefined) ws.send(c);
      held.delete(f.call_id);
    });
    server.onMessage((m) => {
      if (m !== "pong") {
        const f = JSON.parse(String(m)) as { type?: string; call_id?: string };
        if (f.type === "tool.cancel" && f.call_id && !answered.has(f.call_id)) return void held.set(f.call_id, String(m));
      }
      ws.send(m);
    });
  });
}

describe("who won (issue 28 §4)", () => {
  it("a device whose answer lost the race is shown the winning answer and the device that gave it, in English and Chinese, light and dark", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/backups", host: "laptop" });
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("phone");
    try {
      await holdCancels(b);
      const pa = await a.newPage();
      const pb = await b.newPage();
      const nameA = await pairPage(pa, m);
      await pairPage(pb, m);
      await pa.goto(`${fx.relay()}/s/${s.session_id}`);
      await pb.goto(`${fx.relay()}/s/${s.session_id}`);
      agent.call("w1", "confirm", { question: "Two devices: delete the old backups?" });
      await pa.locator('[data-call="w1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 15_000 });
      await pb.locator('[data-call="w1"]').getByRole("button", { name: "No" }).waitFor({ timeout: 15_000 });

      // A answers first; B's "No" crosses the relay's cancel (held until B has sent it) and is refused.
      await pa.locator('[data-call="w1"]').getByRole("button", { name: "Yes" }).click();
      expect((await agent.result("w1")).result).toEqual({ message: "yes", confirmed: true });
      await pb.locator('[data-call="w1"]').getByRole("button", { name: "No" }).click();
      const lost = pb.locator('[data-call="w1"][data-state="lost"]');
      await lost.waitFor({ timeout: 15_000 });
      expect(await lost.locator("summary b").textContent()).toBe("Yes");
      expect(await lost.locator(".state").textContent()).toBe(`${nameA} answered first; your answer was not used`);
      await shot(pb, "who-won-lost-en-light");
      await pb.emulateMedia({ colorScheme: "dark" });
      await shot(pb, "who-won-lost-en-dark");

      // After a reload, in Chinese: the log kept who won (a plaintext session).
      await pb.evaluate(() => localStorage.setItem("lineup.lang", JSON.stringify("zh")));
      await pb.reload();
      const zh = pb.locator('[data-call="w1"][data-state="lost"]');
      await zh.waitFor({ timeout: 15_000 });
      // Polled: the Chinese strings are a chunk of their own, and English shows until it is there (web/src/i18n.ts)
      // — the card can be on the page before it (seen once in a run with the page's socket dialled early).
      await expect.poll(() => zh.locator("summary b").textContent(), { timeout: 10_000 }).toBe("是");
      expect(await zh.locator(".state").textContent()).toBe(`${nameA} 先回答了，你的回答未被采用`);
      await shot(pb, "who-won-lost-zh-dark");
      await pb.emulateMedia({ colorScheme: "light" });
      await shot(pb, "who-won-lost-zh-light");

      // The winner keeps its own "Answered on this device".
      expect(await pa.locator('[data-call="w1"][data-state="answered"] .state').textContent()).toBe("Answered on this device");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 120_000);

  it("in a sealed session too, the losing device is shown the winning answer (opened from the winner's own envelope) and the device", async () => {
    const mc = await Machine.create(fx.relay());
    const a = await fx.context("phone");
    const b = await fx.context("phone");
    let agent: SealedAgent | undefined;
    try {
      await holdCancels(b);
      const pa = await a.newPage();
      const pb = await b.newPage();
      await pairSealed(pa, mc);
      await pairSealed(pb, mc);
      const nameA = (await inboxes(pa))[0]!.name;
      const s = await mc.sealedSession("/home/me/sealed-race");
      agent = await SealedAgent.connect(mc, s);
      await pa.goto(`${fx.relay()}/s/${s.session_id}`);
      await pb.goto(`${fx.relay()}/s/${s.session_id}`);
      await agent.call("sw1", "confirm", { question: "Sealed: delete the old backups?" });
      await pa.locator('[data-call="sw1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 20_000 });
      await pb.locator('[data-call="sw1"]').getByRole("button", { name: "No" }).waitFor({ timeout: 20_000 });
      await pa.locator('[data-call="sw1"]').getByRole("button", { name: "Yes" }).click();
      expect((await agent.result("sw1")).open.result).toEqual({ message: "yes", confirmed: true });
      await pb.locator('[data-call="sw1"]').getByRole("button", { name: "No" }).click();
      const lost = pb.locator('[data-call="sw1"][data-state="lost"]');
      await lost.waitFor({ timeout: 15_000 });
      expect(await lost.locator("summary b").textContent()).toBe("Yes");
      expect(await lost.locator(".state").textContent()).toBe(`${nameA} answered first; your answer was not used`);
      await shot(pb, "who-won-lost-sealed");
    } finally {
      agent?.close();
      await a.close();
      await b.close();
    }
  }, 120_000);

  it("an answer made offline that lost names the winning device and answer when the device is back (the inbox's recent list; the cancel went out while it was away)", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/away", host: "laptop" });
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("phone");
    try {
      const pa = await a.newPage();
      const pb = await b.newPage();
      const nameA = await pairPage(pa, m);
      await pairPage(pb, m);
      await pa.goto(`${fx.relay()}/s/${s.session_id}`);
      await pb.goto(`${fx.relay()}/s/${s.session_id}`);
      agent.call("off1", "confirm", { question: "Away: rotate the keys?" });
      await pa.locator('[data-call="off1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 15_000 });
      await pb.locator('[data-call="off1"]').getByRole("button", { name: "No" }).waitFor({ timeout: 15_000 });
      await b.setOffline(true);
      await pb.locator('header .conn-line[data-conn="no-network"]').waitFor({ timeout: 5_000 });
      await pb.locator('[data-call="off1"]').getByRole("button", { name: "No" }).click();
      await pb.locator('[data-call="off1"][data-state="queued"]').waitFor({ timeout: 5_000 });
      await pa.locator('[data-call="off1"]').getByRole("button", { name: "Yes" }).click();
      expect((await agent.result("off1")).result).toEqual({ message: "yes", confirmed: true });
      await b.setOffline(false);
      const lost = pb.locator('[data-call="off1"][data-state="lost"]');
      await lost.waitFor({ timeout: 30_000 });
      await expect.poll(() => lost.locator(".state").textContent(), { timeout: 15_000 }).toBe(`${nameA} answered first; your answer was not used`);
      expect(await lost.locator("summary b").textContent()).toBe("Yes");
      // No banner says "another device" beside a card that names it.
      await expect.poll(() => pb.locator(".session > .banner").filter({ hasText: "Another device" }).count(), { timeout: 10_000 }).toBe(0);
      await shot(pb, "who-won-lost-offline");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 120_000);

  it("two tabs of one device: the tab that did not answer says another tab did, with the answer, and never overwrites the answering tab's own", async () => {
    const m = await ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const s = await ok<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/home/me/tabs", host: "laptop" });
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    try {
      const t1 = await ctx.newPage();
      await pairPage(t1, m);
      await t1.goto(`${fx.relay()}/s/${s.session_id}`);
      // Regression (CI, after the shell came from the service worker at once): a call made between the tab's
      // connect and its tool registration is refused unknown_tool by the relay (a provider is present), so the
      // call waits for the tab to be online.
      await t1.locator(".presence.on").first().waitFor({ timeout: 15_000 });
      agent.call("tb1", "input", { question: "Release name?" });
      await t1.locator('[data-call="tb1"] input').waitFor({ timeout: 15_000 });

      // A second tab of the same device takes the session over (the first is told it is open elsewhere) and answers.
      const t2 = await ctx.newPage();
      await t2.goto(`${fx.relay()}/s/${s.session_id}`);
      await t2.locator('[data-call="tb1"] input').fill("Bluebird");
      await t2.locator('[data-call="tb1"]').getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("tb1")).result).toEqual({ message: "Bluebird" });
      await t2.locator('[data-call="tb1"][data-state="answered"]').waitFor({ timeout: 10_000 });

      // The first tab comes back ("Use here"): the call is closed on the relay, and this device answered it.
      await t1.locator('[data-call="tb1"] .card-note[data-note="replaced"]').waitFor({ timeout: 15_000 });
      await t1.locator('[data-call="tb1"]').getByRole("button", { name: "Use here" }).click();
      const other = t1.locator('[data-call="tb1"][data-state="answered"]');
      await other.waitFor({ timeout: 15_000 });
      expect(await other.locator(".state").textContent()).toBe("Answered in another tab");
      expect(await other.locator("summary b").textContent()).toBe("Bluebird");
      await shot(t1, "who-won-another-tab");

      // The answering tab, reloaded, still says it answered (the first tab did not overwrite the kept log).
      await t2.reload();
      await t2.locator('[data-call="tb1"]').waitFor({ timeout: 15_000 });
      expect(await t2.locator('[data-call="tb1"]').getAttribute("data-state")).toBe("answered");
      expect(await t2.locator('[data-call="tb1"] .state').textContent()).toBe("Answered on this device");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 120_000);
});
