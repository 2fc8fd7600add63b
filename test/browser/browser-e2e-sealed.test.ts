// Sealed sessions in the PWA (issue 19, docs/e2e.md, docs/pwa.md "End-to-end encryption") in real Chromium:
// the page pairs its key from a `#pair=…&k=…` link (the test is the sponsoring machine and answers the hello
// with makePairReply), the fragment leaves the address bar at once, and the walk-through — choice, confirm,
// input, ask_question with an image, canvas, work_report — and chat both ways work sealed, with a lock on
// every session row and card. A frame sealed for another call shows the "can't open" card, never its
// ciphertext; a device revoked from the Devices screen (which re-keys) cannot open a call made afterwards.
import { AxeBuilder } from "@axe-core/playwright";
import { build } from "esbuild";
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import * as E2E from "../../shared/crypto/e2e/index.js";
import { shot, useBrowser } from "../helpers/browser.js";
import { Machine, SealedAgent, api, ok, pairSealed } from "../helpers/e2e-browser.js";

const fx = useBrowser();
const relay = fx.relay;
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==", "base64");

async function axe(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} ${n.target.join(" ")}: ${n.failureSummary ?? ""}`));
}

interface Setup {
  mc: Machine;
  agent: SealedAgent;
  ctx: BrowserContext;
  page: Page;
  sid: string;
  device: string;
}

async function setup(label: string, locale = "en-US"): Promise<Setup> {
  const mc = await Machine.create(relay());
  const ctx = await fx.context("phone", locale);
  const page = await ctx.newPage();
  const paired = await pairSealed(page, mc);
  expect(paired.urlAfter).not.toContain("#");
  expect(paired.urlAfter).not.toContain(paired.comparisonCode.replace(" ", ""));
  const s = await mc.sealedSession(`/home/me/${label}`);
  const agent = await SealedAgent.connect(mc, s);
  return { mc, agent, ctx, page, sid: s.session_id, device: paired.device_id };
}

describe("sealed sessions in the browser", () => {
  it("pairs from #pair=…&k=…, removes the fragment at once, and never keeps a key in localStorage", async () => {
    const mc = await Machine.create(relay());
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      const link = await mc.pairingLink();
      // The first thing the page does: the fragment is gone before any request of ours is answered.
      const seen: string[] = [];
      page.on("framenavigated", (f) => f === page.mainFrame() && seen.push(f.url()));
      await page.goto(link.url);
      expect(page.url()).toBe(`${relay()}/`);
      expect(await page.evaluate(() => location.hash)).toBe("");
      const { comparisonCode } = await mc.sponsor(link.code, link.secret);
      await page.locator(".notice", { hasText: comparisonCode }).waitFor({ timeout: 20_000 });
      // Neither the secret nor any key material in localStorage; the device key is non-extractable in IndexedDB.
      const ls = await page.evaluate(() => JSON.stringify({ ...localStorage }));
      expect(ls).not.toContain(link.secret);
      expect(ls).not.toMatch(/"wraps"|privateKey|"raw"/);
      const idb = await page.evaluate(async () => {
        const db = await new Promise<IDBDatabase>((res, rej) => {
          const r = indexedDB.open("lineup-e2e");
          r.onsuccess = () => res(r.result);
          r.onerror = () => rej(r.error);
        });
        const all = await new Promise<Array<{ pair: CryptoKeyPair; wraps: Record<string, unknown> }>>((res) => {
          const r = db.transaction("devices").objectStore("devices").getAll();
          r.onsuccess = () => res(r.result as Array<{ pair: CryptoKeyPair; wraps: Record<string, unknown> }>);
        });
        const rec = all[0]!;
        let exported = "no";
        try {
          await crypto.subtle.exportKey("jwk", rec.pair.privateKey);
          exported = "yes";
        } catch {
          /* non-extractable */
        }
        return { n: all.length, extractable: rec.pair.privateKey.extractable, exported, epochs: Object.keys(rec.wraps) };
      });
      expect(idb).toEqual({ n: 1, extractable: false, exported: "no", epochs: ["1"] });
      expect(seen.some((u) => u.includes("k="))).toBe(true); // the navigation itself, then never again
      expect(seen.slice(1).some((u) => u.includes("k="))).toBe(false);
      await shot(page, "phone-e2e-paired");
      expect(await axe(page)).toEqual([]);
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("the walk-through sealed: choice, confirm, input, ask_question with an image, canvas, work_report; locks everywhere", async () => {
    const { agent, ctx, page, sid } = await setup("walk");
    try {
      const tools = await agent.appTools();
      // The app's tool.list was sealed; opened, it is the built-in catalog with its schemas.
      expect((tools.tools as Array<{ name: string; inputSchema?: unknown }>).find((t) => t.name === "choice")?.inputSchema).toBeDefined();
      // The session row says sealed.
      await page.locator(`.session-row[data-sid="${sid}"] .lock[data-sealed="true"]`).waitFor({ timeout: 15_000 });
      expect(await page.locator(`.session-row[data-sid="${sid}"] .lock`).getAttribute("aria-label")).toBe("End-to-end encrypted");
      await page.locator(`.session-row[data-sid="${sid}"] a`).click();

      await agent.call("c1", "choice", { question: "Deploy where?", options: ["staging", "production"] });
      const c1 = page.locator('[data-call="c1"]');
      await c1.getByRole("radio", { name: "production" }).check({ timeout: 15_000 });
      expect(await c1.locator('.lock[data-sealed="true"]').count()).toBe(1);
      await shot(page, "phone-e2e-choice");
      expect(await axe(page)).toEqual([]);
      await c1.getByRole("button", { name: "Submit" }).click();
      const r1 = await agent.result("c1");
      expect(r1.open.result).toEqual({ message: "production", selected: ["production"] });
      expect(JSON.stringify(r1.raw)).not.toContain("production");

      await agent.call("k1", "confirm", { question: "Run the migration?", yes_label: "Run", no_label: "Wait" });
      await page.locator('[data-call="k1"]').getByRole("button", { name: "Run" }).click({ timeout: 15_000 });
      expect((await agent.result("k1")).open.result).toEqual({ message: "yes", confirmed: true });

      await agent.call("i1", "input", { question: "Branch name?" });
      await page.locator("#in-i1").fill("feature/sealed", { timeout: 15_000 });
      await page.locator('[data-call="i1"]').getByRole("button", { name: "Submit" }).click();
      expect((await agent.result("i1")).open.result).toEqual({ message: "feature/sealed" });

      await agent.call("q1", "ask_question", { project_directory: "/home/me/shop", question: "Which **logo**?" });
      const q1 = page.locator('[data-call="q1"]');
      await q1.locator("strong", { hasText: "logo" }).waitFor({ timeout: 15_000 });
      await q1.locator('input[type="file"]').setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: PNG });
      await q1.getByText("logo.png").waitFor({ timeout: 5_000 });
      await q1.locator("textarea").fill("Use this one");
      await q1.getByRole("button", { name: "Send" }).click();
      const r4 = await agent.result("q1");
      expect(r4.open.result).toEqual({ message: "Use this one", content: [{ type: "image", mimeType: "image/png", data: PNG.toString("base64") }] });
      expect(JSON.stringify(r4.raw)).not.toContain(PNG.toString("base64").slice(0, 24));

      await agent.call("o1", "canvas", { width: 200, height: 120 }, "open");
      const open = (await agent.result("o1")).open.result as { instance_id: string };
      expect(open.instance_id).toMatch(/^cv_/);
      await agent.call("d1", "canvas", { instance_id: open.instance_id, path: "M10 10 L150 90", color: "#e53935", width: 6 }, "draw");
      expect((await agent.result("d1")).open.error).toBeUndefined();
      await page.locator(`svg[data-instance="${open.instance_id}"] path[d="M10 10 L150 90"]`).waitFor({ timeout: 15_000 });

      await agent.call("w1", "work_report", { project_directory: "/srv/app", summary: "## Done\n\n1. Sealed `login`" });
      const w1 = page.locator('[data-call="w1"]');
      await w1.getByRole("button", { name: /Approve/ }).click({ timeout: 15_000 });
      expect((await agent.result("w1")).open.result).toEqual({ message: "approved", approved: true });

      // Every card (done ones too) carries the lock with its name.
      const cards = page.locator(".thread .card");
      const n = await cards.count();
      expect(n).toBeGreaterThanOrEqual(6);
      for (let i = 0; i < n; i++) expect(await cards.nth(i).locator('.lock[aria-label="End-to-end encrypted"]').count()).toBe(1);
      // Nothing of a sealed session is written to localStorage.
      const ls = await page.evaluate(() => JSON.stringify({ ...localStorage }));
      expect(ls).not.toContain("feature/sealed");
      expect(ls).not.toContain("Deploy where?");
      await shot(page, "phone-e2e-walkthrough");
      expect(await axe(page)).toEqual([]);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 120_000);

  it("chat both ways sealed; arguments against the schema are refused by the app; a frame moved to another call shows the can't-open card", async () => {
    const { mc, agent, ctx, page, sid } = await setup("chat");
    try {
      await agent.appTools();
      await page.locator(`.session-row[data-sid="${sid}"] a`).click();
      await agent.message("m-agent-1", "Build **finished** in 42 s");
      await page.locator(".bubble.agent strong", { hasText: "finished" }).waitFor({ timeout: 15_000 });
      await page.locator("#chat-text").fill("Great, deploy it");
      await page.locator("#chat-text").press("Enter");
      const m = await agent.nextMessage();
      expect(m.open.content).toEqual([{ type: "text", text: "Great, deploy it" }]);
      expect(typeof m.raw.id).toBe("string");
      expect(JSON.stringify(m.raw)).not.toContain("deploy it");

      // Validation moved to the receiver: a choice without options never renders, the agent gets invalid_arguments.
      await agent.call("bad1", "choice", { question: "No options" });
      const bad = await agent.result("bad1");
      expect(bad.open.error).toMatchObject({ code: "invalid_arguments" });
      expect(await page.locator('[data-call="bad1"]').count()).toBe(0);

      // The relay (here: the test) moves a sealed call to another call id: the AAD does not match.
      const sealedFor = await agent.sealCall("real-1", "confirm", { question: "SECRET-QUESTION-MARKER" });
      agent.send({ ...sealedFor, call_id: "moved-1" });
      const card = page.locator('[data-call="moved-1"][data-unreadable]');
      await card.waitFor({ timeout: 15_000 });
      expect(await card.textContent()).toContain("could not be opened");
      const body = await page.locator("body").innerText();
      expect(body).not.toContain("SECRET-QUESTION-MARKER");
      expect(body).not.toContain((sealedFor.sealed as E2E.Envelope).c.slice(0, 16));
      await shot(page, "phone-e2e-cant-open");
      expect(await axe(page)).toEqual([]);

      // The caller re-seals that open call (tool.reseal; forwarded as a `resealed` tool.call): it replaces the card.
      agent.send(await E2E.sealReseal(mc.current(), { session_id: sid, sender: agent.sender }, "moved-1", { question: "Now readable?" }));
      await page.locator('[data-call="moved-1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-call="moved-1"][data-unreadable]').count()).toBe(0);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);

  it("a device paired before E2E was turned on is told to pair again (home and session) and shows nothing sealed; pairing again claims the code and opens it", async () => {
    const mc = await Machine.create(relay(), { on: false });
    const ctx = await fx.context("phone");
    const page = await ctx.newPage();
    try {
      await page.goto(await mc.plainLink());
      await expect.poll(async () => page.evaluate(() => localStorage.getItem("lineup.inboxes")), { timeout: 15_000 }).toContain("dv_");
      await mc.turnOn();
      const s = await mc.sealedSession("/home/me/old-device");
      const agent = await SealedAgent.connect(mc, s);
      try {
        await page.locator(".home .e2e-no-key", { hasText: "Pair it again" }).waitFor({ timeout: 20_000 });
        await page.locator(`.session-row[data-sid="${s.session_id}"] .lock[data-sealed="true"]`).waitFor({ timeout: 15_000 });
        await page.locator(`.session-row[data-sid="${s.session_id}"] a`).click();
        // Without a key it cannot even register its tools (their schemas are sealed), so it is offered no call.
        await agent.call("old-1", "confirm", { question: "OLD-DEVICE-MARKER" });
        await page.locator(".session .e2e-no-key").waitFor({ timeout: 15_000 });
        await page.waitForTimeout(1_000);
        expect(await page.locator("body").innerText()).not.toContain("OLD-DEVICE-MARKER");
        await shot(page, "phone-e2e-pair-again");
        expect(await axe(page)).toEqual([]);

        // Pairing again with a new `&k=` link: the device claims the code (it stays the same device) and gets the key.
        const before = JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes")))!) as { device_id: string }[];
        const again = await pairSealed(page, mc);
        expect(again.device_id).toBe(before[0]!.device_id);
        expect(JSON.parse((await page.evaluate(() => localStorage.getItem("lineup.inboxes")))!)).toHaveLength(1);
        await page.goto(`${relay()}/s/${s.session_id}`);
        await agent.appTools();
        await agent.call("old-2", "confirm", { question: "Readable now?" });
        await page.locator('[data-call="old-2"]').getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
        expect((await agent.result("old-2")).open.result).toEqual({ message: "yes", confirmed: true });
        expect(await page.locator(".e2e-no-key").count()).toBe(0);
      } finally {
        agent.close();
      }
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("rekey_needed in the inbox state (a holder revoked elsewhere): the online device holding the key re-keys", async () => {
    const { mc, agent, ctx, page, sid } = await setup("rekey-needed");
    const ctxB = await fx.context("phone");
    const pageB = await ctxB.newPage();
    try {
      await agent.appTools();
      const b = await pairSealed(pageB, mc);
      await ctxB.close();
      // Revoked by the machine (`lineup devices revoke`), which does not re-key here: the page must.
      await ok(relay(), "DELETE", `/api/inbox/devices/${b.device_id}`, mc.cred);
      await mc.follow(2);
      expect((await mc.state()).rekey_needed).toBe(false);
      // The page seals under the new epoch: its answer opens only with the epoch-2 key.
      await agent.call("rk-1", "confirm", { question: "After the re-key?" });
      await page.locator(`.session-row[data-sid="${sid}"] a`).click();
      await page.locator('[data-call="rk-1"]').getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
      const r = await agent.result("rk-1");
      expect((r.raw.sealed as E2E.Envelope).e).toBe(2);
      expect(r.open.result).toEqual({ message: "yes", confirmed: true });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);

  it("the machine re-keys: a call under the new epoch opens after the page fetches its new wrap, and the answer is sealed under it", async () => {
    const { mc, agent, ctx, page, sid, device } = await setup("machine-rekey");
    try {
      await agent.appTools();
      const st = await mc.state();
      const holders = [mc.self, { id: device, publicKey: mc.trusted[device]! }];
      const rk = await E2E.rekey({ inboxId: mc.inbox, current: mc.current(), sender: mc.self, holders });
      const roster = await E2E.sealRoster(rk.key, mc.inbox, mc.self.id, holders);
      await ok(relay(), "PUT", "/api/inbox/e2e", mc.cred, {
        base_epoch: st.epoch,
        epoch: st.epoch + 1,
        wraps: Object.fromEntries(rk.wraps.map((w) => [w.to, w])),
        roster,
      });
      mc.keys.set(rk.key.epoch, rk.key);
      // A second re-key from the same base loses: 409 (the first re-keyer wins).
      expect(
        (
          await api(relay(), "PUT", "/api/inbox/e2e", mc.cred, {
            base_epoch: st.epoch,
            epoch: st.epoch + 1,
            wraps: Object.fromEntries(rk.wraps.map((w) => [w.to, w])),
            roster,
          })
        ).status,
      ).toBe(409);
      await page.locator(`.session-row[data-sid="${sid}"] a`).click();
      await agent.call("ep2", "confirm", { question: "Epoch two?" });
      await page.locator('[data-call="ep2"]').getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
      const r = await agent.result("ep2");
      expect((r.raw.sealed as E2E.Envelope).e).toBe(2);
      expect(r.open.result).toEqual({ message: "yes", confirmed: true });
      // Chat sealed under the new epoch too.
      await page.locator("#chat-text").fill("still private");
      await page.locator("#chat-text").press("Enter");
      const m = await agent.nextMessage();
      expect((m.raw.sealed as E2E.Envelope).e).toBe(2);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 90_000);

  it("a Chinese UI names the locks in Chinese", async () => {
    const { agent, ctx, page, sid } = await setup("zh", "zh-CN");
    try {
      await agent.appTools();
      await page.locator(`.session-row[data-sid="${sid}"] .lock[aria-label="端到端加密"]`).waitFor({ timeout: 15_000 });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("a paired device sponsors another (link with &k=, same comparison code); revoking it re-keys; the revoked device cannot open a call made afterwards", async () => {
    const { mc, agent, ctx, page, sid } = await setup("revoke");
    const ctxB = await fx.context("phone");
    const pageB = await ctxB.newPage();
    try {
      await agent.appTools();
      // A sponsors B: "Create a pairing link" carries a secret (&k=), and A answers B's hello itself.
      await page.goto(`${relay()}/devices`);
      await page.getByRole("button", { name: "Create a pairing link" }).click({ timeout: 15_000 });
      const link = await page.locator("#copy-device").inputValue({ timeout: 10_000 });
      expect(link).toMatch(/#pair=[^&]+&k=[A-Za-z0-9_-]{43}$/);
      await page.locator(".add-device .e2e-link .lock[data-sealed=true]").waitFor({ timeout: 5_000 });
      await pageB.goto(link);
      expect(pageB.url()).toBe(`${relay()}/`);
      const compareB = pageB.locator(".notice", { hasText: "Comparison code" });
      await compareB.waitFor({ timeout: 20_000 });
      const codeB = /(\d{3} \d{3})/.exec(await compareB.innerText())![1]!;
      // Both screens show the same comparison code.
      await page.locator(".e2e-compare", { hasText: codeB }).waitFor({ timeout: 10_000 });
      await shot(page, "phone-e2e-sponsor");
      expect(await axe(page)).toEqual([]);
      const b = { device_id: (JSON.parse((await pageB.evaluate(() => localStorage.getItem("lineup.inboxes")))!) as { device_id: string }[])[0]!.device_id };
      expect((await mc.state()).epoch).toBe(1);
      // The worst case of a revoked device: it kept its keys. (The app deletes them when it learns it was
      // revoked; the test copies them aside first, key pair included — structured clone, still non-extractable.)
      await pageB.evaluate(async () => {
        const open = (name: string, store?: string) =>
          new Promise<IDBDatabase>((res, rej) => {
            const r = indexedDB.open(name, 1);
            r.onupgradeneeded = () => store && r.result.createObjectStore(store, { keyPath: "id" });
            r.onsuccess = () => res(r.result);
            r.onerror = () => rej(r.error);
          });
        const from = await open("lineup-e2e");
        const rec = await new Promise<unknown>((res) => {
          const r = from.transaction("devices").objectStore("devices").getAll();
          r.onsuccess = () => res((r.result as unknown[])[0]);
        });
        const to = await open("kept-by-a-revoked-device", "devices");
        await new Promise<void>((res) => {
          const t = to.transaction("devices", "readwrite");
          t.objectStore("devices").put(rec);
          t.oncomplete = () => res();
        });
      });
      // B can read the sealed session with the key A handed over.
      await pageB.goto(`${relay()}/s/${sid}`);
      await agent.call("b-1", "confirm", { question: "B reads this?" });
      await pageB.locator('[data-call="b-1"]').getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
      expect((await agent.result("b-1")).open.result).toEqual({ message: "yes", confirmed: true });
      // Device A revokes B; A holds the key, so A re-keys at once (epoch 2, wrapped for A and the machine).
      const row = page.locator(`.member[data-id="${b.device_id}"]`);
      page.once("dialog", (d) => void d.accept());
      await row.getByRole("button", { name: /Revoke|Remove/ }).click({ timeout: 15_000 });
      await page.locator("[role=status]", { hasText: "New encryption key" }).waitFor({ timeout: 20_000 });
      await mc.follow(2);
      expect(mc.current().epoch).toBe(2);

      // A call sealed under epoch 2 opens on A…
      await page.goto(`${relay()}/s/${sid}`);
      const sealed = await agent.call("after-1", "confirm", { question: "AFTER-REVOKE-MARKER" });
      await page.locator('[data-call="after-1"]').getByRole("button", { name: "Yes" }).waitFor({ timeout: 20_000 });
      // …and not with anything B keeps (its IndexedDB wraps, unwrapped with its own device key).
      const bundle = (
        await build({
          stdin: { contents: 'import * as a from "./index.ts"; globalThis.E2E = a;', resolveDir: "shared/crypto/e2e", loader: "ts" },
          bundle: true,
          format: "iife",
          target: "es2022",
          write: false,
        })
      ).outputFiles[0]!.text;
      await pageB.evaluate(bundle);
      const outcome = await pageB.evaluate(
        async ({ frame, sid: session }) => {
          const e = (globalThis as unknown as { E2E: typeof E2E }).E2E;
          const db = await new Promise<IDBDatabase>((res, rej) => {
            const r = indexedDB.open("kept-by-a-revoked-device");
            r.onsuccess = () => res(r.result);
            r.onerror = () => rej(r.error);
          });
          const rec = await new Promise<{
            device_id: string;
            inbox_id: string;
            pair: CryptoKeyPair;
            wraps: Record<string, unknown>;
            trusted: Record<string, string>;
          }>((res) => {
            const r = db.transaction("devices").objectStore("devices").getAll();
            r.onsuccess = () => res((r.result as never[])[0]!);
          });
          const self = await e.holderSelf(rec.device_id, rec.pair);
          const keys = new Map<number, E2E.ContentKey>();
          for (const w of Object.values(rec.wraps)) {
            const ck = await e.unwrapContentKey({ inboxId: rec.inbox_id, recipient: self, wrapped: w, trusted: rec.trusted });
            keys.set(ck.epoch, ck);
          }
          try {
            await e.openFrame((n) => keys.get(n), session, frame);
            return { epochs: [...keys.keys()], opened: true };
          } catch (x) {
            return { epochs: [...keys.keys()], opened: false, code: (x as E2E.E2EError).code };
          }
        },
        { frame: { ...sealed, sender: agent.sender }, sid },
      );
      expect(outcome).toEqual({ epochs: [1], opened: false, code: "wrong_epoch" });
      // …and the app itself dropped them once it learned it was revoked.
      await expect
        .poll(
          () =>
            pageB.evaluate(
              () =>
                new Promise<number>((res) => {
                  const r = indexedDB.open("lineup-e2e");
                  r.onsuccess = () => {
                    const q = r.result.transaction("devices").objectStore("devices").count();
                    q.onsuccess = () => res(q.result);
                  };
                }),
            ),
          { timeout: 15_000 },
        )
        .toBe(0);
      expect(await pageB.locator("body").innerText()).not.toContain("AFTER-REVOKE-MARKER");
    } finally {
      agent.close();
      await ctx.close();
      await ctxB.close();
    }
  }, 120_000);
});
