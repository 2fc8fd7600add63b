// Cross-runtime test vectors (test/fixtures/e2e-vectors.json): fixed keys, nonces and plaintexts in,
// exact envelopes, wraps and pairing messages out. The same two functions run in Node, workerd and a
// Chromium page, so "sealed in one runtime, opened in another" is checked byte for byte. Conformance
// code, not used on the wire.
import { b64u, unb64u } from "../bytes.js";
import { encodeFrameAad, open, sealWithNonce, type Envelope, type FrameAad } from "./envelope.js";
import { isE2EError } from "./errors.js";
import { importContentKey, importPrivateJwk, type ContentKey } from "./keys.js";
import { acceptPairReply, makePairHello, makePairReply, pairingCodeId, verifyPairHello, type PairHello, type PairReply } from "./pairing.js";
import { holderSelf, unwrapContentKey, wrapContentKey, type HolderSelf, type WrappedKey } from "./wrap.js";

export type HolderName = "machine" | "phone" | "tablet";
export interface VectorInputs {
  inbox_id: string;
  holders: Record<HolderName, { id: string; jwk: JsonWebKey }>;
  content_keys: Array<{ epoch: number; raw: string }>;
  frames: Array<{ epoch: number; aad: FrameAad; plaintext: string; nonce: string }>;
  /** The machine sponsors the phone at epoch 1. */
  pairing: { code: string; secret: string; wrap_nonce: string };
  /** The phone is revoked: epoch 2 is wrapped by the machine for the tablet and itself. */
  rekey: { wrap_nonces: { tablet: string; machine: string } };
}
export interface VectorOutputs {
  public_keys: Record<HolderName, string>;
  frames: Array<{ aad_b64u: string; envelope: Envelope }>;
  pairing: { code_id: string; hello: PairHello; reply: PairReply; comparison_code: string };
  rekey: { wraps: WrappedKey[] };
}
export interface Vectors {
  about: string;
  inputs: VectorInputs;
  outputs: VectorOutputs;
}

async function holders(inp: VectorInputs, extractable: boolean): Promise<Record<HolderName, HolderSelf>> {
  const out = {} as Record<HolderName, HolderSelf>;
  for (const name of ["machine", "phone", "tablet"] as const) {
    const h = inp.holders[name];
    out[name] = await holderSelf(h.id, await importPrivateJwk(h.jwk, { extractable }));
  }
  return out;
}

async function contentKey(inp: VectorInputs, epoch: number): Promise<ContentKey> {
  const k = inp.content_keys.find((c) => c.epoch === epoch);
  if (!k) throw new Error(`vectors: no content key for epoch ${epoch}`);
  return importContentKey(unb64u(k.raw), epoch);
}

/** Everything the inputs determine. */
export async function buildVectors(inp: VectorInputs): Promise<VectorOutputs> {
  const h = await holders(inp, false);
  const public_keys = { machine: h.machine.publicKey, phone: h.phone.publicKey, tablet: h.tablet.publicKey };
  const frames: VectorOutputs["frames"] = [];
  for (const f of inp.frames) {
    const ck = await contentKey(inp, f.epoch);
    frames.push({ aad_b64u: b64u(encodeFrameAad(f.epoch, f.aad)), envelope: await sealWithNonce(ck, f.aad, f.plaintext, unb64u(f.nonce)) });
  }
  const code_id = await pairingCodeId(inp.pairing.code);
  const base = { secret: inp.pairing.secret, inboxId: inp.inbox_id, codeId: code_id };
  const hello = await makePairHello({ ...base, joiner: { id: h.phone.id, publicKey: h.phone.publicKey } });
  const { reply, comparisonCode } = await makePairReply({
    ...base,
    hello,
    sponsor: h.machine,
    key: await contentKey(inp, 1),
    nonce: unb64u(inp.pairing.wrap_nonce),
  });
  const k2 = await contentKey(inp, 2);
  const wraps = [
    await wrapContentKey({ inboxId: inp.inbox_id, sender: h.machine, recipient: h.tablet, key: k2, nonce: unb64u(inp.rekey.wrap_nonces.tablet) }),
    await wrapContentKey({ inboxId: inp.inbox_id, sender: h.machine, recipient: h.machine, key: k2, nonce: unb64u(inp.rekey.wrap_nonces.machine) }),
  ];
  return { public_keys, frames, pairing: { code_id, hello, reply, comparison_code: comparisonCode }, rekey: { wraps } };
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * Checks stored vectors in this runtime: everything rebuilds byte for byte, and every output opens the
 * other way (open, verify, accept, unwrap) — including that the revoked phone cannot open epoch 2.
 * Returns the problems found; [] means this runtime agrees.
 */
export async function checkVectors(v: Vectors): Promise<string[]> {
  const problems: string[] = [];
  const inp = v.inputs;
  const out = v.outputs;
  const built = await buildVectors(inp);
  for (const k of ["public_keys", "frames", "pairing", "rekey"] as const) if (!same(built[k], out[k])) problems.push(`rebuilt ${k} differs`);

  for (const [i, f] of inp.frames.entries()) {
    const env = out.frames[i]?.envelope;
    try {
      if ((await open(await contentKey(inp, f.epoch), f.aad, env)) !== f.plaintext) problems.push(`frame ${i}: opened to other text`);
    } catch (e) {
      problems.push(`frame ${i}: ${String(e)}`);
    }
  }

  const h = await holders(inp, false);
  const codeId = out.pairing.code_id;
  const base = { secret: inp.pairing.secret, inboxId: inp.inbox_id, codeId };
  try {
    await verifyPairHello({ ...base, hello: out.pairing.hello });
    const got = await acceptPairReply({ ...base, joiner: h.phone, reply: out.pairing.reply });
    if (b64u(got.key.raw) !== inp.content_keys.find((c) => c.epoch === 1)?.raw) problems.push("pairing: unwrapped another key");
    if (got.comparisonCode !== out.pairing.comparison_code) problems.push("pairing: other comparison code");
  } catch (e) {
    problems.push(`pairing: ${String(e)}`);
  }

  const trusted = { [h.machine.id]: h.machine.publicKey };
  try {
    const k2 = await unwrapContentKey({ inboxId: inp.inbox_id, recipient: h.tablet, wrapped: out.rekey.wraps[0], trusted, epoch: 2 });
    if (b64u(k2.raw) !== inp.content_keys.find((c) => c.epoch === 2)?.raw) problems.push("rekey: tablet unwrapped another key");
  } catch (e) {
    problems.push(`rekey: ${String(e)}`);
  }
  // The revoked phone: no wrap names it, the tablet's is not for it, and its epoch-1 key opens nothing of epoch 2.
  if (out.rekey.wraps.some((w) => w.to === h.phone.id)) problems.push("rekey: a wrap names the revoked phone");
  try {
    await unwrapContentKey({ inboxId: inp.inbox_id, recipient: h.phone, wrapped: out.rekey.wraps[0], trusted });
    problems.push("rekey: the phone unwrapped the tablet's key");
  } catch (e) {
    if (!isE2EError(e, "not_for_us")) problems.push(`rekey: phone got ${String(e)}`);
  }
  const phoneK1 = await contentKey(inp, 1);
  for (const [i, f] of inp.frames.entries()) {
    if (f.epoch !== 2) continue;
    try {
      await open(phoneK1, f.aad, out.frames[i]!.envelope);
      problems.push(`frame ${i}: epoch 2 opened with the epoch 1 key`);
    } catch (e) {
      if (!isE2EError(e, "wrong_epoch")) problems.push(`frame ${i}: ${String(e)}`);
    }
    // Even forcing the epoch field does not help: the key bytes differ.
    try {
      await open(await importContentKey(phoneK1.raw, 2), f.aad, out.frames[i]!.envelope);
      problems.push(`frame ${i}: epoch 2 opened with the old key bytes`);
    } catch (e) {
      if (!isE2EError(e, "open_failed")) problems.push(`frame ${i}: ${String(e)}`);
    }
  }
  return problems;
}
