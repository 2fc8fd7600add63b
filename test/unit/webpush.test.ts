// shared/crypto/webpush/index.ts from Node: the RFC 8291 §5 vector byte for byte, decryption by an independent
// implementation (http_ece, on node:crypto), VAPID JWTs verified by jose, header and limit rules.
import { createECDH, randomBytes, type ECDH } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";
import { describe, expect, it, vi } from "vitest";
import {
  buildPushRequest,
  checkEndpoint,
  classifyPushResponse,
  encryptPayload,
  generateVapidKeys,
  MAX_PAYLOAD_BYTES,
  PushPayloadTooLargeError,
  retryAfterMs,
  vapidAuthorization,
  WebPushError,
  type VapidKeys,
  type WebPushErrorCode,
} from "../../shared/crypto/webpush/index.js";
import { publicUrlProblem } from "../../shared/edge/public-host.js";

interface HttpEce {
  decrypt(body: Buffer, params: { version: "aes128gcm"; privateKey: ECDH; authSecret: string }): Buffer;
}
// http_ece ships no types; this is the one call we use.
const ece = createRequire(import.meta.url)("http_ece") as HttpEce;

const b64u = (s: string) => new Uint8Array(Buffer.from(s, "base64url"));
const enc = (u: Uint8Array) => Buffer.from(u).toString("base64url");

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

async function rfcServerKeys(): Promise<CryptoKeyPair> {
  const p = b64u(RFC.asPublic);
  const alg = { name: "ECDH", namedCurve: "P-256" };
  const jwk = { kty: "EC", crv: "P-256", x: enc(p.subarray(1, 33)), y: enc(p.subarray(33)), d: RFC.asPrivate };
  return {
    privateKey: await crypto.subtle.importKey("jwk", jwk, alg, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", p, alg, true, []),
  };
}

/** A user agent as http_ece sees it: a node:crypto ECDH key and the subscription's keys. */
function device() {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return { ecdh, p256dh: enc(ecdh.getPublicKey()), auth: enc(randomBytes(16)) };
}

function eceDecrypt(body: Uint8Array, d: { ecdh: ECDH; auth: string }): Buffer {
  return ece.decrypt(Buffer.from(body), { version: "aes128gcm", privateKey: d.ecdh, authSecret: d.auth });
}

async function rejectsWith(p: Promise<unknown> | (() => unknown), code: WebPushErrorCode) {
  const run = typeof p === "function" ? Promise.resolve().then(p) : p;
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebPushError);
  expect((err as WebPushError).code).toBe(code);
}

async function verifyVapid(authorization: string, keys: VapidKeys) {
  const m = /^vapid t=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+), k=([A-Za-z0-9_-]+)$/.exec(authorization);
  expect(m, authorization).not.toBeNull();
  const [, token, k] = m!;
  expect(k).toBe(keys.publicKey);
  const point = b64u(k);
  const pub = await importJWK({ kty: "EC", crv: "P-256", x: enc(point.subarray(1, 33)), y: enc(point.subarray(33)) }, "ES256");
  const { payload } = await jwtVerify(token, pub, { algorithms: ["ES256"] });
  return { header: decodeProtectedHeader(token), payload };
}

const SUBJECT = "mailto:ops@lineup.example";

describe("encryptPayload (RFC 8291 aes128gcm)", () => {
  it("reproduces the RFC 8291 §5 example message byte for byte", async () => {
    const body = await encryptPayload({
      p256dh: RFC.uaPublic,
      auth: RFC.auth,
      payload: new TextEncoder().encode(RFC.plaintext),
      salt: b64u(RFC.salt),
      asKeyPair: await rfcServerKeys(),
    });
    expect(enc(body)).toBe(RFC.body);
  });

  it("the RFC 8291 §5 message decrypts with http_ece and the RFC's user agent key (the decryptor is sound)", () => {
    const ecdh = createECDH("prime256v1");
    ecdh.setPrivateKey(Buffer.from(RFC.uaPrivate, "base64url"));
    expect(enc(ecdh.getPublicKey())).toBe(RFC.uaPublic);
    expect(eceDecrypt(b64u(RFC.body), { ecdh, auth: RFC.auth }).toString()).toBe(RFC.plaintext);
  });

  it("a random payload it encrypts decrypts with http_ece using the subscriber's private key", async () => {
    const d = device();
    const payload = new Uint8Array(randomBytes(1500));
    const body = await encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload });
    expect(body.length).toBe(86 + 1500 + 1 + 16);
    expect(new DataView(body.buffer, body.byteOffset).getUint32(16)).toBe(4096); // rs
    expect(body[20]).toBe(65); // idlen
    expect(body[21]).toBe(0x04); // keyid is an uncompressed point
    expect(Buffer.from(eceDecrypt(body, d)).equals(Buffer.from(payload))).toBe(true);
  });

  it("uses a fresh salt and a fresh server key for every message", async () => {
    const d = device();
    const payload = new TextEncoder().encode("same");
    const a = await encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload });
    const b = await encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload });
    expect(enc(a.subarray(0, 16))).not.toBe(enc(b.subarray(0, 16)));
    expect(enc(a.subarray(21, 86))).not.toBe(enc(b.subarray(21, 86)));
  });

  it("pads to a 4096-byte body on request and the padded body still decrypts with http_ece", async () => {
    const d = device();
    const body = await encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload: new TextEncoder().encode("hi"), pad: true });
    expect(body.length).toBe(4096);
    expect(eceDecrypt(body, d).toString()).toBe("hi");
  });

  it("encrypts an empty payload that decrypts to nothing", async () => {
    const d = device();
    const body = await encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload: new Uint8Array(0) });
    expect(eceDecrypt(body, d).length).toBe(0);
  });

  it("rejects subscription keys of the wrong size, shape or curve", async () => {
    const d = device();
    const payload = new Uint8Array(1);
    await rejectsWith(encryptPayload({ p256dh: d.p256dh.slice(0, 40), auth: d.auth, payload }), "invalid_subscription_keys");
    await rejectsWith(encryptPayload({ p256dh: d.p256dh, auth: enc(randomBytes(12)), payload }), "invalid_subscription_keys");
    await rejectsWith(encryptPayload({ p256dh: "not base64!", auth: d.auth, payload }), "invalid_subscription_keys");
    const notOnCurve = new Uint8Array(65).fill(7);
    notOnCurve[0] = 4;
    await rejectsWith(encryptPayload({ p256dh: enc(notOnCurve), auth: d.auth, payload }), "invalid_subscription_keys");
  });
});

describe("VAPID (RFC 8292)", () => {
  it("signs an ES256 JWT that jose verifies against the VAPID public key, aud = the endpoint's origin", async () => {
    const keys = await generateVapidKeys();
    const before = Math.floor(Date.now() / 1000);
    const auth = await vapidAuthorization({ endpoint: "https://fcm.googleapis.com:443/fcm/send/abc?x=1", subject: SUBJECT, keys });
    const { header, payload } = await verifyVapid(auth, keys);
    expect(header).toEqual({ typ: "JWT", alg: "ES256" });
    expect(payload.aud).toBe("https://fcm.googleapis.com");
    expect(payload.sub).toBe(SUBJECT);
    expect(payload.exp).toBeGreaterThanOrEqual(before + 12 * 3600);
    expect(payload.exp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 12 * 3600);
  });

  it("reuses a signed token for the same push service, subject, key and lifetime until half its lifetime is gone", async () => {
    const keys = await generateVapidKeys();
    const other = await generateVapidKeys();
    const opts = { endpoint: "https://fcm.googleapis.com/fcm/send/a", subject: SUBJECT, keys, expSeconds: 60 };
    const first = await vapidAuthorization(opts);
    // Another subscription at the same push service: the same token (no new signature).
    expect(await vapidAuthorization({ ...opts, endpoint: "https://fcm.googleapis.com/fcm/send/b" })).toBe(first);
    // Another origin, subject, key or lifetime: a token of its own, each one verifying.
    for (const o of [
      { ...opts, endpoint: "https://updates.push.services.mozilla.com/wpush/v2/x" },
      { ...opts, subject: "https://lineup.example/contact" },
      { ...opts, keys: other },
      { ...opts, expSeconds: 120 },
    ]) {
      const auth = await vapidAuthorization(o);
      expect(auth).not.toBe(first);
      await verifyVapid(auth, o.keys);
    }
    // Past half its lifetime a fresh one is signed, with a later exp.
    const { payload: p1 } = await verifyVapid(first, keys);
    vi.useFakeTimers({ now: Date.now() + 31_000, toFake: ["Date"] });
    try {
      const renewed = await vapidAuthorization(opts);
      expect(renewed).not.toBe(first);
      const { payload: p2 } = await verifyVapid(renewed, keys);
      expect(Number(p2.exp)).toBeGreaterThan(Number(p1.exp));
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps exp within 24 hours and accepts exactly 24 hours", async () => {
    const keys = await generateVapidKeys();
    const auth = await vapidAuthorization({ endpoint: "https://push.example/x", subject: "https://lineup.example/contact", keys, expSeconds: 86400 });
    const { payload } = await verifyVapid(auth, keys);
    expect(payload.exp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 86400);
    expect(payload.sub).toBe("https://lineup.example/contact");
  });

  it("refuses an expiry over 24 hours, zero, negative or fractional", async () => {
    const keys = await generateVapidKeys();
    for (const expSeconds of [86401, 0, -5, 1.5]) {
      await rejectsWith(vapidAuthorization({ endpoint: "https://push.example/x", subject: SUBJECT, keys, expSeconds }), "invalid_expiry");
    }
  });

  it("refuses a subject that is not a mailto: address or an https: URL", async () => {
    const keys = await generateVapidKeys();
    for (const subject of ["", "ops@lineup.example", "mailto:", "mailto:nobody", "http://lineup.example", "https://", "ftp://x.example", "mailto:%zz@x"]) {
      await rejectsWith(vapidAuthorization({ endpoint: "https://push.example/x", subject, keys }), "invalid_subject");
    }
  });

  it("generated keys survive a JSON round trip and still sign", async () => {
    const stored = JSON.stringify(await generateVapidKeys());
    const keys = JSON.parse(stored) as VapidKeys;
    expect(b64u(keys.publicKey).length).toBe(65);
    expect(b64u(keys.publicKey)[0]).toBe(4);
    expect(Object.keys(keys.privateJwk).sort()).toEqual(["crv", "d", "kty", "x", "y"]);
    const auth = await vapidAuthorization({ endpoint: "https://push.example/x", subject: SUBJECT, keys });
    await verifyVapid(auth, keys);
  });

  it("refuses a public key that does not belong to the private key", async () => {
    const a = await generateVapidKeys();
    const b = await generateVapidKeys();
    await rejectsWith(
      vapidAuthorization({ endpoint: "https://push.example/x", subject: SUBJECT, keys: { publicKey: b.publicKey, privateJwk: a.privateJwk } }),
      "invalid_vapid_keys",
    );
    await rejectsWith(
      vapidAuthorization({ endpoint: "https://push.example/x", subject: SUBJECT, keys: { publicKey: a.publicKey, privateJwk: { kty: "RSA" } } }),
      "invalid_vapid_keys",
    );
  });
});

describe("buildPushRequest", () => {
  it("builds a POST with TTL, Urgency, Topic, aes128gcm content headers and a vapid Authorization; the body decrypts", async () => {
    const d = device();
    const keys = await generateVapidKeys();
    const endpoint = "https://updates.push.services.mozilla.com/wpush/v2/gAAAA";
    const req = await buildPushRequest({
      publicHost: publicUrlProblem,
      subscription: { endpoint, keys: { p256dh: d.p256dh, auth: d.auth } },
      payload: '{"title":"Deploy to staging?"}',
      vapid: { subject: SUBJECT, keys },
      ttl: 3600,
      urgency: "high",
      topic: "session_Ab-12",
    });
    expect(req.url).toBe(endpoint);
    expect(req.init.method).toBe("POST");
    const { Authorization, ...rest } = req.init.headers;
    expect(rest).toEqual({
      TTL: "3600",
      Urgency: "high",
      Topic: "session_Ab-12",
      "Content-Encoding": "aes128gcm",
      "Content-Type": "application/octet-stream",
    });
    const { payload } = await verifyVapid(Authorization, keys);
    expect(payload.aud).toBe("https://updates.push.services.mozilla.com");
    expect(eceDecrypt(req.init.body, d).toString()).toBe('{"title":"Deploy to staging?"}');
  });

  it("omits Urgency and Topic when not given and allows TTL 0", async () => {
    const d = device();
    const req = await buildPushRequest({
      publicHost: publicUrlProblem,
      subscription: { endpoint: "https://push.example/s", keys: { p256dh: d.p256dh, auth: d.auth } },
      payload: new Uint8Array([1, 2, 3]),
      vapid: { subject: SUBJECT, keys: await generateVapidKeys() },
      ttl: 0,
    });
    expect(Object.keys(req.init.headers).sort()).toEqual(["Authorization", "Content-Encoding", "Content-Type", "TTL"]);
    expect(req.init.headers.TTL).toBe("0");
  });

  it("accepts a 3993-byte payload as a 4096-byte body and throws PushPayloadTooLargeError at 3994", async () => {
    const d = device();
    const base = {
      publicHost: publicUrlProblem,
      subscription: { endpoint: "https://push.example/s", keys: { p256dh: d.p256dh, auth: d.auth } },
      vapid: { subject: SUBJECT, keys: await generateVapidKeys() },
      ttl: 60,
    };
    expect(MAX_PAYLOAD_BYTES).toBe(3993);
    const ok = await buildPushRequest({ ...base, payload: new Uint8Array(randomBytes(3993)) });
    expect(ok.init.body.length).toBe(4096);
    expect(eceDecrypt(ok.init.body, d).length).toBe(3993);
    const err = await buildPushRequest({ ...base, payload: new Uint8Array(3994) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PushPayloadTooLargeError);
    expect(err).toMatchObject({ code: "payload_too_large", size: 3994, limit: 3993 });
    // The limit is in UTF-8 bytes, not characters: 1997 × "é" is 3994 bytes.
    await expect(buildPushRequest({ ...base, payload: "é".repeat(1997) })).rejects.toBeInstanceOf(PushPayloadTooLargeError);
    await expect(encryptPayload({ p256dh: d.p256dh, auth: d.auth, payload: new Uint8Array(3994) })).rejects.toBeInstanceOf(PushPayloadTooLargeError);
  });

  it("accepts a Topic of up to 32 URL-safe base64 characters and refuses anything else", async () => {
    const d = device();
    const base = {
      publicHost: publicUrlProblem,
      subscription: { endpoint: "https://push.example/s", keys: { p256dh: d.p256dh, auth: d.auth } },
      payload: "x",
      vapid: { subject: SUBJECT, keys: await generateVapidKeys() },
      ttl: 60,
    };
    const topic = "Aa0-_".repeat(6) + "zz"; // 32
    expect((await buildPushRequest({ ...base, topic })).init.headers.Topic).toBe(topic);
    for (const bad of [topic + "z", "", "a b", "a+b", "a/b", "a=b", "é"]) {
      await rejectsWith(buildPushRequest({ ...base, topic: bad }), "invalid_topic");
    }
  });

  it("refuses a negative or fractional TTL and an unknown Urgency", async () => {
    const d = device();
    const base = {
      publicHost: publicUrlProblem,
      subscription: { endpoint: "https://push.example/s", keys: { p256dh: d.p256dh, auth: d.auth } },
      payload: "x",
      vapid: { subject: SUBJECT, keys: await generateVapidKeys() },
    };
    await rejectsWith(buildPushRequest({ ...base, ttl: -1 }), "invalid_ttl");
    await rejectsWith(buildPushRequest({ ...base, ttl: 1.5 }), "invalid_ttl");
    const urgency = "urgent" as unknown as "high"; // as if from untyped JSON
    await rejectsWith(buildPushRequest({ ...base, ttl: 1, urgency }), "invalid_urgency");
  });

  it("refuses an http endpoint unless allowLocalHttp is set and the host is loopback", async () => {
    const d = device();
    const base = { publicHost: publicUrlProblem, payload: "x", vapid: { subject: SUBJECT, keys: await generateVapidKeys() }, ttl: 60 };
    const sub = (endpoint: string) => ({ endpoint, keys: { p256dh: d.p256dh, auth: d.auth } });
    await rejectsWith(buildPushRequest({ ...base, subscription: sub("http://127.0.0.1:9000/push") }), "invalid_endpoint");
    const local = await buildPushRequest({ ...base, subscription: sub("http://127.0.0.1:9000/push"), allowLocalHttp: true });
    expect((await verifyVapid(local.init.headers.Authorization, base.vapid.keys)).payload.aud).toBe("http://127.0.0.1:9000");
  });

  it("delivers to a fake push service on 127.0.0.1 through fetch; the service decrypts the body and verifies the JWT", async () => {
    const d = device();
    const keys = await generateVapidKeys();
    const seen: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(201, { Location: "/m/1" }).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as AddressInfo).port;
      const req = await buildPushRequest({
        publicHost: publicUrlProblem,
        subscription: { endpoint: `http://127.0.0.1:${port}/push/abc`, keys: { p256dh: d.p256dh, auth: d.auth } },
        payload: "ping",
        vapid: { subject: SUBJECT, keys },
        ttl: 30,
        allowLocalHttp: true,
      });
      const res = await fetch(req.url, req.init);
      expect(classifyPushResponse(res.status)).toBe("sent");
      expect(seen).toHaveLength(1);
      const got = seen[0];
      expect(got.headers["content-encoding"]).toBe("aes128gcm");
      expect(got.headers["content-type"]).toBe("application/octet-stream");
      expect(got.headers.ttl).toBe("30");
      expect(eceDecrypt(got.body, d).toString()).toBe("ping");
      const { payload } = await verifyVapid(String(got.headers.authorization), keys);
      expect(payload.aud).toBe(`http://127.0.0.1:${port}`);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe("checkEndpoint", () => {
  it("accepts https endpoints of public names on the default port; a port, an IP literal, a single-label or trailing-dot name is refused (issue 26 §6)", async () => {
    expect(checkEndpoint("https://fcm.googleapis.com/fcm/send/x", { allowLocalHttp: false, publicHost: publicUrlProblem }).host).toBe("fcm.googleapis.com");
    for (const e of [
      "https://push.example:8443/x",
      "https://10.0.0.1/x",
      "https://[::1]/x",
      "https://vm/x",
      "https://vm./x",
      "https://localhost./x",
      "https://a.localhost/x",
    ]) {
      await rejectsWith(() => checkEndpoint(e, { allowLocalHttp: true, publicHost: publicUrlProblem }), "invalid_endpoint");
    }
  });

  it("accepts http on 127.0.0.1, localhost and [::1] only with allowLocalHttp", () => {
    for (const e of ["http://127.0.0.1:8080/p", "http://localhost:1234/p", "http://[::1]:9/p", "http://localhost/p"]) {
      expect(checkEndpoint(e, { allowLocalHttp: true, publicHost: publicUrlProblem }).protocol).toBe("http:");
      expect(() => checkEndpoint(e, { allowLocalHttp: false, publicHost: publicUrlProblem })).toThrow(WebPushError);
    }
  });

  it("refuses http on any other host, other schemes, credentials and non-URLs even with allowLocalHttp", async () => {
    for (const e of [
      "http://push.example/p",
      "http://10.0.0.1/p",
      "http://127.0.0.1.evil.example/p",
      "http://localhost.evil.example/p",
      "ws://127.0.0.1:1/p",
      "ftp://push.example/p",
      "https://user:pw@push.example/p",
      "push.example/p",
      "",
    ]) {
      await rejectsWith(() => checkEndpoint(e, { allowLocalHttp: true, publicHost: publicUrlProblem }), "invalid_endpoint");
    }
  });
});

describe("push service answers", () => {
  it("classifies 2xx as sent, 404/410 as gone, 429/5xx as retry and everything else as failed", () => {
    const table: [number, string][] = [
      [201, "sent"],
      [200, "sent"],
      [202, "sent"],
      [404, "gone"],
      [410, "gone"],
      [429, "retry"],
      [500, "retry"],
      [502, "retry"],
      [503, "retry"],
      [599, "retry"],
      [400, "failed"],
      [401, "failed"],
      [403, "failed"],
      [413, "failed"],
      [301, "failed"],
      [600, "failed"],
    ];
    for (const [status, outcome] of table) expect([status, classifyPushResponse(status)]).toEqual([status, outcome]);
  });

  it("reads Retry-After as delta-seconds or an HTTP-date, and gives undefined for junk", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000);
    expect(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    for (const v of [null, undefined, "", "soon", "-5", "1.5"]) expect(retryAfterMs(v, now)).toBeUndefined();
  });
});
