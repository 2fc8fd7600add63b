// The end-to-end core in Chromium (docs/e2e.md): shared/e2e bundled with esbuild and evaluated in a page
// of the relay's origin (a secure context with IndexedDB). The Node-sealed vectors open and rebuild byte
// for byte there; then a real cross-runtime pairing: the page makes a non-extractable device key, keeps it
// in IndexedDB across a reload, pairs with a machine key held by Node, opens what Node sealed and seals
// an answer that Node opens.
import { readFileSync } from "node:fs";
import { build } from "esbuild";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import * as E2E from "../../shared/crypto/e2e/index.js";
import type * as V from "../../shared/crypto/e2e/vectors.js";
import { useBrowser } from "../helpers/browser.js";

type Api = typeof E2E & typeof V;
type PageGlobals = { E2E: Api };
const FIXTURE = "test/fixtures/e2e-vectors.json";

let bundle: string;

const fx = useBrowser({
  relay: false,
  timeoutMs: 120_000,
  setup: async () => {
    const out = await build({
      stdin: {
        contents: 'import * as a from "./index.ts"; import * as b from "./vectors.ts"; globalThis.E2E = { ...a, ...b };',
        resolveDir: "shared/crypto/e2e",
        loader: "ts",
      },
      bundle: true,
      format: "iife",
      target: "es2022",
      write: false,
    });
    bundle = out.outputFiles[0]!.text;
  },
});

async function load(page: Page): Promise<void> {
  // A page of the relay's origin: http://127.0.0.1 is a secure context (crypto.subtle) with IndexedDB.
  // CDP evaluation is not subject to the page's CSP.
  await page.goto(`${fx.relay()}/api/push/key`);
  await page.evaluate(bundle);
  expect(await page.evaluate(() => isSecureContext && typeof (globalThis as unknown as PageGlobals).E2E.seal === "function")).toBe(true);
}

describe("e2e core in Chromium", () => {
  it("opens the Node-sealed vectors and rebuilds them byte for byte", async () => {
    const page = await fx.browser.newPage();
    await load(page);
    const vectors = JSON.parse(readFileSync(FIXTURE, "utf8")) as V.Vectors;
    const problems = await page.evaluate((v) => (globalThis as unknown as PageGlobals).E2E.checkVectors(v), vectors);
    expect(problems).toEqual([]);
    // Not vacuous: a changed ciphertext byte is caught in the page too.
    const bad = structuredClone(vectors);
    const c = E2E.unb64u(bad.outputs.frames[0]!.envelope.c);
    c[0]! ^= 1;
    bad.outputs.frames[0]!.envelope.c = E2E.b64u(c);
    expect((await page.evaluate((v) => (globalThis as unknown as PageGlobals).E2E.checkVectors(v), bad)).length).toBeGreaterThan(0);
    await page.close();
  });

  it("pairs a non-extractable IndexedDB device key with a Node machine; sealed both ways", async () => {
    const inboxId = "InboxBrowser";
    const codeId = await E2E.pairingCodeId(`${inboxId}.browserCode00001`);
    const secret = E2E.newPairingSecret();
    const machine = await E2E.holderSelf("mc_laptop0001", await E2E.generateHolderKeyPair({ extractable: true }));
    const key = await E2E.generateContentKey(1);
    const page = await fx.browser.newPage();
    await load(page);

    // The device key: made non-extractable and stored as a CryptoKeyPair in IndexedDB.
    await page.evaluate(async () => {
      const { E2E: e } = globalThis as unknown as PageGlobals;
      const pair = await e.generateHolderKeyPair({ extractable: false });
      const db = await new Promise<IDBDatabase>((res, rej) => {
        const r = indexedDB.open("e2e-test", 1);
        r.onupgradeneeded = () => r.result.createObjectStore("keys");
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      await new Promise<void>((res, rej) => {
        const tx = db.transaction("keys", "readwrite");
        tx.objectStore("keys").put(pair, "device");
        tx.oncomplete = () => res();
        tx.onerror = () => rej(tx.error);
      });
      db.close();
    });
    await page.reload();
    await page.evaluate(bundle);

    const hello = await page.evaluate(
      async ({ secret, inboxId, codeId }) => {
        const { E2E: e } = globalThis as unknown as PageGlobals;
        const db = await new Promise<IDBDatabase>((res, rej) => {
          const r = indexedDB.open("e2e-test", 1);
          r.onsuccess = () => res(r.result);
          r.onerror = () => rej(r.error);
        });
        const pair = await new Promise<CryptoKeyPair>((res, rej) => {
          const r = db.transaction("keys").objectStore("keys").get("device");
          r.onsuccess = () => res(r.result as CryptoKeyPair);
          r.onerror = () => rej(r.error);
        });
        db.close();
        const self = await e.holderSelf("dv_chromium01", pair);
        (globalThis as unknown as { device: E2E.HolderSelf }).device = self;
        return e.makePairHello({ secret, inboxId, codeId, joiner: self });
      },
      { secret, inboxId, codeId },
    );

    const { reply, comparisonCode } = await E2E.makePairReply({ secret, inboxId, codeId, hello, sponsor: machine, key });
    const aad: E2E.FrameAad = { session_id: "sess_browser01", type: "tool.call", call_id: "c1", sender: "agent:agent-1" };
    const question = await E2E.seal(key, aad, JSON.stringify({ arguments: { question: "Sealed in Node — ünï 🚀" } }));

    const got = await page.evaluate(
      async ({ secret, inboxId, codeId, reply, question, aad }) => {
        const { E2E: e, device } = globalThis as unknown as PageGlobals & { device: E2E.HolderSelf };
        const accepted = await e.acceptPairReply({ secret, inboxId, codeId, joiner: device, reply });
        const opened = await e.open(accepted.key, aad, question);
        const answer = await e.seal(
          accepted.key,
          { ...aad, type: "tool.result", sender: "app:dv_chromium01" },
          JSON.stringify({ result: { message: "Sealed in Chromium ✓" } }),
        );
        let exported = true;
        try {
          await crypto.subtle.exportKey("jwk", device.privateKey);
        } catch {
          exported = false;
        }
        return { code: accepted.comparisonCode, opened, answer, extractable: device.privateKey.extractable, exported };
      },
      { secret, inboxId, codeId, reply, question, aad },
    );

    expect(got.code).toBe(comparisonCode);
    expect(JSON.parse(got.opened)).toEqual({ arguments: { question: "Sealed in Node — ünï 🚀" } });
    expect(got.extractable).toBe(false);
    expect(got.exported).toBe(false);
    expect(JSON.parse(await E2E.open(key, { ...aad, type: "tool.result", sender: "app:dv_chromium01" }, got.answer))).toEqual({
      result: { message: "Sealed in Chromium ✓" },
    });
    // Moved to another call by the relay: Node refuses it.
    await expect(E2E.open(key, { ...aad, type: "tool.result", call_id: "c2", sender: "app:dv_chromium01" }, got.answer)).rejects.toThrow(E2E.E2EError);
    await page.close();
  });
});
