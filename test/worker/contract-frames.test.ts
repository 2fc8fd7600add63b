// §3 and §4.1 of the contract: frames are validated at the edge; every bad frame gets an `error`,
// the connection stays usable and nothing else is affected. Heartbeats and the rate limit.
import { describe, expect, it } from "vitest";
import { CHOICE, closeAll, EVICTIONS, evict, isError, pair, sync, ASK, isCall } from "./contract-fixtures.js";
import { connect, createSession, type Client } from "./helpers.js";

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
  it("a connection that floods gets rate_limited errors and stays usable; others are unaffected", async () => {
    const { agent, app } = await pair([CHOICE]);
    // Far above the burst (400) and the refill (200/s), however slowly this machine processes them.
    for (let i = 0; i < 4000; i++) app.send({ type: "tool.ack", call_id: `x${i}` });
    const e = await app.next(isError("rate_limited"), 40_000);
    expect(e.message).toMatch(/frames/);
    // The agent's own connection has its own budget (its frame waits behind the flood in the one object).
    await sync(agent, 60_000);
    // Once the bucket refills, the flooding connection works again (a rate-limited probe gets no answer).
    for (let i = 0; ; i++) {
      const id = `probe${i}`;
      app.send({ type: "tool.result", call_id: id, result: { message: "x" } });
      try {
        await app.next((f) => f.type === "error" && f.call_id === id, 1000);
        break;
      } catch (e) {
        if (i > 40) throw e;
      }
    }
    closeAll(agent, app);
  }, 90_000);
});
