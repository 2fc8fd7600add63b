// `approve` in `lineup mcp` (Claude Code's --permission-prompt-tool, issue 17) through the real MCP SDK
// client over stdio, against the in-process LAN relay and a scripted app: the JSON text results of
// docs/permissions.md §7.6, the same policy as the hooks, and a timeout that denies.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { freePort } from "../helpers/relay.js";
import { newSession } from "../helpers/adapter-helpers.js";
import { project } from "../helpers/hooks-helpers.js";
import { App, firstText, startMcp, type Mcp } from "../helpers/mcp-helpers.js";

const TOKEN = "approve-test-lan-token-0123456789";
let lan: LanServer;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await lan?.close();
});

async function setup(env: Record<string, string> = {}): Promise<{ mcp: Mcp; app: App; dir: string; stateDir: string }> {
  const p = project({ allow: ["Bash(npm test:*)"], deny: ["Bash(rm -rf *)"] });
  const s = await newSession(lan.url, TOKEN);
  const mcp = await startMcp(
    { LINEUP_RELAY_URL: lan.url, LINEUP_STATE_DIR: p.stateDir, LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token, HOME: p.stateDir, ...env },
    { cwd: p.dir, args: ["--project", p.dir] },
  );
  cleanups.push(() => mcp.close());
  await mcp.waitStderr(/connected to session/);
  const app = await App.connect(lan.url, s.session_id, s.app_token);
  cleanups.push(() => app.close());
  return { mcp, app, dir: p.dir, stateDir: p.stateDir };
}

const approve = (mcp: Mcp, tool_name: string, input: Record<string, unknown>) =>
  mcp.client.callTool({ name: "approve", arguments: { tool_name, input, tool_use_id: "toolu_01" } });

describe("lineup mcp: approve (headless permission prompts)", () => {
  it("is listed with the documented input schema", async () => {
    const { mcp } = await setup();
    const tool = (await mcp.client.listTools()).tools.find((t) => t.name === "approve");
    expect(tool?.inputSchema).toMatchObject({
      type: "object",
      required: ["tool_name", "input"],
      properties: { tool_name: { type: "string" }, input: { type: "object" }, tool_use_id: { type: "string" } },
    });
  });

  it("policy allow and deny answer without the human, as JSON text", async () => {
    const { mcp, app } = await setup();
    const input = { command: "npm test -- --run" };
    expect(JSON.parse(firstText(await approve(mcp, "Bash", input)))).toEqual({ behavior: "allow", updatedInput: input });
    expect(JSON.parse(firstText(await approve(mcp, "Bash", { command: "rm -rf /" })))).toEqual({
      behavior: "deny",
      message: "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf /`",
    });
    expect(app.frames.filter((f) => f.type === "tool.call")).toEqual([]);
  });

  it("asks the human: allow, deny with feedback, always (then the policy answers the next call)", async () => {
    const { mcp, app, dir, stateDir } = await setup();
    const input = { command: "git push origin main" };
    const a = approve(mcp, "Bash", input);
    const call = await app.call("permission");
    expect(call.arguments).toMatchObject({
      tool_name: "Bash",
      input,
      project_directory: dir,
      agent: "Claude Code (headless)",
      suggestions: ["Bash(git push:*)"],
    });
    app.answer(call, { result: { message: "allow", behavior: "allow" } });
    const r = await a;
    expect(r.content).toEqual([{ type: "text", text: JSON.stringify({ behavior: "allow", updatedInput: input }) }]);

    const d = approve(mcp, "Edit", { file_path: join(dir, "a.ts"), old_string: "x", new_string: "y" });
    app.answer(await app.call("permission"), { result: { message: "deny", behavior: "deny", feedback: "leave a.ts alone" } });
    expect(JSON.parse(firstText(await d))).toEqual({ behavior: "deny", message: "leave a.ts alone" });

    const w = approve(mcp, "WebFetch", { url: "https://docs.example.com/x", prompt: "summarize" });
    app.answer(await app.call("permission"), { result: { message: "always", behavior: "allow", rule: "WebFetch(domain:docs.example.com)" } });
    expect(JSON.parse(firstText(await w))).toEqual({ behavior: "allow", updatedInput: { url: "https://docs.example.com/x", prompt: "summarize" } });
    expect(JSON.parse(readFileSync(join(stateDir, "policy.json"), "utf8")).permissions.allow).toEqual(["WebFetch(domain:docs.example.com)"]);
    const again = await approve(mcp, "WebFetch", { url: "https://docs.example.com/y", prompt: "more" });
    expect(JSON.parse(firstText(again)).behavior).toBe("allow");
    expect(app.frames.filter((f) => f.type === "tool.call")).toEqual([]);
  });

  it("no answer in time is a deny (headless: no dialog to fall back to), and the card is cancelled", async () => {
    const { mcp, app } = await setup({ LINEUP_APPROVE_TIMEOUT: "2" });
    const a = approve(mcp, "Bash", { command: "make deploy" });
    const call = await app.call("permission");
    expect(JSON.parse(firstText(await a))).toEqual({ behavior: "deny", message: "No answer from the human within 2 s (LineUp), so this is not allowed." });
    await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id);
  });
});
