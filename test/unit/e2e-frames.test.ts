import { describe, expect, it } from "vitest";
import { generateContentKey, isE2EError } from "../../shared/crypto/e2e/index.js";
import { openFrame, openPreview, sealFrame, sealPreview, sealReseal, isSealedFrame, type Frame } from "../../shared/crypto/e2e/frames.js";

const ctx = { session_id: "s1234567", sender: "agent:agent-1" };

describe("sealing whole frames (shared/crypto/e2e/frames.ts)", () => {
  it("a tool.call keeps its routing fields in plaintext and opens back to the same frame", async () => {
    const ck = await generateContentKey(1);
    const call = { type: "tool.call", call_id: "c1", name: "choice", timeout_s: 30, arguments: { prompt: "secret plan" } };
    const sealed = await sealFrame(ck, ctx, call);
    expect(sealed).toMatchObject({ type: "tool.call", call_id: "c1", name: "choice", timeout_s: 30 });
    expect(sealed.arguments).toBeUndefined();
    expect(JSON.stringify(sealed)).not.toContain("secret plan");
    expect(isSealedFrame(sealed)).toBe(true);
    const out = { ...sealed, deadline: 1, from: "agent", sender: "agent:agent-1" };
    expect(await openFrame(() => ck, ctx.session_id, out)).toEqual({ ...call, deadline: 1, from: "agent", sender: "agent:agent-1" });
  });

  it("a frame attributed by the relay to another sender, call or session does not open", async () => {
    const ck = await generateContentKey(1);
    const sealed = await sealFrame(ck, ctx, { type: "tool.result", call_id: "c1", result: { message: "yes" } });
    await expect(openFrame(() => ck, ctx.session_id, { ...sealed, sender: "app:dv_AbCdEfGhIj" })).rejects.toSatisfy((e) => isE2EError(e, "open_failed"));
    await expect(openFrame(() => ck, ctx.session_id, { ...sealed, sender: ctx.sender, call_id: "c2" })).rejects.toSatisfy((e) => isE2EError(e, "open_failed"));
    await expect(openFrame(() => ck, "s7654321", { ...sealed, sender: ctx.sender })).rejects.toSatisfy((e) => isE2EError(e, "open_failed"));
    await expect(openFrame(() => undefined, ctx.session_id, { ...sealed, sender: ctx.sender })).rejects.toSatisfy((e) => isE2EError(e, "wrong_epoch"));
    expect(await openFrame(() => ck, ctx.session_id, { ...sealed, sender: ctx.sender })).toMatchObject({ result: { message: "yes" } });
  });

  it("messages take their sender from `from` and need an id", async () => {
    const ck = await generateContentKey(3);
    await expect(sealFrame(ck, ctx, { type: "message", content: [{ type: "text", text: "hi" }] })).rejects.toSatisfy((e) => isE2EError(e, "bad_format"));
    const m = await sealFrame(ck, ctx, { type: "message", id: "m1", content: [{ type: "text", text: "hi" }] });
    const out = { ...m, from: { role: "agent", client_id: "agent-1" }, ts: 5 };
    expect(await openFrame((e) => (e === 3 ? ck : undefined), ctx.session_id, out)).toEqual({
      type: "message",
      id: "m1",
      from: { role: "agent", client_id: "agent-1" },
      ts: 5,
      content: [{ type: "text", text: "hi" }],
    });
  });

  it("tool.list seals descriptions and schemas per tool, keeping names, types and action names", async () => {
    const ck = await generateContentKey(1);
    const app = { session_id: "s1234567", sender: "app:dv_AbCdEfGhIj" };
    const tools: Frame[] = [
      { name: "canvas", type: "app", description: "draws", actions: [{ name: "draw", description: "d", inputSchema: { type: "object" } }] },
    ];
    const sealed = await sealFrame(ck, app, { type: "tool.list", tools });
    const entry = (sealed.tools as Frame[])[0]!;
    expect(entry).toMatchObject({ name: "canvas", type: "app", actions: [{ name: "draw" }] });
    expect(JSON.stringify(sealed)).not.toContain("draws");
    const opened = await openFrame(() => ck, app.session_id, { type: "tool.list", tools: [{ ...entry, sender: app.sender }] });
    expect(opened.tools).toEqual([{ ...tools[0], sender: app.sender }]);
  });

  it("previews and reseals open with the call's own associated data", async () => {
    const ck1 = await generateContentKey(1);
    const ck2 = await generateContentKey(2);
    const p = await sealPreview(ck1, ctx, "c9", { text: "Deploy?", yes_label: "Go" });
    expect(await openPreview(() => ck1, ctx.session_id, "c9", ctx.sender, p)).toEqual({ text: "Deploy?", yes_label: "Go" });
    await expect(openPreview(() => ck1, ctx.session_id, "c8", ctx.sender, p)).rejects.toSatisfy((e) => isE2EError(e, "open_failed"));
    const r = await sealReseal(ck2, ctx, "c9", { prompt: "Deploy?" });
    expect(r).toMatchObject({ type: "tool.reseal", call_id: "c9" });
    const forwarded = { type: "tool.call", call_id: "c9", name: "confirm", sealed: r.sealed, sender: ctx.sender, resealed: true };
    expect(await openFrame((e) => (e === 2 ? ck2 : ck1), ctx.session_id, forwarded)).toMatchObject({ arguments: { prompt: "Deploy?" } });
  });
});
