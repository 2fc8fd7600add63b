// The inbox as a newcomer meets it, with the real CLI and Chromium: `lineup pair` once, `lineup call` from
// two project directories, both questions in "Waiting for you", answered there; then `lineup devices
// revoke` from the terminal and the app says so within 5 s while its credential gets 401.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { useBrowser } from "../helpers/browser.js";
import { runCli, spawnCli, tempDir } from "../helpers/adapter-helpers.js";

const fx = useBrowser();
const relay = fx.relay;

const stored = async (page: Page): Promise<{ device_id: string; device_credential: string }[]> =>
  JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes"))) ?? "[]") as { device_id: string; device_credential: string }[];

describe("pair once from the CLI, answer two projects, revoke from the CLI", () => {
  it("lineup pair → the phone pairs; lineup call from two directories → both wait on home and are answered; lineup devices revoke → removed in < 5 s", async () => {
    const state = tempDir("lineup-pair-state-");
    const env = { LINEUP_RELAY_URL: relay(), LINEUP_STATE_DIR: state, LINEUP_SESSION: "", LINEUP_TOKEN: "" };
    const projA = tempDir("api-");
    const projB = tempDir("web-");

    const pair = await runCli(["pair", "--json"], env, projA);
    expect(pair.code, pair.stderr).toBe(0);
    const lines = pair.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const { url } = JSON.parse(lines[0]!) as { url: string };
    expect(url).toContain("#pair=");

    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    const calls = [
      spawnCli(["call", "confirm", "--args", JSON.stringify({ question: "Deploy the API now?" })], env, projA),
      spawnCli(["call", "input", "--args", JSON.stringify({ question: "Name of the web release?" })], env, projB),
    ];
    try {
      await page.goto(url);
      await expect.poll(async () => (await stored(page)).length, { timeout: 15_000 }).toBe(1);
      const me = (await stored(page))[0]!;

      // Both questions, from two sessions of the one inbox, wait on the home screen.
      const deploy = page.locator(".wait-row", { hasText: "Deploy the API now?" });
      const name = page.locator(".wait-row", { hasText: "Name of the web release?" });
      await deploy.waitFor({ timeout: 30_000 });
      await name.waitFor({ timeout: 30_000 });

      await deploy.click();
      await page.locator(".card", { hasText: "Deploy the API now?" }).getByRole("button", { name: "Yes" }).click();
      const a = await calls[0]!.done;
      expect(a.code, a.stderr).toBe(0);
      expect(JSON.parse(a.stdout.trim())).toMatchObject({ message: "yes", confirmed: true });

      await page.getByRole("button", { name: "Back" }).click();
      await name.click();
      const card = page.locator(".card", { hasText: "Name of the web release?" });
      await card.locator("input, textarea").first().fill("v2.1 Aurora");
      await card.getByRole("button", { name: /Submit|Send/ }).click();
      const b = await calls[1]!.done;
      expect(b.code, b.stderr).toBe(0);
      expect(JSON.parse(b.stdout.trim())).toMatchObject({ message: "v2.1 Aurora" });

      // The CLI lists the device and revokes it; the app says so within 5 s and its credential is refused.
      const list = await runCli(["devices", "--json"], env, projA);
      const devices = JSON.parse(list.stdout.trim()) as { id: string; name: string; revoked?: boolean }[];
      expect(devices.filter((d) => !d.revoked).map((d) => d.id)).toEqual([me.device_id]);
      const rev = await runCli(["devices", "revoke", me.device_id], env, projA);
      expect(rev.code, rev.stderr).toBe(0);
      // The revocation is complete when the command returns: from then on, 5 s at most.
      await page.getByText("This device was removed from the inbox").waitFor({ timeout: 5_000 });
      expect((await fetch(`${relay()}/api/inbox`, { headers: { authorization: `Bearer ${me.device_credential}` } })).status).toBe(401);
    } finally {
      for (const c of calls) c.kill("SIGKILL");
      await ctx.close();
    }
  }, 120_000);
});
