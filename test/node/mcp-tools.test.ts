// The bridge's pure parts: LineUp catalog → flat MCP tools, MCP arguments → LineUp call, results → MCP content.
import { describe, expect, it } from "vitest";
import { BUILTIN_TOOLS, CANVAS } from "../../shared/builtin-tools.js";
import type { ToolDef } from "../../shared/protocol.js";
import { base64Bytes, errorToMcp, humanSize, resultToMcp, timeoutToMcp } from "../../adapter/mcp/results.js";
import { parseMcpArgs } from "../../adapter/mcp/server.js";
import { buildCatalog, clampTimeoutS, mcpNameOf, planCall, planGenericCall, toMcpTool } from "../../adapter/mcp/tools.js";

describe("the MCP tool list", () => {
  it("flattens a toolset/app tool into one object schema with an action enum and every action's fields", () => {
    const t = toMcpTool(CANVAS, 600)!;
    expect(t.tool.inputSchema.required).toEqual(["action"]);
    const props = t.tool.inputSchema.properties;
    expect(props.action).toMatchObject({ type: "string", enum: ["open", "draw", "undo", "clear", "close", "snapshot"] });
    // `width` means the canvas width (1…4096) in open and the stroke width (≥ 1) in draw: only the shared type stays.
    expect(props.width).toEqual({ type: "integer" });
    expect(t.tool.description).toContain("- draw: Draw an SVG path (arguments: instance_id, path, color?, width?)");
    expect(t.route).toMatchObject({ tool: "canvas", flattened: true, takesTimeout: false });
  });

  it("maps app tool names to [a-z0-9_] and keeps the first of two that collide", () => {
    expect(mcpNameOf("Weather.now-2")).toBe("weather_now_2");
    const mine: ToolDef = { name: "ask.question", type: "action", description: "an app's own", inputSchema: { type: "object", properties: {} } };
    const { tools, routes } = buildCatalog([...BUILTIN_TOOLS, mine], 600);
    expect(tools.filter((t) => t.name === "ask_question")).toHaveLength(1);
    expect(routes.get("ask_question")?.tool).toBe("ask_question");
    expect(tools.at(-2)?.name).toBe("lineup_call");
    expect(tools.at(-1)?.name).toBe("lineup_tools");
  });

  it("offers `timeout` on action tools only, bounded by the operator's ceiling", () => {
    const { tools } = buildCatalog([], 300, 55);
    const ask = tools.find((t) => t.name === "ask_question")!;
    expect(ask.inputSchema.properties.timeout).toMatchObject({ type: "number", minimum: 1, maximum: 55 });
    expect(tools.find((t) => t.name === "calculator")!.inputSchema.properties.timeout).toBeUndefined();
  });
});

describe("planning a call", () => {
  const { routes } = buildCatalog([], 600);
  it("takes `timeout` out of the arguments and `action` out for flattened tools", () => {
    expect(planCall(routes.get("ask_question")!, { project_directory: "/p", question: "q", timeout: 30 }, 600, 86400)).toEqual({
      tool: "ask_question",
      args: { project_directory: "/p", question: "q" },
      timeoutS: 30,
    });
    expect(planCall(routes.get("calculator")!, { action: "add", a: 1, b: 2 }, 600, 86400)).toEqual({ tool: "calculator", action: "add", args: { a: 1, b: 2 }, timeoutS: 600 });
    expect(planCall(routes.get("canvas")!, { instance_id: "x" }, 600, 86400)).toMatch(/action/);
    expect(planCall(routes.get("confirm")!, { question: "q", timeout: "10" }, 600, 86400)).toMatch(/timeout/);
  });

  it("clamps the timeout to 1…86400 and the ceiling", () => {
    expect(clampTimeoutS(0, 600, 86400)).toBe(1);
    expect(clampTimeoutS(10 ** 9, 600, 86400)).toBe(86400);
    expect(clampTimeoutS(900, 600, 55)).toBe(55);
    expect(clampTimeoutS(undefined, 600, 86400)).toBe(600);
  });

  it("lineup_call needs a tool name and an object of arguments", () => {
    expect(planGenericCall({ tool: "x.y", action: "go", arguments: { a: 1 }, timeout: 5 }, 600, 86400)).toEqual({ tool: "x.y", action: "go", args: { a: 1 }, timeoutS: 5 });
    expect(planGenericCall({}, 600, 86400)).toMatch(/tool/);
    expect(planGenericCall({ tool: "x", arguments: [1] }, 600, 86400)).toMatch(/arguments/);
  });
});

describe("results", () => {
  it("counts base64 bytes without decoding and prints sizes", () => {
    expect(base64Bytes(Buffer.alloc(1000).toString("base64"))).toBe(1000);
    expect(base64Bytes(Buffer.alloc(1001).toString("base64"))).toBe(1001);
    expect([humanSize(500), humanSize(240 * 1024), humanSize(3 * 1024 * 1024)]).toEqual(["500 B", "240 KB", "3.0 MB"]);
  });

  it("puts the text first with a line per attachment, then the attachments as MCP blocks", () => {
    const img = Buffer.alloc(240 * 1024).toString("base64");
    const r = resultToMcp({
      message: "see attached",
      content: [
        { type: "image", mimeType: "image/png", data: img },
        { type: "audio", mimeType: "audio/webm", data: "AAAA" },
        { type: "resource", resource: { uri: "file:///notes.txt", mimeType: "text/plain", text: "hi" } },
        { type: "resource", resource: { uri: "https://example.com/a.pdf" } },
      ],
    });
    expect(r.content[0]).toEqual({
      type: "text",
      text: "see attached\n[image 1: image/png, 240 KB]\n[audio 1: audio/webm, 3 B]\n[file 1: file:///notes.txt, text/plain, 2 B]\n[file 2: https://example.com/a.pdf]",
    });
    expect(r.content.slice(1).map((b) => b.type)).toEqual(["image", "audio", "resource", "resource_link"]);
    expect(r.isError).toBeUndefined();
  });

  it("an error result is isError with advice; a timeout is not an error", () => {
    const e = errorToMcp("instance_gone", "closed", "canvas");
    expect(e.isError).toBe(true);
    expect(e.content[0]).toMatchObject({ text: expect.stringMatching(/^canvas failed \(instance_gone\): closed\nThat canvas/) });
    const t = timeoutToMcp("ask_question", 600, true, "https://r/#s=1&t=2");
    expect(t.isError).toBeUndefined();
    expect(t.content[0]).toMatchObject({ text: expect.stringContaining("the human can pair at https://r/#s=1&t=2") });
  });
});

describe("lineup mcp options", () => {
  it("flags override LINEUP_* variables, which override the defaults", () => {
    const env = { LINEUP_RELAY_URL: "ws://relay.example:9000/", LINEUP_MCP_TIMEOUT: "120", LINEUP_STATE_DIR: "/tmp/st" };
    const c = parseMcpArgs(["--timeout=90", "--project", "/tmp/proj", "--no-qr"], env);
    expect(c).toMatchObject({ relayUrl: "http://relay.example:9000", defaultTimeoutS: 90, maxTimeoutS: 86400, projectDir: "/tmp/proj", stateDir: "/tmp/st", qr: false, progressMs: 15_000 });
    expect(parseMcpArgs([], env).defaultTimeoutS).toBe(120);
    // The default wait never exceeds the ceiling.
    expect(parseMcpArgs(["--max-timeout", "50"], {}).defaultTimeoutS).toBe(50);
  });

  it("refuses bad values and half a session", () => {
    expect(() => parseMcpArgs(["--timeout", "0"], {})).toThrow(/--timeout must be a number from 1 to 86400/);
    expect(() => parseMcpArgs(["--frobnicate"], {})).toThrow(/unknown argument/);
    expect(() => parseMcpArgs([], { LINEUP_MCP_PROGRESS_S: "30" })).toThrow(/LINEUP_MCP_PROGRESS_S/);
    expect(() => parseMcpArgs([], { LINEUP_SESSION: "abcdefgh12" })).toThrow(/LINEUP_SESSION and LINEUP_TOKEN/);
  });
});
