// i29-agents (issue 29 items 3 and 5): `lineup setup` writes Claude Code's Notification matcher for the
// needs-input and completion kinds, Codex's lifecycle hooks (hooks.json next to config.toml) and Cursor's MCP and
// stop hooks — merging: other hooks kept, LineUp's own updated in place, a broken file untouched (exit 2).
// Formats: https://code.claude.com/docs/en/hooks, https://developers.openai.com/codex/hooks, docs/permissions.md §7.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runSetup } from "../../adapter/setup/index.js";

const BIN = "node /opt/lineup/adapter/bin/lineup.mjs";
const cmdFlag = ["--command", BIN];
const tmp = () => mkdtempSync(join(tmpdir(), "lineup-setup-agents-"));
type J = { [k: string]: J };
const readJson = (f: string) => JSON.parse(readFileSync(f, "utf8")) as J;

function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = runSetup(args, { out: (s) => out.push(s), err: (s) => err.push(s), env });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("lineup setup claude: the Notification kinds", () => {
  // Regression (issue 29 item 3): setup wrote the matcher "idle_prompt" only, so agent_needs_input and
  // agent_completed never reached `lineup hook notify`; an existing entry must be widened in place.
  it("widens LineUp's old idle_prompt matcher in place and leaves the user's own Notification hooks and narrowed matchers alone", () => {
    const dir = tmp();
    mkdirSync(join(dir, ".claude"));
    const theirs = { matcher: "idle_prompt", hooks: [{ type: "command", command: "notify-send Claude", timeout: 5 }] };
    const narrowed = { matcher: "Bash|Edit", hooks: [{ type: "command", command: `${BIN} hook permission-request --wait 590`, timeout: 600 }] };
    writeFileSync(
      join(dir, ".claude", "settings.json"),
      JSON.stringify({
        hooks: {
          Notification: [theirs, { matcher: "idle_prompt", hooks: [{ type: "command", command: `${BIN} hook notify --wait 25`, timeout: 30 }] }],
          PermissionRequest: [narrowed],
        },
      }),
    );
    const r = run(["claude", "--project", dir, ...cmdFlag]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("updated Notification matcher: idle_prompt|agent_needs_input|agent_completed");
    const s = readJson(join(dir, ".claude", "settings.json"));
    expect(s.hooks!.Notification).toEqual([
      theirs,
      { matcher: "idle_prompt|agent_needs_input|agent_completed", hooks: [{ type: "command", command: `${BIN} hook notify --wait 25`, timeout: 30 }] },
    ]);
    expect(s.hooks!.PermissionRequest).toEqual([narrowed]);
    expect(run(["claude", "--project", dir, ...cmdFlag]).out).toContain("nothing changed");
  });
});

describe("lineup setup codex: lifecycle hooks", () => {
  it("writes PreToolUse, PermissionRequest and Stop into hooks.json next to config.toml, each with its timeout, and keeps notify for older Codex", () => {
    const home = tmp();
    const r = run(["codex", ...cmdFlag], { CODEX_HOME: home });
    expect(r.code, r.err).toBe(0);
    expect(readJson(join(home, "hooks.json"))).toEqual({
      hooks: {
        PreToolUse: [{ hooks: [{ type: "command", command: `${BIN} hook codex-pre-tool-use`, timeout: 10 }] }],
        PermissionRequest: [{ hooks: [{ type: "command", command: `${BIN} hook codex-permission-request --wait 590`, timeout: 600 }] }],
        Stop: [{ hooks: [{ type: "command", command: `${BIN} hook codex-stop --wait 25`, timeout: 30 }] }],
      },
    });
    expect(readFileSync(join(home, "config.toml"), "utf8")).toContain(`notify = ["node", "/opt/lineup/adapter/bin/lineup.mjs", "hook", "codex-notify"]`);
    expect(r.out).toContain("codex_hooks = true");
    expect(run(["codex", ...cmdFlag], { CODEX_HOME: home }).out).toContain("nothing changed");
  });

  it("keeps the user's own hooks, updates LineUp's in place (--timeout), and touches nothing when hooks.json is broken (exit 2)", () => {
    const home = tmp();
    const guard = { matcher: "^Bash$", hooks: [{ type: "command", command: "python3 ~/.codex/guard.py", timeout: 5 }] };
    writeFileSync(
      join(home, "hooks.json"),
      JSON.stringify({
        hooks: {
          PreToolUse: [guard],
          PermissionRequest: [{ hooks: [{ type: "command", command: `${BIN} hook codex-permission-request --wait 590`, timeout: 600 }] }],
        },
      }),
    );
    const r = run(["codex", ...cmdFlag, "--timeout", "300"], { CODEX_HOME: home });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`updated PermissionRequest hook: ${BIN} hook codex-permission-request --wait 290 (timeout 300 s)`);
    const h = readJson(join(home, "hooks.json"));
    expect(h.hooks!.PreToolUse).toEqual([guard, { hooks: [{ type: "command", command: `${BIN} hook codex-pre-tool-use`, timeout: 10 }] }]);
    expect(h.hooks!.PermissionRequest).toEqual([{ hooks: [{ type: "command", command: `${BIN} hook codex-permission-request --wait 290`, timeout: 300 }] }]);

    const broken = tmp();
    writeFileSync(join(broken, "hooks.json"), "{ not json");
    writeFileSync(join(broken, "config.toml"), 'model = "gpt-5"\n');
    const b = run(["codex", ...cmdFlag], { CODEX_HOME: broken });
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/hooks\.json is not valid JSON/);
    expect(readFileSync(join(broken, "hooks.json"), "utf8")).toBe("{ not json");
    expect(readFileSync(join(broken, "config.toml"), "utf8")).toBe('model = "gpt-5"\n');
    const wrongShape = tmp();
    writeFileSync(join(wrongShape, "hooks.json"), JSON.stringify({ hooks: { Stop: { hooks: [] } } }));
    expect(run(["codex", ...cmdFlag], { CODEX_HOME: wrongShape }).code).toBe(2);
    expect(existsSync(join(wrongShape, "config.toml"))).toBe(false);
  });
});

describe("lineup setup cursor: MCP and stop", () => {
  it("updates an older LineUp beforeShellExecution entry in place (timeout added) and adds beforeMCPExecution and stop", () => {
    const dir = tmp();
    mkdirSync(join(dir, ".cursor"));
    writeFileSync(
      join(dir, ".cursor", "hooks.json"),
      JSON.stringify({ version: 1, hooks: { beforeShellExecution: [{ command: `${BIN} hook cursor-shell --wait 55` }] } }),
    );
    const r = run(["cursor", "--project", dir, ...cmdFlag, "--wait", "40"]);
    expect(r.code, r.err).toBe(0);
    expect(readJson(join(dir, ".cursor", "hooks.json"))).toEqual({
      version: 1,
      hooks: {
        beforeShellExecution: [{ command: `${BIN} hook cursor-shell --wait 40`, timeout: 50000 }],
        beforeMCPExecution: [{ command: `${BIN} hook cursor-mcp --wait 40`, timeout: 50000 }],
        stop: [{ command: `${BIN} hook cursor-stop --wait 25`, timeout: 35000 }],
      },
    });
    writeFileSync(join(dir, ".cursor", "hooks.json"), "[]");
    expect(run(["cursor", "--project", dir, ...cmdFlag]).code).toBe(2);
    expect(readFileSync(join(dir, ".cursor", "hooks.json"), "utf8")).toBe("[]");
  });
});
