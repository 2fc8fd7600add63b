// The direct path's binding (shared/client/direct-bind.ts, issue 32, docs/protocol.md): the agent's answer is
// signed by the machine's direct key over the session, the attempt, the device and BOTH DTLS fingerprints, so a
// relay that rewrites either SDP (or the key) in a plaintext session is refused before setRemoteDescription.
// The SDPs are shaped as node-datachannel (libdatachannel 0.x) writes them: the fingerprint at session level.
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DIRECT_KEY_FILE, loadDirectKey } from "../../adapter/client/direct-key.js";
import {
  directKeyOfFragment,
  generateDirectKey,
  importDirectKey,
  sdpFingerprint,
  signBind,
  verifyBind,
  withDirectKey,
  type BindContext,
} from "../../shared/client/direct-bind.js";

const fp = (byte: string) => Array.from({ length: 32 }, () => byte).join(":");
const sdp = (fingerprints: string[], mediaFp: string[] = []) =>
  [
    "v=0",
    "o=rtc 2077183826 0 IN IP4 127.0.0.1",
    "s=-",
    "t=0 0",
    "a=group:BUNDLE 0",
    ...fingerprints.map((f) => `a=fingerprint:sha-256 ${f}`),
    "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
    "c=IN IP4 0.0.0.0",
    "a=mid:0",
    ...mediaFp.map((f) => `a=fingerprint:sha-256 ${f}`),
    "a=setup:actpass",
    "",
  ].join("\r\n");

const OFFER = sdp([fp("D7")]);
const ANSWER = sdp([], [fp("F9")]);
const CTX: BindContext = { sessionId: "s_1234567890", signalId: "d1.1", deviceId: "phone" };

describe("an SDP's DTLS fingerprint", () => {
  it("is read at session or media level and written canonically (upper-case hex)", () => {
    expect(sdpFingerprint(sdp([fp("ab")]))).toEqual({ ok: true, fingerprint: `sha-256 ${fp("AB")}` });
    expect(sdpFingerprint(sdp([], [fp("ab")]))).toEqual({ ok: true, fingerprint: `sha-256 ${fp("AB")}` });
  });
  it("counts the same value at session and media level once", () => {
    expect(sdpFingerprint(sdp([fp("AB")], [fp("ab")])).ok).toBe(true);
  });
  it("is refused when there is none, several different ones, another hash, or a short one", () => {
    expect(sdpFingerprint(sdp([]))).toEqual({ ok: false, reason: "no a=fingerprint line" });
    expect(sdpFingerprint(sdp([fp("AB")], [fp("CD")]))).toEqual({ ok: false, reason: "several different fingerprints" });
    expect(sdpFingerprint(sdp([fp("AB")]).replace("a=group", `a=fingerprint:sha-1 ${fp("AB").slice(0, 59)}\r\na=group`)).ok).toBe(false);
    expect(sdpFingerprint(sdp(["AB:CD"])).ok).toBe(false);
  });
});

describe("the binding of an answer", () => {
  it("verifies with the device's own offer and the answer it received, and says whether the key was pinned before", async () => {
    const { key } = await generateDirectKey();
    const bind = await signBind(key, CTX, OFFER, ANSWER);
    expect(await verifyBind(bind, CTX, OFFER, ANSWER, key.publicKey)).toEqual({ ok: true, key: key.publicKey, firstContact: false });
    expect(await verifyBind(bind, CTX, OFFER, ANSWER, undefined)).toEqual({ ok: true, key: key.publicKey, firstContact: true });
  });

  it("is refused when the relay swapped the offer's fingerprint (the agent signed the relay's certificate, not the phone's)", async () => {
    const { key } = await generateDirectKey();
    const bind = await signBind(key, CTX, sdp([fp("EE")]), ANSWER);
    expect(await verifyBind(bind, CTX, OFFER, ANSWER, key.publicKey)).toMatchObject({ ok: false });
  });

  it("is refused when the relay swapped the answer's fingerprint", async () => {
    const { key } = await generateDirectKey();
    const bind = await signBind(key, CTX, OFFER, ANSWER);
    expect(await verifyBind(bind, CTX, OFFER, sdp([fp("EE")]), key.publicKey)).toMatchObject({ ok: false });
  });

  it("is refused for another session, another attempt or another device", async () => {
    const { key } = await generateDirectKey();
    const bind = await signBind(key, CTX, OFFER, ANSWER);
    for (const other of [{ sessionId: "s_other_0000" }, { signalId: "d1.2" }, { deviceId: "tablet" }])
      expect(await verifyBind(bind, { ...CTX, ...other }, OFFER, ANSWER, key.publicKey)).toMatchObject({ ok: false });
  });

  it("is refused when signed by another key than the pinned one, even if the signature itself is good", async () => {
    const { key } = await generateDirectKey();
    const relays = await generateDirectKey();
    const forged = await signBind(relays.key, CTX, OFFER, ANSWER);
    expect(await verifyBind(forged, CTX, OFFER, ANSWER, key.publicKey)).toEqual({
      ok: false,
      reason: "the answer is signed by another key than the machine's pinned one",
    });
  });

  it("is refused when missing, malformed, or carrying a signature made by another key than the one it names", async () => {
    const { key } = await generateDirectKey();
    const other = await generateDirectKey();
    const bind = await signBind(key, CTX, OFFER, ANSWER);
    expect(await verifyBind(undefined, CTX, OFFER, ANSWER, undefined)).toMatchObject({ ok: false });
    expect(await verifyBind({ key: "short", sig: bind.sig }, CTX, OFFER, ANSWER, undefined)).toMatchObject({ ok: false });
    expect(await verifyBind({ key: other.key.publicKey, sig: bind.sig }, CTX, OFFER, ANSWER, undefined)).toMatchObject({ ok: false });
  });

  it("signs the same way after the key was saved as a JWK and imported again", async () => {
    const { key, jwk } = await generateDirectKey();
    const again = await importDirectKey(jwk);
    expect(again.publicKey).toBe(key.publicKey);
    expect(await verifyBind(await signBind(again, CTX, OFFER, ANSWER), CTX, OFFER, ANSWER, key.publicKey)).toMatchObject({ ok: true });
  });
});

describe("the direct key in a pairing link", () => {
  it("is added to the fragment beside the code and the secret, and read back", async () => {
    const { key } = await generateDirectKey();
    const url = withDirectKey("https://relay.example/#pair=ABCD-1234&k=sekret", key.publicKey);
    expect(url).toBe(`https://relay.example/#pair=ABCD-1234&k=sekret&dk=${key.publicKey}`);
    expect(directKeyOfFragment(new URL(url).hash)).toBe(key.publicKey);
    expect(directKeyOfFragment("#pair=ABCD-1234&dk=not-a-key")).toBeUndefined();
    expect(directKeyOfFragment("#pair=ABCD-1234")).toBeUndefined();
  });
});

describe("the machine's direct key file", () => {
  it("is made once, mode 0600, and every later load (in this process or from the file) is the same key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-dk-"));
    const a = await loadDirectKey(dir);
    expect(statSync(join(dir, DIRECT_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect((await loadDirectKey(dir)).publicKey).toBe(a.publicKey);
    const copy = mkdtempSync(join(tmpdir(), "lineup-dk-"));
    writeFileSync(join(copy, DIRECT_KEY_FILE), readFileSync(join(dir, DIRECT_KEY_FILE)));
    const b = await loadDirectKey(copy);
    expect(b.publicKey).toBe(a.publicKey);
    expect(await verifyBind(await signBind(b, CTX, OFFER, ANSWER), CTX, OFFER, ANSWER, a.publicKey)).toMatchObject({ ok: true });
  });

  it("that is not a key is refused and never overwritten (a new key would break every phone's pin)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-dk-"));
    writeFileSync(join(dir, DIRECT_KEY_FILE), "{}");
    await expect(loadDirectKey(dir)).rejects.toMatchObject({ code: "direct_key" });
    expect(readFileSync(join(dir, DIRECT_KEY_FILE), "utf8")).toBe("{}");
  });
});
