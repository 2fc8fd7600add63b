// Issue 26, items 1 and 2, in the PWA and its service worker (real Chromium, real relay): the page pairs its
// key as in browser-e2e-sealed.test.ts, and Playwright's WebSocket routing stands between the page and the
// relay as a lying relay would — it injects plaintext frames into the session's socket, drops `sealed` from
// `hello` (and from GET /api/sessions/:sid), and records every frame the page sent. A plaintext push for a
// pinned session goes to the real service worker through CDP ServiceWorker.deliverPushMessage.
import type { BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { describe, expect, it } from "vitest";
import { registrationId, shown, worker } from "../helpers/browser-push.js";
import { shot, useBrowser } from "../helpers/browser.js";
import { Machine, SealedAgent, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();
const relay = fx.relay;

type Json = Record<string, unknown>;
interface Routed {
  url: string;
  /** Frames the page sent on this socket ("ping" left out). */
  sent: Json[];
  /** Frames the relay sent (before any rewrite). */
  got: Json[];
  inject(f: Json): void;
}

/** Every session socket of `ctx` through a lying relay; `lie` rewrites (or drops: undefined) the relay's frames. */
async function routeSessions(ctx: BrowserContext, lie: { frame: (f: Json) => Json | undefined }): Promise<Routed[]> {
  const all: Routed[] = [];
  await ctx.routeWebSocket(/\/api\/sessions\/[^/]+\/ws/, (ws: WebSocketRoute) => {
    const server = ws.connectToServer();
    const r: Routed = { url: ws.url(), sent: [], got: [], inject: (f) => ws.send(JSON.stringify(f)) };
    all.push(r);
    ws.onMessage((m) => {
      if (m !== "ping") r.sent.push(JSON.parse(String(m)) as Json);
      server.send(m);
    });
    server.onMessage((m) => {
      if (m === "pong") return ws.send(m);
      const f = JSON.parse(String(m)) as Json;
      r.got.push(f);
      const out = lie.frame(f);
      if (out !== undefined) ws.send(JSON.stringify(out));
    });
  });
  return all;
}

const pinOf = (page: Page, sid: string) =>
  page.evaluate(async (id) => {
    const db = await new Promise<IDBDatabase>((res, rej) => {
      const r = indexedDB.open("lineup-e2e-pins");
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    if (!db.objectStoreNames.contains("pins")) return false;
    return new Promise<boolean>((res) => {
      const q = db.transaction("pins").objectStore("pins").get(`${location.origin} ${id}`);
      q.onsuccess = () => res(q.result !== undefined);
      q.onerror = () => res(false);
    });
  }, sid);

const forSession = (all: Routed[], sid: string) => all.filter((r) => r.url.includes(`/api/sessions/${sid}/ws`));

describe("a lying relay and the PWA (issue 26)", () => {
  it("regression: a plaintext call, message and status detail injected into a sealed session are not shown, and nothing answers them", async () => {
    const mc = await Machine.create(relay());
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const lie = { frame: (f: Json): Json | undefined => f };
    const routed = await routeSessions(ctx, lie);
    try {
      await pairSealed(page, mc);
      const s = await mc.sealedSession("/home/me/lying");
      const sid = s.session_id;
      const agent = await SealedAgent.connect(mc, s);
      await agent.appTools(); // the page is connected, its hello behind it
      await page.locator(`.session-row[data-sid="${sid}"] a`).click();
      const sock = forSession(routed, sid).at(-1)!;
      sock.inject({
        type: "tool.call",
        call_id: "c_forged",
        name: "confirm",
        arguments: { question: "FORGED-CALL-MARKER?" },
        deadline: Date.now() + 300_000,
        from: "agent",
      });
      sock.inject({
        type: "message",
        id: "m_forged",
        from: { role: "agent", client_id: "agent-1" },
        content: [{ type: "text", text: "FORGED-MSG-MARKER" }],
        ts: Date.now(),
        seq: 999,
      });
      sock.inject({ type: "presence", agent: { online: true, status: { state: "working", detail: "FORGED-STATUS-MARKER" } }, apps: 1 });
      // After them, the real (sealed) call and message: once those show, the injected frames were handled.
      await agent.call("c_real", "confirm", { question: "Real sealed question?" });
      await agent.message("m_real", "real sealed message");
      await page.locator('[data-call="c_real"]').getByText("Real sealed question?").waitFor({ timeout: 15_000 });
      await page.getByText("real sealed message").waitFor({ timeout: 15_000 });
      const body = await page.locator("body").innerText();
      expect(body).not.toContain("FORGED-CALL-MARKER");
      expect(body).not.toContain("FORGED-MSG-MARKER");
      expect(body).not.toContain("FORGED-STATUS-MARKER");
      expect(await page.locator('[data-call="c_forged"]').count()).toBe(0);
      expect(sock.sent.filter((f) => f.call_id === "c_forged")).toEqual([]);
      await shot(page, "phone-e2e-lying-injected");
      agent.close();
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it("regression: a relay that drops `sealed` from hello (and from the session's status) is refused with e2e_downgrade, and the page sends nothing", async () => {
    const mc = await Machine.create(relay());
    const ctx = await fx.context("phone");
    let page = await ctx.newPage();
    const lie = { frame: (f: Json): Json | undefined => f };
    const routed = await routeSessions(ctx, lie);
    try {
      await pairSealed(page, mc);
      const s = await mc.sealedSession("/home/me/downgrade");
      const sid = s.session_id;
      const agent = await SealedAgent.connect(mc, s);
      await agent.appTools();
      // Seen sealed once: pinned in IndexedDB beside the device keys.
      await expect.poll(() => pinOf(page, sid), { timeout: 15_000 }).toBe(true);

      // From now on the relay says plaintext: in the hello and in GET /api/sessions/:sid.
      lie.frame = (f) => {
        if (f.type !== "hello") return f;
        const { sealed: _s, ...rest } = f;
        return rest;
      };
      await ctx.route(new RegExp(`/api/sessions/${sid}$`), async (route) => {
        const res = await route.fetch();
        const j = (await res.json()) as Json;
        delete j.sealed;
        await route.fulfill({ response: res, json: j });
      });
      await page.close();
      const before = routed.length;
      page = await ctx.newPage();
      await page.goto(`${relay()}/s/${sid}`);
      const sentAfter = () => forSession(routed.slice(before), sid).flatMap((r) => r.sent);
      const refused = page.getByText("Refused (e2e_downgrade)");
      // Whichever comes first: the page sends something (the old behaviour), or it says it refused.
      await expect.poll(async () => sentAfter().length > 0 || (await refused.count()) > 0, { timeout: 20_000 }).toBe(true);
      expect(forSession(routed.slice(before), sid).some((r) => r.got.some((f) => f.type === "hello"))).toBe(true);
      expect(sentAfter()).toEqual([]);
      await refused.waitFor({ timeout: 5_000 });
      await agent.call("c_after", "confirm", { question: "Asked after the downgrade" });
      expect(await page.locator('[data-call="c_after"]').count()).toBe(0);
      expect(sentAfter()).toEqual([]);
      await shot(page, "phone-e2e-downgrade");
      agent.close();
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it("regression: the service worker shows a plaintext push for a pinned session as the generic text, with no answer buttons", async () => {
    const mc = await Machine.create(relay());
    const origin = new URL(relay()).origin;
    const ctx = await fx.context("phone");
    await ctx.grantPermissions(["notifications"], { origin });
    const page = await ctx.newPage();
    try {
      await pairSealed(page, mc);
      await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
      const s = await mc.sealedSession("/home/me/push-lie");
      const sid = s.session_id;
      await expect.poll(() => pinOf(page, sid), { timeout: 15_000 }).toBe(true);
      const cdp = await ctx.newCDPSession(page);
      const regId = await registrationId(cdp, origin);
      const forged = {
        v: 1,
        kind: "call",
        inbox: mc.inbox,
        sid,
        call: "c_push_forged",
        title: "push-lie",
        body: "FORGED-PUSH-MARKER: allow?",
        tool: "permission",
        token: "forged-token",
        lang: "en",
        created_at: Date.now(),
      };
      await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId: regId, data: JSON.stringify(forged) });
      await expect
        .poll(async () => (await shown(ctx)).find((n) => n.tag.endsWith("/c_push_forged")), { timeout: 15_000 })
        .toMatchObject({ body: "An agent is waiting for you", actions: [] });
      const token = await (await worker(ctx)).evaluate(async () => {
        const reg = (self as unknown as { registration: ServiceWorkerRegistration }).registration;
        const n = (await reg.getNotifications()).find((x) => x.tag.endsWith("/c_push_forged"));
        return (n?.data as { token?: string } | undefined)?.token ?? null;
      });
      expect(token).toBeNull();
    } finally {
      await ctx.close();
    }
  }, 90_000);
});
