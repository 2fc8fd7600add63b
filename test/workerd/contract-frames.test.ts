// §3 and §4.1 of the contract: frames are validated at the edge; every bad frame gets an `error`,
// the connection stays usable and nothing else is affected. Heartbeats and the rate limit.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/contract/protocol.js";
import { TokenBucket } from "../../shared/session/rate-limit.js";
import type { Session } from "../../worker/session.js";
import { CHOICE, closeAll, EVICTIONS, evict, isError, isResult, pair, sync, ASK, isCall } from "./contract-fixtures.js";
import { connect, createSession, stubOf, type Client } from "./helpers.js";

/** The session object's store keeps parsed registrations per wake: a test that edits SQL directly drops them. */
const forgetCaches = (o: unknown): void => (o as { store: { forget(): void } }).store.forget();

const MiB = 1024 * 1024;

/** A `tool.list` query padded to exactly `bytes` UTF-8 bytes (zod drops the unknown `pad` field). */
function paddedQuery(bytes: number, ch = "a"): string {
  const head = '{"type":"tool.list","pad":"';
  const tail = '"}';
  const unit = new TextEncoder().encode(ch).byteLength;
  const n = (bytes - head.length - tail.length) / unit;
  if (!Number.isInteger(n)) throw new Error("size not reachable with this character");
  return head + ch.repeat(n) + tail;
}

async function expectUsable(c: Client): Promise<void> {
  await sync(c);
}

describe("validation at the edge", () => {
  it.each(EVICTIONS)("bad_json for a frame that is not JSON, and the socket stays usable (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    await evict(s.session_id, mode);
    for (const raw of ["{", "hello", "{'type':'x'}", ""]) {
      app.send(raw);
      const e = await app.next("error");
      expect(e.code, raw).toBe("bad_json");
      expect(typeof e.message).toBe("string");
    }
    await expectUsable(app);
    // The other side was not affected.
    expect(await agent.none("error")).toBe(true);
    closeAll(agent, app);
  });

  it("bad_frame for a frame that is not an object with a known string type", async () => {
    const { agent, app } = await pair([CHOICE]);
    for (const v of [[], 1, "x", null, {}, { type: 3 }, { type: "nope" }, { type: "hello" }, { type: "presence" }, { type: "TOOL.CALL" }]) {
      app.send(JSON.stringify(v));
      expect((await app.next("error")).code, JSON.stringify(v)).toBe("bad_frame");
    }
    await expectUsable(app);
    closeAll(agent, app);
  });

  it("bad_frame for a known type with the wrong shape, with the call_id when one was given", async () => {
    const { agent, app } = await pair([CHOICE]);
    const bad: object[] = [
      { type: "tool.call", name: "choice" }, // no call_id
      { type: "tool.call", call_id: "b1", name: "bad name!" },
      { type: "tool.call", call_id: "b2", name: "choice", arguments: [1] },
      { type: "tool.call", call_id: "b3", name: "choice", arguments: "x" },
      { type: "tool.call", call_id: "b4", name: "choice", timeout_s: "5" },
      { type: "tool.call", call_id: "", name: "choice" },
      { type: "tool.result", call_id: "b5" }, // neither result nor error
      { type: "tool.result", call_id: "b6", result: { message: "x" }, error: { code: "e", message: "m" } },
      { type: "tool.result", call_id: "b7", result: { content: [] } }, // result.message is required
      { type: "tool.cancel" },
      { type: "tool.ack", call_id: 5 },
      { type: "message", content: [] },
      { type: "message", content: [{ type: "text" }] },
      { type: "message", content: "hi" },
      { type: "tool.list", tools: [{ name: "x", type: "weird" }] },
      { type: "tool.list", tools: [{ name: "x y", type: "action", inputSchema: {} }] },
      { type: "tool.list", tools: "x" },
    ];
    for (const f of bad) {
      agent.send(f);
      const e = await agent.next("error");
      expect(e.code, JSON.stringify(f)).toBe("bad_frame");
      const id = (f as { call_id?: unknown }).call_id;
      if (typeof id === "string" && id) expect(e.call_id).toBe(id);
    }
    await expectUsable(agent);
    // Nothing reached the app.
    expect(await app.none("tool.call")).toBe(true);
    closeAll(agent, app);
  });

  it("bad_frame for a binary frame", async () => {
    const { agent, app } = await pair([CHOICE]);
    app.ws.send(new TextEncoder().encode(JSON.stringify({ type: "tool.list" })));
    expect((await app.next("error")).code).toBe("bad_frame");
    await expectUsable(app);
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("too_large for a frame over 1 MiB; exactly 1 MiB is fine (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    await evict(s.session_id, mode);
    app.send(paddedQuery(MiB));
    await app.next("tool.list");
    app.send(paddedQuery(MiB + 1));
    expect((await app.next("error", 10_000)).code).toBe("too_large");
    // Counted in UTF-8 bytes, not characters: 400 000 euro signs are 1.2 MB.
    app.send(JSON.stringify({ type: "tool.list", pad: "€".repeat(400_000) }));
    expect((await app.next("error", 10_000)).code).toBe("too_large");
    app.ws.send(new Uint8Array(MiB + 1));
    expect((await app.next("error", 10_000)).code).toBe("too_large");
    await expectUsable(app);
    closeAll(agent, app);
  });

  it.each(EVICTIONS)("forbidden for an app sending status; no presence changes (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    await evict(s.session_id, mode);
    app.send({ type: "status", state: "working" });
    expect((await app.next("error")).code).toBe("forbidden");
    await expectUsable(app);
    expect(await agent.none((f) => f.type === "presence" && f.agent.status !== undefined)).toBe(true);
    closeAll(agent, app);
  });

  it("a bad frame does not disturb an open call", async () => {
    const { agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "c1", name: "choice", arguments: ASK });
    await app.next(isCall("c1"));
    app.send("{");
    await app.next(isError("bad_json"));
    app.send({ type: "tool.result", call_id: "c1" });
    await app.next(isError("bad_frame"));
    app.send({ type: "tool.result", call_id: "c1", result: { message: "a" } });
    expect((await agent.next("tool.result")).result).toEqual({ message: "a" });
    closeAll(agent, app);
  }, 90_000);
});

describe("internal errors", () => {
  it("a handler failure gets one error frame (internal), then a 1011 close", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    // Corrupt the stored registration so that reading the catalog throws (and drop the parsed copy the
    // object keeps per wake, as a new wake would).
    await runInDurableObject(stubOf(s.session_id), (o, state) => {
      state.storage.sql.exec("UPDATE registrations SET tools = '{not json' WHERE key = 'app:ph'");
      forgetCaches(o);
    });
    agent.send({ type: "tool.call", call_id: "boom", name: "choice", arguments: ASK });
    expect(await agent.next(isError("internal"))).toMatchObject({ type: "error", code: "internal" });
    expect((await agent.closedWith()).code).toBe(1011);
    expect(app.closed).toBeUndefined();
    // Nothing of the failed frame was stored.
    const left = await runInDurableObject(stubOf(s.session_id), (_i, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM calls").one().n);
    expect(left).toBe(0);
    closeAll(app);
  });
});

describe("atomic frames", () => {
  it("regression: a handler that fails after its first write leaves the call open (one transaction per frame)", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "tool.call", call_id: "half", name: "choice", arguments: ASK });
    await app.next(isCall("half"));
    // The result closes the call first and reads the catalog after: make that read throw.
    await runInDurableObject(stubOf(s.session_id), (o, state) => {
      state.storage.sql.exec("UPDATE registrations SET tools = '{not json' WHERE key = 'app:ph'");
      forgetCaches(o);
    });
    app.send({ type: "tool.result", call_id: "half", result: { message: "a" } });
    await app.next(isError("internal"));
    expect((await app.closedWith()).code).toBe(1011);
    const status = await runInDurableObject(
      stubOf(s.session_id),
      (_i, state) => state.storage.sql.exec("SELECT status FROM calls WHERE call_id = 'half'").one().status,
    );
    expect(status).toBe("open");
    expect(await agent.none(isResult("half"))).toBe(true);
    closeAll(agent);
  });
});

describe("heartbeat", () => {
  it.each(EVICTIONS)("the text frame ping is answered with pong (evict: %s)", async (mode) => {
    const s = await createSession();
    const c = await connect(s.session_id, s.app_token);
    await evict(s.session_id, mode);
    c.send("ping");
    await c.next("pong");
    await expectUsable(c);
    c.close();
  });
});

describe("rate limit", () => {
  it("the default bucket allows a burst of 1500 frames and refills 200 per second", () => {
    const b = new TokenBucket(LIMITS.rateLimitPerS, LIMITS.rateLimitBurst);
    const t = 1_000_000;
    for (let i = 0; i < 1500; i++) expect(b.take(t)).toBe(true);
    expect(b.take(t)).toBe(false);
    expect(b.take(t + 4)).toBe(false); // 0.8 of a frame refilled
    expect(b.take(t + 5)).toBe(true);
    expect(b.take(t + 10_000)).toBe(true);
  });

  it("a connection over its budget gets rate_limited errors, its frames are dropped, and it stays usable", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    // This machine may process frames slower than the default refill; give this connection a tiny budget.
    await runInDurableObject(stubOf(s.session_id), (instance, state) => {
      const ws = state.getWebSockets("app:ph")[0]!;
      const { conn } = ws.deserializeAttachment() as { conn: string };
      (instance as Session).engine.buckets.set(conn, new TokenBucket(2, 5));
    });
    for (let i = 0; i < 40; i++) app.send({ type: "tool.call", call_id: `f${i}`, name: "choice", arguments: ASK });
    // Every frame gets exactly one answer: processed (a result: the agent side has no "choice") or dropped.
    let limited = 0;
    let processed = 0;
    while (limited + processed < 40) {
      const f = await app.next(
        (x) => (x.type === "error" && x.code === "rate_limited") || (x.type === "tool.result" && String(x.call_id).startsWith("f")),
        20_000,
      );
      if (f.type === "error") {
        expect(f.message).toMatch(/frames/);
        limited++;
      } else processed++;
    }
    expect(limited).toBeGreaterThan(0);
    expect(processed).toBeGreaterThanOrEqual(5);
    // Another connection has its own budget.
    await sync(agent, 20_000);
    // Once the bucket refills, the connection works again (a rate-limited probe gets no answer).
    for (let i = 0; ; i++) {
      const id = `probe${i}`;
      app.send({ type: "tool.result", call_id: id, result: { message: "x" } });
      try {
        await app.next((f) => f.type === "error" && f.call_id === id, 1000);
        break;
      } catch (err) {
        if (i > 40) throw err;
      }
    }
    closeAll(agent, app);
  }, 90_000);
});
