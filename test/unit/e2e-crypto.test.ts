// The end-to-end core (shared/e2e, docs/e2e.md) in Node: round trips, tamper detection on every
// associated-data field and every ciphertext byte, key substitution during pairing, revocation by
// re-keying, and the fixed vectors of test/fixtures/e2e-vectors.json (which workerd and Chromium check too:
// test/workerd/e2e-crypto.test.ts, test/browser/browser-e2e-crypto.test.ts).
// Regenerate the vectors' outputs (keeping their inputs) with E2E_WRITE_VECTORS=1.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEVICE_ID_RE, MACHINE_ID_RE } from "../../shared/contract/inbox.js";
import {
  E2EError,
  HOLDER_ID_RE,
  acceptPairReply,
  b64u,
  comparisonCode,
  encodeFrameAad,
  envelopeLength,
  exportPrivateJwk,
  fields,
  generateContentKey,
  generateHolderKeyPair,
  hex,
  holderSelf,
  importContentKey,
  importPublicKey,
  makePairHello,
  makePairReply,
  newPairingSecret,
  open,
  openJson,
  openRoster,
  pairingCodeId,
  pairingFragment,
  parseEnvelope,
  parsePairingFragment,
  randomBytes,
  rekey,
  reseal,
  seal,
  sealJson,
  sealRoster,
  unb64u,
  unwrapContentKey,
  verifyPairHello,
  wrapContentKey,
  type ContentKey,
  type E2EErrorCode,
  type FrameAad,
  type HolderSelf,
  type PairHello,
  type PairReply,
} from "../../shared/crypto/e2e/index.js";
import { buildVectors, checkVectors, type VectorInputs, type Vectors } from "../../shared/crypto/e2e/vectors.js";

const FIXTURE = "test/fixtures/e2e-vectors.json";
const INBOX = "InboxE2Etest";
const AAD: FrameAad = { session_id: "sess_e2e_0001", type: "tool.result", call_id: "c-42", sender: "app:dv_phone00001" };

async function rejects(p: Promise<unknown>, code: E2EErrorCode): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, `expected E2EError ${code}`).toBeInstanceOf(E2EError);
  expect((e as E2EError).code).toBe(code);
}

async function holder(id: string, extractable = false): Promise<HolderSelf> {
  return holderSelf(id, await generateHolderKeyPair({ extractable }));
}

// ---------------------------------------------------------------- vectors

async function freshInputs(): Promise<VectorInputs> {
  const jwk = async () => {
    const { d, x, y, kty, crv } = await exportPrivateJwk((await generateHolderKeyPair({ extractable: true })).privateKey);
    return { kty, crv, d, x, y };
  };
  const nonce = () => b64u(randomBytes(12));
  return {
    inbox_id: "InboxVectors",
    holders: {
      machine: { id: "mc_laptop0001", jwk: await jwk() },
      phone: { id: "dv_phone00001", jwk: await jwk() },
      tablet: { id: "dv_tablet0001", jwk: await jwk() },
    },
    content_keys: [
      { epoch: 1, raw: b64u(randomBytes(32)) },
      { epoch: 2, raw: b64u(randomBytes(32)) },
    ],
    frames: [
      {
        epoch: 1,
        aad: { session_id: "sess_vectors_1", type: "tool.call", call_id: "c1", sender: "agent:agent-1" },
        plaintext: JSON.stringify({ arguments: { question: "Deploy to prod?" } }),
        nonce: nonce(),
      },
      {
        epoch: 1,
        aad: { session_id: "sess_vectors_1", type: "tool.result", call_id: "c1", sender: "app:dv_phone00001" },
        plaintext: JSON.stringify({ result: { message: "yes — ship it ✓ 🚀" } }),
        nonce: nonce(),
      },
      {
        epoch: 1,
        aad: { session_id: "sess_vectors_1", type: "message", call_id: "m-7", sender: "app:dv_phone00001" },
        plaintext: JSON.stringify({ content: [{ type: "text", text: 'line\nbreak "quoted" \u0000 nul' }] }),
        nonce: nonce(),
      },
      {
        epoch: 1,
        aad: { session_id: "sess_vectors_1", type: "tool.list", call_id: "deploy", sender: "agent:agent-1" },
        plaintext: JSON.stringify({ description: "Deploy the current branch", inputSchema: { type: "object" } }),
        nonce: nonce(),
      },
      {
        epoch: 2,
        aad: { session_id: "sess_vectors_1", type: "tool.call", call_id: "c2", sender: "agent:agent-1" },
        plaintext: JSON.stringify({ arguments: { question: "After the revocation" } }),
        nonce: nonce(),
      },
    ],
    pairing: { code: "InboxVectors.AAAAbbbbCCCCdddd", secret: newPairingSecret(), wrap_nonce: nonce() },
    rekey: { wrap_nonces: { tablet: nonce(), machine: nonce() } },
  };
}

describe("fixed vectors", () => {
  it("rebuild byte for byte from their inputs, and open", async () => {
    let v: Vectors | undefined = existsSync(FIXTURE) ? (JSON.parse(readFileSync(FIXTURE, "utf8")) as Vectors) : undefined;
    if (!v || process.env.E2E_WRITE_VECTORS) {
      const inputs = v?.inputs ?? (await freshInputs());
      v = {
        about:
          "Cross-runtime vectors of shared/e2e (docs/e2e.md). Inputs are fixed; outputs are what Node, workerd and Chromium must all produce from them (shared/crypto/e2e/vectors.ts). Test keys only. Regenerate outputs: E2E_WRITE_VECTORS=1 npx vitest run --project node test/unit/e2e-crypto.test.ts",
        inputs,
        outputs: await buildVectors(inputs),
      };
      writeFileSync(FIXTURE, JSON.stringify(v, null, 2) + "\n");
    }
    expect(await checkVectors(v)).toEqual([]);
    // A changed vector is caught: the check is not vacuous.
    const bad = structuredClone(v);
    bad.outputs.frames[1]!.envelope.c = bad.outputs.frames[1]!.envelope.c.replace(/^./, (ch) => (ch === "A" ? "B" : "A"));
    expect((await checkVectors(bad)).length).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------- sealing

describe("seal / open", () => {
  it("round-trips JSON text exactly, with a fresh nonce every time", async () => {
    const ck = await generateContentKey();
    for (const text of [
      "{}",
      "[]",
      "null",
      '"x"',
      JSON.stringify({ a: "ünï©ødé 🚀", n: [1, 2.5, -3e-7], nested: { deep: [true, false, null] } }),
      '{"b":1, "a":2}',
    ]) {
      const env = await seal(ck, AAD, text);
      expect(await open(ck, AAD, env)).toBe(text);
    }
    const a = await seal(ck, AAD, "{}");
    const b = await seal(ck, AAD, "{}");
    expect(a.n).not.toBe(b.n);
    expect(a.c).not.toBe(b.c);
    expect(await openJson(ck, AAD, await sealJson(ck, AAD, { x: [1, "two"] }))).toEqual({ x: [1, "two"] });
  });

  it("is JSON-safe with the documented shape and exact size", async () => {
    const ck = await generateContentKey(7);
    for (const n of [0, 1, 2, 3, 100, 1000, 65_536]) {
      const text = JSON.stringify("é".repeat(n));
      const env = await seal(ck, AAD, text);
      expect(Object.keys(env)).toEqual(["v", "e", "n", "c"]);
      expect(env.v).toBe(1);
      expect(env.e).toBe(7);
      expect(env.n).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect(env.c).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(JSON.stringify(env).length).toBe(envelopeLength(2 * n + 2, 7));
      expect(parseEnvelope(JSON.parse(JSON.stringify(env)))).toEqual(env);
    }
    // The numbers docs/e2e.md quotes.
    expect(envelopeLength(0, 1)).toBe(65);
    expect(envelopeLength(1024, 1)).toBe(1430);
    expect(envelopeLength(64 * 1024, 1)).toBe(87_446);
  });

  it("refuses to open when any associated-data field changes", async () => {
    const ck = await generateContentKey();
    const env = await seal(ck, AAD, '{"result":{"message":"yes"}}');
    for (const k of ["session_id", "type", "call_id", "sender"] as const) {
      await rejects(open(ck, { ...AAD, [k]: AAD[k] + "x" }, env), "open_failed");
      await rejects(open(ck, { ...AAD, [k]: AAD[k].slice(0, -1) || "y" }, env), "open_failed");
    }
    await rejects(open(ck, { ...AAD, call_id: "" }, env), "open_failed");
    // Shifting a character between neighbouring fields changes the encoding too (length prefixes).
    await rejects(open(ck, { ...AAD, call_id: "c-4", sender: "2app:dv_phone00001" }, env), "open_failed");
    // The epoch: a key of the same bytes under another epoch, with the envelope's `e` changed to match.
    const ck2 = await importContentKey(ck.raw, 2);
    await rejects(open(ck2, AAD, env), "wrong_epoch");
    await rejects(open(ck2, AAD, { ...env, e: 2 }), "open_failed");
    // Another key.
    await rejects(open(await generateContentKey(), AAD, env), "open_failed");
    expect(await open(ck, AAD, env)).toBe('{"result":{"message":"yes"}}');
  });

  it("refuses to open when any ciphertext, tag or nonce byte changes", async () => {
    const ck = await generateContentKey();
    const env = await seal(ck, AAD, '{"arguments":{"q":"Deploy?"}}');
    for (const part of ["c", "n"] as const) {
      const bytes = unb64u(env[part]);
      for (let i = 0; i < bytes.length; i++) {
        for (const bit of [0x01, 0x80]) {
          const t = new Uint8Array(bytes);
          t[i]! ^= bit;
          await rejects(open(ck, AAD, { ...env, [part]: b64u(t) }), "open_failed");
        }
      }
    }
    // Truncated or extended ciphertext.
    const c = unb64u(env.c);
    await rejects(open(ck, AAD, { ...env, c: b64u(c.subarray(0, c.length - 1)) }), "open_failed");
    await rejects(open(ck, AAD, { ...env, c: b64u(new Uint8Array([...c, 0])) }), "open_failed");
  });

  it("validates envelopes strictly", async () => {
    const ck = await generateContentKey();
    const env = await seal(ck, AAD, "{}");
    const bad: unknown[] = [
      null,
      [],
      "x",
      { ...env, v: 2 },
      { ...env, e: 0 },
      { ...env, e: 1.5 },
      { ...env, x: 1 },
      { v: 1, e: 1, n: env.n },
      { ...env, n: env.n.slice(0, 15) },
      { ...env, n: env.n + "==" },
      { ...env, c: env.c.replace(/./, "+") },
      { ...env, c: "AAAA" },
    ];
    for (const b of bad) await rejects(open(ck, AAD, b), "bad_format");
    // Non-canonical base64url: unused trailing bits set.
    expect(() => unb64u("AB")).toThrow();
    expect(unb64u("AA")).toEqual(new Uint8Array([0]));
    await rejects(seal(ck, AAD, "not json"), "bad_format");
    await rejects(seal(ck, { ...AAD, sender: "" }, "{}"), "bad_format");
  });

  it("encodes the associated data canonically, as documented", () => {
    const aad = encodeFrameAad(1, { session_id: "s1234567", type: "tool.call", call_id: "c1", sender: "agent:a" });
    expect(hex(aad)).toBe(hex(fields(["lineup-e2e/1 frame", "s1234567", "1", "tool.call", "c1", "agent:a"])));
    expect(hex(fields(["ab", ""]))).toBe("00000002616200000000");
    expect(hex(fields(["a", "b"]))).not.toBe(hex(fields(["ab", ""])));
    expect(hex(fields(["é"]))).toBe("00000002c3a9");
  });
});

// ---------------------------------------------------------------- pairing

interface Paired {
  sponsor: HolderSelf;
  joiner: HolderSelf;
  key: ContentKey;
  secret: string;
  codeId: string;
  hello: PairHello;
  reply: PairReply;
}

async function pairOnce(sponsor: HolderSelf, joinerId: string, key: ContentKey): Promise<Paired & { codes: [string, string] }> {
  const secret = newPairingSecret();
  const codeId = await pairingCodeId(`${INBOX}.0123456789abcdef`);
  const joiner = await holder(joinerId);
  const base = { secret, inboxId: INBOX, codeId };
  const hello = await makePairHello({ ...base, joiner });
  const { reply, comparisonCode: sponsorCode } = await makePairReply({ ...base, hello: JSON.parse(JSON.stringify(hello)), sponsor, key });
  const got = await acceptPairReply({ ...base, joiner, reply: JSON.parse(JSON.stringify(reply)) });
  expect(b64u(got.key.raw)).toBe(b64u(key.raw));
  expect(got.key.epoch).toBe(key.epoch);
  return { sponsor, joiner, key: got.key, secret, codeId, hello, reply, codes: [sponsorCode, got.comparisonCode] };
}

describe("pairing", () => {
  it("hands the content key to a device whose key is non-extractable; both sides show the same code", async () => {
    const machine = await holder("mc_laptop0001", true);
    const key = await generateContentKey();
    const p = await pairOnce(machine, "dv_phone00001", key);
    expect(p.codes[0]).toMatch(/^\d{3} \d{3}$/);
    expect(p.codes[0]).toBe(p.codes[1]);
    await expect(exportPrivateJwk(p.joiner.privateKey)).rejects.toThrow();
    // And the device can seal what the machine opens.
    const env = await seal(p.key, AAD, '{"result":{"message":"ok"}}');
    expect(await open(key, AAD, env)).toBe('{"result":{"message":"ok"}}');
  });

  it("detects a relay substituting the device's public key in the hello", async () => {
    const machine = await holder("mc_laptop0001", true);
    const key = await generateContentKey();
    const secret = newPairingSecret();
    const codeId = await pairingCodeId(`${INBOX}.0123456789abcdef`);
    const base = { secret, inboxId: INBOX, codeId };
    const device = await holder("dv_phone00001");
    const relayKey = await holder("dv_phone00001");
    const hello = await makePairHello({ ...base, joiner: device });
    const forged = { ...hello, joiner: { id: device.id, publicKey: relayKey.publicKey } };
    await rejects(verifyPairHello({ ...base, hello: forged }), "bad_mac");
    await rejects(makePairReply({ ...base, hello: forged, sponsor: machine, key }), "bad_mac");
    // Or re-pointing it at another device id.
    await rejects(verifyPairHello({ ...base, hello: { ...hello, joiner: { ...hello.joiner, id: "dv_other00001" } } }), "bad_mac");
    // Without the secret, a MAC of its own does not pass either.
    const own = await makePairHello({ ...base, secret: newPairingSecret(), joiner: relayKey });
    await rejects(verifyPairHello({ ...base, hello: own }), "bad_mac");
    // A hello moved to another code or inbox.
    await rejects(verifyPairHello({ ...base, codeId: await pairingCodeId(`${INBOX}.fedcba9876543210`), hello }), "not_for_us");
  });

  it("detects a relay substituting the machine's public key or the wrapped key in the reply", async () => {
    const machine = await holder("mc_laptop0001", true);
    const key = await generateContentKey();
    const secret = newPairingSecret();
    const codeId = await pairingCodeId(`${INBOX}.0123456789abcdef`);
    const base = { secret, inboxId: INBOX, codeId };
    const device = await holder("dv_phone00001");
    const hello = await makePairHello({ ...base, joiner: device });
    const { reply } = await makePairReply({ ...base, hello, sponsor: machine, key });
    // The relay's own key pair posing as the machine, wrapping a key of its choosing.
    const mallory = await holder("mc_laptop0001", true);
    const evilKey = await generateContentKey();
    const evilWrap = await wrapContentKey({ inboxId: INBOX, sender: mallory, recipient: device, key: evilKey });
    await rejects(
      acceptPairReply({ ...base, joiner: device, reply: { ...reply, sponsor: { id: machine.id, publicKey: mallory.publicKey }, wrap: evilWrap } }),
      "bad_mac",
    );
    // Keeping the genuine sponsor key (so the MAC passes) but swapping the wrap.
    await rejects(acceptPairReply({ ...base, joiner: device, reply: { ...reply, wrap: evilWrap } }), "untrusted_sender");
    // A wrap that claims the sponsor's key but was made with another private key does not open.
    await rejects(acceptPairReply({ ...base, joiner: device, reply: { ...reply, wrap: { ...evilWrap, k: machine.publicKey } } }), "open_failed");
    // A flipped ciphertext byte in the wrap.
    const c = unb64u(reply.wrap.c);
    c[5]! ^= 1;
    await rejects(acceptPairReply({ ...base, joiner: device, reply: { ...reply, wrap: { ...reply.wrap, c: b64u(c) } } }), "open_failed");
    // The MAC covers the device's key as the device sent it: a reply made for a substituted hello fails.
    const relayDevice = await holder("dv_phone00001");
    const forgedHello = await makePairHello({ ...base, joiner: relayDevice }); // only possible with the secret…
    const { reply: replyToForged } = await makePairReply({ ...base, hello: forgedHello, sponsor: machine, key });
    await rejects(acceptPairReply({ ...base, joiner: device, reply: replyToForged }), "bad_mac");
    expect((await acceptPairReply({ ...base, joiner: device, reply })).key.raw).toEqual(key.raw);
  });

  it("shows different comparison codes when someone who read the link relays two exchanges", async () => {
    // A leaked link (secret known) lets a relay run one exchange with each side; the codes then differ.
    const machine = await holder("mc_laptop0001", true);
    const device = await holder("dv_phone00001");
    const mitmAsDevice = await holder("dv_phone00001");
    const mitmAsMachine = await holder("mc_laptop0001", true);
    const codeId = await pairingCodeId(`${INBOX}.0123456789abcdef`);
    const machineSees = await comparisonCode({ inboxId: INBOX, codeId, joiner: mitmAsDevice, sponsor: machine });
    const deviceSees = await comparisonCode({ inboxId: INBOX, codeId, joiner: device, sponsor: mitmAsMachine });
    expect(machineSees).not.toBe(deviceSees);
  });

  it("reads the link fragment; the secret never leaves it", async () => {
    const secret = newPairingSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const frag = pairingFragment("InboxE2Etest.0123456789abcdef", secret);
    expect(parsePairingFragment(`#${frag}`)).toEqual({ code: "InboxE2Etest.0123456789abcdef", secret });
    expect(parsePairingFragment("#pair=InboxE2Etest.0123456789abcdef")).toEqual({ code: "InboxE2Etest.0123456789abcdef" });
    expect(parsePairingFragment("#pair=InboxE2Etest.0123456789abcdef&k=short")).toEqual({ code: "InboxE2Etest.0123456789abcdef" });
    expect(parsePairingFragment("#s=abc")).toBeUndefined();
    expect(await pairingCodeId("InboxE2Etest.0123456789abcdef")).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("holder ids have the inbox's shapes; public keys must be P-256 points", async () => {
    for (const id of ["dv_phone00001", "mc_laptop0001", "dv_x", "mc_laptop00012", "xx_laptop0001", "dv_phone0000!"]) {
      expect(HOLDER_ID_RE.test(id), id).toBe(DEVICE_ID_RE.test(id) || MACHINE_ID_RE.test(id));
    }
    const good = (await holder("dv_phone00001")).publicKey;
    expect(good).toMatch(/^[A-Za-z0-9_-]{87}$/);
    await importPublicKey(good);
    const raw = unb64u(good);
    raw[40]! ^= 1; // off the curve
    await rejects(importPublicKey(b64u(raw)), "bad_format");
    await rejects(importPublicKey(b64u(raw.subarray(1))), "bad_format");
  });
});

// ---------------------------------------------------------------- re-keying

describe("revocation re-keys", () => {
  it("locks a revoked device out of everything sealed under the next epoch", async () => {
    const machine = await holder("mc_laptop0001", true);
    const k1 = await generateContentKey();
    const phone = await pairOnce(machine, "dv_phone00001", k1);
    const tablet = await pairOnce(machine, "dv_tablet0001", k1);
    // The roster every holder learns under epoch 1 (sealed: the relay cannot add a key to it).
    const roster1 = [machine, phone.joiner, tablet.joiner].map((h) => ({ id: h.id, publicKey: h.publicKey }));
    const sealedRoster = await sealRoster(k1, INBOX, machine.id, roster1);
    expect(await openRoster(tablet.key, INBOX, machine.id, sealedRoster)).toEqual(roster1);
    await rejects(openRoster(tablet.key, INBOX, phone.joiner.id, sealedRoster), "open_failed");

    // A call open at revocation time, sealed under epoch 1.
    const openCall: FrameAad = { session_id: "sess_e2e_0001", type: "tool.call", call_id: "c-open", sender: "agent:agent-1" };
    const before = await seal(k1, openCall, '{"arguments":{"question":"still open"}}');

    // The tablet revokes the phone (a remaining device re-keys when no agent is online).
    const remaining = roster1.filter((h) => h.id !== phone.joiner.id);
    const { key: k2, wraps } = await rekey({ inboxId: INBOX, current: tablet.key, sender: tablet.joiner, holders: remaining });
    expect(k2.epoch).toBe(2);
    expect(wraps.map((w) => w.to)).toEqual([machine.id, tablet.joiner.id]);
    const trusted = Object.fromEntries(remaining.map((h) => [h.id, h.publicKey]));
    const machineK2 = await unwrapContentKey({ inboxId: INBOX, recipient: machine, wrapped: wraps[0], trusted, epoch: 2 });
    expect(machineK2.raw).toEqual(k2.raw);

    const resealed = await reseal(k1, machineK2, openCall, before);
    expect(resealed.e).toBe(2);
    const after = await seal(machineK2, { ...openCall, call_id: "c-after" }, '{"arguments":{"question":"after revocation"}}');
    expect(await open(k2, openCall, resealed)).toBe('{"arguments":{"question":"still open"}}');
    expect(await open(k2, { ...openCall, call_id: "c-after" }, after)).toContain("after revocation");

    // The phone: no wrap names it; the others' wraps are not for it (nor open if it pretends); its
    // epoch-1 key opens nothing of epoch 2.
    expect(wraps.some((w) => w.to === phone.joiner.id)).toBe(false);
    for (const w of wraps) {
      await rejects(unwrapContentKey({ inboxId: INBOX, recipient: phone.joiner, wrapped: w, trusted }), "not_for_us");
      await rejects(unwrapContentKey({ inboxId: INBOX, recipient: { ...phone.joiner, id: w.to }, wrapped: w, trusted }), "open_failed");
    }
    await rejects(open(phone.key, openCall, resealed), "wrong_epoch");
    await rejects(open(phone.key, { ...openCall, call_id: "c-after" }, after), "wrong_epoch");
    await rejects(open(await importContentKey(phone.key.raw, 2), openCall, resealed), "open_failed");
    await rejects(open(await importContentKey(phone.key.raw, 2), { ...openCall, call_id: "c-after" }, after), "open_failed");

    // The revoked phone (with the relay's help) tries to plant a key of its own: holders no longer trust it.
    const planted = await generateContentKey(2);
    const plantedWrap = await wrapContentKey({ inboxId: INBOX, sender: phone.joiner, recipient: machine, key: planted });
    await rejects(unwrapContentKey({ inboxId: INBOX, recipient: machine, wrapped: plantedWrap, trusted }), "untrusted_sender");
    // And it cannot pass its wrap off as the tablet's.
    await rejects(
      unwrapContentKey({ inboxId: INBOX, recipient: machine, wrapped: { ...plantedWrap, from: tablet.joiner.id, k: tablet.joiner.publicKey }, trusted }),
      "open_failed",
    );
    // Re-sealing only goes forward.
    await rejects(reseal(k2, k1, openCall, resealed), "wrong_epoch");
  });

  it("refuses wraps for another inbox or epoch, and duplicate holders", async () => {
    const machine = await holder("mc_laptop0001", true);
    const tablet = await holder("dv_tablet0001");
    const k1 = await generateContentKey();
    const w = await wrapContentKey({ inboxId: INBOX, sender: machine, recipient: tablet, key: k1 });
    const trusted = { [machine.id]: machine.publicKey };
    await rejects(unwrapContentKey({ inboxId: "OtherInbox00", recipient: tablet, wrapped: w, trusted }), "not_for_us");
    await rejects(unwrapContentKey({ inboxId: INBOX, recipient: tablet, wrapped: w, trusted, epoch: 2 }), "wrong_epoch");
    await rejects(unwrapContentKey({ inboxId: INBOX, recipient: tablet, wrapped: { ...w, e: 2 }, trusted }), "open_failed");
    await rejects(unwrapContentKey({ inboxId: INBOX, recipient: tablet, wrapped: { ...w, extra: 1 }, trusted }), "bad_format");
    await rejects(rekey({ inboxId: INBOX, current: k1, sender: machine, holders: [tablet, tablet] }), "bad_format");
    expect((await unwrapContentKey({ inboxId: INBOX, recipient: tablet, wrapped: w, trusted })).raw).toEqual(k1.raw);
  });
});
