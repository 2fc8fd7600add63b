// The end-to-end core in workerd (docs/e2e.md): the Node-made vectors of test/fixtures/e2e-vectors.json
// open here and rebuild byte for byte — so what workerd seals with those keys and nonces is exactly what
// Node opens (test/unit/e2e-crypto.test.ts checks the same bytes) — and a fresh, randomly-nonced seal,
// wrap and pairing made here opens here with the vectors' keys.
import { describe, expect, it } from "vitest";
import vectorsJson from "../fixtures/e2e-vectors.json";
import {
  acceptPairReply,
  b64u,
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  importContentKey,
  importPrivateJwk,
  makePairHello,
  makePairReply,
  newPairingSecret,
  open,
  pairingCodeId,
  seal,
  sealWithNonce,
  unb64u,
  unwrapContentKey,
  wrapContentKey,
} from "../../shared/crypto/e2e/index.js";
import { checkVectors, type Vectors } from "../../shared/crypto/e2e/vectors.js";

const vectors = vectorsJson as unknown as Vectors;

describe("e2e core in workerd", () => {
  it("opens the Node-sealed vectors and re-seals them to the same bytes", async () => {
    expect(await checkVectors(vectors)).toEqual([]);
    // Spelled out for one frame: the workerd seal with the fixture's nonce is the fixture's envelope.
    const f = vectors.inputs.frames[1]!;
    const ck = await importContentKey(unb64u(vectors.inputs.content_keys[0]!.raw), f.epoch);
    const workerdSealed = await sealWithNonce(ck, f.aad, f.plaintext, unb64u(f.nonce));
    expect(workerdSealed).toEqual(vectors.outputs.frames[1]!.envelope);
    expect(await open(ck, f.aad, workerdSealed)).toBe(f.plaintext);
  });

  it("seals, wraps and pairs freshly with the vectors' keys, and opens its own", async () => {
    const { inputs } = vectors;
    const ck = await importContentKey(unb64u(inputs.content_keys[0]!.raw), 1);
    const aad = inputs.frames[0]!.aad;
    const env = await seal(ck, aad, '{"from":"workerd"}');
    expect(env.n).not.toBe(vectors.outputs.frames[0]!.envelope.n);
    expect(await open(ck, aad, env)).toBe('{"from":"workerd"}');

    const machine = await holderSelf(inputs.holders.machine.id, await importPrivateJwk(inputs.holders.machine.jwk, { extractable: false }));
    const tablet = await holderSelf(inputs.holders.tablet.id, await importPrivateJwk(inputs.holders.tablet.jwk, { extractable: false }));
    const w = await wrapContentKey({ inboxId: inputs.inbox_id, sender: machine, recipient: tablet, key: ck });
    const back = await unwrapContentKey({ inboxId: inputs.inbox_id, recipient: tablet, wrapped: w, trusted: { [machine.id]: machine.publicKey } });
    expect(b64u(back.raw)).toBe(inputs.content_keys[0]!.raw);

    // A whole pairing with a fresh non-extractable device key made in workerd.
    const device = await holderSelf("dv_workerd001", await generateHolderKeyPair({ extractable: false }));
    const base = { secret: newPairingSecret(), inboxId: inputs.inbox_id, codeId: await pairingCodeId("InboxVectors.workerdCode00001") };
    const hello = await makePairHello({ ...base, joiner: device });
    const fresh = await generateContentKey(3);
    const { reply, comparisonCode } = await makePairReply({ ...base, hello, sponsor: machine, key: fresh });
    const got = await acceptPairReply({ ...base, joiner: device, reply });
    expect(got.comparisonCode).toBe(comparisonCode);
    expect(got.key.raw).toEqual(fresh.raw);
  });
});
