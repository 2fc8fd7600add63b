// Security (issue 4 §3): session tokens from outside — another session's, expired, tampered in each
// part, signed with another secret, the wrong role — on every token endpoint and every token carrier.
// Each target's token-signing secret is known to the test (the shared relay's configured TOKEN_SECRET, the
// LAN server's tokenSecret), so expired tokens are signed exactly as the server signs them.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { TARGETS, type Target } from "../helpers/contract-targets.js";
import { signToken } from "../../shared/edge/tokens.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { http, Pool, refused, wsUrl, type TokenVia } from "../helpers/raw-client.js";

let url: string;
let DEV_RELAY_KEY: string;
let SECRET: string;
const epochOf = (s: SessionCreated) => parseInt(s.agent_token.split(".")[4]!, 36);
const pool = new Pool(() => url);
afterEach(() => pool.closeAll());

type Part = "version" | "session" | "role" | "expiry" | "epoch" | "signature";
const PARTS: Part[] = ["version", "session", "role", "expiry", "epoch", "signature"];

/** Changes one character of one dot-separated part of a token. */
function flip(token: string, part: Part, at: "first" | "last" = "last"): string {
  const parts = token.split(".");
  const i = PARTS.indexOf(part);
  const p = parts[i]!;
  const j = at === "last" ? p.length - 1 : 0;
  const c = p[j]!;
  const swapped =
    c === "A"
      ? "B"
      : c === "a"
        ? "b"
        : c === "0"
          ? "1"
          : c === "1"
            ? "2"
            : /[a-z]/.test(c)
              ? c.toUpperCase()
              : c === "Z"
                ? "Y"
                : /[A-Z]/.test(c)
                  ? c.toLowerCase()
                  : "A";
  parts[i] = p.slice(0, j) + swapped + p.slice(j + 1);
  return parts.join(".");
}

/** Every way to present a token, on every endpoint that takes one: the statuses answered. */
async function statuses(s: SessionCreated, token: string): Promise<Record<string, number>> {
  const sid = s.session_id;
  const out: Record<string, number> = {};
  out.status = (await http(`${url}/api/sessions/${sid}`, { token })).status;
  out.status_query = (await http(`${url}/api/sessions/${sid}?token=${encodeURIComponent(token)}`)).status;
  out.call = (await http(`${url}/api/sessions/${sid}/calls?wait=0`, { method: "POST", token, body: JSON.stringify({ name: "echo" }) })).status;
  out.result = (await http(`${url}/api/sessions/${sid}/calls/x?wait=0`, { token })).status;
  for (const via of ["header", "subprotocol", "query"] as TokenVia[]) {
    // A subprotocol must be an HTTP token; a client cannot even send one with `=` or `/` in it.
    if (via === "subprotocol" && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(token)) continue;
    out[`ws_${via}`] = (await refused(wsUrl(url, sid), { token, via })).status;
  }
  out.delete = (await http(`${url}/api/sessions/${sid}`, { method: "DELETE", token })).status;
  return out;
}
const all = (status: number) => ({
  status,
  status_query: status,
  call: status,
  result: status,
  ws_header: status,
  ws_subprotocol: status,
  ws_query: status,
  delete: status,
});

async function stillAlive(s: SessionCreated) {
  expect((await http(`${url}/api/sessions/${s.session_id}`, { token: s.agent_token })).status).toBe(200);
}

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("session tokens from outside", () => {
    let T: Target;
    beforeAll(async () => {
      T = await tc.start(inject("relayUrl"));
      url = T.url;
      DEV_RELAY_KEY = T.key;
      SECRET = T.tokenSecret;
    });
    afterAll(async () => T?.stop());

    it("refuses a token of another session with 401 everywhere (both roles)", async () => {
      const a = await pool.session(DEV_RELAY_KEY);
      const b = await pool.session(DEV_RELAY_KEY);
      expect(await statuses(a, b.agent_token)).toEqual(all(401));
      expect(await statuses(a, b.app_token)).toEqual(all(401));
      await stillAlive(a);
    });

    it.each(PARTS)("refuses a token with one character of its %s part changed with 401 everywhere", async (part) => {
      const s = await pool.session(DEV_RELAY_KEY);
      for (const at of ["first", "last"] as const) {
        const bad = flip(s.agent_token, part, at);
        expect(bad).not.toBe(s.agent_token);
        expect([part, at, await statuses(s, bad)]).toEqual([part, at, all(401)]);
      }
      await stillAlive(s);
    });

    // Regression: atob() accepted `=` padding and ignored the unused low bits of the last character, so a
    // token with `=` appended or its last character nudged by one bit still verified (shared/edge/tokens.ts).
    it("refuses the same signature in a non-canonical encoding (padding, unused low bits) with 401", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      const t = s.agent_token;
      const last = B64.indexOf(t[t.length - 1]!);
      for (const bad of [`${t}=`, `${t}==`, t.slice(0, -1) + B64[last ^ 1], t.slice(0, -1) + B64[last ^ 2], t.replace(/-/g, "+").replace(/_/g, "/")]) {
        if (bad === t) continue;
        const got = await statuses(s, bad);
        const want: Record<string, number> = all(401);
        if (!("ws_subprotocol" in got)) delete want.ws_subprotocol;
        expect([bad.slice(-6), got]).toEqual([bad.slice(-6), want]);
      }
      await stillAlive(s);
    });

    it("refuses an app token relabelled as agent (role swapped, signature kept) with 401", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const swapped = s.app_token.replace(".app.", ".agent.");
      expect(swapped).not.toBe(s.app_token);
      expect(await statuses(s, swapped)).toEqual(all(401));
      await stillAlive(s);
    });

    it("refuses a token moved to another session (session part swapped, signature kept) with 401", async () => {
      const a = await pool.session(DEV_RELAY_KEY);
      const b = await pool.session(DEV_RELAY_KEY);
      const moved = a.agent_token.replace(a.session_id, b.session_id);
      expect(await statuses(b, moved)).toEqual(all(401));
      await stillAlive(b);
    });

    it("refuses a token with a later expiry written in (signature kept) with 401", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const parts = s.agent_token.split(".");
      parts[3] = (parseInt(parts[3]!, 36) + 365 * 86_400_000).toString(36);
      expect(await statuses(s, parts.join("."))).toEqual(all(401));
    });

    it("refuses a well-formed token signed with another secret with 401", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const forged = await signToken("not-the-relay-secret", s.session_id, "agent", s.expires_at, epochOf(s));
      expect(await statuses(s, forged)).toEqual(all(401));
      await stillAlive(s);
    });

    it("refuses an expired, correctly signed token with 404 (the session is gone for it) and never serves it", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const expired = await signToken(SECRET, s.session_id, "agent", Date.now() - 60_000, epochOf(s));
      const got = await statuses(s, expired);
      for (const [k, v] of Object.entries(got)) expect([k, v]).toEqual([k, 404]);
      // The expired agent token deleted nothing.
      await stillAlive(s);
      const expiredApp = await signToken(SECRET, s.session_id, "app", Date.now() - 1, epochOf(s));
      expect((await refused(wsUrl(url, s.session_id), { token: expiredApp })).status).toBe(404);
    });

    // Regression (issue 10): tokens were signed with RELAY_KEY, which every agent machine holds, so the key
    // alone minted working tokens for any existing session.
    it("regression: RELAY_KEY alone cannot mint a working token for an existing session (tokens use a distinct secret)", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      for (const role of ["agent", "app"] as const) {
        const minted = await signToken(DEV_RELAY_KEY, s.session_id, role, s.expires_at, epochOf(s));
        expect(await statuses(s, minted)).toEqual(all(401));
      }
      await stillAlive(s);
    });

    it("refuses garbage tokens with 401 and never a 5xx", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const garbage = [
        "",
        "v1",
        "v1....",
        "v1.a.b.c.d",
        `${s.agent_token}.x`,
        `x${s.agent_token}`,
        s.agent_token + "=",
        "v1." + "A".repeat(5000),
        "%00",
        "v1.ZZZZZZZZ.agent.zzzzzzzzzzzz.AAAA",
      ];
      for (const t of garbage) {
        const r = await http(`${url}/api/sessions/${s.session_id}?token=${encodeURIComponent(t)}`);
        expect([t.slice(0, 40), r.status, r.text.slice(0, 200)]).toEqual([t.slice(0, 40), 401, expect.any(String)]);
      }
      const h = await http(`${url}/api/sessions/${s.session_id}`, { headers: { authorization: "Bearer " } });
      expect(h.status).toBe(401);
      const basic = await http(`${url}/api/sessions/${s.session_id}`, { headers: { authorization: `Basic ${s.agent_token}` } });
      expect(basic.status).toBe(401);
    });

    it("answers 403 for a valid token of the wrong role and changes nothing", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      const sid = s.session_id;
      const token = s.app_token;
      expect((await http(`${url}/api/sessions/${sid}/calls?wait=0`, { method: "POST", token, body: JSON.stringify({ name: "echo" }) })).status).toBe(403);
      expect((await http(`${url}/api/sessions/${sid}/calls/x?wait=0`, { token })).status).toBe(403);
      expect((await http(`${url}/api/sessions/${sid}`, { method: "DELETE", token })).status).toBe(403);
      expect((await http(`${url}/api/sessions/${sid}?token=${token}`, { method: "DELETE" })).status).toBe(403);
      await stillAlive(s);
    });

    it("does not accept session tokens as RELAY_KEY, nor RELAY_KEY as a session token", async () => {
      const s = await pool.session(DEV_RELAY_KEY);
      for (const t of [s.agent_token, s.app_token]) expect((await http(`${url}/api/sessions`, { method: "POST", token: t })).status).toBe(401);
      expect((await http(`${url}/api/sessions/${s.session_id}`, { token: DEV_RELAY_KEY })).status).toBe(401);
      expect((await refused(wsUrl(url, s.session_id), { token: DEV_RELAY_KEY })).status).toBe(401);
    });

    it("keeps tokens in the URL-safe alphabet and distinct per session and role", async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 5; i++) {
        const s = await pool.session(DEV_RELAY_KEY);
        for (const t of [s.agent_token, s.app_token]) {
          expect(t).toMatch(/^[A-Za-z0-9._~-]+$/);
          expect(seen.has(t)).toBe(false);
          seen.add(t);
        }
      }
    });
  });
});
