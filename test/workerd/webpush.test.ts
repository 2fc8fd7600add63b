// shared/crypto/webpush/index.ts inside workerd, where the inbox Durable Object will run it: the RFC 8291 §5 vector
// computed here byte for byte, round trips through the WebCrypto receiver, VAPID verified by WebCrypto.
import { describe, expect, it } from "vitest";
import { buildPushRequest, encryptPayload, generateVapidKeys, MAX_PAYLOAD_BYTES, vapidAuthorization } from "../../shared/crypto/webpush/index.js";
import { b64u as toB64url, fromB64url } from "../../shared/crypto/bytes.js";
import { publicUrlProblem } from "../../shared/edge/public-host.js";
import { decryptPayload, generateSubscriberKeys } from "../helpers/webpush-receiver.js";

// RFC 8291 §5, "Push Message Encryption Example".
const RFC = {
  plaintext: "When I grow up, I want to be a watermelon",
  asPublic: "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
  asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
  uaPublic: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
  uaPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
  auth: "BTBZMqHH6r4Tts7J_aSIgg",
  salt: "DGv6ra1nlYgDCS1FRnbzlw",
  body:
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml" +
    "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT" +
    "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
};

const ECDH = { name: "ECDH", namedCurve: "P-256" };

async function pairFrom(publicB64: string, privateB64: string): Promise<CryptoKeyPair> {
  const p = fromB64url(publicB64);
  const jwk = { kty: "EC", crv: "P-256", x: toB64url(p.subarray(1, 33)), y: toB64url(p.subarray(33)), d: privateB64 };
  return {
    privateKey: await crypto.subtle.importKey("jwk", jwk, ECDH, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", p, ECDH, true, []),
  };
}

const text = (u: Uint8Array) => new TextDecoder().decode(u);

describe("webpush inside workerd", () => {
  it("reproduces the RFC 8291 §5 example message byte for byte", async () => {
    const body = await encryptPayload({
      p256dh: RFC.uaPublic,
      auth: RFC.auth,
      payload: new TextEncoder().encode(RFC.plaintext),
      salt: fromB64url(RFC.salt),
      asKeyPair: await pairFrom(RFC.asPublic, RFC.asPrivate),
    });
    expect(toB64url(body)).toBe(RFC.body);
  });

  it("decrypts the RFC 8291 §5 message with the RFC's user agent key (the test receiver is sound)", async () => {
    const keyPair = await pairFrom(RFC.uaPublic, RFC.uaPrivate);
    expect(text(await decryptPayload(fromB64url(RFC.body), { auth: RFC.auth, keyPair }))).toBe(RFC.plaintext);
  });

  it("round-trips a random 3993-byte payload and a padded short one", async () => {
    const sub = await generateSubscriberKeys();
    const big = crypto.getRandomValues(new Uint8Array(MAX_PAYLOAD_BYTES));
    const body = await encryptPayload({ p256dh: sub.p256dh, auth: sub.auth, payload: big });
    expect(body.length).toBe(4096);
    expect(toB64url(await decryptPayload(body, sub))).toBe(toB64url(big));
    const padded = await encryptPayload({ p256dh: sub.p256dh, auth: sub.auth, payload: new TextEncoder().encode("hi"), pad: true });
    expect(padded.length).toBe(4096);
    expect(text(await decryptPayload(padded, sub))).toBe("hi");
  });

  it("a tampered body does not decrypt", async () => {
    const sub = await generateSubscriberKeys();
    const body = await encryptPayload({ p256dh: sub.p256dh, auth: sub.auth, payload: new TextEncoder().encode("secret") });
    body[body.length - 1] ^= 1;
    await expect(decryptPayload(body, sub)).rejects.toThrow();
  });

  it("signs a VAPID JWT that WebCrypto verifies with the stored public key", async () => {
    const keys = JSON.parse(JSON.stringify(await generateVapidKeys())) as Awaited<ReturnType<typeof generateVapidKeys>>;
    const auth = await vapidAuthorization({ endpoint: "https://web.push.apple.com/QGx", subject: "mailto:ops@lineup.example", keys });
    const m = /^vapid t=([^.]+)\.([^.]+)\.([^,]+), k=(.+)$/.exec(auth);
    expect(m).not.toBeNull();
    const [, h, c, s, k] = m!;
    expect(k).toBe(keys.publicKey);
    const pub = await crypto.subtle.importKey("raw", fromB64url(k), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    const ok = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, pub, fromB64url(s), new TextEncoder().encode(`${h}.${c}`));
    expect(ok).toBe(true);
    expect(JSON.parse(text(fromB64url(h)))).toEqual({ typ: "JWT", alg: "ES256" });
    const claims = JSON.parse(text(fromB64url(c))) as { aud: string; exp: number; sub: string };
    expect(claims.aud).toBe("https://web.push.apple.com");
    expect(claims.sub).toBe("mailto:ops@lineup.example");
    expect(claims.exp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 24 * 3600);
  });

  it("builds a push request that workerd's Request accepts, whose body the subscriber decrypts", async () => {
    const sub = await generateSubscriberKeys();
    const req = await buildPushRequest({
      publicHost: publicUrlProblem,
      subscription: { endpoint: "https://fcm.googleapis.com/fcm/send/abc", keys: { p256dh: sub.p256dh, auth: sub.auth } },
      payload: JSON.stringify({ session: "s1", text: "Deploy to staging?" }),
      vapid: { subject: "https://lineup.example", keys: await generateVapidKeys() },
      ttl: 86400,
      urgency: "normal",
      topic: "s1",
    });
    const request = new Request(req.url, req.init);
    expect(request.method).toBe("POST");
    expect(request.headers.get("content-encoding")).toBe("aes128gcm");
    expect(request.headers.get("ttl")).toBe("86400");
    expect(request.headers.get("topic")).toBe("s1");
    expect(request.headers.get("authorization")).toMatch(/^vapid t=.+, k=.+$/);
    const body = new Uint8Array(await request.arrayBuffer());
    expect(JSON.parse(text(await decryptPayload(body, sub)))).toEqual({ session: "s1", text: "Deploy to staging?" });
  });
});
