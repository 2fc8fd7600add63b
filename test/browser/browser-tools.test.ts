// The built-in tools in real Chromium: canvas (automatic, SVG + PNG snapshot), calculator (automatic),
// ask_question with an image attachment, work_report approve / request changes, chat both ways, and
// the Chinese UI. The agent side is a raw socket.
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, createSession, pair, shot, useBrowser } from "../helpers/browser.js";

const fx = useBrowser();
const relay = fx.relay;

// A 2x2 PNG, so the "image" the human attaches is a real one.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==", "base64");

async function setup(
  kind: "phone" | "desktop",
  label: string,
  locale = "en-US",
): Promise<{ s: SessionCreated; agent: Agent; ctx: BrowserContext; page: Page }> {
  const s = await createSession(relay(), label);
  const agent = await Agent.connect(s);
  const ctx = await fx.context(kind, locale);
  const page = await ctx.newPage();
  await pair(page, s);
  await agent.appTools();
  return { s, agent, ctx, page };
}

describe("built-in tools in the browser", () => {
  it("canvas: open returns an instance id, draw puts the exact path in the SVG, snapshot returns a PNG", async () => {
    const { agent, ctx, page } = await setup("phone", "Canvas agent");
    try {
      agent.call("o1", "canvas", { width: 200, height: 120 }, "open");
      const open = await agent.result("o1");
      const id = (open.result as { instance_id: string }).instance_id;
      expect(id).toMatch(/^cv_/);
      expect((open.result as { message: string }).message).toBe(`instance_id: ${id}`);

      agent.call("d1", "canvas", { instance_id: id, path: "M10 10 L150 90", color: "#e53935", width: 6 }, "draw");
      expect((await agent.result("d1")).error).toBeUndefined();
      const path = page.locator(`svg[data-instance="${id}"] path[d="M10 10 L150 90"]`);
      await path.waitFor({ timeout: 10_000 });
      expect(await path.getAttribute("stroke")).toBe("#e53935");
      expect(await path.getAttribute("stroke-width")).toBe("6");
      agent.call("d2", "canvas", { instance_id: id, path: "M20 100 Q100 0 180 100", color: "navy", width: 3 }, "draw");
      await agent.result("d2");
      await page.locator(`svg[data-instance="${id}"] path`).nth(1).waitFor({ timeout: 10_000 });
      await shot(page, "phone-canvas");

      agent.call("u1", "canvas", { instance_id: id }, "undo");
      await agent.result("u1");
      await expect.poll(() => page.locator(`svg[data-instance="${id}"] path`).count(), { timeout: 10_000 }).toBe(1);

      agent.call("p1", "canvas", { instance_id: id }, "snapshot");
      const snap = await agent.result("p1");
      const block = (snap.result as { content: Array<{ type: string; mimeType: string; data: string }> }).content[0]!;
      expect(block.type).toBe("image");
      expect(block.mimeType).toBe("image/png");
      const png = Buffer.from(block.data, "base64");
      expect(png.subarray(1, 4).toString()).toBe("PNG");
      expect(png.readUInt32BE(16)).toBe(200); // IHDR width
      expect(png.readUInt32BE(20)).toBe(120); // IHDR height

      agent.call("x1", "canvas", { instance_id: id }, "close");
      expect((await agent.result("x1")).result).toBeDefined();
      agent.call("d3", "canvas", { instance_id: id, path: "M0 0 L1 1" }, "draw");
      expect((await agent.result("d3")).error).toMatchObject({ code: "instance_gone" });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("calculator is answered by the app with no human, and dividing by zero is an error result", async () => {
    const { agent, ctx } = await setup("phone", "Calc agent");
    try {
      agent.call("k1", "calculator", { a: 6, b: 7 }, "multiply");
      expect((await agent.result("k1")).result).toEqual({ message: "42", value: 42 });
      agent.call("k2", "calculator", { a: 1, b: 0 }, "divide");
      expect((await agent.result("k2")).error).toMatchObject({ code: "divide_by_zero" });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("ask_question shows the markdown and project, and a reply with an image reaches the agent as image content", async () => {
    const { agent, ctx, page } = await setup("phone", "Ask agent");
    try {
      agent.call("q1", "ask_question", {
        project_directory: "/home/me/shop",
        question: "Which **logo** should I use?\n\n- the old one\n- the new one\n\n<img src=x onerror=alert(1)>",
      });
      const card = page.locator('[data-call="q1"]');
      await card.waitFor({ timeout: 10_000 });
      await card.locator("strong", { hasText: "logo" }).waitFor({ timeout: 10_000 });
      expect(await card.locator("li").count()).toBe(2);
      expect(await card.locator("img").count()).toBe(0); // raw HTML is shown as text, never rendered
      expect(await card.textContent()).toContain("/home/me/shop");
      await card.locator('input[type="file"]').setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: PNG });
      await card.getByText("logo.png").waitFor({ timeout: 5_000 });
      await card.locator("textarea").fill("Use this one");
      await shot(page, "phone-ask-question");
      await card.getByRole("button", { name: "Send" }).click();
      const r = await agent.result("q1");
      const result = r.result as { message: string; content: Array<{ type: string; mimeType: string; data: string }> };
      expect(result.message).toBe("Use this one");
      expect(result.content).toEqual([{ type: "image", mimeType: "image/png", data: PNG.toString("base64") }]);
      await page.locator('[data-call="q1"][data-state="answered"]').waitFor({ timeout: 10_000 });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("a voice note recorded in the browser reaches the agent as audio content", async () => {
    const { agent, ctx, page } = await setup("phone", "Voice agent");
    try {
      agent.call("v1", "ask_question", { project_directory: "/tmp", question: "Say something" });
      const card = page.locator('[data-call="v1"]');
      await card.getByRole("button", { name: "Record voice" }).click();
      await card.getByRole("button", { name: "Stop recording" }).waitFor({ timeout: 10_000 });
      await page.waitForTimeout(800); // a little sound from the fake microphone
      await card.getByRole("button", { name: "Stop recording" }).click();
      await card.locator(".atts li").waitFor({ timeout: 10_000 });
      await card.getByRole("button", { name: "Send" }).click();
      const r = await agent.result("v1");
      const content = (r.result as { content: Array<{ type: string; mimeType: string; data: string }> }).content;
      expect(content).toHaveLength(1);
      expect(content[0]!.type).toBe("audio");
      expect(content[0]!.mimeType).toMatch(/^audio\//);
      expect(Buffer.from(content[0]!.data, "base64").length).toBeGreaterThan(100);
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("work_report can be approved, or sent back with feedback; declining any card is a declined error", async () => {
    const { agent, ctx, page } = await setup("desktop", "Report agent");
    try {
      agent.call("w1", "work_report", { project_directory: "/srv/app", summary: "## Done\n\n1. Added `login`\n2. Fixed tests" });
      const card = page.locator('[data-call="w1"]');
      await card.getByRole("button", { name: /Approve/ }).waitFor({ timeout: 10_000 });
      await shot(page, "desktop-work-report");
      await card.getByRole("button", { name: /Approve/ }).click();
      expect((await agent.result("w1")).result).toEqual({ message: "approved", approved: true });

      agent.call("w2", "work_report", { project_directory: "/srv/app", summary: "Second try" });
      const card2 = page.locator('[data-call="w2"]');
      await card2.locator("textarea").fill("Please add a test for logout");
      await card2.getByRole("button", { name: "Request changes" }).click();
      expect((await agent.result("w2")).result).toEqual({ message: "Please add a test for logout", approved: false });

      agent.call("i1", "input", { question: "Anything else?" });
      await page.locator('[data-call="i1"]').getByRole("button", { name: "Decline" }).click();
      expect((await agent.result("i1")).error).toMatchObject({ code: "declined" });
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("chat goes both ways: agent messages appear, and the human's text reaches the agent", async () => {
    const { s, agent, ctx, page } = await setup("phone", "Chat agent");
    try {
      agent.send({ type: "message", content: [{ type: "text", text: "Build **finished** in 42 s" }] });
      await page.locator(".bubble.agent strong", { hasText: "finished" }).waitFor({ timeout: 10_000 });
      await page.locator("#chat-text").fill("Great, deploy it");
      await page.locator("#chat-text").press("Enter");
      const m = await agent.next((f) => f.type === "message");
      expect(m.content).toEqual([{ type: "text", text: "Great, deploy it" }]);
      expect(m.from).toMatchObject({ role: "app" });
      await page.locator(".bubble.mine", { hasText: "Great, deploy it" }).waitFor({ timeout: 5_000 });
      await shot(page, "phone-chat");
      expect(s.session_id).toBeTruthy();
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);

  it("speaks Chinese when the browser does, and can be switched to English in Settings", async () => {
    const { agent, ctx, page } = await setup("phone", "中文 agent", "zh-CN");
    try {
      agent.call("z1", "confirm", { question: "要部署吗？" });
      await page.locator('[data-call="z1"]').getByRole("button", { name: "是" }).waitFor({ timeout: 10_000 });
      await shot(page, "phone-zh-confirm");
      await page.getByRole("button", { name: "设置" }).click();
      await page.locator("#lang").selectOption("en");
      await page.getByText("Direct LAN agent").waitFor({ timeout: 5_000 });
      await page.locator("#theme").selectOption("dark");
      await shot(page, "phone-settings-dark");
    } finally {
      agent.close();
      await ctx.close();
    }
  }, 60_000);
});
