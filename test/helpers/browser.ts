// Browser end-to-end helpers: Debian's Chromium driven by playwright-core (never `playwright install`),
// a scripted agent over a raw `ws` socket, and screenshots into test-artifacts/screenshots/.
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import WebSocket from "ws";
import { DEV_RELAY_KEY } from "../../shared/defaults.js";
import type { RelayFrame, SessionCreated } from "../../shared/protocol.js";

export const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
export const DESKTOP = { viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 };
const SHOTS = "test-artifacts/screenshots";

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run",
      // A fake microphone, so voice notes (MediaRecorder) can be recorded headless.
      "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"],
  });
}

export async function newContext(browser: Browser, kind: "phone" | "desktop" = "phone", locale = "en-US"): Promise<BrowserContext> {
  const ctx = await browser.newContext({ ...(kind === "phone" ? PHONE : DESKTOP), locale, serviceWorkers: "allow" });
  await ctx.grantPermissions(["microphone"]);
  return ctx;
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

export type Frame = RelayFrame & Record<string, unknown>;

/** The agent side, scripted: a raw socket with the agent token in a Bearer header. */
export class Agent {
  private frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (d: WebSocket.RawData) => {
      const s = d.toString();
      if (s === "pong") return;
      this.frames.push(JSON.parse(s) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async connect(s: SessionCreated, clientId = "agent-1"): Promise<Agent> {
    const ws = new WebSocket(`${s.ws_url}?client_id=${clientId}`, { headers: { authorization: `Bearer ${s.agent_token}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`agent socket: HTTP ${res.statusCode}`)));
    });
    const a = new Agent(ws);
    await a.next((f) => f.type === "hello");
    return a;
  }

  send(f: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(f));
  }

  call(call_id: string, name: string, args: Record<string, unknown>, action?: string, timeout_s = 300): void {
    this.send({ type: "tool.call", call_id, name, arguments: args, timeout_s, ...(action ? { action } : {}) });
  }

  /** The first frame (received so far or later) matching `pred`; it is consumed. */
  async next(pred: (f: Frame) => boolean, timeoutMs = 15_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.frames.findIndex(pred);
      if (i >= 0) return this.frames.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`agent: no matching frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames.map((f) => f.type))}`);
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
    return this.next((f) => f.type === "tool.result" && f.call_id === callId, timeoutMs);
  }

  /** Waits until the app side has registered the built-in tools (the relay forwards the catalog). */
  appTools(timeoutMs = 15_000): Promise<Frame> {
    return this.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.some((t) => (t as { name: string }).name === "choice"), timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}

/** Opens the pairing link, then waits until the session screen is connected. */
export async function pair(page: Page, s: SessionCreated): Promise<void> {
  await page.goto(s.app_url);
  try {
    await page.locator(".presence.on").first().waitFor({ timeout: 15_000 });
  } catch (e) {
    throw new Error(`pairing: the session did not come online; the page shows: ${await page.locator("body").innerText()}`, { cause: e });
  }
}
