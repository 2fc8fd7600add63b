// i29-agents (issue 29 item 5), sealed (E2E, docs/e2e.md): a Codex approval and a Cursor MCP approval travel
// sealed — the relay sees no command, tool or input — and the phone's answer returns in each agent's shape.
// The phone is SimDevice (the PWA's own crypto, test/helpers/e2e-device.ts); the relay is the real `wrangler dev`.
// Payloads: codex-rs/hooks/schema/generated/permission-request.command.input.schema.json (openai/codex) and
// Cursor's beforeMCPExecution as quoted in https://cupcake.eqtylab.io/reference/harnesses/cursor.
import { describe, expect, inject, it } from "vitest";
import { PERMISSION } from "../../shared/contract/builtin-tools.js";
import { project } from "../helpers/hooks-helpers.js";
import { sealedRun } from "../helpers/hooks-sealed.js";

const relay = inject("relayUrl");

describe("Codex and Cursor approvals in a sealed session", () => {
  it("Codex PermissionRequest: the sealed card opens on the phone; Allow returns {behavior: allow}", async () => {
    const p = project({ ask: ["Bash(git push *)"] });
    const stdin = JSON.stringify({
      session_id: "019a-codex-session",
      turn_id: "turn-1",
      transcript_path: null,
      cwd: p.dir,
      hook_event_name: "PermissionRequest",
      model: "gpt-5",
      permission_mode: "default",
      tool_name: "Bash",
      tool_input: { command: "git push origin secret-branch", description: "Publish" },
    });
    const r = await sealedRun(relay, p, ["codex-permission-request", "--wait", "90"], stdin, PERMISSION);
    try {
      expect(r.raw).not.toContain("secret-branch");
      expect(r.opened.arguments).toMatchObject({ tool_name: "Bash", agent: "Codex", input: { command: "git push origin secret-branch" } });
      await r.answer({ message: "allow", behavior: "allow" });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([0, { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } }]);
    } finally {
      await r.close();
    }
  }, 60_000);

  it("Cursor beforeMCPExecution: the sealed card opens on the phone; Deny returns the human's words to Cursor", async () => {
    const p = project();
    const stdin = JSON.stringify({
      conversation_id: "conv-123",
      generation_id: "gen-456",
      workspace_roots: [p.dir],
      hook_event_name: "beforeMCPExecution",
      tool_name: "database_query",
      tool_input: '{"query": "SELECT * FROM secret_users"}',
      url: "http://localhost:3000",
    });
    const r = await sealedRun(relay, p, ["cursor-mcp", "--wait", "90"], stdin, PERMISSION);
    try {
      expect(r.raw).not.toContain("secret_users");
      expect(r.opened.arguments).toMatchObject({ tool_name: "mcp__cursor__database_query", agent: "Cursor", input: { query: "SELECT * FROM secret_users" } });
      await r.answer({ message: "deny", behavior: "deny", feedback: "Use the staging database" });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([
        0,
        { permission: "deny", user_message: "Use the staging database", agent_message: "Use the staging database" },
      ]);
    } finally {
      await r.close();
    }
  }, 60_000);
});
