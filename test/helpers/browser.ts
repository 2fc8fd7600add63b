// Browser end-to-end helpers: the one browser fixture of every browser test file (useBrowser), Debian's
// Chromium driven by playwright-core (never `playwright install`), a scripted agent over a raw `ws` socket,
// and screenshots into test-artifacts/screenshots/.
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, inject } from "vitest";
import WebSocket from "ws";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { RelayFrame, SessionCreated } from "../../shared/contract/protocol.js";

export const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
export const DESKTOP = { viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 };
const SHOTS = "test-artifacts/screenshots";

export async function launch(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      // A fake microphone, so voice notes (MediaRecorder) can be recorded headless.
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
      ...extraArgs,
    ],
  });
}

export async function newContext(browser: Browser, kind: "phone" | "desktop" = "phone", locale = "en-US"): Promise<BrowserContext> {
  const ctx = await browser.newContext({ ...(kind === "phone" ? PHONE : DESKTOP), locale, serviceWorkers: "allow" });
  await ctx.grantPermissions(["microphone"]);
  return ctx;
}

export interface BrowserFixtureOptions {
  /** Warm the shared relay (the node project's `wrangler dev`) up before the file's first test. Default true;
   * false for files that start a server of their own or need none. */
  relay?: boolean;
  /** The file's own servers or fakes: started after Chromium (and before the warm-up), stopped after it closes. */
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
  /** More Chromium switches for this file (e.g. WebRTC's). */
  args?: readonly string[];
  /** Bound of the set-up; default 60 s. */
  timeoutMs?: number;
  /** Launch nothing (a file whose tests run elsewhere this time, e.g. in a network namespace). */
  skip?: boolean;
}

export interface BrowserFixture {
  /** The file's Chromium, launched before its first test and closed after its last. */
  readonly browser: Browser;
  /** The shared relay's URL (from the node project's global setup). */
  relay(): string;
  /** A fresh browser context on a phone (default) or a desktop, in `locale`. */
  context(kind?: "phone" | "desktop", locale?: string): Promise<BrowserContext>;
}

/**
 * The one set-up of a browser test file, called once at its top level: launches Chromium before the file's
 * first test (then the file's own `setup`, then warms the shared relay up), and closes it after the last
 * (then the file's `teardown`).
 */
export function useBrowser(opts: BrowserFixtureOptions = {}): BrowserFixture {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launch(opts.args);
    await opts.setup?.();
    if (opts.relay !== false) await warmUp(inject("relayUrl"));
  }, opts.timeoutMs ?? 60_000);
  afterAll(async () => {
    await browser?.close();
    await opts.teardown?.();
  });
  const fixture: BrowserFixture = {
    get browser(): Browser {
      if (!browser) throw new Error("useBrowser: Chromium is launched in beforeAll; use the fixture inside tests and hooks");
      return browser;
    },
    relay: () => inject("relayUrl"),
    context: (kind = "phone", locale = "en-US") => newContext(fixture.browser, kind, locale),
  };
  return fixture;
}

export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: false });
}

export async function createSession(relay: string, label = "test agent"): Promise<SessionCreated> {
  const r = await fetch(`${relay}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ label }),
  });
  if (r.status !== 201) throw new Error(`create session: HTTP ${r.status} ${await r.text()}`);
  return (await r.json()) as SessionCreated;
}

/**
 * A fresh `wrangler dev` sometimes fails its very first Durable Object requests (HTTP 500 while workerd
 * warms up); touch the relay once, retrying, before a file's first test so that does not fail a test.
 */
export async function warmUp(relay: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      const s = await createSession(relay, "warm-up");
      (await Agent.connect(s, "warm-up")).close();
      return;
    } catch (e) {
      if (i >= 4) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

export type Frame = RelayFrame & Record<string, unknown>;

/**
 * The agent side, scripted: a raw socket with the agent token in a Bearer header. Like a real adapter it
 * reconnects with the same client id when the relay drops it (`wrangler dev` restarts the Worker when a
 * watched file changes, which drops every socket); the relay then re-sends results it kept for us.
 */
export class Agent {
  private frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  private ws!: WebSocket;
  private closed = false;
  private constructor(
    private readonly s: SessionCreated,
    private readonly clientId: string,
  ) {}

  static async connect(s: SessionCreated, clientId = "agent-1"): Promise<Agent> {
    const a = new Agent(s, clientId);
    await a.open();
    await a.next((f) => f.type === "hello");
    return a;
  }

  private async open(): Promise<void> {
    const ws = new WebSocket(`${this.s.ws_url}?client_id=${this.clientId}`, { headers: { authorization: `Bearer ${this.s.agent_token}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`agent socket: HTTP ${res.statusCode}`)));
    });
    this.ws = ws;
    for (const f of this.unsent.splice(0)) ws.send(f);
    ws.on("message", (d: WebSocket.RawData) => {
      const s = d.toString();
      if (s === "pong") return;
      this.frames.push(JSON.parse(s) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
    ws.on("close", (code) => {
      if (this.closed || code === 4004) return;
      void this.reopen();
    });
  }

  private async reopen(): Promise<void> {
    for (let i = 0; i < 40 && !this.closed; i++) {
      await new Promise((r) => setTimeout(r, 250));
      try {
        await this.open();
        return;
      } catch {
        /* the relay is still restarting */
      }
    }
  }

  private unsent: string[] = [];

  /** Sends now, or right after the reconnect when the socket is down. */
  send(f: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(f));
    else this.unsent.push(JSON.stringify(f));
  }

  call(call_id: string, name: string, args: Record<string, unknown>, action?: string, timeout_s = 300): void {
    this.send({ type: "tool.call", call_id, name, arguments: args, timeout_s, ...(action ? { action } : {}) });
  }

  /** The first frame (received so far or later) matching `pred`; it is consumed. */
  async next(pred: (f: Frame) => boolean, timeoutMs = 15_000, what = "a matching frame"): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.frames.findIndex(pred);
      if (i >= 0) return this.frames.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`agent: no ${what} within ${timeoutMs} ms; unclaimed frames: ${JSON.stringify(this.frames).slice(0, 600)}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
  }

  /** The result of `call_id`. */
  result(callId: string, timeoutMs = 15_000): Promise<Frame> {
    return this.next((f) => f.type === "tool.result" && f.call_id === callId, timeoutMs, `tool.result for ${callId}`);
  }

  /** Waits until the app side has registered the built-in tools (the relay forwards the catalog). */
  appTools(timeoutMs = 15_000): Promise<Frame> {
    return this.next(
      (f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.some((t) => (t as { name: string }).name === "choice"),
      timeoutMs,
      "tool.list with the app's built-in tools",
    );
  }

  close(): void {
    this.closed = true;
    this.ws.close();
  }
}

/** Opens the pairing link, then waits until the session screen is connected. */
export async function pair(page: Page, s: SessionCreated): Promise<void> {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("crash", () => problems.push("the page crashed"));
  page.on("framenavigated", (f) => f === page.mainFrame() && problems.push(`navigated: ${f.url().replace(/#.*/, "#…")}`));
  if (process.env.LINEUP_E2E_DEBUG) {
    const t0 = Date.now();
    page.on("websocket", (ws) => {
      console.log(`[page ${t0}] +${Date.now() - t0} ws open`);
      ws.on("close", () => console.log(`[page ${t0}] +${Date.now() - t0} ws close`));
      ws.on("framesent", (f) => console.log(`[page ${t0}] +${Date.now() - t0} sent ${String(f.payload).slice(0, 90)}`));
      ws.on("framereceived", (f) => console.log(`[page ${t0}] +${Date.now() - t0} recv ${String(f.payload).slice(0, 90)}`));
    });
  }
  await page.goto(s.app_url);
  try {
    await page.locator(".presence.on").first().waitFor({ timeout: 15_000 });
  } catch (e) {
    throw new Error(
      `pairing: the session did not come online; at ${page.url().replace(/#.*/, "#…")} the page shows: ${await page.locator("body").innerHTML()}\n${problems.join("\n")}`,
      { cause: e },
    );
  }
}
