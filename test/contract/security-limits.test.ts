// Security (issue 4 §3): rate limits and request size limits, on a relay of our own started with a low
// per-connection rate (RATE_LIMIT_PER_S=2, RATE_LIMIT_BURST=5) so the limits are reached quickly.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { LIMITS } from "../../shared/contract/protocol.js";
import { http, Pool, sleep } from "../helpers/raw-client.js";
import { startRelay, type RunningRelay } from "../helpers/relay.js";

const WEBHOOK_SECRET = "wk-secret-for-size-tests";
let relay: RunningRelay;
const pool = new Pool(() => relay.url);
beforeAll(async () => {
  relay = await startRelay({ vars: { RATE_LIMIT_PER_S: "2", RATE_LIMIT_BURST: "5", WUKONGIM_WEBHOOK_SECRET: WEBHOOK_SECRET, WUKONGIM_BOT_UID: "bot" } });
});
afterAll(async () => relay?.stop());
afterEach(() => pool.closeAll());

const MiB = 1024 * 1024;

/** A body sent as a stream: fetch then uses chunked encoding, with no content-length header. */
function chunked(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(ctl) {
      if (sent >= total) return ctl.close();
      const n = Math.min(64 * 1024, total - sent);
      ctl.enqueue(new Uint8Array(n).fill(0x20));
      sent += n;
    },
  });
}
async function postStream(url: string, token: string, total: number): Promise<number> {
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: chunked(total),
    duplex: "half",
  };
  const res = await fetch(url, init);
  await res.body?.cancel();
  return res.status;
}

describe("per-connection rate limit", () => {
  it("answers a flood with rate_limited error frames, keeps the connection, and serves it again after a pause", async () => {
    const s = await pool.session(DEV_RELAY_KEY);
    const app = await pool.app(s);
    const other = await pool.app(s);
    await app.drain();
    await other.drain();
    for (let i = 0; i < 40; i++) app.send({ type: "tool.list" });
    const limited = await app.next((f) => f.type === "error" && f.code === "rate_limited");
    expect(limited.message).toEqual(expect.any(String));
    // Another connection of the same session is not limited by this one's flood.
    other.send({ type: "tool.list" });
    expect((await other.next(() => true)).type).toBe("tool.list");
    // The flooding connection stays open and works once its bucket refills (2 frames/s).
    await sleep(3000);
    app.frames.length = 0;
    app.send({ type: "tool.list" });
    expect((await app.next(() => true)).type).toBe("tool.list");
    expect(app.closed).toBeUndefined();
  });

  it("does not count ping heartbeats (answered by the runtime) against the limit", async () => {
    const s = await pool.session(DEV_RELAY_KEY);
    const app = await pool.app(s);
    await app.drain();
    for (let i = 0; i < 20; i++) app.send("ping");
    for (let i = 0; i < 20; i++) await app.next("pong");
    app.send({ type: "tool.list" });
    expect((await app.next(() => true)).type).toBe("tool.list");
  });
});

describe("request size limits on every POST route (1 MiB)", () => {
  it("POST /api/sessions: 413 over 1 MiB, with and without content-length", async () => {
    const r2 = relay;
    {
      const big = JSON.stringify({ label: "x", pad: " ".repeat(MiB) });
      const r = await http(`${r2.url}/api/sessions`, { method: "POST", token: DEV_RELAY_KEY, body: big });
      expect(r.status).toBe(413);
      expect((r.json as { error: { code: string } }).error.code).toBe("too_large");
      expect(await postStream(`${r2.url}/api/sessions`, DEV_RELAY_KEY, MiB + 1)).toBe(413);
      // Just under the limit is read (and then judged on its content).
      const ok = await http(`${r2.url}/api/sessions`, {
        method: "POST",
        token: DEV_RELAY_KEY,
        body: `{"label":"ok"}${" ".repeat(LIMITS.maxHttpBodyBytes - 20)}`,
      });
      expect(ok.status).toBe(201);
    }
  });

  it("POST /api/sessions/:sid/calls: 413 over 1 MiB, with and without content-length; the session is unaffected", async () => {
    const r2 = relay;
    {
      const s = await pool.session(DEV_RELAY_KEY);
      const url = `${r2.url}/api/sessions/${s.session_id}/calls?wait=0`;
      const big = JSON.stringify({ name: "echo", arguments: { text: "x".repeat(MiB) } });
      const r = await http(url, { method: "POST", token: s.agent_token, body: big });
      expect(r.status).toBe(413);
      expect(await postStream(url, s.agent_token, MiB + 1)).toBe(413);
      // Multi-byte characters count as bytes: 400k three-byte characters are 1.2 MB.
      const wide = JSON.stringify({ name: "echo", arguments: { text: "€".repeat(400_000) } });
      expect((await http(url, { method: "POST", token: s.agent_token, body: wide })).status).toBe(413);
      const st = await http(`${r2.url}/api/sessions/${s.session_id}`, { token: s.agent_token });
      expect((st.json as { pending_calls: number }).pending_calls).toBe(0);
      const small = await http(url, { method: "POST", token: s.agent_token, body: JSON.stringify({ name: "echo", arguments: { text: "x".repeat(1000) } }) });
      expect(small.status).toBe(202);
    }
  });

  it("POST /webhooks/wukongim/<secret>: refuses an oversized body with 413 (its own limit, 16 MiB), with and without content-length", async () => {
    const url = `${relay.url}/webhooks/wukongim/${WEBHOOK_SECRET}?event=msg.notify`;
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: " ".repeat(16 * MiB + 1) });
    expect(res.status).toBe(413);
    await res.body?.cancel();
    // Without content-length (chunked): the cap is counted while streaming, not taken from a header.
    expect(await postStream(url, "unused", 16 * MiB + 1)).toBe(413);
    // A wrong secret reads nothing and answers like any unknown path.
    const wrong = await http(`${relay.url}/webhooks/wukongim/not-it?event=msg.notify`, { method: "POST", body: "[]" });
    expect(wrong.status).toBe(404);
    expect(wrong.text).not.toContain(WEBHOOK_SECRET);
  });

  it("answers a WebSocket frame over 1 MiB with too_large (or a 1009 close), and nothing else changes", async () => {
    const s = await pool.session(DEV_RELAY_KEY);
    const app = await pool.app(s);
    await app.drain();
    app.send(JSON.stringify({ type: "message", content: [{ type: "text", text: "y".repeat(MiB) }] }));
    const f = await app.next(() => true, 15_000).catch(() => undefined);
    if (f === undefined) expect(app.closed?.code).toBe(1009);
    else expect(f).toMatchObject({ type: "error", code: "too_large" });
  });
});

// Last in the file: it brakes this relay's address for a minute.
describe("brake on guessing RELAY_KEY", () => {
  it("answers 429 after 60 wrong keys from one address within a minute, without echoing the key", async () => {
    let last = 0;
    for (let i = 0; i < 61 && last !== 429; i++) {
      const r = await http(`${relay.url}/api/sessions`, { method: "POST", token: `guess-${i}` });
      last = r.status;
      if (r.status === 401) continue;
      expect(r.status).toBe(429);
      expect(r.text).not.toContain(`guess-${i}`);
      expect((r.json as { error: { code: string } }).error.code).toBe("rate_limited");
      expect(r.headers.get("retry-after")).toEqual(expect.any(String));
    }
    expect(last).toBe(429);
    // While braked, even a right key is not compared (otherwise guessing would go on at full speed).
    expect((await http(`${relay.url}/api/sessions`, { method: "POST", token: DEV_RELAY_KEY })).status).toBe(429);
  });
});

// The direct LAN mode holds the same limits (its rate limit set low through its options).
describe.each(TARGETS.filter((t) => t.kind === "lan"))("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("limits", () => {
    const run = useTarget(tc, { rateLimitPerS: 2, rateLimitBurst: 5 });
    const lan = run.pool;

    it("answers a flood with rate_limited and keeps the connection usable", async () => {
      const s = await lan.session(run.T.key);
      const app = await lan.app(s);
      await app.drain();
      for (let i = 0; i < 40; i++) app.send({ type: "tool.list" });
      await app.next((f) => f.type === "error" && f.code === "rate_limited");
      await sleep(3000);
      app.frames.length = 0;
      app.send({ type: "tool.list" });
      expect((await app.next(() => true)).type).toBe("tool.list");
    });

    it("answers 413 over 1 MiB on both POST routes, with and without content-length", async () => {
      const s = await lan.session(run.T.key);
      const calls = `${run.T.url}/api/sessions/${s.session_id}/calls?wait=0`;
      const big = JSON.stringify({ name: "echo", pad: " ".repeat(MiB) });
      expect((await http(`${run.T.url}/api/sessions`, { method: "POST", token: run.T.key, body: big })).status).toBe(413);
      expect((await http(calls, { method: "POST", token: s.agent_token, body: big })).status).toBe(413);
      expect(await postStream(`${run.T.url}/api/sessions`, run.T.key, MiB + 1)).toBe(413);
      expect(await postStream(calls, s.agent_token, MiB + 1)).toBe(413);
      expect((await http(calls, { method: "POST", token: s.agent_token, body: JSON.stringify({ name: "echo" }) })).status).toBe(202);
    });
  });
});
