// Pure parts of the adapter's E2E side, without the relay: the state file's e2e section, the helpers that
// build links, rosters and re-key lists, the sealed call's preview and receiver-side checks, and the key
// refresh of a Keyring against a scripted stand-in for GET /api/inbox/e2e.
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { splitJoinCode } from "../../adapter/e2e/join.js";
import { Keyring } from "../../adapter/e2e/keyring.js";
import { E2E_DEFAULTS, linkWithSecret, livePending, newMachineKey, remainingHolders, withHolder, withKeys } from "../../adapter/e2e/saved.js";
import { checkCallArguments, previewOf } from "../../adapter/e2e/frames.js";
import { findInbox, loadState, parseSavedE2E, saveInbox, updateE2E, type SavedE2E } from "../../adapter/client/state.js";
import { b64u, generateContentKey, generateHolderKeyPair, holderSelf, parsePairingFragment, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import { tempDir } from "../helpers/adapter-helpers.js";

const cleanups: (() => unknown)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

async function section(): Promise<SavedE2E> {
  return { on: true, machineKey: await newMachineKey(), keys: {}, roster: [], pending: [] };
}

describe("the state file's e2e section", () => {
  it("round-trips through saveInbox / loadState with mode 0600, and updateE2E changes only that inbox", async () => {
    const dir = tempDir();
    const e2e = withKeys(await section(), [await generateContentKey(1)]);
    saveInbox(dir, { relayUrl: "http://127.0.0.1:1", inboxId: "InboxAAAAAAA", machineId: "mc_AAAAAAAAAA", machineCredential: "lum1.x", e2e });
    saveInbox(dir, { relayUrl: "http://127.0.0.1:2", inboxId: "InboxBBBBBBB", machineId: "mc_BBBBBBBBBB", machineCredential: "lum1.y" });
    expect(statSync(join(dir, "sessions.json")).mode & 0o777).toBe(0o600);
    expect(findInbox(dir, "http://127.0.0.1:1")!.e2e).toEqual(e2e);
    updateE2E(dir, "http://127.0.0.1:1", "InboxAAAAAAA", (s) => (s ? { ...s, on: false } : s));
    expect(findInbox(dir, "http://127.0.0.1:1")!.e2e!.on).toBe(false);
    expect(findInbox(dir, "http://127.0.0.1:2")!.e2e).toBeUndefined();
    // Another inbox id on that relay (replaced by `lineup join`): nothing is written.
    expect(updateE2E(dir, "http://127.0.0.1:1", "InboxOTHERRR", () => e2e)).toBeUndefined();
  });

  it("a malformed section is dropped on load (the inbox itself is kept)", async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const good = await section();
    const file = {
      version: 1,
      sessions: [],
      clients: {},
      inboxes: [
        { relayUrl: "http://127.0.0.1:1", inboxId: "InboxAAAAAAA", machineId: "mc_AAAAAAAAAA", machineCredential: "lum1.x", e2e: { on: "yes" } },
        {
          relayUrl: "http://127.0.0.1:2",
          inboxId: "InboxBBBBBBB",
          machineId: "mc_BBBBBBBBBB",
          machineCredential: "lum1.y",
          e2e: { ...good, keys: { "01": "x" } },
        },
        { relayUrl: "http://127.0.0.1:3", inboxId: "InboxCCCCCCC", machineId: "mc_CCCCCCCCCC", machineCredential: "lum1.z", e2e: good },
      ],
    };
    writeFileSync(join(dir, "sessions.json"), JSON.stringify(file));
    chmodSync(join(dir, "sessions.json"), 0o600);
    const s = loadState(dir);
    expect(s.inboxes).toHaveLength(3);
    expect(s.inboxes[0]!.e2e).toBeUndefined();
    expect(s.inboxes[1]!.e2e).toBeUndefined(); // an epoch with a leading zero is not ours
    expect(s.inboxes[2]!.e2e).toEqual(good);
    expect(parseSavedE2E({ ...good, machineKey: { kty: "EC", crv: "P-256", x: "a", y: "b" } })).toBeUndefined(); // no private part
  });

  it("keeps the newest epochs only, and drops expired pairing secrets", async () => {
    let s = await section();
    const keys = [];
    for (let e = 1; e <= E2E_DEFAULTS.maxEpochsKept + 3; e++) keys.push(await generateContentKey(e));
    s = withKeys(s, keys);
    const held = Object.keys(s.keys)
      .map(Number)
      .sort((a, b) => a - b);
    expect(held).toHaveLength(E2E_DEFAULTS.maxEpochsKept);
    expect(held[0]).toBe(4);
    expect(s.keys[String(E2E_DEFAULTS.maxEpochsKept + 3)]).toBe(b64u(keys.at(-1)!.raw));
    const now = 1_000_000;
    s.pending = [
      { code_id: "a", secret: "s", expires_at: now - 1 },
      { code_id: "b", secret: "s", expires_at: now + 1 },
    ];
    expect(livePending(s, now).map((p) => p.code_id)).toEqual(["b"]);
  });
});

describe("helpers", () => {
  it("puts the secret into the link's fragment, which the shared parser reads back", () => {
    const secret = b64u(new Uint8Array(32).fill(7));
    const link = linkWithSecret("https://relay.example/#pair=InboxAAAAAAA.abcdefghijkl", "InboxAAAAAAA.abcdefghijkl", secret);
    expect(link).toBe(`https://relay.example/#pair=InboxAAAAAAA.abcdefghijkl&k=${secret}`);
    expect(parsePairingFragment(new URL(link).hash)).toEqual({ code: "InboxAAAAAAA.abcdefghijkl", secret });
  });

  it("splits CODE#SECRET, CODE&k=SECRET and whole links", () => {
    expect(splitJoinCode("AAAAAAAAAAAA.BBBBBBBBBBBBBBBB#sekrit")).toEqual({ code: "AAAAAAAAAAAA.BBBBBBBBBBBBBBBB", secret: "sekrit" });
    expect(splitJoinCode("AAAAAAAAAAAA.BBBBBBBBBBBBBBBB&k=sekrit")).toEqual({ code: "AAAAAAAAAAAA.BBBBBBBBBBBBBBBB", secret: "sekrit" });
    expect(splitJoinCode("https://r.example/#join=AAAAAAAAAAAA.BBBBBBBBBBBBBBBB&k=sekrit")).toEqual({
      code: "AAAAAAAAAAAA.BBBBBBBBBBBBBBBB",
      secret: "sekrit",
    });
    expect(splitJoinCode(" AAAAAAAAAAAA.BBBBBBBBBBBBBBBB ")).toEqual({ code: "AAAAAAAAAAAA.BBBBBBBBBBBBBBBB" });
  });

  it("re-keys for the roster minus holders gone from the inbox, always with itself first", () => {
    const self = { id: "mc_selfselfse", publicKey: "S" };
    const roster = withHolder(withHolder(withHolder([self], { id: "dv_phonephone", publicKey: "P" }), { id: "dv_tablettabl", publicKey: "T" }), {
      id: "dv_phonephone",
      publicKey: "P2",
    });
    expect(roster.filter((h) => h.id === "dv_phonephone")).toEqual([{ id: "dv_phonephone", publicKey: "P2" }]);
    expect(remainingHolders(roster, self, new Set(["dv_tablettabl", "mc_selfselfse"]))).toEqual([self, { id: "dv_tablettabl", publicKey: "T" }]);
  });

  it("cuts a call's preview like the inbox's waiting entries, and checks arguments against the known schema", () => {
    expect(previewOf("confirm", { question: "  Ship\n it? ", yes_label: "Yes", no_label: "" })).toEqual({ text: "Ship it?", yes_label: "Yes" });
    expect(previewOf("choice", { question: "Pick", options: ["a", "b"] })).toEqual({ text: "Pick", options: ["a", "b"] });
    expect(previewOf("choice", { question: "Pick", options: ["a"], multiple: true })).toEqual({ text: "Pick" });
    expect(previewOf("permission", { tool_name: "Bash", input: { command: "rm -rf /" } }).text).toBe("Bash: rm -rf /");
    expect(previewOf("ask_question", { question: "x".repeat(1000) }).text.length).toBeLessThan(1000);
    // Built-in schemas apply before the app registered its tools; unknown tools are the relay's to refuse.
    expect(checkCallArguments([], "confirm", undefined, { question: 5 })).toMatch(/^confirm: question/);
    expect(checkCallArguments([], "confirm", undefined, { question: "ok?" })).toBeNull();
    expect(checkCallArguments([], "no_such_tool", undefined, { anything: 1 })).toBeNull();
  });
});

describe("Keyring key refresh (a scripted GET /api/inbox/e2e)", () => {
  async function fakeRelay(answer: () => unknown): Promise<string> {
    const server: Server = createServer((req, res) => {
      if (req.url === "/api/inbox/e2e" && req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer()));
        return;
      }
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: "not_found", message: req.url } }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    cleanups.push(() => server.close());
    const a = server.address();
    return `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
  }

  it("takes a newer epoch's wrap from a trusted holder, tells its listeners, and saves it; refuses an untrusted one", async () => {
    const dir = tempDir();
    const inboxId = "InboxKKKKKKK";
    const machineKey = await newMachineKey();
    const { importPrivateJwk } = await import("../../shared/crypto/e2e/index.js");
    const machine = await holderSelf("mc_machinemac", await importPrivateJwk(machineKey, { extractable: true }));
    const phone = await holderSelf("dv_phonephone", await generateHolderKeyPair({ extractable: false }));
    const stranger = await holderSelf("dv_strangerst", await generateHolderKeyPair({ extractable: false }));
    const k1 = await generateContentKey(1);
    const k2 = await generateContentKey(2);
    const k3 = await generateContentKey(3);
    let answer: unknown = { epoch: 1, rekey_needed: false, holders: [machine.id], wrap: null, roster: null, hellos: [], replies: [], pairings: [] };
    const url = await fakeRelay(() => answer);
    saveInbox(dir, {
      relayUrl: url,
      inboxId,
      machineId: machine.id,
      machineCredential: "lum1.test",
      e2e: {
        ...withKeys({ on: true, machineKey, keys: {}, roster: [], pending: [] }, [k1]),
        roster: [
          { id: machine.id, publicKey: machine.publicKey },
          { id: phone.id, publicKey: phone.publicKey },
        ],
      },
    });
    const k = (await Keyring.open({ relayUrl: url, stateDir: dir }))!;
    const seen: number[] = [];
    k.onEpoch((ck) => seen.push(ck.epoch));
    expect(k.current()?.epoch).toBe(1);

    answer = {
      epoch: 2,
      rekey_needed: false,
      holders: [machine.id, phone.id],
      wrap: await wrapContentKey({ inboxId, sender: phone, recipient: machine, key: k2 }),
      roster: null,
      hellos: [],
      replies: [],
      pairings: [],
    };
    const r = await k.sync();
    expect(r).toMatchObject({ epoch: 2, changed: true });
    expect(seen).toEqual([2]);
    expect(b64u(k.keyOf(2)!.raw)).toBe(b64u(k2.raw));
    expect(Object.keys(findInbox(dir, url)!.e2e!.keys).sort()).toEqual(["1", "2"]);

    // A wrap from a key this machine never trusted is not taken (the relay cannot slip one in).
    const lines: string[] = [];
    const k_ = (await Keyring.open({ relayUrl: url, stateDir: dir, log: (s) => lines.push(s) }))!;
    answer = {
      epoch: 3,
      rekey_needed: false,
      holders: [machine.id, stranger.id],
      wrap: await wrapContentKey({ inboxId, sender: stranger, recipient: machine, key: k3 }),
      roster: null,
      hellos: [],
      replies: [],
      pairings: [],
    };
    expect((await k_.sync()).epoch).toBe(2);
    expect(k_.keyOf(3)).toBeUndefined();
    expect(lines.join("\n")).toMatch(/untrusted|does not trust/);
    expect(findInbox(dir, url)!.e2e!.keys["3"]).toBeUndefined();
  });
});
