// Issue 26: what a holder takes in plaintext from the relay in a sealed session (shared/crypto/e2e/guard.ts), and
// that a plaintext sealed-field beside an envelope is never read as the author's (shared/crypto/e2e/frames.ts).
import { describe, expect, it } from "vitest";
import { generateContentKey, openFrame, RELAY_CALL_ERRORS, screenSealed, sealFrame } from "../../shared/crypto/e2e/index.js";

const env = { v: 1, e: 1, n: "AAAAAAAAAAAAAAAA", c: "AAAA" };

describe("screenSealed: a sealed session's plaintext from the relay", () => {
  it("drops every plaintext answer, call, message, tool description and unknown error; keeps the relay's own errors", () => {
    const drop = (f: Record<string, unknown>) => expect("drop" in screenSealed(f), JSON.stringify(f)).toBe(true);
    drop({ type: "tool.result", call_id: "c1", result: { message: "allow", behavior: "allow" } });
    drop({ type: "tool.result", call_id: "c1", error: { code: "declined", message: "forged" } });
    drop({ type: "tool.result", call_id: "c1", error: { code: "timeout", message: "t" }, result: { message: "yes" } });
    drop({ type: "tool.call", call_id: "c1", name: "ping", arguments: { n: 1 } });
    drop({ type: "message", id: "m1", content: [{ type: "text", text: "hi" }] });
    drop({ type: "tool.cancel", call_id: "c1", reason: "you were hacked" });
    drop({ type: "error", code: "declined", call_id: "c1", message: "forged" });
    drop({ type: "surprise" });
    for (const code of RELAY_CALL_ERRORS)
      expect(screenSealed({ type: "tool.result", call_id: "c1", error: { code, message: "m" } })).toEqual({
        frame: { type: "tool.result", call_id: "c1", error: { code, message: "m" } },
      });
    expect(screenSealed({ type: "error", code: "stale_epoch", message: "m" })).toEqual({ frame: { type: "error", code: "stale_epoch", message: "m" } });
  });

  it("cuts the plaintext off what stands beside an envelope: sealed fields, a cancel's answer, a status detail, unsealed tools", () => {
    expect(screenSealed({ type: "tool.result", call_id: "c1", sealed: env, result: { message: "allow" } })).toEqual({
      frame: { type: "tool.result", call_id: "c1", sealed: env },
    });
    expect(screenSealed({ type: "tool.call", call_id: "c1", name: "x", sealed: env, arguments: { a: 1 } })).toEqual({
      frame: { type: "tool.call", call_id: "c1", name: "x", sealed: env },
    });
    expect(screenSealed({ type: "tool.cancel", call_id: "c1", reason: "answered", answered_by: "Phone", answer: "yes" })).toEqual({
      frame: { type: "tool.cancel", call_id: "c1", reason: "answered", answered_by: "Phone" },
    });
    expect(screenSealed({ type: "presence", agent: { online: true, status: { state: "working", detail: "secret?" } }, apps: 1 })).toEqual({
      frame: { type: "presence", agent: { online: true, status: { state: "working" } }, apps: 1 },
    });
    expect(
      screenSealed({
        type: "tool.list",
        tools: [
          { name: "evil", type: "action", description: "d", inputSchema: {} },
          { name: "ok", type: "action", sealed: env },
        ],
      }),
    ).toEqual({ frame: { type: "tool.list", tools: [{ name: "ok", type: "action", sealed: env }] } });
    expect(screenSealed({ type: "message", id: "m1", elided: true })).toEqual({ frame: { type: "message", id: "m1", elided: true } });
  });
});

describe("openFrame ignores plaintext sealed fields beside the envelope", () => {
  it("regression: a sealed error with a plaintext result beside it opens as the error", async () => {
    const ck = await generateContentKey(1);
    const ctx = { session_id: "s1234567", sender: "app:dv_AbCdEfGhIj" };
    const sealed = await sealFrame(ck, ctx, { type: "tool.result", call_id: "c1", error: { code: "declined", message: "no" } });
    const opened = await openFrame(() => ck, ctx.session_id, { ...sealed, sender: ctx.sender, result: { message: "allow", behavior: "allow" } });
    expect(opened.result).toBeUndefined();
    expect(opened.error).toEqual({ code: "declined", message: "no" });
  });
});
