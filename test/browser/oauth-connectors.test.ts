// OAuth connectors end to end (docs/mcp.md "OAuth connectors"): an OAuth-only MCP client connects to the
// relay's /mcp in workerd (`wrangler dev`), the human approves it in Chromium on a paired phone, its calls
// reach that human, refresh rotates its tokens, and revoking it in the PWA cuts it off. Two clients:
// - a scripted client with a Client ID Metadata Document served by a local fake on 127.0.0.1 (allowed
//   because the relay itself is on 127.0.0.1), the code typed on the phone;
// - the MCP SDK's own OAuth client (`auth()` + an OAuthClientProvider: discovery, dynamic registration,
//   PKCE, resource), the code taken from the page's QR link (sent on a tap), and its automatic refresh on a 401.
// Also: a `#code=` link asks the relay nothing before the tap; a dripped metadata document is a clean refusal.
// The PWA is built into a temp dir (LINEUP_TEST_WEB_DIR when set) and served by this file's own relay.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import { auth, Client as McpClient, StreamableHTTPClientTransport, type CallToolResult, type OAuthClientProvider } from "@modelcontextprotocol/client";
import { OAuthMetadataSchema, OAuthProtectedResourceMetadataSchema, OAuthTokensSchema } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import { pkceS256 } from "../../shared/contract/oauth.js";
import { randomId } from "../../shared/edge/tokens.js";
import { shot, useBrowser } from "../helpers/browser.js";
import { freePort, wranglerEnv } from "../helpers/relay.js";

const ROOT = join(import.meta.dirname, "../..");
let relay: { url: string; proc: ChildProcess; dir: string; web?: string };
let fake: { url: string; server: Server; callbacks: URLSearchParams[]; docFetches: number; drips: number };

// ---------------------------------------------------------------- fixtures

/** `wrangler dev` of this repo with the PWA from `web` (the config's other asset rules stay). */
async function startRelay(web: string): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "lineup-oauth-relay-"));
  const args = [
    "wrangler",
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(await freePort()),
    "--log-level",
    "warn",
    "--persist-to",
    dir,
    "--assets",
    web,
  ];
  for (const [k, v] of Object.entries({ RATE_LIMIT_PER_S: "5000", RATE_LIMIT_BURST: "10000" })) args.push("--var", `${k}:${v}`);
  const proc = spawn("npx", args, {
    cwd: ROOT,
    env: wranglerEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`wrangler dev exited:\n${log.slice(-3000)}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`wrangler dev did not start:\n${log.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  // The first Durable Object requests of a fresh workerd sometimes fail: warm up.
  for (let i = 0; i < 5; i++)
    if ((await fetch(`${url}/api/inboxes`, { method: "POST", headers: { authorization: `Bearer ${DEV_RELAY_KEY}` } })).status === 201) break;
  return { url, proc, dir };
}

/** The app's side on 127.0.0.1: its metadata document and its redirect URI. */
async function startFake(): Promise<typeof fake> {
  const f = { url: "", server: createServer(), callbacks: [] as URLSearchParams[], docFetches: 0, drips: 0 };
  f.server.on("request", (req, res) => {
    const u = new URL(req.url ?? "/", f.url);
    if (u.pathname === "/client.json") {
      f.docFetches++;
      res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
      res.end(
        JSON.stringify({
          client_id: `${f.url}/client.json`,
          client_name: "Fake Assistant",
          client_uri: f.url,
          redirect_uris: [`${f.url}/callback`],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        }),
      );
    } else if (u.pathname === "/drip.json") {
      // A document that starts at once and then drips a byte every 250 ms, for far longer than 5 s.
      f.drips++;
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
      let n = 0;
      const t = setInterval(() => (++n > 60 || res.destroyed ? (clearInterval(t), res.end("}")) : res.write(" ")), 250);
      res.on("close", () => clearInterval(t));
    } else if (u.pathname === "/callback" || u.pathname === "/sdk-callback") {
      f.callbacks.push(u.searchParams);
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<!doctype html><title>done</title><p>You can close this window.</p>");
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => f.server.listen(0, "127.0.0.1", r));
  const a = f.server.address();
  if (!a || typeof a === "string") throw new Error("no port");
  f.url = `http://127.0.0.1:${a.port}`;
  return f;
}

const fx = useBrowser({
  relay: false,
  timeoutMs: 180_000,
  setup: async () => {
    let web = process.env.LINEUP_TEST_WEB_DIR;
    let built: string | undefined;
    if (!web) {
      built = web = mkdtempSync(join(tmpdir(), "lineup-oauth-web-"));
      const b = spawnSync("npx", ["vite", "build", "--outDir", web, "--emptyOutDir", "--logLevel", "warn"], { cwd: ROOT, encoding: "utf8" });
      if (b.status !== 0) throw new Error(`vite build failed:\n${b.stdout}\n${b.stderr}`);
    }
    relay = { ...(await startRelay(web)), ...(built ? { web: built } : {}) };
    fake = await startFake();
  },
  teardown: async () => {
    await new Promise<void>((r) => (fake?.server ? fake.server.close(() => r()) : r()));
    if (relay?.proc.pid !== undefined && relay.proc.exitCode === null) {
      try {
        process.kill(-relay.proc.pid, "SIGTERM");
      } catch {
        relay.proc.kill("SIGTERM");
      }
    }
    await new Promise((r) => setTimeout(r, 200));
    if (relay?.dir) rmSync(relay.dir, { recursive: true, force: true });
    if (relay?.web) rmSync(relay.web, { recursive: true, force: true });
  },
});

// ---------------------------------------------------------------- helpers

type Json = Record<string, unknown>;
const form = (path: string, body: Record<string, string>) =>
  fetch(`${relay.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body).toString(),
  });
const mcpPost = (token: string) =>
  fetch(`${relay.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

/** A phone paired with a fresh inbox through its `#pair=` link. */
async function pairedPhone(): Promise<{ ctx: BrowserContext; page: Page; m: MachineCreated }> {
  const m = (await (
    await fetch(`${relay.url}/api/inboxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ machine_name: "laptop" }),
    })
  ).json()) as MachineCreated;
  const code = (await (
    await fetch(`${relay.url}/api/inbox/pairings`, { method: "POST", headers: { authorization: `Bearer ${m.machine_credential}` } })
  ).json()) as CodeIssued;
  const ctx = await fx.context("phone");
  const page = await ctx.newPage();
  await page.goto(code.url!);
  await expect.poll(async () => JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes"))) ?? "[]").length, { timeout: 15_000 }).toBe(1);
  return { ctx, page, m };
}

/** The desktop browser on the authorization URL: the code it shows and the QR code's link. */
async function desktopPage(url: string, withApp = false): Promise<{ ctx: BrowserContext; page: Page; code: string; link: string }> {
  const ctx = await fx.context("desktop");
  const page = await ctx.newPage();
  const problems: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  if (withApp) {
    // The PWA (and its service worker) already on this browser: the authorization page must still be the Worker's.
    await page.goto(`${relay.url}/`);
    await page.evaluate(async () => void (await navigator.serviceWorker.ready));
    await page.reload();
    expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  }
  await page.goto(url);
  const code = (await page.locator("#code").textContent({ timeout: 10_000 }))!;
  expect(code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
  const link = (await page.locator('a[href*="/connect#code="]').getAttribute("href"))!;
  expect(await page.locator("svg.qr path").count()).toBe(1);
  expect(problems).toEqual([]); // no CSP violation: no inline script or style
  return { ctx, page, code, link };
}

/** The consent screen on the phone: who asks, where it goes, then Allow. */
async function allowOnPhone(page: Page, name: string, redirectHost: string, shotName: string): Promise<void> {
  const review = page.locator(".connect-review");
  await review.waitFor({ timeout: 10_000 });
  expect(await review.locator("h2").textContent()).toBe(`${name} wants to reach you`);
  expect(await review.locator(".redirect-host").textContent()).toContain(redirectHost);
  // A loopback redirect: the spec's extra warning.
  expect(await review.getByRole("note").textContent()).toContain("a program on the computer");
  const contrast = await new AxeBuilder({ page }).withRules(["color-contrast"]).analyze();
  expect(contrast.violations.flatMap((v) => v.nodes.map((n) => n.target.join(" ")))).toEqual([]);
  await shot(page, shotName);
  await review.getByRole("button", { name: "Allow" }).click();
  await page.getByText(`${name} is connected.`).waitFor({ timeout: 10_000 });
}

/** The question reaches the phone: answer it from the home screen's "Waiting for you". */
async function answerOnPhone(page: Page, question: string, answer: string): Promise<void> {
  await page.goto(`${relay.url}/`);
  const row = page.locator(".wait-row", { hasText: question });
  await row.waitFor({ timeout: 15_000 });
  await row.click();
  const card = page.locator("[data-call]", { hasText: question }).first();
  await card.locator("textarea").fill(answer);
  await card.getByRole("button", { name: "Send" }).click();
}

async function mcpClient(token: string): Promise<McpClient> {
  const c = new McpClient({ name: "scripted-oauth-client", version: "0.0.0" });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${relay.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

// ---------------------------------------------------------------- tests

describe("OAuth connectors against wrangler dev, consent in Chromium", () => {
  it("a metadata-document client (CIMD on 127.0.0.1) is approved by typing its code on the phone, asks the human, refreshes, and is cut off by Revoke", async () => {
    // Discovery, the way an OAuth-only client starts: a 401 that points at the metadata.
    const first = await fetch(`${relay.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(first.status).toBe(401);
    const prmUrl = /resource_metadata="([^"]+)"/.exec(first.headers.get("www-authenticate") ?? "")?.[1];
    expect(prmUrl).toBe(`${relay.url}/.well-known/oauth-protected-resource/mcp`);
    const prm = OAuthProtectedResourceMetadataSchema.parse(await (await fetch(prmUrl!)).json());
    expect(prm.resource).toBe(`${relay.url}/mcp`);
    const asm = OAuthMetadataSchema.parse(await (await fetch(`${prm.authorization_servers![0]}/.well-known/oauth-authorization-server`)).json());
    expect(asm.issuer).toBe(relay.url);
    expect(asm.code_challenge_methods_supported).toContain("S256");
    expect((asm as Json).client_id_metadata_document_supported).toBe(true);

    const clientId = `${fake.url}/client.json`;
    const redirect = `${fake.url}/callback`;
    const verifier = randomId(48);
    const state = randomId(12);
    const q = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirect,
      code_challenge: await pkceS256(verifier),
      code_challenge_method: "S256",
      state,
      resource: prm.resource,
      scope: "mcp",
    });
    const { ctx: phoneCtx, page: phone, m } = await pairedPhone();
    const desk = await desktopPage(`${asm.authorization_endpoint}?${q}`);
    try {
      expect(fake.docFetches).toBeGreaterThan(0); // the relay fetched the document from the local fake
      expect(await desk.page.locator("h1").textContent()).toBe("Connect Fake Assistant to LineUp");
      await shot(desk.page, "oauth-authorize-desktop");

      // The phone: Devices → Connect an app → the code, typed.
      await phone.goto(`${relay.url}/devices`);
      await phone.getByRole("link", { name: "Connect an app (claude.ai, ChatGPT, …)" }).click();
      await phone.waitForURL(/\/connect$/);
      await phone.locator("#connect-code").fill(desk.code.toLowerCase());
      await phone.getByRole("button", { name: "Continue" }).click();
      await allowOnPhone(phone, "Fake Assistant", new URL(fake.url).host, "oauth-consent-phone");
      expect(await phone.locator(".connect-review, .connect-done").first().innerText()).not.toContain(desk.code);

      // The desktop page follows the decision to the client's redirect URI.
      await desk.page.waitForURL(/\/callback\?/, { timeout: 15_000 });
      const cb = fake.callbacks.at(-1)!;
      expect([cb.get("state"), cb.get("iss")]).toEqual([state, relay.url]);

      const tr = await form("/oauth/token", {
        grant_type: "authorization_code",
        code: cb.get("code")!,
        code_verifier: verifier,
        redirect_uri: redirect,
        client_id: clientId,
        resource: prm.resource,
      });
      expect(tr.status).toBe(200);
      const tokens = OAuthTokensSchema.parse(await tr.json());
      expect(tokens.refresh_token).toBeTruthy();

      // The token acts as the agent of the new session, whose calls reach the paired phone.
      const c = await mcpClient(tokens.access_token);
      try {
        expect((await c.listTools()).tools.map((t) => t.name)).toContain("ask_question");
        const p = c.callTool({ name: "ask_question", arguments: { project_directory: "/connector", question: "Which release notes?" } }, { timeout: 60_000 });
        await answerOnPhone(phone, "Which release notes?", "The short ones.");
        expect(((await p) as CallToolResult).content[0]).toMatchObject({ type: "text", text: "The short ones." });
      } finally {
        await c.close();
      }
      // The session is in the inbox, labelled with the client's name.
      const st = (await (await fetch(`${relay.url}/api/inbox`, { headers: { authorization: `Bearer ${m.machine_credential}` } })).json()) as {
        sessions: { label: string }[];
      };
      expect(st.sessions.map((s) => s.label)).toContain("Fake Assistant");

      // Refresh: both tokens rotate; the new access token works.
      const rr = await form("/oauth/token", { grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: clientId, resource: prm.resource });
      expect(rr.status).toBe(200);
      const t2 = OAuthTokensSchema.parse(await rr.json());
      expect(t2.refresh_token).not.toBe(tokens.refresh_token);
      expect((await mcpPost(t2.access_token)).status).toBe(200);

      // Revoke in the PWA: listed with name, connected and last used; gone at once.
      await phone.goto(`${relay.url}/connect`);
      const item = phone.locator(".grant", { hasText: "Fake Assistant" });
      await item.waitFor({ timeout: 10_000 });
      expect(await item.innerText()).toMatch(/Connected .* · last used /);
      await shot(phone, "oauth-grants-phone");
      phone.once("dialog", (d) => void d.accept());
      await item.getByRole("button", { name: "Revoke Fake Assistant" }).click();
      await item.waitFor({ state: "detached", timeout: 10_000 });
      const refused = await mcpPost(t2.access_token);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
      const dead = await form("/oauth/token", { grant_type: "refresh_token", refresh_token: t2.refresh_token!, client_id: clientId });
      expect(((await dead.json()) as Json).error).toBe("invalid_grant");
    } finally {
      await desk.ctx.close();
      await phoneCtx.close();
    }
  }, 150_000);

  it("the MCP SDK's OAuth client (dynamic registration, PKCE, resource) is approved from the page's QR link and refreshes by itself after a 401", async () => {
    const redirectUrl = `${fake.url}/sdk-callback`;
    let authUrl: URL | undefined;
    const store: { client?: Json; tokens?: Json; verifier?: string } = {};
    const provider: OAuthClientProvider = {
      get redirectUrl() {
        return redirectUrl;
      },
      get clientMetadata() {
        return {
          client_name: "SDK Connector",
          redirect_uris: [redirectUrl],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        };
      },
      state: () => "sdk-state",
      clientInformation: () => store.client as never,
      saveClientInformation: (c) => void (store.client = c as unknown as Json),
      tokens: () => store.tokens as never,
      saveTokens: (t) => void (store.tokens = t as unknown as Json),
      redirectToAuthorization: (u) => void (authUrl = u),
      saveCodeVerifier: (v) => void (store.verifier = v),
      codeVerifier: () => store.verifier!,
    };
    const serverUrl = `${relay.url}/mcp`;
    expect(await auth(provider, { serverUrl })).toBe("REDIRECT");
    expect(String(store.client?.client_id)).toMatch(/^lcd1\./); // registered (RFC 7591)
    expect(authUrl!.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authUrl!.searchParams.get("resource")).toBe(serverUrl);

    const { ctx: phoneCtx, page: phone } = await pairedPhone();
    const desk = await desktopPage(authUrl!.toString(), true);
    try {
      // The QR code's link, opened on the phone, fills the code in (it leaves the address bar); a tap looks it up.
      await phone.goto(desk.link);
      await phone.getByRole("button", { name: "Continue" }).click();
      await allowOnPhone(phone, "SDK Connector", new URL(fake.url).host, "oauth-consent-qr-phone");
      expect(phone.url()).not.toContain("#code");
      await desk.page.waitForURL(/\/sdk-callback\?/, { timeout: 15_000 });
      const cb = fake.callbacks.at(-1)!;
      expect(cb.get("state")).toBe("sdk-state");
      expect(await auth(provider, { serverUrl, authorizationCode: cb.get("code")!, iss: cb.get("iss")! })).toBe("AUTHORIZED");
      // The service worker let the OAuth pages pass: its cached app shell is still the app's.
      // (Read from /healthz, which it never handles: a navigation it handles would cache a fresh shell first.)
      const back = await desk.ctx.newPage();
      await back.goto(`${relay.url}/healthz`);
      expect(await back.evaluate(async () => (await (await caches.match("/"))?.text()) ?? "")).toContain('<div id="app">');

      const c = new McpClient({ name: "sdk-oauth-client", version: "0.0.0" });
      await c.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }));
      try {
        expect((await c.listTools()).tools.map((t) => t.name)).toContain("await_answer");
        // An access token that is no longer valid: the SDK gets 401 invalid_token, refreshes, and retries.
        const before = { ...store.tokens };
        const inbox = String(before.access_token).split(".")[1]!;
        store.tokens = { ...before, access_token: `lua1.${inbox}.${randomId(32)}` };
        expect((await c.listTools()).tools.length).toBeGreaterThan(0);
        expect(store.tokens.refresh_token).not.toBe(before.refresh_token);
        expect((await mcpPost(String(store.tokens.access_token))).status).toBe(200);
      } finally {
        await c.close();
      }
    } finally {
      await desk.ctx.close();
      await phoneCtx.close();
    }
  }, 150_000);

  it("a /connect#code= link fills the code in but asks the relay nothing until the human taps Continue (issue 26 §10)", async () => {
    const reg = (await (
      await fetch(`${relay.url}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Link Clicker", redirect_uris: [`${fake.url}/callback`], token_endpoint_auth_method: "none" }),
      })
    ).json()) as { client_id: string };
    const q = new URLSearchParams({
      response_type: "code",
      client_id: reg.client_id,
      redirect_uri: `${fake.url}/callback`,
      code_challenge: await pkceS256(randomId(48)),
      code_challenge_method: "S256",
      state: "s",
    });
    const { ctx: phoneCtx, page: phone } = await pairedPhone();
    const desk = await desktopPage(`${relay.url}/oauth/authorize?${q}`);
    try {
      const asked: string[] = [];
      phone.on("request", (r) => {
        const path = new URL(r.url()).pathname;
        if (path.startsWith("/api/inbox/oauth/") && r.method() === "POST") asked.push(path);
      });
      const grantsLoaded = phone.waitForResponse((r) => new URL(r.url()).pathname === "/api/inbox/oauth/grants");
      await phone.goto(desk.link);
      await grantsLoaded; // the screen is up and has talked to the relay for its list
      await phone.waitForLoadState("networkidle");
      expect(asked).toEqual([]);
      expect(await phone.locator(".connect-review").count()).toBe(0);
      expect(await phone.locator("#connect-code").inputValue({ timeout: 5_000 })).toBe(desk.code);
      expect(phone.url()).not.toContain("#code");
      await phone.getByRole("button", { name: "Continue" }).click();
      await phone.locator(".connect-review").waitFor({ timeout: 10_000 });
      expect(asked).toEqual(["/api/inbox/oauth/lookup"]);
    } finally {
      await desk.ctx.close();
      await phoneCtx.close();
    }
  }, 90_000);

  it("a metadata document dripped slowly past the 5 s cap is refused in the generic words, never a 500 (issue 26 §7)", async () => {
    const q = new URLSearchParams({
      response_type: "code",
      client_id: `${fake.url}/drip.json`,
      redirect_uri: `${fake.url}/callback`,
      code_challenge: await pkceS256(randomId(48)),
      code_challenge_method: "S256",
    });
    const r = await fetch(`${relay.url}/oauth/authorize?${q}`, { redirect: "manual" });
    expect(r.status).toBe(400);
    expect(r.headers.get("location")).toBeNull();
    expect(await r.text()).toContain("is not a usable client metadata document");
    expect(fake.drips).toBe(1);
  }, 30_000);

  it("refusals on the real relay: bad PKCE verifier, wrong redirect_uri, wrong resource, reused code", async () => {
    const reg = (await (
      await fetch(`${relay.url}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Refusals", redirect_uris: [`${fake.url}/callback`], token_endpoint_auth_method: "none" }),
      })
    ).json()) as { client_id: string };
    const verifier = randomId(48);
    const q = new URLSearchParams({
      response_type: "code",
      client_id: reg.client_id,
      redirect_uri: `${fake.url}/callback`,
      code_challenge: await pkceS256(verifier),
      code_challenge_method: "S256",
      state: "s",
      resource: `${relay.url}/mcp`,
    });
    // The consent through the device API (the UI is covered above): the code from the page's status.
    const start = await fetch(`${relay.url}/oauth/authorize?${q}`, { redirect: "manual" });
    const rid = new URL(start.headers.get("location")!, relay.url).searchParams.get("rid")!;
    const html = await (await fetch(`${relay.url}/oauth/authorize?rid=${rid}`)).text();
    const user = /id="code"[^>]*>([A-Z-]{9})</.exec(html)![1]!;
    const m = (await (
      await fetch(`${relay.url}/api/inboxes`, { method: "POST", headers: { authorization: `Bearer ${DEV_RELAY_KEY}` } })
    ).json()) as MachineCreated;
    const pc = (await (
      await fetch(`${relay.url}/api/inbox/pairings`, { method: "POST", headers: { authorization: `Bearer ${m.machine_credential}` } })
    ).json()) as CodeIssued;
    const dev = (await (
      await fetch(`${relay.url}/api/pair`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: pc.code }) })
    ).json()) as { device_credential: string };
    const d = await fetch(`${relay.url}/api/inbox/oauth/decide`, {
      method: "POST",
      headers: { authorization: `Bearer ${dev.device_credential}`, "content-type": "application/json" },
      body: JSON.stringify({ code: user, allow: true }),
    });
    expect(d.status).toBe(201);
    const status = (await (await fetch(`${relay.url}/oauth/authorize/status?rid=${rid}`)).json()) as { redirect: string };
    const code = new URL(status.redirect).searchParams.get("code")!;
    const good = {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: `${fake.url}/callback`,
      client_id: reg.client_id,
      resource: `${relay.url}/mcp`,
    };
    const err = async (b: Record<string, string>) => ((await (await form("/oauth/token", b)).json()) as Json).error;
    expect(await err({ ...good, code_verifier: randomId(48) })).toBe("invalid_grant");
    expect(await err({ ...good, redirect_uri: `${fake.url}/elsewhere` })).toBe("invalid_grant");
    expect(await err({ ...good, resource: "https://other.example/mcp" })).toBe("invalid_target");
    const ok = await form("/oauth/token", good);
    expect(ok.status).toBe(200);
    const t = (await ok.json()) as { access_token: string };
    expect(await err(good)).toBe("invalid_grant"); // reused: and the grant it made is revoked
    expect((await mcpPost(t.access_token)).status).toBe(401);
  }, 60_000);
});
