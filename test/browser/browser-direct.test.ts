// Issue 32 in real Chromium: the built PWA on a phone (390×844) opens the direct path — its real
// RTCPeerConnection and data channel — to the real agent adapter (node-datachannel) through `wrangler dev`,
// and the session stays whole whichever path carries what.
// Never the machine's network: the agent binds 127.0.0.1 and sends and accepts only `127.0.0.1 … typ host`
// candidates (as in test/system/direct-path.test.ts), but Chromium never gathers loopback candidates (checked:
// not with --allow-loopback-in-peer-connection either, and none at all in a network namespace that has only
// `lo`), so its checks would come from — and the agent's answers go to — the machine's own address. So the
// suite runs in a network namespace of its own (`unshare -n`, root): `lo` plus a veth pair connected to
// nothing outside (10.254.0.1), with its own `wrangler dev`; this file re-runs itself there
// (LINEUP_DIRECT_NETNS=1) and is skipped, saying why, where no namespace can be made. mDNS obfuscation is off.
// The relay is "stalled" by a route on the page's session socket that holds frames both ways.
import { spawn, spawnSync } from "node:child_process";
import type { BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodeDataChannel from "node-datachannel";
import { connectAgent, type Client } from "../../adapter/client/index.js";
import type { NdcModule } from "../../adapter/client/direct.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { AxeBuilder } from "@axe-core/playwright";
import { shot, useBrowser } from "../helpers/browser.js";
import { tempDir, waitFor } from "../helpers/adapter-helpers.js";

const ndc: NdcModule = nodeDataChannel;
const LOOPBACK = { ndc, bindAddress: "127.0.0.1", allowCandidate: (c: string) => / 127\.0\.0\.1 \d+ typ host/.test(c) };

/** What the confirm card's Yes answers. */
const YES = { message: "yes", confirmed: true };

/** Inside the suite's own network namespace (the outer run below made it). */
const INSIDE = process.env.LINEUP_DIRECT_NETNS === "1";
const NETNS =
  "ip link set lo up && ip link add lu0 type veth peer name lu1 && ip addr add 10.254.0.1/30 dev lu0 && ip link set lu0 up && ip link set lu1 up && ip route add default dev lu0";
/** Whether this machine can make one (root, `unshare`, `ip`, veth). */
const netnsOk = () => !INSIDE && process.getuid?.() === 0 && spawnSync("unshare", ["-n", "sh", "-c", NETNS], { stdio: "ignore" }).status === 0;

describe.runIf(!INSIDE)("the direct-path suite runs in a network namespace of its own", () => {
  const ok = netnsOk();
  it.skipIf(!ok)(
    "re-runs this file there (lo + an unconnected veth pair, its own wrangler dev) and every test passes",
    async () => {
      const child = spawn("unshare", ["-n", "sh", "-c", `${NETNS} && exec npx vitest run --project node test/browser/browser-direct.test.ts`], {
        env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "FORCE_COLOR")), NO_COLOR: "1", LINEUP_DIRECT_NETNS: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((r) => child.on("exit", r));
      expect(code, out).toBe(0);
      expect(out).toMatch(/Tests\s+6 passed \| 1 skipped \(7\)/);
    },
    300_000,
  );
});

const fx = useBrowser({ args: ["--disable-features=WebRtcHideLocalIpsWithMdns"], skip: !INSIDE });

/** The page's session socket, through a route the test controls. */
class RelayRoute {
  /** Frames both ways are held (a stalled relay connection), and go on at `release()`. */
  stalled = false;
  /** `rtc.signal` frames are dropped both ways: no direct path can open. */
  noSignals = false;
  /** Another key put into the agent's signed answers on their way to the page (a relay in the middle). */
  swapKey: string | undefined;
  /** The call ids of the answers the page sent to the relay. */
  readonly results: string[] = [];
  private held: (() => void)[] = [];

  async install(ctx: BrowserContext): Promise<void> {
    await ctx.routeWebSocket(/\/api\/sessions\/[^/]+\/ws/, (ws: WebSocketRoute) => {
      const server = ws.connectToServer();
      const pass = (m: string | Buffer, to: (m: string | Buffer) => void) => {
        if (this.noSignals && String(m).includes('"rtc.signal"')) return;
        if (this.stalled && m !== "ping" && m !== "pong") this.held.push(() => to(m));
        else to(m);
      };
      ws.onMessage((m) => {
        const f = /^\{"type":"tool\.result","call_id":"([^"]+)"/.exec(String(m));
        if (f) this.results.push(f[1]!);
        pass(m, (x) => server.send(x));
      });
      server.onMessage((m) => pass(this.tamper(m), (x) => ws.send(x)));
    });
  }

  private tamper(m: string | Buffer): string | Buffer {
    const key = this.swapKey;
    if (!key || !String(m).includes('"rtc.signal"')) return m;
    const f = JSON.parse(String(m)) as { signal?: { kind?: string; bind?: { key: string; sig: string } } };
    if (f.signal?.kind !== "answer" || !f.signal.bind) return m;
    f.signal.bind.key = key;
    return JSON.stringify(f);
  }

  release(): void {
    this.stalled = false;
    for (const f of this.held.splice(0)) f();
  }
}

let agent: Client;
let ctx: BrowserContext;
let page: Page;
let route: RelayRoute;
let relay: { url: string; sid: string; token: string };
const unclaimed: unknown[] = [];

async function axe(p: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page: p }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} ${n.target.join(" ")}`));
}

const mark = () => page.locator(".conn-line .path").getAttribute("data-path");

async function pendingCalls(): Promise<number> {
  const r = await fetch(`${relay.url}/api/sessions/${relay.sid}`, { headers: { authorization: `Bearer ${relay.token}` } });
  return ((await r.json()) as { pending_calls: number }).pending_calls;
}

/** The agent asks; the card shows on the phone; the person taps Yes. Resolves with the agent's result, counted. */
async function askAndAnswer(question: string, before?: () => Promise<void>): Promise<{ result: unknown; settled: number; callId: string }> {
  let settled = 0;
  const p = agent.call("confirm", undefined, { question }, { timeoutS: 60 }).then((r) => (settled++, r));
  const card = page.locator(".card", { hasText: question });
  await card.getByRole("button", { name: "Yes" }).waitFor({ timeout: 15_000 });
  const callId = (await card.getAttribute("data-call")) ?? "";
  await before?.();
  await card.getByRole("button", { name: "Yes" }).click();
  return { result: await p, settled, callId };
}

/** Closes the page's data channel (recorded by the init script), as a dropped Wi-Fi would. */
const dropChannel = () => page.evaluate(() => (Reflect.get(window, "__dcs") as RTCDataChannel[]).forEach((dc) => dc.close()));

beforeAll(async () => {
  if (!INSIDE) return;
  const url = fx.relay();
  const stateDir = tempDir();
  const saved = await ensureSession({ relayUrl: url, stateDir, cwd: stateDir });
  relay = { url, sid: saved.sessionId, token: saved.agentToken };
  agent = await connectAgent({ relayUrl: url, stateDir, cwd: stateDir, direct: LOOPBACK });
  agent.on("result", (r) => unclaimed.push(r));
  ctx = await fx.browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, bypassCSP: true });
  await ctx.addInitScript(() => {
    const dcs: RTCDataChannel[] = [];
    const pcs: RTCPeerConnection[] = [];
    Reflect.set(window, "__dcs", dcs);
    Reflect.set(window, "__pcs", pcs);
    const create = RTCPeerConnection.prototype.createDataChannel;
    RTCPeerConnection.prototype.createDataChannel = function (this: RTCPeerConnection, ...a: Parameters<typeof create>) {
      const dc = create.apply(this, a);
      dcs.push(dc);
      pcs.push(this);
      return dc;
    };
  });
  route = new RelayRoute();
  await route.install(ctx);
  page = await ctx.newPage();
  await page.goto(saved.appUrl!);
  await page.locator(".conn-line.presence.on").waitFor({ timeout: 15_000 });
}, 60_000);

afterAll(async () => {
  await ctx?.close();
  await agent?.close();
});

describe.runIf(INSIDE)("the PWA's direct path to the agent on the same network (issue 32)", () => {
  it("opens after hello with no STUN/TURN and the session's status line says 'direct'", async () => {
    await waitFor(async () => ((await mark()) === "direct" && agent.path === "direct" ? true : undefined), "the direct path to open");
    // The pair in use reaches the agent at 127.0.0.1, the only candidate it offered.
    const remote = await page.evaluate(async () => {
      const pc = (Reflect.get(window, "__pcs") as RTCPeerConnection[]).at(-1)!;
      const stats: {
        type: string;
        id: string;
        state?: string;
        nominated?: boolean;
        remoteCandidateId?: string;
        address?: string;
      }[] = [];
      (await pc.getStats()).forEach((s: (typeof stats)[number]) => stats.push(s));
      const pair = stats.find((s) => s.type === "candidate-pair" && s.state === "succeeded" && s.nominated);
      return stats.find((s) => s.id === pair?.remoteCandidateId)?.address;
    });
    expect(remote).toBe("127.0.0.1");
    expect(await page.locator(".conn-line .path").textContent()).toContain("direct");
    expect(await axe(page)).toEqual([]);
    await shot(page, "direct-mark-light-en");
    // Chinese, dark: the same mark in the other language and theme.
    await page.evaluate(() => {
      localStorage.setItem("lineup.lang", JSON.stringify("zh"));
      localStorage.setItem("lineup.theme", JSON.stringify("dark"));
    });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.reload();
    await waitFor(async () => ((await mark()) === "direct" ? true : undefined), "the direct path to open again after the reload");
    expect(await page.locator(".conn-line .path").textContent()).toContain("直连");
    expect(await axe(page)).toEqual([]);
    await shot(page, "direct-mark-dark-zh");
    await page.evaluate(() => {
      localStorage.setItem("lineup.lang", JSON.stringify("en"));
      localStorage.setItem("lineup.theme", JSON.stringify("light"));
    });
    await page.emulateMedia({ colorScheme: "light" });
    await page.reload();
    await waitFor(async () => ((await mark()) === "direct" && agent.path === "direct" ? true : undefined), "the direct path to open again");
  }, 30_000);

  it("both paths deliver the same answer: the agent counts it once, and the relay closes the call", async () => {
    expect(agent.path).toBe("direct");
    const { result, settled, callId } = await askAndAnswer("Both paths?");
    expect(result).toEqual(YES);
    expect(route.results.filter((id) => id === callId)).toHaveLength(1); // the relay's copy went too
    await waitFor(async () => ((await pendingCalls()) === 0 ? true : undefined), "the relay to close the call");
    expect(settled).toBe(1);
    expect(unclaimed).toEqual([]);
  }, 30_000);

  it("a call is answered over the direct path while the relay connection is stalled; the relay's late copy closes it and changes nothing", async () => {
    let answer: Awaited<ReturnType<typeof askAndAnswer>>;
    try {
      answer = await askAndAnswer("Relay stalled?", async () => {
        route.stalled = true;
      });
      // Only the direct path carried the answer: the relay still holds the call open.
      expect(await pendingCalls()).toBe(1);
    } finally {
      route.release();
    }
    const { result, settled, callId } = answer;
    expect(result).toEqual(YES);
    await waitFor(async () => ((await pendingCalls()) === 0 ? true : undefined), "the relay to close the call");
    await expect.poll(() => page.locator(`[data-call="${callId}"]`).getAttribute("data-state")).toBe("answered");
    expect(settled).toBe(1);
    expect(unclaimed).toEqual([]);
  }, 30_000);

  it("the data channel dropping mid-call: the answer still arrives, once", async () => {
    const { result, settled, callId } = await askAndAnswer("Channel dropped?", dropChannel);
    expect(result).toEqual(YES);
    await waitFor(async () => ((await pendingCalls()) === 0 ? true : undefined), "the relay to close the call");
    expect(await page.locator(`[data-call="${callId}"]`).getAttribute("data-state")).toBe("answered");
    expect(settled).toBe(1);
    expect(unclaimed).toEqual([]);
  }, 30_000);

  it("with the direct path down, the call is answered over the relay and the status line says 'via relay'", async () => {
    route.noSignals = true;
    await dropChannel();
    await waitFor(async () => ((await mark()) === "relay" && agent.path === "relay" ? true : undefined), "the direct path to close");
    const { result, settled } = await askAndAnswer("Relay only?");
    expect(result).toEqual(YES);
    expect(settled).toBe(1);
    expect(agent.path).toBe("relay");
    expect(unclaimed).toEqual([]);
    await shot(page, "direct-mark-relay");
  }, 30_000);

  it("an answer signed with another key than the machine's pinned one is refused before it is used: the session stays on the relay, says why, and trusts the new key only when asked", async () => {
    route.noSignals = false;
    route.swapKey = "A".repeat(87);
    await page.reload();
    const notice = page.locator(".direct-refused");
    await notice.waitFor({ timeout: 15_000 });
    expect(await notice.textContent()).toContain("this machine's key changed");
    expect(await mark()).toBe("relay");
    expect(agent.path).toBe("relay");
    await shot(page, "direct-refused");
    route.swapKey = undefined;
    await notice.getByRole("button", { name: "Trust the new key" }).click();
    await waitFor(async () => ((await mark()) === "direct" && agent.path === "direct" ? true : undefined), "the direct path to open with the trusted key");
    expect(await notice.count()).toBe(0);
  }, 30_000);
});
