// The PWA as an inbox (docs/inbox.md, docs/pwa.md) in real Chromium against the local relay: pairing from
// a `#pair=` link with no tap, the home screen's "Waiting for you" across sessions of several project
// directories, sessions appearing live, revocation, the device id bound to its credential, and the thread
// fixes (who answered elsewhere and what, a collapsed ask_question's question, a blank input refused).
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, createSession, shot, useBrowser } from "../helpers/browser.js";
import { plainLine } from "../../web/src/calltext.js";
import { browserName, deviceKind } from "../../web/src/devname.js";
import { labelsFor } from "../../web/src/labels.js";
import type { InboxSession } from "../../shared/contract/inbox.js";

const fx = useBrowser();
const relay = fx.relay;

async function call<T>(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${relay()}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function ok<T>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const r = await call<T>(method, path, token, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const createInbox = () => ok<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
const inboxSession = (m: MachineCreated, project_dir: string, host: string) =>
  ok<SessionCreated & { inbox_id: string }>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir, host });
const pairing = (cred: string) => ok<CodeIssued>("POST", "/api/inbox/pairings", cred);

interface Stored {
  origin: string;
  inbox_id: string;
  device_id: string;
  device_credential: string;
  name: string;
}
const stored = async (page: Page): Promise<Stored[]> => JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes"))) ?? "[]") as Stored[];

/** Opens a fresh `#pair=` link and waits for the home screen of the paired inbox. */
async function pairPage(page: Page, m: MachineCreated): Promise<Stored> {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  const code = await pairing(m.machine_credential);
  expect(code.url).toContain("#pair=");
  await page.goto(code.url!);
  try {
    await expect.poll(async () => (await stored(page)).length, { timeout: 15_000 }).toBe(1);
  } catch (e) {
    throw new Error(`pairing did not store the inbox; the page shows: ${await page.locator("body").innerText()}\n${problems.join("\n")}`, { cause: e });
  }
  return (await stored(page))[0]!;
}

/** Controls smaller than 44×44 px (inline links inside agent text excepted). */
const smallTargets = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>("button, a[href], input, select, textarea, summary"))
      .filter((e) => e.offsetParent !== null && !e.closest(".md") && !e.classList.contains("sr-only") && e.getAttribute("aria-hidden") !== "true")
      .map((e) => ({ e, r: e.getBoundingClientRect() }))
      .filter(({ r }) => r.height < 44 || r.width < 44)
      .map(
        ({ e, r }) => `${e.tagName.toLowerCase()}.${e.className} "${(e.textContent ?? "").trim().slice(0, 30)}" ${Math.round(r.width)}×${Math.round(r.height)}`,
      ),
  );

async function contrastViolations(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).withRules(["color-contrast"]).analyze();
  return r.violations.flatMap((v) => v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary ?? ""}`));
}

/** A raw socket's handshake answer: the HTTP status of a refused upgrade, or 101. */
function upgrade(url: string, protocols: string[]): Promise<{ status: number; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols);
    ws.once("open", () => resolve({ status: 101, ws }));
    ws.once("unexpected-response", (_req, res) => resolve({ status: res.statusCode ?? 0 }));
    ws.once("error", () => resolve({ status: 0 }));
  });
}

describe("what the app calls things (pure functions of web/src)", () => {
  const sess = (id: string, project_dir: string | undefined, host: string | undefined, label = ""): InboxSession => ({
    session_id: id,
    label,
    created_at: 0,
    expires_at: 0,
    agent_online: false,
    pending: 0,
    last_activity: 0,
    waiting: [],
    ...(project_dir !== undefined ? { project_dir } : {}),
    ...(host !== undefined ? { host } : {}),
  });
  it("labels sessions by directory and host, deepening only the ones that collide, keeping a long name's end", () => {
    const l = labelsFor([
      sess("a", "/home/me/a/api-server", "laptop"),
      sess("b", "/home/me/b/api-server", "laptop"),
      sess("c", "/home/me/api-server", "desktop"),
      sess("d", undefined, undefined, "lineup call"),
      sess("e", `/srv/work/${"x".repeat(40)}-the-distinguishing-end`, "host"),
      sess("f", "C:\\Users\\me\\web-app\\", "win"),
    ]);
    expect(l.get("a")).toBe("a/api-server · laptop");
    expect(l.get("b")).toBe("b/api-server · laptop");
    expect(l.get("c")).toBe("api-server · desktop");
    expect(l.get("d")).toBe("lineup call");
    expect(l.get("e")!.startsWith("…")).toBe(true);
    expect(l.get("e")).toMatch(/the-distinguishing-end · host$/);
    expect(l.get("f")).toBe("web-app · win");
  });
  it("names a device from its user agent", () => {
    const pixel = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36";
    expect(`${deviceKind(pixel, 5, "Pixel 8")} · ${browserName(pixel, ["Google Chrome", "Chromium"])}`).toBe("Pixel 8 · Chrome");
    expect(deviceKind(pixel, 5)).toBe("Android");
    const iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
    expect(`${deviceKind(iphone, 5)} · ${browserName(iphone)}`).toBe("iPhone · Safari");
    const ipad = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15";
    expect(deviceKind(ipad, 5)).toBe("iPad");
    expect(deviceKind(ipad, 0)).toBe("Mac");
    const linux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36";
    expect(`${deviceKind(linux, 0)} · ${browserName(linux, ["Chromium", "Not?A_Brand"])}`).toBe("Linux · Chromium");
    expect(browserName("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0")).toBe("Firefox");
    expect(browserName(`${linux} Edg/130.0.0.0`)).toBe("Edge");
  });
  it("reads a markdown question as one plain line", () => {
    expect(plainLine("## Deploy **api-server** now?\n\nmore")).toBe("Deploy api-server now?");
    expect(plainLine("> see [the runbook](https://x.test) and `make`")).toBe("see the runbook and make");
    expect(plainLine("```\ncode\n```")).toBe("code");
  });
});

describe("the PWA as an inbox", () => {
  it("pairs from a #pair= link with no tap, lists sessions by project and host, and answers every waiting call from home", async () => {
    const m = await createInbox();
    const s1 = await inboxSession(m, "/home/me/work/clients/api-server", "laptop");
    const s2 = await inboxSession(m, "/home/me/web-app", "desktop");
    const a1 = await Agent.connect(s1);
    const a2 = await Agent.connect(s2);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const me = await pairPage(page, m);
      // The code left the address bar at once; the device and its credential are on the device.
      expect(page.url()).not.toContain("#pair");
      expect(page.url()).not.toContain(me.inbox_id + ".");
      expect(me.inbox_id).toBe(m.inbox_id);
      expect(me.device_id).toMatch(/^dv_/);
      expect(me.device_credential).toMatch(/^lud1\./);
      expect(me.origin).toBe(relay());
      expect(me.name).toMatch(/ · /);
      await page.getByText(`Paired as “${me.name}”`).waitFor({ timeout: 5_000 });

      const row1 = page.locator(`.session-row[data-sid="${s1.session_id}"]`);
      const row2 = page.locator(`.session-row[data-sid="${s2.session_id}"]`);
      await row1.waitFor({ timeout: 10_000 });
      await row2.waitFor({ timeout: 10_000 });
      expect(await row1.locator(".label").textContent()).toBe("api-server · laptop");
      expect(await row2.locator(".label").textContent()).toBe("web-app · desktop");
      const homeText = (await page.locator("main").innerText()) ?? "";
      expect(homeText).not.toContain(s1.session_id);
      expect(homeText).not.toContain(s2.session_id);

      // Both sessions got the device's connection (it registered the built-in tools in each).
      await a1.appTools();
      await a2.appTools();
      await row1.locator(".presence.on").waitFor({ timeout: 10_000 });
      await row2.locator(".presence.on").waitFor({ timeout: 10_000 });

      a1.call("q1", "ask_question", { project_directory: "/home/me/work/clients/api-server", question: "Deploy **api-server** now?\n\nIt has 3 migrations." });
      a2.call("c2", "confirm", { question: "Ship web-app?" });
      const w1 = page.locator('.wait-row[data-call="q1"]');
      const w2 = page.locator('.wait-row[data-call="c2"]');
      await w1.waitFor({ timeout: 10_000 });
      await w2.waitFor({ timeout: 10_000 });
      expect(await w1.locator(".wait-text").textContent()).toContain("Deploy");
      expect(await w1.locator(".wait-text").textContent()).toContain("api-server now?");
      expect(await w1.locator(".wait-session").textContent()).toBe("api-server · laptop");
      expect(await w2.locator(".wait-text").textContent()).toBe("Ship web-app?");
      expect(await w2.locator(".wait-session").textContent()).toBe("web-app · desktop");
      expect(await row1.locator(".badge").textContent()).toBe("1");
      await shot(page, "phone-inbox-home");

      // Tap → that session with its card; the header shows the label.
      await w2.click();
      await page.waitForURL(new RegExp(`/s/${s2.session_id}$`));
      expect(await page.locator("header h1").textContent()).toBe("web-app · desktop");
      const card2 = page.locator('[data-call="c2"]');
      await card2.getByRole("button", { name: "Yes" }).click();
      expect((await a2.result("c2")).result).toEqual({ message: "yes", confirmed: true });

      await page.getByRole("button", { name: "Back" }).click();
      await w2.waitFor({ state: "detached", timeout: 10_000 });
      await w1.click();
      await page.waitForURL(new RegExp(`/s/${s1.session_id}$`));
      const card1 = page.locator('[data-call="q1"]');
      await card1.locator("textarea").fill("yes, go");
      await card1.getByRole("button", { name: "Send" }).click();
      expect((await a1.result("q1")).result).toEqual({ message: "yes, go" });
      // Collapsed, an ask_question shows its question, not "Question".
      await page.locator('[data-call="q1"][data-state="answered"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('[data-call="q1"] summary .q').textContent()).toBe("Deploy api-server now?");

      await page.getByRole("button", { name: "Back" }).click();
      await page.getByText("Nothing is waiting for you.").waitFor({ timeout: 10_000 });

      // A session created after pairing appears live, with no reload.
      const s3 = await inboxSession(m, "/srv/billing", "server");
      const row3 = page.locator(`.session-row[data-sid="${s3.session_id}"]`);
      await row3.waitFor({ timeout: 10_000 });
      expect(await row3.locator(".label").textContent()).toBe("billing · server");
      const a3 = await Agent.connect(s3);
      try {
        await a3.appTools(); // the device connected to it on its own
        a3.call("i3", "input", { question: "Invoice prefix?" });
        await page.locator('.wait-row[data-call="i3"]').waitFor({ timeout: 10_000 });
      } finally {
        a3.close();
      }
    } finally {
      a1.close();
      a2.close();
      await ctx.close();
    }
  }, 90_000);

  it("a used or expired pairing link says so plainly, and a v1 link still pairs a guest session next to the inbox", async () => {
    const m = await createInbox();
    const code = await pairing(m.machine_credential);
    // Spend the code elsewhere first.
    await ok<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "other" });
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await page.goto(code.url!);
      // The command is shown as code, not between literal backticks (issue 28).
      await page.getByText("This pairing link was already used or has expired — run lineup pair again.").waitFor({ timeout: 10_000 });
      expect(await page.locator(".banner.notice code").textContent()).toBe("lineup pair");
      expect(page.url()).not.toContain("#pair");
      expect(await stored(page)).toEqual([]);

      await pairPage(page, m);
      const guest = await createSession(relay(), "Guest agent");
      await page.goto(guest.app_url);
      await page.locator(".presence").first().waitFor({ timeout: 10_000 });
      await page.getByRole("button", { name: "Back" }).click();
      const row = page.locator(`.session-row[data-sid="${guest.session_id}"]`);
      await row.waitFor({ timeout: 10_000 });
      expect(await row.locator(".tag").textContent()).toBe("guest link");
      // The label comes from the status fetch, which runs beside the socket: it may land after the presence.
      await expect.poll(() => row.locator(".label").textContent(), { timeout: 10_000 }).toBe("Guest agent");
      expect(await stored(page)).toHaveLength(1); // the inbox is still there
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("revoked: within 5 s the app says the device was removed, stops, forgets the credential, which then gets 401", async () => {
    const m = await createInbox();
    const s = await inboxSession(m, "/home/me/revoke-me", "laptop");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const me = await pairPage(page, m);
      await page.locator(`.session-row[data-sid="${s.session_id}"] .presence.on`).waitFor({ timeout: 10_000 });
      await agent.appTools();
      const t0 = Date.now();
      expect((await call("DELETE", `/api/inbox/devices/${me.device_id}`, m.machine_credential)).status).toBe(204);
      await page.getByText("This device was removed from the inbox").waitFor({ timeout: 5_000 });
      expect(Date.now() - t0).toBeLessThan(5_000);
      await shot(page, "phone-inbox-revoked");
      await expect.poll(() => stored(page), { timeout: 2_000 }).toEqual([]);
      expect(await page.locator(".session-row").count()).toBe(0);
      expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("lineup.inboxstate.")))).toEqual([]);
      // Refused everywhere now.
      expect((await call("GET", "/api/inbox", me.device_credential)).status).toBe(401);
      expect((await call("GET", `/api/sessions/${s.session_id}`, me.device_credential)).status).toBe(401);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("another device cannot connect as this device's id, and this device stays connected", async () => {
    const m = await createInbox();
    const s = await inboxSession(m, "/home/me/bound", "laptop");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const me = await pairPage(page, m);
      await page.locator(`.session-row[data-sid="${s.session_id}"]`).click();
      await page.locator("header .presence.on").waitFor({ timeout: 10_000 });
      await agent.appTools();

      const code = await pairing(m.machine_credential);
      const other = await ok<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "intruder" });
      const url = `${s.ws_url}?client_id=${me.device_id}`;
      expect((await upgrade(url, ["lineup.v1", `lineup.token.${other.device_credential}`])).status).toBe(403);
      // A guest (v1) token cannot take a device id either.
      expect((await upgrade(url, ["lineup.v1", `lineup.token.${s.app_token}`])).status).toBe(403);

      await new Promise((r) => setTimeout(r, 1_500));
      expect(await page.locator('header .conn-line[data-conn="stopped"], header .conn-line[data-conn="replaced"]').count()).toBe(0);
      await page.locator("header .presence.on").waitFor({ timeout: 2_000 });
      // And it still answers.
      agent.call("b1", "choice", { question: "Still there?", options: ["yes", "no"] });
      await page.locator('[data-call="b1"]').getByRole("radio", { name: "yes" }).check();
      await page.locator('[data-call="b1"]').getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("b1")).result).toEqual({ message: "yes", selected: ["yes"] });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("a call answered on another device shows which one and what; a blank input cannot be submitted", async () => {
    const m = await createInbox();
    const s = await inboxSession(m, "/home/me/two-devices", "laptop");
    const agent = await Agent.connect(s);
    const a = await fx.context("phone");
    const b = await fx.context("desktop");
    try {
      const pa = await a.newPage();
      const pb = await b.newPage();
      const devA = await pairPage(pa, m);
      await pairPage(pb, m);
      await pa.locator(`.session-row[data-sid="${s.session_id}"] .presence.on`).waitFor({ timeout: 10_000 });
      await pb.locator(`.session-row[data-sid="${s.session_id}"] .presence.on`).waitFor({ timeout: 10_000 });
      // Rename device A on its devices screen; B learns the name from the inbox.
      await pa.getByRole("button", { name: "Devices" }).click();
      await pa
        .getByRole("region", { name: "This device" })
        .getByRole("button", { name: `Rename ${devA.name}` })
        .click();
      await pa.getByLabel("Device name").fill("Pixel 8");
      await pa.getByRole("button", { name: "Save" }).click();
      await pa.locator(".member-name", { hasText: "Pixel 8" }).waitFor({ timeout: 10_000 });
      await shot(pa, "phone-devices");

      agent.call("r1", "confirm", { question: "Merge the branch?" });
      agent.call("in1", "input", { question: "Release name?" });
      await pb.locator('.wait-row[data-call="r1"]').click();
      await pb.locator('[data-call="r1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 10_000 });

      // Blank input: Submit stays disabled until something is typed.
      const inB = pb.locator('[data-call="in1"]');
      await inB.locator("input").waitFor({ timeout: 10_000 });
      expect(await inB.getByRole("button", { name: "Submit" }).isDisabled()).toBe(true);
      await inB.locator("input").fill("   ");
      expect(await inB.getByRole("button", { name: "Submit" }).isDisabled()).toBe(true);
      await inB.locator("input").fill("v2");
      expect(await inB.getByRole("button", { name: "Submit" }).isDisabled()).toBe(false);
      // With a default the field starts filled, and blank is allowed (the agent said what blank means).
      agent.call("in2", "input", { question: "Branch?", default: "main" });
      const inD = pb.locator('[data-call="in2"]');
      await inD.locator("input").waitFor({ timeout: 10_000 });
      expect(await inD.locator("input").inputValue()).toBe("main");
      await inD.locator("input").fill("");
      expect(await inD.getByRole("button", { name: "Submit" }).isDisabled()).toBe(false);
      await inD.getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("in2")).result).toEqual({ message: "" });

      await pa.getByRole("button", { name: "Back" }).click();
      await pa.locator('.wait-row[data-call="r1"]').click();
      await pa.locator('[data-call="r1"]').getByRole("button", { name: "Yes" }).click();
      expect((await agent.result("r1")).result).toEqual({ message: "yes", confirmed: true });
      const done = pb.locator('[data-call="r1"][data-state="elsewhere"]');
      await done.waitFor({ timeout: 10_000 });
      expect(await done.locator(".state").textContent()).toBe("Answered on Pixel 8");
      expect(await done.locator("summary b").textContent()).toBe("Yes"); // the answer in words (issue 13)
      await shot(pb, "desktop-answered-on-device");
    } finally {
      agent.close();
      await a.close();
      await b.close();
    }
  }, 90_000);

  it("the devices screen makes a pairing link with a QR code and a join code with its command, and revokes another device", async () => {
    const m = await createInbox();
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pairPage(page, m);
      const code = await pairing(m.machine_credential);
      const other = await ok<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "Old tablet" });
      await page.goto(`${relay()}/devices`);
      const row = page.locator(`.member[data-id="${other.device_id}"]`);
      await row.waitFor({ timeout: 10_000 });

      await page.getByRole("button", { name: "Create a pairing link" }).click();
      await page.locator("svg.qr path").waitFor({ timeout: 10_000 });
      const link = await page.locator("#copy-device").inputValue();
      expect(link).toMatch(new RegExp(`^${relay()}/#pair=${m.inbox_id}\\.`));
      await page.getByRole("button", { name: "Create a join code" }).click();
      const cmd = await page.locator("#copy-machine").inputValue();
      expect(cmd).toMatch(new RegExp(`^lineup join ${m.inbox_id}\\.[A-Za-z0-9_-]{16} --relay ${relay()}$`));
      await shot(page, "phone-devices-codes");
      // The link pairs (it is a real code).
      const joined = await call<DevicePaired>("POST", "/api/pair", undefined, { code: decodeURIComponent(link.split("#pair=")[1]!), name: "new phone" });
      expect(joined.status).toBe(201);

      page.once("dialog", (d) => void d.accept());
      await row.getByRole("button", { name: "Revoke Old tablet" }).click();
      await row.waitFor({ state: "detached", timeout: 10_000 });
      expect((await call("GET", "/api/inbox", other.device_credential)).status).toBe(401);
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("home and the devices screen keep contrast ≥ 4.5:1 and touch targets ≥ 44 px, light and dark", async () => {
    const m = await createInbox();
    const s = await inboxSession(m, "/home/me/contrast", "laptop");
    const agent = await Agent.connect(s);
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await pairPage(page, m);
      await agent.appTools();
      agent.call("k1", "confirm", { question: "Looks fine?" });
      await page.locator('.wait-row[data-call="k1"]').waitFor({ timeout: 10_000 });
      for (const scheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        await page.goto(`${relay()}/`);
        await page.locator('.wait-row[data-call="k1"]').waitFor({ timeout: 10_000 });
        await page.locator(".presence.on").first().waitFor({ timeout: 10_000 });
        expect(await contrastViolations(page), `home, ${scheme}`).toEqual([]);
        expect(await smallTargets(page), `home, ${scheme}`).toEqual([]);
        await shot(page, `phone-inbox-home-${scheme}`);
        await page.getByRole("button", { name: "Devices" }).click();
        await page.getByRole("button", { name: "Create a pairing link" }).click();
        await page.locator("svg.qr path").waitFor({ timeout: 10_000 });
        expect(await contrastViolations(page), `devices, ${scheme}`).toEqual([]);
        expect(await smallTargets(page), `devices, ${scheme}`).toEqual([]);
        await shot(page, `phone-devices-${scheme}`);
      }
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);
});
