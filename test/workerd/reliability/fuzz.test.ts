// §4.1 under hostile input: a seeded fuzzer sends ≥ 2,000 random and mutated frames — bad JSON, wrong
// types, huge strings, deep nesting, __proto__/constructor keys, binary frames — from a dozen connections
// of both roles. Each frame is answered with the contract's error frame, or handled as the contract says
// when it happens to be valid; no socket is closed, no internal error, and bystanders (the same session's
// other clients and another session) still complete calls.
import { describe, expect, it } from "vitest";
import { decodeFrame, LIMITS } from "../../../shared/contract/protocol.js";
import type { Client, Frame } from "../helpers.js";
import { CALC, isCall, isResult, Party, session } from "./party.js";

const SEED = 0x5eed2026;
const FRAMES = 2040;
const CONNS = 12; // 170 frames + 170 barriers per connection stay well under the default rate-limit burst

/** mulberry32: a tiny deterministic PRNG, so a failure can be replayed from the seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  return { next, int, pick };
}
type R = ReturnType<typeof prng>;

type Expect = "bad_json" | "bad_frame" | "too_large" | "valid";
interface Case {
  kind: string;
  data: string | Uint8Array;
}

const NASTY_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"];
const TYPES = ["tool.list", "tool.call", "tool.result", "tool.cancel", "tool.ack", "message", "status"];

function randomString(r: R, max = 24): string {
  const alphabets = ["abcXYZ019_-.", '\u0000\u0001\u001f"\\/', "éß漢字🙂\u2028\u2029", "\ud800\udfff\ud83d", "<script>'\"`${}"];
  let s = "";
  const n = r.int(max);
  for (let i = 0; i < n; i++) {
    const a = r.pick(alphabets);
    s += a[r.int(a.length)];
  }
  return s;
}

function randomValue(r: R, depth = 0): unknown {
  switch (r.int(depth > 3 ? 6 : 9)) {
    case 0:
      return null;
    case 1:
      return r.next() < 0.5;
    case 2:
      return r.pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, 0.1, 42]);
    case 3:
      return randomString(r);
    case 4:
      return r.pick(NASTY_KEYS);
    case 5:
      return "";
    case 6:
      return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(4); i > 0; i--) o[r.next() < 0.4 ? r.pick(NASTY_KEYS) : randomString(r, 8)] = randomValue(r, depth + 1);
      return o;
    }
  }
}

function deep(depth: number, open: string, close: string, inner = "1"): string {
  return open.repeat(depth) + inner + close.repeat(depth);
}

/** Valid frames of every type, for the mutator to start from. Tool names never collide with the bystanders'. */
function template(r: R): Record<string, unknown> {
  const id = `fz${r.int(50)}`;
  const name = r.pick(["fzT", "__proto__", "constructor", "toString", "fz.tool-1"]);
  switch (r.pick(TYPES)) {
    case "tool.list":
      return r.next() < 0.5
        ? { type: "tool.list" }
        : { type: "tool.list", tools: [{ name, type: "action", description: "d", inputSchema: { type: "object" } }] };
    case "tool.call":
      return { type: "tool.call", call_id: id, name, arguments: { x: randomValue(r) }, timeout_s: r.pick([1, 30, 600, 1e9, -5]) };
    case "tool.result":
      return r.next() < 0.5
        ? { type: "tool.result", call_id: id, result: { message: randomString(r) } }
        : { type: "tool.result", call_id: id, error: { code: "e", message: "m" } };
    case "tool.cancel":
      return { type: "tool.cancel", call_id: id };
    case "tool.ack":
      return { type: "tool.ack", call_id: id };
    case "message":
      return { type: "message", content: [{ type: "text", text: randomString(r) }] };
    default:
      return { type: "status", state: r.pick(["idle", "working", randomString(r, 70)]) };
  }
}

function mutate(r: R, f: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(f);
  for (let m = 1 + r.int(3); m > 0; m--) {
    const k = r.pick(keys);
    switch (r.int(6)) {
      case 0:
        delete f[k];
        break;
      case 1:
        f[k] = randomValue(r);
        break;
      case 2:
        f[r.pick(NASTY_KEYS)] = randomValue(r);
        break;
      case 3:
        f.type = r.pick([...TYPES, ...NASTY_KEYS, "TOOL.CALL", "", 7]);
        break;
      case 4:
        f[k] = "x".repeat(r.pick([129, 1000, 70_000]));
        break;
      default:
        f[randomString(r, 8)] = randomValue(r);
    }
  }
  return f;
}

function generate(r: R): Case {
  const roll = r.int(100);
  if (roll < 12) {
    const texts = [
      "",
      "{",
      "}",
      "[",
      "nul",
      '{"type":"tool.call"',
      "{'type':'tool.list'}",
      "undefined",
      "NaN",
      '{"type":"tool.ack",}',
      "\u0000",
      "pingg",
      " ping",
    ];
    return { kind: "bad json", data: r.next() < 0.5 ? r.pick(texts) : "{" + randomString(r, 40) };
  }
  if (roll < 22) return { kind: "not an object", data: JSON.stringify(r.pick([0, "tool.call", null, true, [], [{ type: "tool.list" }], -1.5])) };
  if (roll < 30) return { kind: "nasty type", data: JSON.stringify({ type: r.pick([...NASTY_KEYS, 1, null, {}, ["tool.list"], "tool.list ", "Tool.List"]) }) };
  if (roll < 36) {
    const k = r.pick(["__proto__", "constructor"]);
    const inner = r.pick([`{"type":"tool.list"}`, `{"polluted":true}`, `{"prototype":{"polluted":true}}`]);
    const f = r.pick([
      `{"${k}":${inner}}`,
      `{"type":"tool.call","call_id":"p${r.int(9)}","name":"fzT","arguments":{"${k}":${inner}}}`,
      `{"type":"tool.list","tools":[{"name":"${k}","type":"action","description":"d","inputSchema":{"${k}":${inner}}}]}`,
      `{"type":"message","content":[{"type":"text","text":"t","${k}":${inner}}]}`,
      `{"type":"tool.result","call_id":"p${r.int(9)}","result":{"message":"m","${k}":${inner}}}`,
    ]);
    return { kind: "__proto__/constructor keys", data: f };
  }
  if (roll < 44) {
    const depth = r.pick([64, 1_000, 10_000, 100_000]);
    const body = r.next() < 0.5 ? deep(depth, "[", "]") : deep(depth, '{"a":', "}");
    const f = r.pick([
      body,
      `{"type":"tool.call","call_id":"dn${r.int(9)}","name":"fzT","arguments":{"v":${body}}}`,
      `{"type":"message","content":[{"type":"text","text":"t","x":${body}}]}`,
    ]);
    return { kind: `deep nesting ${depth}`, data: f };
  }
  if (roll < 46) {
    const n = r.pick([LIMITS.maxFrameBytes + 1, LIMITS.maxFrameBytes + 4096, 600_000]);
    return { kind: `huge ${n}`, data: JSON.stringify({ type: "message", content: [{ type: "text", text: "y".repeat(n) }] }) };
  }
  if (roll < 52) {
    const n = r.pick([0, 1, 7, 4096, LIMITS.maxFrameBytes + 1]);
    const b = new Uint8Array(n);
    for (let i = 0; i < Math.min(n, 64); i++) b[i] = r.int(256);
    if (n > 0 && r.next() < 0.5) b.set(new TextEncoder().encode('{"type":"tool.list"}').slice(0, n));
    return { kind: `binary ${n}`, data: b };
  }
  if (roll < 60) return { kind: "random object", data: JSON.stringify({ type: r.pick(TYPES), ...(randomValue(r) as object) }) };
  return { kind: "mutated", data: JSON.stringify(mutate(r, template(r))) };
}

/** The contract's verdict on a frame at the edge, from the relay's own decoder (only size, JSON and shape). */
function verdict(data: string | Uint8Array): Expect {
  try {
    const d = decodeFrame(data);
    return d.ok ? "valid" : (d.error.code as Expect);
  } catch {
    // The decoder must never throw; if it does, the contract still wants bad_frame (an object of wrong shape).
    return "bad_frame";
  }
}

/** Errors a well-formed frame may get (semantics, not shape): the contract's own codes for those cases. */
const SEMANTIC = ["forbidden", "unknown_call", "duplicate_call"];

describe("fuzzer", () => {
  it(`answers ${FRAMES} random and mutated frames without harm (seed 0x${SEED.toString(16)})`, { timeout: 180_000 }, async () => {
    const r = prng(SEED);
    const s = await session();
    const other = await session();
    // Bystanders: an agent and an app in the same session, and a pair in another session.
    const ag = new Party(s, "agent", "bystander-ag");
    const ph = new Party(s, "app", "bystander-ph");
    const ag2 = new Party(other, "agent", "ag");
    const ph2 = new Party(other, "app", "ph");
    for (const p of [ph, ph2]) {
      await p.connect();
      p.send({ type: "tool.list", tools: [CALC] });
      await p.sync();
    }
    await ag.connect();
    await ag2.connect();
    const fuzzers: Party[] = [];
    for (let i = 0; i < CONNS; i++) {
      const p = new Party(s, i % 2 ? "app" : "agent", `fz${i}`);
      await p.connect();
      fuzzers.push(p);
    }

    const tally = new Map<string, number>();
    let n = 0;
    let barrier = 0;
    for (let i = 0; i < FRAMES; i++) {
      const p = fuzzers[i % CONNS]!;
      const c: Client = p.client;
      const fz = generate(r);
      const want = verdict(fz.data);
      tally.set(`${fz.kind.split(" ")[0]} → ${want}`, (tally.get(`${fz.kind.split(" ")[0]} → ${want}`) ?? 0) + 1);
      c.ws.send(fz.data);
      const id = `barrier-f${++barrier}`;
      c.send({ type: "tool.cancel", call_id: id });
      const what = `frame ${i} (${fz.kind}, ${typeof fz.data === "string" ? JSON.stringify(fz.data.slice(0, 120)) : "binary"})`;
      try {
        await c.next((f) => f.type === "error" && f.call_id === id, 20_000);
      } catch (e) {
        throw new Error(`${what}: ${(e as Error).message}`);
      }
      // Everything still unread on this socket arrived before the barrier's answer. Error frames only ever
      // go to the sender, so the errors here are this frame's; the rest are broadcasts (presence, messages…).
      const rest: Frame[] = c.frames.splice(0);
      const errors = rest.filter((f) => f.type === "error").map((f) => String(f.code));
      if (want === "valid") {
        expect(
          errors.filter((e) => !SEMANTIC.includes(e)),
          what,
        ).toEqual([]);
      } else {
        expect(errors, what).toEqual([want]);
      }
      expect(c.closed, what).toBeUndefined();
      n++;
    }
    expect(n).toBeGreaterThanOrEqual(2000);
    console.log(
      `fuzz seed 0x${SEED.toString(16)}: ${[...tally.entries()]
        .sort()
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ")}`,
    );
    // Every class of input was exercised and answered.
    for (const k of ["bad_json", "bad_frame", "too_large", "valid"])
      expect(
        [...tally.keys()].some((t) => t.endsWith(k)),
        k,
      ).toBe(true);

    // Nobody was disconnected; the prototype of plain objects is untouched.
    for (const p of [...fuzzers, ag, ph, ag2, ph2]) expect(p.online, p.clientId).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, "polluted")).toBe(false);

    // Bystanders still complete calls, in the same session and in the other one, and were never sent an error.
    for (const [a, p, id] of [
      [ag, ph, "after1"],
      [ag2, ph2, "after2"],
    ] as const) {
      a.send({ type: "tool.call", call_id: id, name: "calc", arguments: { a: 2, b: 2 } });
      await p.next(isCall(id), 10_000);
      p.send({ type: "tool.result", call_id: id, name: "calc", result: { message: "4" } });
      expect(await a.next(isResult(id), 10_000)).toMatchObject({ call_id: id, result: { message: "4" }, answered_by: p.clientId });
    }
    for (const p of [ag, ph, ag2, ph2]) expect(p.conns.flat().filter((f) => f.type === "error" && !String(f.call_id).startsWith("barrier-"))).toEqual([]);
    for (const p of [...fuzzers, ag, ph, ag2, ph2]) await p.leave();
  });
});

describe("fuzzer regressions", () => {
  it("regression: a frame whose type is an object with its own toString got no answer (decodeFrame threw on String(type))", async () => {
    const s = await session();
    const p = new Party(s, "agent", "ag");
    await p.connect();
    p.send('{"type":{"toString":1},"call_id":"x"}');
    expect(await p.next("error")).toMatchObject({ code: "bad_frame", call_id: "x" });
    p.send('{"type":[{"valueOf":1,"toString":2}]}');
    expect(await p.next("error")).toMatchObject({ code: "bad_frame" });
    await p.sync();
    expect(p.online).toBe(true);
    await p.leave();
  });

  it("regression: 10,000 levels of nesting overflowed the stack and closed the socket with 1011", async () => {
    const s = await session();
    const p = new Party(s, "agent", "ag");
    const q = new Party(s, "app", "ph");
    await q.connect();
    await p.connect();
    const deepText = deep(10_000, '{"a":', "}");
    p.send(`{"type":"message","content":[{"type":"text","text":"t","x":${deepText}}]}`);
    expect(await p.next("error")).toMatchObject({ code: "bad_frame" });
    p.send(`{"type":"tool.call","call_id":"d1","name":"fzT","arguments":{"v":${deep(10_000, "[", "]")}}}`);
    expect(await p.next("error")).toMatchObject({ code: "bad_frame" });
    // Nesting within the limit is still fine, and the other client never heard of the refused frames.
    p.send(`{"type":"message","content":[{"type":"text","text":"ok","x":${deep(50, "[", "]")}}]}`);
    expect(await q.next("message")).toMatchObject({ content: [{ type: "text", text: "ok" }] });
    await p.sync();
    expect(q.conns.flat().filter((f) => f.type === "message")).toHaveLength(1);
    expect(p.online && q.online).toBe(true);
    await p.leave();
    await q.leave();
  });
});
