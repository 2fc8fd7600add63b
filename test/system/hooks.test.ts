// `lineup hook …` fed the documented stdin JSON (docs/permissions.md §7), through the real bin: policy
// decisions with no relay round trip (a counting listener proves it), permission-request answered
// allow / deny / always by a scripted app against the in-process LAN relay, exact output JSON and exit
// codes, a timeout that leaves no output and cancels the card, the inbox policy cache, and the reports.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { PERMISSION } from "../../shared/contract/builtin-tools.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { freePort } from "../helpers/relay.js";
import type { RawClient } from "../helpers/raw-client.js";
import { appClient, newSession, runCli, waitFor } from "../helpers/adapter-helpers.js";
import { countingListener, inboxPolicyStub, MACHINE_CREDENTIAL, permissionRequest, preToolUse, project, runHook } from "../helpers/hooks-helpers.js";

const TOKEN = "hooks-test-lan-token-0123456789";
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

const RULES = { allow: ["Bash(npm test:*)"], deny: ["Bash(rm -rf *)"], ask: ["Bash(git push *)"] };

/** A session on the LAN relay with an app that answers `permission` cards. */
async function withApp(): Promise<{ s: SessionCreated; app: RawClient; env: Record<string, string> }> {
  const s = await newSession(lan.url, TOKEN);
  const app = await appClient(lan.url, s.session_id, s.app_token, [PERMISSION]);
  return { s, app, env: { LINEUP_RELAY_URL: lan.url, LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token } };
}

describe("lineup hook pre-tool-use: the policy only, no network", () => {
  it("allows and denies by project rules with the documented output and no connection to the relay", async () => {
    const p = project(RULES);
    const env = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
    const before = dead.connections();
    const allow = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "npm test -- --watch", description: "Run tests" }), env, p.dir);
    expect(allow.code).toBe(0);
    expect(JSON.parse(allow.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "LineUp policy: allowed by Bash(npm test:*) (project .lineup/policy.json)",
      },
    });
    const deny = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "npm test && rm -rf build" }), env, p.dir);
    expect(deny.code).toBe(0);
    expect(JSON.parse(deny.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf build`",
      },
    });
    // Ask (a rule) and no rule at all: no output, exit 0, so Claude Code's own permission flow goes on.
    for (const command of ["git push origin main", "curl https://example.com"]) {
      const r = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command }), env, p.dir);
      expect([r.code, r.stdout]).toEqual([0, ""]);
    }
    // The seed's read-only default.
    const read = await runHook(["pre-tool-use"], preToolUse(p.dir, "Read", { file_path: join(p.dir, "src/a.ts") }), env, p.dir);
    expect(JSON.parse(read.stdout).hookSpecificOutput.permissionDecision).toBe("allow");
    const outside = await runHook(["pre-tool-use"], preToolUse(p.dir, "Read", { file_path: "/etc/hosts" }), env, p.dir);
    expect(outside.stdout).toBe("");
    expect(dead.connections()).toBe(before);
    // Every decision is in the local log, with the rule that made it.
    const log = readFileSync(join(p.stateDir, "permission-log.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(log.map((d) => [d.decision, d.rule ?? null])).toEqual([
      ["allow", "Bash(npm test:*)"],
      ["deny", "Bash(rm -rf *)"],
      ["allow", null],
    ]);
  });

  it("an invalid policy file makes everything ask (no output), and bad input exits 1, never 2", async () => {
    const p = project();
    writeFileSync(join(p.dir, ".lineup", "policy.json"), '{"permissions":{"allow":["bash(ls)"]}}');
    const env = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir };
    const r = await runHook(["pre-tool-use"], preToolUse(p.dir, "Read", { file_path: join(p.dir, "a") }), env, p.dir);
    expect([r.code, r.stdout]).toEqual([0, ""]);
    const bad = await runHook(["pre-tool-use"], "not json", env, p.dir);
    expect([bad.code, bad.stdout]).toEqual([1, ""]);
    expect(bad.stderr).toContain("not JSON");
    const unknown = await runHook(["no-such-event"], "{}", env, p.dir);
    expect([unknown.code, unknown.stdout]).toEqual([1, ""]);
  });

  // Regression (issue 17 audit): an inbox policy with one rule this adapter cannot parse was dropped whole,
  // so its deny rules stopped applying and a project's allow went through.
  it("an inbox policy holding one invalid rule makes everything ask; its deny is never silently dropped", async () => {
    const p = project();
    writeFileSync(join(p.dir, ".lineup", "policy.json"), '{"permissions":{"allow":["Bash(curl *)"]}}');
    const env = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir, LINEUP_MACHINE_CREDENTIAL: MACHINE_CREDENTIAL };
    const cache = join(p.stateDir, "inbox-policy.json");
    const write = (deny: string[]) =>
      writeFileSync(
        cache,
        JSON.stringify({ relayUrl: dead.url, inboxId: "inboxABCDEFG", version: 3, permissions: { allow: [], ask: [], deny }, fetchedAt: Date.now() }),
      );
    write(["Bash(curl *)"]);
    const valid = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "curl https://x.example" }), env, p.dir);
    expect(JSON.parse(valid.stdout).hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
    write(["Bash(curl *)", "bash(ls)"]);
    const invalid = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "curl https://x.example" }), env, p.dir);
    expect([invalid.code, invalid.stdout]).toEqual([0, ""]); // ask: Claude Code's own dialog, not the project's allow
  });

  it("applies the cached inbox policy from disk and refreshes a stale copy in the background", async () => {
    const p = project();
    const stub = await inboxPolicyStub(MACHINE_CREDENTIAL, { deny: ["Bash(curl *)"], allow: ["Bash(make:*)"] });
    try {
      const env = { LINEUP_RELAY_URL: stub.url, LINEUP_STATE_DIR: p.stateDir, LINEUP_MACHINE_CREDENTIAL: MACHINE_CREDENTIAL };
      const cache = join(p.stateDir, "inbox-policy.json");
      // A fresh cache: used as it is, nobody asked.
      writeFileSync(
        cache,
        JSON.stringify({
          relayUrl: stub.url,
          inboxId: "inboxABCDEFG",
          version: 1,
          permissions: { allow: ["Bash(make:*)"], ask: [], deny: [] },
          fetchedAt: Date.now(),
        }),
      );
      const make = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "make build" }), env, p.dir);
      expect(JSON.parse(make.stdout).hookSpecificOutput).toMatchObject({
        permissionDecision: "allow",
        permissionDecisionReason: "LineUp policy: allowed by Bash(make:*) (inbox policy v1)",
      });
      expect(stub.requests).toEqual([]);
      // A stale one: this call is decided from disk (curl: no deny yet), a detached process fetches the new copy.
      writeFileSync(
        cache,
        JSON.stringify({
          relayUrl: stub.url,
          inboxId: "inboxABCDEFG",
          version: 1,
          permissions: { allow: ["Bash(make:*)"], ask: [], deny: [] },
          fetchedAt: Date.now() - 60_000,
        }),
      );
      const curl = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "curl https://x.example" }), env, p.dir);
      expect([curl.code, curl.stdout]).toEqual([0, ""]);
      await waitFor(
        () => stub.requests.length > 0 && (JSON.parse(readFileSync(cache, "utf8")) as { permissions: { deny: string[] } }).permissions.deny.length > 0,
        "the background refresh",
      );
      const again = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "curl https://x.example" }), env, p.dir);
      expect(JSON.parse(again.stdout).hookSpecificOutput).toMatchObject({
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("Bash(curl *) (inbox policy v1)"),
      });
    } finally {
      await stub.close();
    }
  });
});

describe("lineup hook permission-request", () => {
  it("policy deny and allow answer at once, with no relay round trip", async () => {
    const p = project(RULES);
    const env = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir };
    const before = dead.connections();
    const deny = await runHook(
      ["permission-request"],
      permissionRequest(p.dir, "Bash", { command: "rm -rf node_modules", description: "Remove node_modules directory" }),
      env,
      p.dir,
    );
    expect(deny.code).toBe(0);
    expect(JSON.parse(deny.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: { behavior: "deny", message: "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf node_modules`" },
      },
    });
    const input = { command: "npm test", description: "Run the tests" };
    const allow = await runHook(["permission-request"], permissionRequest(p.dir, "Bash", input), env, p.dir);
    expect(JSON.parse(allow.stdout)).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input } },
    });
    expect(dead.connections()).toBe(before);
  });

  it("asks the human: allow, deny with a message, declined — exact output and exit 0", async () => {
    const p = project(RULES);
    const { s, app, env } = await withApp();
    try {
      const base = { ...env, LINEUP_STATE_DIR: p.stateDir };
      const suggestion = {
        type: "addRules",
        rules: [{ toolName: "Bash", ruleContent: "git push origin main" }],
        behavior: "allow",
        destination: "localSettings",
      };
      const input = { command: "git push origin main", description: "Push" };
      const run = runHook(
        ["permission-request", "--wait", "30"],
        permissionRequest(p.dir, "Bash", input, { permission_suggestions: [suggestion] }),
        base,
        p.dir,
      );
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect(call.arguments).toEqual({
        tool_name: "Bash",
        input,
        project_directory: p.dir,
        agent: "Claude Code",
        reason: expect.stringContaining("Bash(git push *)"),
        suggestions: ["Bash(git push origin main)", "Bash(git push:*)"],
      });
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      const r = await run;
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(
        `${JSON.stringify({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input } } })}\n`,
      );

      const run2 = runHook(["permission-request"], permissionRequest(p.dir, "Write", { file_path: join(p.dir, "x.txt"), content: "hi" }), base, p.dir);
      const call2 = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      app.send({
        type: "tool.result",
        call_id: call2.call_id,
        name: "permission",
        result: { message: "deny", behavior: "deny", feedback: "write it under docs/ instead" },
      });
      const r2 = await run2;
      expect([r2.code, JSON.parse(r2.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "write it under docs/ instead" } } },
      ]);

      const run3 = runHook(["permission-request"], permissionRequest(p.dir, "WebFetch", { url: "https://example.com/a", prompt: "read" }), base, p.dir);
      const call3 = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      app.send({ type: "tool.result", call_id: call3.call_id, name: "permission", error: { code: "declined", message: "the human declined" } });
      const r3 = await run3;
      expect(JSON.parse(r3.stdout)).toEqual({
        hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "The human declined this in the LineUp app." } },
      });
      expect(s.session_id).toBeTruthy();
    } finally {
      await app.close();
    }
  });

  it("always: echoes the chosen suggestion, records the rule locally, and the next matching call needs nobody", async () => {
    const p = project(RULES);
    const { app, env } = await withApp();
    try {
      const base = { ...env, LINEUP_STATE_DIR: p.stateDir };
      const suggestion = { type: "addRules", rules: [{ toolName: "Bash", ruleContent: "cargo build:*" }], behavior: "allow", destination: "localSettings" };
      const input = { command: "cargo build --release" };
      const run = runHook(["permission-request"], permissionRequest(p.dir, "Bash", input, { permission_suggestions: [suggestion] }), base, p.dir);
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect((call.arguments as { suggestions: string[] }).suggestions[0]).toBe("Bash(cargo build:*)");
      app.send({
        type: "tool.result",
        call_id: call.call_id,
        name: "permission",
        result: { message: "always", behavior: "allow", rule: "Bash(cargo build:*)" },
      });
      const r = await run;
      expect([r.code, JSON.parse(r.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow", updatedInput: input, updatedPermissions: [suggestion] } } },
      ]);
      const local = JSON.parse(readFileSync(join(p.stateDir, "policy.json"), "utf8")) as { permissions: { allow: string[] } };
      expect(local.permissions.allow).toEqual(["Bash(cargo build:*)"]);
      // The very next matching call: PreToolUse allows it from the local file, no relay, no human.
      const next = await runHook(
        ["pre-tool-use"],
        preToolUse(p.dir, "Bash", { command: "cargo build" }),
        { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir },
        p.dir,
      );
      expect(JSON.parse(next.stdout).hookSpecificOutput).toMatchObject({
        permissionDecision: "allow",
        permissionDecisionReason: `LineUp policy: allowed by Bash(cargo build:*) (local ${join(p.stateDir, "policy.json")})`,
      });

      // A rule the app proposed (not one of Claude Code's suggestions): an addRules update of its own.
      const run2 = runHook(
        ["permission-request"],
        permissionRequest(p.dir, "Edit", { file_path: join(p.dir, "src/a.ts"), old_string: "a", new_string: "b" }),
        base,
        p.dir,
      );
      const call2 = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect((call2.arguments as { suggestions: string[] }).suggestions).toEqual(["Edit(/src/**)"]);
      app.send({ type: "tool.result", call_id: call2.call_id, name: "permission", result: { message: "always", behavior: "allow", rule: "Edit(/src/**)" } });
      const r2 = await run2;
      expect(JSON.parse(r2.stdout).hookSpecificOutput.decision.updatedPermissions).toEqual([
        { type: "addRules", rules: [{ toolName: "Edit", ruleContent: "/src/**" }], behavior: "allow", destination: "localSettings" },
      ]);
    } finally {
      await app.close();
    }
  });

  it("always also lands in the inbox policy when this machine is in an inbox", async () => {
    const p = project();
    const stub = await inboxPolicyStub(MACHINE_CREDENTIAL, { allow: ["Read"] });
    const { app, env } = await withApp();
    try {
      // The LAN relay has no inbox endpoints: the hook's PUT fails, the local file still gets the rule.
      const base = { ...env, LINEUP_STATE_DIR: p.stateDir, LINEUP_MACHINE_CREDENTIAL: MACHINE_CREDENTIAL };
      const run = runHook(["permission-request", "--relay", lan.url], permissionRequest(p.dir, "Bash", { command: "make test" }), base, p.dir);
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "always", behavior: "allow", rule: "Bash(make test:*)" } });
      expect(JSON.parse((await run).stdout).hookSpecificOutput.decision.behavior).toBe("allow");
      expect(JSON.parse(readFileSync(join(p.stateDir, "policy.json"), "utf8")).permissions.allow).toEqual(["Bash(make test:*)"]);

      // Against a relay with the endpoints (the stub): read, add, PUT with base_version, cache updated.
      const { addInboxRule, findInboxAccess, readInboxPolicyCache } = await import("../../adapter/permissions/policy-store.js");
      const access = findInboxAccess(p.stateDir, stub.url, { LINEUP_MACHINE_CREDENTIAL: MACHINE_CREDENTIAL })!;
      expect(await addInboxRule(p.stateDir, access, "Bash(make test:*)")).toBe(true);
      expect(stub.state.permissions.allow).toEqual(["Read", "Bash(make test:*)"]);
      expect(stub.requests.find((r) => r.method === "PUT")?.body).toEqual({
        permissions: { allow: ["Read", "Bash(make test:*)"], ask: [], deny: [] },
        base_version: 1,
      });
      expect(readInboxPolicyCache(p.stateDir)).toMatchObject({ version: 2, permissions: { allow: ["Read", "Bash(make test:*)"] } });
      // Somebody else wrote in between: one re-read and retry with the new version.
      stub.state.version = 7;
      const orig = stub.state.permissions.allow;
      expect(await addInboxRule(p.stateDir, access, "Bash(make lint:*)")).toBe(true);
      expect(stub.state.permissions.allow).toEqual([...orig, "Bash(make lint:*)"]);
    } finally {
      await app.close();
      await stub.close();
    }
  });

  it("no answer within --wait: no output, exit 0, before the limit, and the card is cancelled", async () => {
    const p = project(RULES);
    const { app, env } = await withApp();
    try {
      const run = runHook(
        ["permission-request", "--wait", "5"],
        permissionRequest(p.dir, "Bash", { command: "git push origin main" }),
        { ...env, LINEUP_STATE_DIR: p.stateDir },
        p.dir,
      );
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      const r = await run;
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(r.ms).toBeLessThan(5000);
      expect(r.stderr).toContain("no answer in time");
      const cancel = await app.next((f) => f.type === "tool.cancel" && f.call_id === call.call_id, 5000);
      expect(cancel.reason).toBeDefined();
    } finally {
      await app.close();
    }
  });

  it("finds the session saved for the hook's cwd (a subdirectory of the project), as lineup mcp does", async () => {
    const p = project();
    const saved = await ensureSession({ relayUrl: lan.url, relayKey: TOKEN, stateDir: p.stateDir, cwd: p.dir });
    const app = await appClient(lan.url, saved.sessionId, saved.appToken!, [PERMISSION]);
    try {
      const sub = join(p.dir, ".lineup");
      const run = runHook(
        ["permission-request"],
        permissionRequest(sub, "Bash", { command: "./deploy.sh" }),
        { LINEUP_RELAY_URL: lan.url, LINEUP_STATE_DIR: p.stateDir, LINEUP_RELAY_KEY: TOKEN },
        sub,
      );
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect((call.arguments as { suggestions: string[] }).suggestions).toEqual(["Bash(./deploy.sh)"]);
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "deny", behavior: "deny" } });
      expect(JSON.parse((await run).stdout).hookSpecificOutput.decision).toEqual({ behavior: "deny", message: "The human denied this in the LineUp app." });
    } finally {
      await app.close();
    }
  });
});

describe("lineup hook cursor-shell (Cursor beforeShellExecution)", () => {
  const cursorInput = (cwd: string, command: string) =>
    JSON.stringify({
      conversation_id: "c1",
      generation_id: "g1",
      model: "gpt",
      hook_event_name: "beforeShellExecution",
      cursor_version: "1.7",
      workspace_roots: [cwd],
      user_email: null,
      command,
      cwd,
    });

  it("policy at once; the human otherwise; no answer → ask (Cursor's own prompt)", async () => {
    const p = project(RULES);
    const off = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir };
    const deny = await runHook(["cursor-shell"], cursorInput(p.dir, "rm -rf dist"), off, p.dir);
    const why = "LineUp policy: denied by Bash(rm -rf *) (project .lineup/policy.json) for `rm -rf dist`";
    expect([deny.code, JSON.parse(deny.stdout)]).toEqual([0, { permission: "deny", user_message: why, agent_message: why }]);
    expect(JSON.parse((await runHook(["cursor-shell"], cursorInput(p.dir, "npm test"), off, p.dir)).stdout)).toEqual({ permission: "allow" });

    const { app, env } = await withApp();
    try {
      const run = runHook(["cursor-shell"], cursorInput(p.dir, "git push origin main"), { ...env, LINEUP_STATE_DIR: p.stateDir }, p.dir);
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      expect(call.arguments).toMatchObject({ tool_name: "Bash", agent: "Cursor", input: { command: "git push origin main" } });
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      expect(JSON.parse((await run).stdout)).toEqual({ permission: "allow" });
      const late = await runHook(["cursor-shell", "--wait", "4"], cursorInput(p.dir, "git push origin dev"), { ...env, LINEUP_STATE_DIR: p.stateDir }, p.dir);
      expect([late.code, JSON.parse(late.stdout)]).toEqual([0, { permission: "ask" }]);
    } finally {
      await app.close();
    }
  });
});

describe("reports into the thread", () => {
  it("notify: idle_prompt says the agent waits; other notifications stay local", async () => {
    const p = project();
    const { app, env } = await withApp();
    try {
      const base = { ...env, LINEUP_STATE_DIR: p.stateDir };
      const idle = await runHook(
        ["notify"],
        JSON.stringify({
          session_id: "abc",
          transcript_path: "/t",
          cwd: p.dir,
          hook_event_name: "Notification",
          message: "Claude is waiting for your input",
          notification_type: "idle_prompt",
        }),
        base,
        p.dir,
      );
      expect([idle.code, idle.stdout]).toEqual([0, ""]);
      const m = await app.next("message", 10_000);
      expect((m.content as { text: string }[])[0]!.text).toBe(`⏳ **Claude Code is waiting for you** in \`${p.dir}\`.\n\n> Claude is waiting for your input`);
      const other = await runHook(
        ["notify"],
        JSON.stringify({
          session_id: "abc",
          cwd: p.dir,
          hook_event_name: "Notification",
          message: "Claude needs your permission",
          notification_type: "permission_prompt",
        }),
        { ...base, LINEUP_RELAY_URL: dead.url },
        p.dir,
      );
      expect([other.code, other.stdout]).toEqual([0, ""]);
      expect(await app.none("message", 500)).toBe(true);
    } finally {
      await app.close();
    }
  });

  it("stop: the last assistant message, then a summary of the policy's decisions since the last report", async () => {
    const p = project(RULES);
    const { app, env } = await withApp();
    try {
      const off = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir };
      await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "npm test" }), off, p.dir);
      await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "rm -rf /tmp/x" }), off, p.dir);
      // Another project on the same machine (same state dir): its decisions belong to its own thread.
      const other = join(p.dir, "..", "other");
      mkdirSync(join(other, ".lineup"), { recursive: true });
      writeFileSync(join(other, ".lineup", "policy.json"), JSON.stringify({ permissions: { allow: ["Bash(secret-tool:*)"] } }));
      await runHook(["pre-tool-use"], preToolUse(other, "Bash", { command: "secret-tool lookup" }), off, other);
      const stop = JSON.stringify({
        session_id: "abc",
        transcript_path: "/t",
        cwd: p.dir,
        permission_mode: "default",
        hook_event_name: "Stop",
        stop_hook_active: false,
        last_assistant_message: "All tests pass. I pushed the branch.",
      });
      const r = await runHook(["stop"], stop, { ...env, LINEUP_STATE_DIR: p.stateDir }, p.dir);
      expect([r.code, r.stdout]).toEqual([0, ""]);
      const texts = [await app.next("message"), await app.next("message")].map((m) => (m.content as { text: string }[])[0]!.text);
      expect(texts[0]).toBe("All tests pass. I pushed the branch.");
      expect(texts[1]).toBe(
        "**Permission policy** since the last report: allowed 1 (`Bash(npm test:*)` ×1); denied 1: Bash `rm -rf /tmp/x` by `Bash(rm -rf *)` (project .lineup/policy.json).",
      );
      // Reported once: the next stop carries only its own message.
      await runHook(["stop"], stop.replace("All tests pass. I pushed the branch.", "Done."), { ...env, LINEUP_STATE_DIR: p.stateDir }, p.dir);
      expect(((await app.next("message")).content as { text: string }[])[0]!.text).toBe("Done.");
      expect(await app.none("message", 500)).toBe(true);
      // The other project's own Stop reports its decision, once.
      const otherStop = stop.replace(JSON.stringify(p.dir), JSON.stringify(other)).replace("All tests pass. I pushed the branch.", "Other done.");
      await runHook(["stop"], otherStop, { ...env, LINEUP_STATE_DIR: p.stateDir }, other);
      const o = [await app.next("message"), await app.next("message")].map((m) => (m.content as { text: string }[])[0]!.text);
      expect(o[0]).toBe("Other done.");
      expect(o[1]).toContain("allowed 1 (`Bash(secret-tool:*)` ×1)");
    } finally {
      await app.close();
    }
  });

  it("lineup permissions lists each decision with the rule that made it: this project's by default, every project's with --all", async () => {
    const p = project(RULES);
    const off = { LINEUP_RELAY_URL: dead.url, LINEUP_STATE_DIR: p.stateDir };
    await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "npm test -- --watch=false" }), off, p.dir);
    await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "rm -rf build" }), off, p.dir);
    await runHook(["pre-tool-use"], preToolUse(p.dir, "Read", { file_path: join(p.dir, "README.md") }), off, p.dir);
    const other = join(p.dir, "..", "elsewhere");
    mkdirSync(other, { recursive: true });
    await runHook(["pre-tool-use"], preToolUse(other, "Glob", { pattern: "**/*.ts" }), off, other);
    const mine = await runCli(["permissions"], off, p.dir);
    expect(mine.code, mine.stderr).toBe(0);
    const lines = mine.stdout.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}allow policy {2}Bash "npm test -- --watch=false" by Bash\(npm test:\*\) \(project \.lineup\/policy\.json\) {2}\[Claude Code\]$/,
    );
    expect(lines[1]).toContain('deny  policy  Bash "rm -rf build" by Bash(rm -rf *) (project .lineup/policy.json)');
    expect(lines[2]).toContain("allow policy  Read");
    expect(lines[2]).toContain("by the defaults");
    const all = await runCli(["permissions", "--all", "--json"], off, p.dir);
    const json = all.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { tool: string; project: string; decision: string; by: string });
    expect(json.map((d) => d.tool)).toEqual(["Bash", "Bash", "Read", "Glob"]);
    expect(json[3]).toMatchObject({ project: other, decision: "allow", by: "policy" });
    expect((await runCli(["permissions", "--limit", "1", "--project", other], off, p.dir)).stdout).toContain('Glob "**/*.ts"');
    expect((await runCli(["permissions", "--limit", "0"], off, p.dir)).code).toBe(2);
  });

  it("codex-notify: the payload is the last argument; --then runs the previous notify program with it", async () => {
    const p = project();
    const { app, env } = await withApp();
    try {
      const out = join(p.stateDir, "previous.txt");
      const script = join(p.stateDir, "previous.sh");
      writeFileSync(script, `#!/bin/sh\nprintf '%s' "$2" > '${out}'\n`);
      chmodSync(script, 0o755);
      const payload = JSON.stringify({
        type: "agent-turn-complete",
        "thread-id": "t1",
        "turn-id": "1",
        cwd: p.dir,
        client: "codex-tui",
        "input-messages": ["Rename foo"],
        "last-assistant-message": "Rename complete.",
      });
      const r = await runHook(["codex-notify", "--then", script, "first-arg", payload], undefined, { ...env, LINEUP_STATE_DIR: p.stateDir }, p.dir);
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(((await app.next("message")).content as { text: string }[])[0]!.text).toBe("**Codex** finished a turn:\n\nRename complete.");
      await waitFor(() => existsSync(out) && readFileSync(out, "utf8") === payload, "the chained notify program");
    } finally {
      await app.close();
    }
  });
});
