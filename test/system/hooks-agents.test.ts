// i29-agents (issue 29 item 5): Codex's lifecycle hooks and Cursor's MCP and stop hooks through the real bin,
// fed the payloads their sources document, answered by a paired app on the in-process LAN relay, with exact
// stdout JSON. Codex: the hook input schemas codex-rs/hooks/schema/generated/*.command.input.schema.json and
// the PermissionRequest example of https://github.com/openai/codex/pull/17563 (docs/permissions.md §7.14).
// Cursor: https://cursor.com/docs/agent/hooks as quoted in https://cupcake.eqtylab.io/reference/harnesses/cursor
// (beforeMCPExecution with a string tool_input, stop with status; docs/permissions.md §7.15).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { PERMISSION } from "../../shared/contract/builtin-tools.js";
import { freePort } from "../helpers/relay.js";
import { appClient, newSession } from "../helpers/adapter-helpers.js";
import { countingListener, project, runHook } from "../helpers/hooks-helpers.js";

const TOKEN = "hooks-agents-lan-token-0123456789";
let lan: LanServer;
let dead: Awaited<ReturnType<typeof countingListener>>;

beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
  dead = await countingListener();
});
afterAll(async () => {
  await lan?.close();
  await dead?.close();
});

const RULES = {
  allow: ["Bash(npm test:*)", "mcp__github__get_issue"],
  deny: ["Bash(rm -rf *)", "mcp__cursor__drop_table"],
  ask: ["Bash(git push *)"],
};

async function withApp() {
  const s = await newSession(lan.url, TOKEN);
  const app = await appClient(lan.url, s.session_id, s.app_token, [PERMISSION]);
  return { s, app, env: { LINEUP_RELAY_URL: lan.url, LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token } };
}

// ---------------------------------------------------------------- Codex

const codexCommon = (cwd: string) => ({
  session_id: "019a-codex-session",
  turn_id: "turn-1",
  transcript_path: "/home/me/.codex/sessions/rollout.jsonl",
  cwd,
  model: "gpt-5",
  permission_mode: "default",
});
const codexPre = (cwd: string, tool_name: string, tool_input: Record<string, unknown>) =>
  JSON.stringify({ ...codexCommon(cwd), hook_event_name: "PreToolUse", tool_name, tool_input, tool_use_id: "call_abc" });
const codexPerm = (cwd: string, tool_name: string, tool_input: Record<string, unknown>) =>
  JSON.stringify({ ...codexCommon(cwd), hook_event_name: "PermissionRequest", tool_name, tool_input });
const codexStopIn = (cwd: string, turn_id: string, last: string | null) =>
  JSON.stringify({ ...codexCommon(cwd), turn_id, hook_event_name: "Stop", stop_hook_active: false, last_assistant_message: last });

describe("Codex lifecycle hooks", () => {
  it("codex-pre-tool-use: a policy deny at once with no connection; allow and ask print nothing (Codex acts on deny only)", async () => {
    const p = project(RULES);
    const env = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    const before = dead.connections();
    const deny = await runHook(["codex-pre-tool-use"], codexPre(p.dir, "Bash", { command: "rm -rf build" }), env, p.dir);
    expect([deny.code, JSON.parse(deny.stdout)]).toEqual([
      0,
      {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf build`",
        },
      },
    ]);
    for (const command of ["npm test", "git push origin main", "curl https://example.com"]) {
      const r = await runHook(["codex-pre-tool-use"], codexPre(p.dir, "Bash", { command }), env, p.dir);
      expect([r.code, r.stdout]).toEqual([0, ""]);
    }
    expect(dead.connections()).toBe(before);
    // Input that is not Codex's PreToolUse: exit 1 (a non-blocking error), nothing on stdout.
    const bad = await runHook(["codex-pre-tool-use"], JSON.stringify({ hook_event_name: "PreToolUse", cwd: p.dir }), env, p.dir);
    expect([bad.code, bad.stdout]).toEqual([1, ""]);
  }, 60_000);

  it("codex-permission-request: the policy, else a permission card; {behavior} only (never updatedInput); no answer → no output", async () => {
    const p = project(RULES);
    const off = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    const allow = await runHook(["codex-permission-request"], codexPerm(p.dir, "Bash", { command: "npm test -- -u" }), off, p.dir);
    expect(JSON.parse(allow.stdout)).toEqual({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } });
    const deny = await runHook(["codex-permission-request"], codexPerm(p.dir, "Bash", { command: "rm -rf /tmp/example" }), off, p.dir);
    expect(JSON.parse(deny.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf /tmp/example`" },
      },
    });

    const { app, env } = await withApp();
    const on = { ...env, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    try {
      // The PR's example: a shell approval with its justification as tool_input.description.
      const run = runHook(
        ["codex-permission-request"],
        codexPerm(p.dir, "Bash", { command: "git push origin main", description: "Publish the fix" }),
        on,
        p.dir,
      );
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect(call.arguments).toMatchObject({ tool_name: "Bash", agent: "Codex", input: { command: "git push origin main", description: "Publish the fix" } });
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([0, { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } }]);

      // An MCP tool (Codex names it mcp__server__tool): the card, denied with the human's words.
      const mcp = runHook(["codex-permission-request"], codexPerm(p.dir, "mcp__github__create_issue", { title: "Flaky test" }), on, p.dir);
      const c2 = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect(c2.arguments).toMatchObject({ tool_name: "mcp__github__create_issue", agent: "Codex" });
      app.send({ type: "tool.result", call_id: c2.call_id, name: "permission", result: { message: "deny", behavior: "deny", feedback: "Not today" } });
      expect(JSON.parse((await mcp).stdout)).toEqual({
        hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "Not today" } },
      });

      // Nobody answers: no output, so Codex's own approval prompt decides; the card is cancelled.
      const late = runHook(["codex-permission-request", "--wait", "4"], codexPerm(p.dir, "Bash", { command: "git push origin dev" }), on, p.dir);
      const c3 = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      await app.next((f) => f.type === "tool.cancel" && f.call_id === c3.call_id, 20_000);
      expect([(await late).code, (await late).stdout]).toEqual([0, ""]);
    } finally {
      await app.close();
    }
    // The same log as Claude Code's: policy and human decisions, with the agent's name.
    const log = readFileSync(join(p.stateDir, "permission-log.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(log.map((d) => [d.agent, d.tool, d.decision, d.by])).toEqual([
      ["Codex", "Bash", "allow", "policy"],
      ["Codex", "Bash", "deny", "policy"],
      ["Codex", "Bash", "allow", "human"],
      ["Codex", "mcp__github__create_issue", "deny", "human"],
      ["Codex", "Bash", "ask", "timeout"],
    ]);
  }, 90_000);

  it("codex-stop: the turn's last message and the policy summary into the thread; the older notify of the same turn is not reported again", async () => {
    const p = project(RULES);
    const { app, env } = await withApp();
    const on = { ...env, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    try {
      await runHook(["codex-pre-tool-use"], codexPre(p.dir, "Bash", { command: "rm -rf build" }), on, p.dir);
      const r = await runHook(["codex-stop"], codexStopIn(p.dir, "turn-7", "Rename complete and verified `cargo build` succeeds."), on, p.dir);
      expect([r.code, r.stdout]).toEqual([0, ""]);
      const texts = async () => ((await app.next("message", 10_000)).content as { text: string }[])[0]!.text;
      expect(await texts()).toBe("**Codex** finished a turn:\n\nRename complete and verified `cargo build` succeeds.");
      expect(await texts()).toMatch(/^\*\*Permission policy\*\* since the last report: denied 1: Bash `rm -rf build`/);
      // Codex's notify for the same turn (payload as the last argument, kebab-case keys) is skipped ...
      const notify = (turn: string, msg: string) =>
        JSON.stringify({ type: "agent-turn-complete", "thread-id": "t", "turn-id": turn, cwd: p.dir, "input-messages": [], "last-assistant-message": msg });
      expect((await runHook(["codex-notify", notify("turn-7", "Rename complete")], undefined, on, p.dir)).code).toBe(0);
      // ... and the next turn's is reported: the next message in the thread is turn 8's.
      expect((await runHook(["codex-notify", notify("turn-8", "Tests added")], undefined, on, p.dir)).code).toBe(0);
      expect(await texts()).toBe("**Codex** finished a turn:\n\nTests added");
    } finally {
      await app.close();
    }
  }, 60_000);
});

// ---------------------------------------------------------------- Cursor

const cursorCommon = (root: string) => ({
  conversation_id: "conv-123",
  generation_id: "gen-456",
  workspace_roots: [root],
  model: "gpt-4",
  cursor_version: "2.0.77",
  user_email: "user@example.com",
});
const cursorMcpIn = (root: string, tool_name: string, tool_input: unknown) =>
  JSON.stringify({
    ...cursorCommon(root),
    hook_event_name: "beforeMCPExecution",
    tool_name,
    tool_input,
    url: "http://localhost:3000",
    command: "npx mcp-server",
  });

describe("Cursor MCP and stop hooks", () => {
  it("cursor-mcp: mcp__server__tool rules at once; otherwise the phone; no answer → ask", async () => {
    const p = project(RULES);
    const off = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    const before = dead.connections();
    const allow = await runHook(["cursor-mcp"], cursorMcpIn(p.dir, "MCP:github:get_issue", { number: 7 }), off, p.dir);
    expect([allow.code, JSON.parse(allow.stdout)]).toEqual([0, { permission: "allow" }]);
    // A bare tool name is named under the server "cursor".
    const deny = await runHook(["cursor-mcp"], cursorMcpIn(p.dir, "drop_table", '{"table": "users"}'), off, p.dir);
    const why = "LineUp policy: denied by mcp__cursor__drop_table (project .lineup/policy.json)";
    expect(JSON.parse(deny.stdout)).toEqual({ permission: "deny", user_message: why, agent_message: why });
    expect(dead.connections()).toBe(before);

    const { app, env } = await withApp();
    const on = { ...env, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    try {
      // The documented example: tool_input as a JSON string.
      const run = runHook(["cursor-mcp"], cursorMcpIn(p.dir, "database_query", '{"query": "SELECT * FROM users"}'), on, p.dir);
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect(call.arguments).toMatchObject({ tool_name: "mcp__cursor__database_query", agent: "Cursor", input: { query: "SELECT * FROM users" } });
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      expect(JSON.parse((await run).stdout)).toEqual({ permission: "allow" });
      const late = await runHook(["cursor-mcp", "--wait", "4"], cursorMcpIn(p.dir, "database_query", { query: "DELETE FROM users" }), on, p.dir);
      expect([late.code, JSON.parse(late.stdout)]).toEqual([0, { permission: "ask" }]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it("cursor-stop: 'Cursor finished' with its status into the thread, nothing on stdout", async () => {
    const p = project();
    const { app, env } = await withApp();
    try {
      const r = await runHook(
        ["cursor-stop"],
        JSON.stringify({ ...cursorCommon(p.dir), hook_event_name: "stop", status: "completed", loop_count: 0 }),
        { ...env, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir },
        p.dir,
      );
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(((await app.next("message", 10_000)).content as { text: string }[])[0]!.text).toBe(`**Cursor** finished (completed) in \`${p.dir}\`.`);
    } finally {
      await app.close();
    }
  }, 30_000);
});
