// Opening a waiting question on a phone (issue 33 item 4, docs/benchmarks.md "A phone opening a waiting
// question"): what the page does before the card shows. Orders of events, never durations: the markdown chunk
// and the direct path's chunk are not loaded while the waiting card is on its way, and a warm open does not wait
// for the network's copy of the shell. Real Chromium, the real relay (`wrangler dev`), the built PWA.
import type { BrowserContext, Page, Route } from "playwright-core";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { describe, expect, it } from "vitest";
import { Agent, createSession, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();

/** A session with its agent and a fresh phone context for `body`; both are closed however it ends. */
async function onPhone(label: string, body: (o: { s: SessionCreated; agent: Agent; ctx: BrowserContext }) => Promise<void>): Promise<void> {
  const s = await createSession(fx.relay(), label);
  const agent = await Agent.connect(s);
  try {
    const ctx = await fx.context("phone");
    try {
      await body({ s, agent, ctx });
    } finally {
      await ctx.close().catch(() => undefined);
    }
  } finally {
    agent.close();
  }
}

/** The page's requests for lazy chunks and the frames its sockets received, in the order they happened. */
function recordOrder(page: Page): string[] {
  const log: string[] = [];
  page.on("request", (r) => {
    const m = /\/assets\/(markdown-render|rtc)-[^/]+\.js$/.exec(new URL(r.url()).pathname);
    if (m) log.push(`chunk:${m[1]}`);
  });
  page.on("websocket", (ws) =>
    ws.on("framereceived", (f) => {
      try {
        log.push(`frame:${(JSON.parse(String(f.payload)) as { type: string }).type}`);
      } catch {
        /* "pong" */
      }
    }),
  );
  return log;
}

/** The main bundle's requests held back (the app's code does not run) until `release()`; `abort()` ends a test's hold. */
async function holdBundle(ctx: BrowserContext) {
  const held: Route[] = [];
  const bundle = /\/assets\/index-[^/]+\.js$/;
  await ctx.route(bundle, (route) => void held.push(route));
  return {
    /** The page asked for the bundle (it is held). */
    requested: () => expect.poll(() => held.length, { timeout: 15_000 }).toBeGreaterThan(0),
    release: async () => {
      for (const r of held.splice(0)) await r.continue();
      await ctx.unroute(bundle);
    },
    abort: async () => {
      for (const r of held) await r.abort().catch(() => undefined);
    },
  };
}

type Held = Awaited<ReturnType<typeof holdBundle>>;
/** On a phone with the main bundle held back: the agent calls `call`, then the session link opens (committed only). */
async function onHeldPhone(
  label: string,
  call: [id: string, name: string, args: Record<string, unknown>],
  body: (o: { agent: Agent; page: Page; bundle: Held }) => Promise<void>,
): Promise<void> {
  await onPhone(label, async ({ s, agent, ctx }) => {
    const bundle = await holdBundle(ctx);
    try {
      agent.call(...call);
      const page = await ctx.newPage();
      await page.goto(s.app_url, { waitUntil: "commit" });
      await body({ agent, page, bundle });
    } finally {
      await bundle.abort();
    }
  });
}

/** Types `text` into the card of `callId`, presses Send and returns the agent's `tool.result` as JSON text. */
async function answerCard(page: Page, agent: Agent, callId: string, text: string): Promise<string> {
  const card = page.locator(`[data-call="${callId}"]`);
  await card.locator("textarea").fill(text);
  await card.getByRole("button", { name: "Send" }).click();
  return JSON.stringify(await agent.next((f) => f.type === "tool.result" && f.call_id === callId));
}

describe("a phone opening a waiting question", () => {
  it("loads neither the markdown chunk nor the direct path's chunk before the waiting call arrived (they took a slow phone's main thread as the card came)", async () => {
    await onPhone("phone open", async ({ s, agent, ctx }) => {
      agent.call("q-open-1", "ask_question", { project_directory: "/srv/app", question: "Ship **it** now?" });
      const page = await ctx.newPage();
      const order = recordOrder(page);
      await page.goto(s.app_url);
      const card = page.locator('[data-call="q-open-1"]');
      await card.getByText("Ship").waitFor();
      // Both chunks do load: the question's markdown, and the direct path to an agent that is online.
      await card.locator("strong", { hasText: "it" }).waitFor();
      await expect.poll(() => order.includes("chunk:rtc"), { timeout: 15_000 }).toBe(true);
      const call = order.indexOf("frame:tool.call");
      expect(call, order.join(" ")).toBeGreaterThanOrEqual(0);
      expect(order.indexOf("chunk:markdown-render"), order.join(" ")).toBeGreaterThan(call);
      // The direct path waits for the end of the catch-up: the answer to the app's catalog query, the second
      // tool.list after hello.
      const hello = order.indexOf("frame:hello");
      const lists = order.map((x, i) => (x === "frame:tool.list" && i > hello ? i : -1)).filter((i) => i >= 0);
      expect(lists.length, order.join(" ")).toBeGreaterThanOrEqual(2);
      expect(order.indexOf("chunk:rtc"), order.join(" ")).toBeGreaterThan(lists[1]!);
    });
  });

  it("requests the markdown chunk only after the waiting card was painted (the catch-up ended a moment after the card's frame, and the chunk's evaluation came before the card's first paint)", async () => {
    await onPhone("phone paint first", async ({ s, agent, ctx }) => {
      agent.call("q-paint-1", "ask_question", { project_directory: "/srv/app", question: "Paint **first**?" });
      const page = await ctx.newPage();
      // The page's own clock: when a frame was painted after the card was in the DOM (a rAF, then a task).
      await page.addInitScript(() => {
        const w = window as unknown as { __painted?: number };
        const mo = new MutationObserver(() => {
          if (!document.querySelector('[data-call="q-paint-1"]')) return;
          mo.disconnect();
          requestAnimationFrame(() => setTimeout(() => (w.__painted = performance.now()), 0));
        });
        mo.observe(document, { childList: true, subtree: true });
      });
      await page.goto(s.app_url);
      await page.locator('[data-call="q-paint-1"] strong', { hasText: "first" }).waitFor();
      const at = await page.evaluate(() => ({
        painted: (window as unknown as { __painted?: number }).__painted,
        chunk: performance.getEntriesByType("resource").find((r) => /\/assets\/markdown-render-[^/]+\.js$/.test(r.name))?.startTime,
      }));
      expect(at.painted, JSON.stringify(at)).toBeTypeOf("number");
      expect(at.chunk, JSON.stringify(at)).toBeGreaterThan(at.painted!);
    });
  });

  it("reads no layout while the app starts on a session whose thread is still empty (the scroll to its end forced one before the waiting card's frames were handled)", async () => {
    await onPhone("phone no layout", async ({ s, agent, ctx }) => {
      agent.call("q-layout-1", "ask_question", { project_directory: "/srv/app", question: "No layout?" });
      const page = await ctx.newPage();
      // Reads of the page's height before DOMContentLoaded: the app's module scripts all run before it.
      await page.addInitScript(() => {
        const w = window as unknown as { __early: number; __loaded: boolean };
        w.__early = 0;
        w.__loaded = false;
        document.addEventListener("DOMContentLoaded", () => (w.__loaded = true));
        const get = Object.getOwnPropertyDescriptor(Element.prototype, "scrollHeight")!.get!;
        Object.defineProperty(Element.prototype, "scrollHeight", {
          configurable: true,
          get(this: Element) {
            if (!w.__loaded && this === document.documentElement) w.__early++;
            return get.call(this);
          },
        });
      });
      await page.goto(s.app_url);
      await page.locator('[data-call="q-layout-1"]').getByText("No layout?").waitFor();
      expect(await page.evaluate(() => (window as unknown as { __early: number }).__early)).toBe(0);
    });
  });

  it("opens warm from the cached shell while the network has not answered the navigation (it waited for a phone's round trip)", async () => {
    await onPhone("phone warm", async ({ s, agent, ctx }) => {
      const held: Route[] = [];
      try {
        const first = await ctx.newPage();
        await first.goto(fx.relay());
        await first.evaluate(() => navigator.serviceWorker.ready.then(() => true));
        await first.close();
        // From now on the network never answers for the shell (the service worker's fetch of it included).
        await ctx.route("**/*", (route) => (new URL(route.request().url()).pathname === "/" ? void held.push(route) : route.continue()));
        agent.call("q-warm-1", "ask_question", { project_directory: "/srv/app", question: "Warm open?" });
        const page = await ctx.newPage();
        await page.goto(s.app_url, { waitUntil: "commit" });
        await page.locator('[data-call="q-warm-1"]').getByText("Warm open?").waitFor({ timeout: 20_000 });
        expect(held.length).toBeGreaterThan(0);
        for (const r of held.splice(0)) await r.abort().catch(() => undefined);
      } finally {
        for (const r of held) await r.abort().catch(() => undefined);
      }
    });
  });

  it("dials the opened session's socket before the app's session list is read, and answers through it (it waited for the whole app to evaluate)", async () => {
    await onPhone("phone early dial", async ({ s, agent, ctx }) => {
      agent.call("q-early-1", "ask_question", { project_directory: "/srv/app", question: "Dial early?" });
      const page = await ctx.newPage();
      // The page's own order: each localStorage read and each socket it opens (web/src/sessions.ts reads
      // "lineup.hidden" as it evaluates, before any session connection could dial).
      await page.addInitScript(() => {
        const w = window as unknown as { __order: string[] };
        w.__order = [];
        const get = Storage.prototype.getItem;
        Storage.prototype.getItem = function (k: string) {
          w.__order.push(`get:${k}`);
          return get.call(this, k);
        };
        const Native = window.WebSocket;
        window.WebSocket = class extends Native {
          constructor(url: string | URL, protocols?: string | string[]) {
            super(url, protocols);
            w.__order.push("ws");
          }
        };
      });
      await page.goto(s.app_url);
      const card = page.locator('[data-call="q-early-1"]');
      await card.getByText("Dial early?").waitFor();
      const order = await page.evaluate(() => (window as unknown as { __order: string[] }).__order);
      expect(order.indexOf("ws"), order.join(" ")).toBeGreaterThanOrEqual(0);
      expect(order.indexOf("ws"), order.join(" ")).toBeLessThan(order.indexOf("get:lineup.hidden"));
      expect(order.filter((x) => x === "ws").length, order.join(" ")).toBe(1);
      expect(await answerCard(page, agent, "q-early-1", "yes")).toContain("yes");
    });
  });

  it("has a new device's waiting call on its socket while the main bundle is still loading, and answers it once (the relay held the call until the main bundle registered the device's tools)", async () => {
    await onPhone("phone early registration", async ({ s, agent, ctx }) => {
      const bundle = await holdBundle(ctx);
      try {
        agent.call("q-reg-1", "ask_question", { project_directory: "/srv/app", question: "Registered early?" });
        const page = await ctx.newPage();
        const log = recordOrder(page);
        await page.goto(s.app_url, { waitUntil: "commit" });
        await bundle.requested();
        // The main bundle is held (a fresh context: this device never registered): the call comes all the same.
        await expect.poll(() => log.includes("frame:tool.call"), { timeout: 15_000 }).toBe(true);
        await bundle.release();
        const card = page.locator('[data-call="q-reg-1"]');
        await card.getByText("Registered early?").waitFor();
        expect(await answerCard(page, agent, "q-reg-1", "yes")).toContain("yes");
        // The app's own registration after the early one is a repeat: the call came once.
        expect(log.filter((x) => x === "frame:tool.call")).toHaveLength(1);
      } finally {
        await bundle.abort();
      }
    });
  });

  // Issue 33: on a throttled phone the app's start ran while the socket connected and slowed its handshake; the
  // question then waited for the app's render. Now the early script draws it, and the app starts after its paint.
  it("draws a waiting question's card before the app's code ran, and the reply typed and sent on it reaches the agent once, sent by the app when it starts", async () => {
    await onHeldPhone(
      "phone early card",
      ["q-card-1", "ask_question", { project_directory: "/srv/app", question: "Drawn early?" }],
      async ({ agent, page, bundle }) => {
        const card = page.locator('[data-call="q-card-1"]');
        await card.getByText("Drawn early?").waitFor();
        await bundle.requested();
        // The app has not run: its root is empty, the card is the early script's.
        expect(await page.locator("#app").innerHTML()).toBe("");
        expect(await card.locator("code").textContent()).toBe("/srv/app");
        await card.locator("textarea").fill("from the early card");
        await card.getByRole("button", { name: "Send" }).click();
        expect(await card.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
        // What was sent cannot change before the app sends it.
        expect(await card.locator("textarea").getAttribute("readonly")).not.toBeNull();
        // Nothing is sent from the early card itself.
        await expect(agent.result("q-card-1", 500)).rejects.toThrow(/no tool.result/);
        await bundle.release();
        expect(JSON.stringify(await agent.result("q-card-1"))).toContain("from the early card");
        // The app's card took the early one's place: one card of the call, the app's, settled.
        await page.locator(".early-card").waitFor({ state: "detached" });
        await page.locator('#app [data-call="q-card-1"]').waitFor();
        expect(await page.locator('[data-call="q-card-1"]').count()).toBe(1);
        await expect(agent.result("q-card-1", 1000)).rejects.toThrow(/no tool.result/);
      },
    );
  });

  it("carries a confirm's button pressed on the early card out once the app starts", async () => {
    await onHeldPhone(
      "phone early confirm",
      ["q-card-2", "confirm", { question: "Ship it?", yes_label: "Ship", no_label: "Wait" }],
      async ({ agent, page, bundle }) => {
        await page.locator('[data-call="q-card-2"]').getByRole("button", { name: "Ship" }).click();
        await bundle.requested();
        await expect(agent.result("q-card-2", 500)).rejects.toThrow(/no tool.result/);
        await bundle.release();
        expect(JSON.stringify(await agent.result("q-card-2"))).toContain('"confirmed":true');
        await page.locator(".early-card").waitFor({ state: "detached" });
        await expect(agent.result("q-card-2", 1000)).rejects.toThrow(/no tool.result/);
      },
    );
  });

  it("leaves a reply typed on the early card but not sent as the app card's draft, unsent", async () => {
    await onHeldPhone(
      "phone early draft",
      ["q-card-3", "ask_question", { project_directory: "/srv/app", question: "Anything else?" }],
      async ({ agent, page, bundle }) => {
        await page.locator('[data-call="q-card-3"] textarea').fill("half a thought");
        await bundle.requested();
        await bundle.release();
        await page.locator(".early-card").waitFor({ state: "detached" });
        expect(await page.locator('#app [data-call="q-card-3"] textarea').inputValue()).toBe("half a thought");
        await expect(agent.result("q-card-3", 500)).rejects.toThrow(/no tool.result/);
      },
    );
  });

  it("keeps typing begun on the early card going in the app's reply box when the app's card takes its place (the focus stayed on the removed card, or the app's focus on its waiting card took it, and the keystrokes were lost)", async () => {
    await onHeldPhone(
      "phone early typing",
      ["q-card-4", "ask_question", { project_directory: "/srv/app", question: "Which migration?" }],
      async ({ agent, page, bundle }) => {
        await page.locator('.early-card [data-call="q-card-4"] textarea').click();
        await page.keyboard.type("the shadow ");
        await bundle.requested();
        await bundle.release();
        await page.locator(".early-card").waitFor({ state: "detached" });
        const box = page.locator('#app [data-call="q-card-4"] textarea');
        await expect.poll(() => box.evaluate((el) => el === document.activeElement), { timeout: 5_000 }).toBe(true);
        // The app's focus on a waiting card it opens on comes after its render (web/src/ui/SessionView.tsx): the reply box
        // keeps the focus (browser-usability's keyboard test opens a session that way).
        await new Promise((r) => setTimeout(r, 300));
        expect(await box.evaluate((el) => el === document.activeElement)).toBe(true);
        await page.keyboard.type("table");
        await page.keyboard.press("Control+Enter");
        expect((await agent.result("q-card-4")).result).toEqual({ message: "the shadow table" });
      },
    );
  });

  it("dials the opened session's socket while the stylesheet is still loading (a module script waited for it and for the end of parsing)", async () => {
    await onPhone("phone dial before css", async ({ s, agent, ctx }) => {
      const held: Route[] = [];
      try {
        agent.call("q-css-1", "ask_question", { project_directory: "/srv/app", question: "Before the stylesheet?" });
        await ctx.route(/\/assets\/[^/]+\.css$/, (route) => void held.push(route));
        const page = await ctx.newPage();
        const dialled: string[] = [];
        page.on("websocket", (ws) => dialled.push(new URL(ws.url()).pathname));
        await page.goto(s.app_url, { waitUntil: "commit" });
        await expect.poll(() => held.length, { timeout: 15_000 }).toBeGreaterThan(0);
        // The stylesheet is held: the socket is dialled all the same, and only once.
        await expect.poll(() => dialled, { timeout: 15_000 }).toEqual([`/api/sessions/${s.session_id}/ws`]);
        for (const r of held.splice(0)) await r.continue();
        await ctx.unroute(/\/assets\/[^/]+\.css$/);
        const card = page.locator('[data-call="q-css-1"]');
        await card.getByText("Before the stylesheet?").waitFor();
        expect(await answerCard(page, agent, "q-css-1", "yes")).toContain("yes");
        expect(dialled).toHaveLength(1);
      } finally {
        for (const r of held) await r.abort().catch(() => undefined);
      }
    });
  });

  it("shows the cards of an earlier visit before the socket is up, sends an answer made then after the hello, and loads no markdown chunk for them before the waiting call arrived (they loaded it as the app started)", async () => {
    await onPhone("phone seen before", async ({ s, agent, ctx }) => {
      agent.call("q-seen-1", "ask_question", { project_directory: "/srv/app", question: "Seen **before**?" });
      const first = await ctx.newPage();
      await first.goto(s.app_url);
      await first.locator('[data-call="q-seen-1"] strong', { hasText: "before" }).waitFor();
      await first.close();
      agent.call("q-seen-2", "ask_question", { project_directory: "/srv/app", question: "New **while** closed?" });
      const page = await ctx.newPage();
      // The relay's frames are held until the card seen before was painted and its effects ran.
      const order: string[] = [];
      const held: (() => void)[] = [];
      let holding = true;
      await page.routeWebSocket(/\/ws/, (ws) => {
        const server = ws.connectToServer();
        server.onMessage((m) => {
          const pass = () => {
            if (m !== "pong") order.push(`frame:${(JSON.parse(String(m)) as { type: string }).type}`);
            ws.send(m);
          };
          if (holding) held.push(pass);
          else pass();
        });
      });
      page.on("request", (r) => /\/assets\/markdown-render-[^/]+\.js$/.test(new URL(r.url()).pathname) && order.push("chunk:markdown-render"));
      await page.goto(s.app_url);
      // The card seen before is shown from this device's own record, its text as written until the chunk loads.
      await page.locator('[data-call="q-seen-1"]').getByText("Seen").waitFor();
      // Two painted frames with their effects (preact runs a component's effects after a paint).
      await page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => setTimeout(() => requestAnimationFrame(() => setTimeout(r, 0)), 0))));
      // Answered before the socket said hello: it waits in the outbox and goes after the hello.
      const seen = page.locator('[data-call="q-seen-1"]');
      await seen.locator("textarea").fill("from the record");
      await seen.getByRole("button", { name: "Send" }).click();
      holding = false;
      for (const pass of held.splice(0)) pass();
      await page.locator('[data-call="q-seen-2"] strong', { hasText: "while" }).waitFor();
      const r = await agent.next((f) => f.type === "tool.result" && f.call_id === "q-seen-1");
      expect(JSON.stringify(r)).toContain("from the record");
      const call = order.indexOf("frame:tool.call");
      expect(call, order.join(" ")).toBeGreaterThanOrEqual(0);
      expect(order.indexOf("chunk:markdown-render"), order.join(" ")).toBeGreaterThan(call);
    });
  });
});
