// `lineup setup claude|cursor|codex` merges into existing files and never clobbers them (issue 17).
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mergeCodexConfig, runSetup } from "../../adapter/setup/index.js";
import { REPO, runCli } from "../helpers/adapter-helpers.js";

const CMD = ["node", "/opt/lineup/adapter/bin/lineup.mjs"];
const cmdFlag = ["--command", CMD.join(" ")];

function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = runSetup(args, { out: (s) => out.push(s), err: (s) => err.push(s), env });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const tmp = () => mkdtempSync(join(tmpdir(), "lineup-setup-"));
/** Parsed JSON, loosely typed for assertions (any property is more of the same). */
type J = { [k: string]: J };
const readJson = (f: string) => JSON.parse(readFileSync(f, "utf8")) as J;

describe("lineup setup claude", () => {
  it("merges LineUp's hooks into an existing settings file, keeping everything else, and adds .mcp.json", () => {
    const dir = tmp();
    mkdirSync(join(dir, ".claude"));
    const mine = {
      permissions: { allow: ["Bash(npm run lint)"], deny: ["Read(./.env)"] },
      model: "opus",
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./scripts/guard.sh", timeout: 5 }] }],
        PostToolUse: [{ matcher: "Edit|Write", hooks: [{ type: "command", command: "npx prettier --write" }] }],
      },
    };
    writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify(mine, null, 4));
    writeFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: { github: { command: "gh-mcp", args: [] } } }));
    const r = run(["claude", "--project", dir, ...cmdFlag]);
    expect(r.code).toBe(0);
    const s = readJson(join(dir, ".claude", "settings.json"));
    expect(s.permissions).toEqual(mine.permissions);
    expect(s.model).toBe("opus");
    expect(s.hooks!.PostToolUse).toEqual(mine.hooks.PostToolUse);
    expect(s.hooks!.PreToolUse).toEqual([
      mine.hooks.PreToolUse[0],
      // Issue 29 item 4: --defer (inert in interactive sessions) lets a headless run stop and resume later.
      { matcher: "*", hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook pre-tool-use --defer --wait 120", timeout: 130 }] },
      // Issue 29: AskUserQuestion on the phone for 120 s, then the terminal's own dialog.
      {
        matcher: "AskUserQuestion",
        hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook ask-user-question --defer --wait 120", timeout: 130 }],
      },
    ]);
    expect(s.hooks!.Elicitation).toEqual([
      { hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook elicitation --wait 120", timeout: 130 }] },
    ]);
    // The blocking hook: an explicit timeout, and --wait 10 s below it so the hook cancels the card first.
    expect(s.hooks!.PermissionRequest).toEqual([
      { matcher: "*", hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook permission-request --wait 590", timeout: 600 }] },
    ]);
    expect(s.hooks!.Notification).toEqual([
      {
        matcher: "idle_prompt|agent_needs_input|agent_completed",
        hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook notify --wait 25", timeout: 30 }],
      },
    ]);
    expect(s.hooks!.Stop).toEqual([{ hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook stop --wait 25", timeout: 30 }] }]);
    expect(readJson(join(dir, ".mcp.json"))).toEqual({
      mcpServers: { github: { command: "gh-mcp", args: [] }, lineup: { command: "node", args: ["/opt/lineup/adapter/bin/lineup.mjs", "mcp"] } },
    });
    // It says what it changed, one line per change.
    expect(r.out).toContain(
      `changed ${join(dir, ".claude", "settings.json")}: added PermissionRequest hook (matcher *): node /opt/lineup/adapter/bin/lineup.mjs hook permission-request --wait 590 (timeout 600 s)`,
    );
    expect(r.out).toContain(`changed ${join(dir, ".mcp.json")}: added MCP server "lineup"`);
    expect(r.out).toContain("--permission-prompt-tool mcp__lineup__approve");

    // Again: nothing to do, files untouched.
    const before = readFileSync(join(dir, ".claude", "settings.json"), "utf8");
    const again = run(["claude", "--project", dir, ...cmdFlag]);
    expect(again.out).toContain("already set up, nothing changed");
    expect(readFileSync(join(dir, ".claude", "settings.json"), "utf8")).toBe(before);

    // Another timeout updates LineUp's own entry in place (no second entry).
    const t = run(["claude", "--project", dir, ...cmdFlag, "--timeout", "120"]);
    expect(t.out).toContain("updated PermissionRequest hook");
    const s2 = readJson(join(dir, ".claude", "settings.json"));
    expect(s2.hooks!.PermissionRequest).toEqual([
      { matcher: "*", hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook permission-request --wait 110", timeout: 120 }] },
    ]);
    expect(s2.hooks!.PreToolUse).toHaveLength(3);

    // --ask-wait: how long the phone has before the terminal asks; both question hooks follow it in place.
    const w = run(["claude", "--project", dir, ...cmdFlag, "--timeout", "120", "--ask-wait", "45"]);
    expect(w.out).toContain("updated PreToolUse hook: node /opt/lineup/adapter/bin/lineup.mjs hook ask-user-question --defer --wait 45 (timeout 55 s)");
    expect(w.out).toContain("updated Elicitation hook: node /opt/lineup/adapter/bin/lineup.mjs hook elicitation --wait 45 (timeout 55 s)");
    const s3 = readJson(join(dir, ".claude", "settings.json"));
    expect(s3.hooks!.PreToolUse).toHaveLength(3);
    expect(s3.hooks!.Elicitation).toHaveLength(1);
    expect(run(["claude", "--project", dir, ...cmdFlag, "--ask-wait", "2"]).code).toBe(2);
  });

  it("keeps a different lineup MCP entry, and refuses (exit 2, untouched) a settings file that is not JSON", () => {
    const dir = tmp();
    mkdirSync(join(dir, ".claude"));
    writeFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: { lineup: { command: "npx", args: ["lineup-relay", "mcp"] } } }));
    const r = run(["claude", "--project", dir, ...cmdFlag]);
    expect(r.code).toBe(0);
    expect(readJson(join(dir, ".mcp.json")).mcpServers!.lineup).toEqual({ command: "npx", args: ["lineup-relay", "mcp"] });
    expect(r.out).toContain("note");
    // A hook started another way (npx) is recognised as LineUp's own and updated in place.
    writeFileSync(
      join(dir, ".claude", "settings.json"),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "npx lineup-relay hook stop" }] }] } }),
    );
    run(["claude", "--project", dir, ...cmdFlag]);
    expect(readJson(join(dir, ".claude", "settings.json")).hooks!.Stop).toEqual([
      { hooks: [{ type: "command", command: "node /opt/lineup/adapter/bin/lineup.mjs hook stop --wait 25", timeout: 30 }] },
    ]);
    const broken = '{ "hooks": { oops';
    writeFileSync(join(dir, ".claude", "settings.json"), broken);
    const bad = run(["claude", "--project", dir, ...cmdFlag]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("is not valid JSON");
    expect(readFileSync(join(dir, ".claude", "settings.json"), "utf8")).toBe(broken);
    writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify({ hooks: { Stop: { not: "a list" } } }));
    expect(run(["claude", "--project", dir, ...cmdFlag]).code).toBe(2);
  });

  it("is the `lineup setup` command of the CLI, and --dry-run writes nothing", async () => {
    const dir = tmp();
    const dry = await runCli(["setup", "claude", "--project", dir, "--dry-run", ...cmdFlag], {}, REPO);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain("would change");
    expect(() => readFileSync(join(dir, ".claude", "settings.json"))).toThrow();
    const real = await runCli(["setup", "claude", "--project", dir], { PATH: "/usr/bin:/bin" }, REPO);
    expect(real.code).toBe(0);
    // Without lineup on PATH: this Node and this package's bin, absolute.
    const cmd = readJson(join(dir, ".claude", "settings.json")).hooks!.PermissionRequest![0]!.hooks![0]!.command as unknown as string;
    expect(cmd).toMatch(/^\S*node\S* \S*adapter\/bin\/lineup\.mjs hook permission-request --wait 590$/);
  });
});

describe("lineup setup cursor", () => {
  it("adds beforeShellExecution, beforeMCPExecution and stop to .cursor/hooks.json (version 1), keeping other hooks", () => {
    const dir = tmp();
    mkdirSync(join(dir, ".cursor"));
    writeFileSync(
      join(dir, ".cursor", "hooks.json"),
      JSON.stringify({ version: 1, hooks: { afterFileEdit: [{ command: "./format.sh" }], beforeShellExecution: [{ command: "./audit.sh" }] } }),
    );
    const r = run(["cursor", "--project", dir, ...cmdFlag]);
    expect(r.code).toBe(0);
    expect(readJson(join(dir, ".cursor", "hooks.json"))).toEqual({
      version: 1,
      hooks: {
        afterFileEdit: [{ command: "./format.sh" }],
        beforeShellExecution: [{ command: "./audit.sh" }, { command: "node /opt/lineup/adapter/bin/lineup.mjs hook cursor-shell --wait 55", timeout: 65000 }],
        // i29-agents (issue 29 item 5): MCP tools on the phone, and a report when the agent loop ends.
        beforeMCPExecution: [{ command: "node /opt/lineup/adapter/bin/lineup.mjs hook cursor-mcp --wait 55", timeout: 65000 }],
        stop: [{ command: "node /opt/lineup/adapter/bin/lineup.mjs hook cursor-stop --wait 25", timeout: 35000 }],
      },
    });
    expect(run(["cursor", "--project", dir, ...cmdFlag]).out).toContain("nothing changed");
    writeFileSync(join(dir, ".cursor", "hooks.json"), JSON.stringify({ version: 2, hooks: {} }));
    expect(run(["cursor", "--project", dir, ...cmdFlag]).code).toBe(2);
  });
});

describe("lineup setup codex", () => {
  it("adds a top-level notify before the first table of ~/.codex/config.toml", () => {
    const home = tmp();
    const file = join(home, "config.toml");
    writeFileSync(file, 'model = "o4-mini"\n\n[mcp_servers.lineup]\nurl = "https://relay.example.com/mcp"\n');
    const r = run(["codex", ...cmdFlag], { CODEX_HOME: home });
    expect(r.code).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(
      'model = "o4-mini"\n\n# LineUp: each finished Codex turn is reported into the session\'s thread (lineup setup codex)\nnotify = ["node", "/opt/lineup/adapter/bin/lineup.mjs", "hook", "codex-notify"]\n\n[mcp_servers.lineup]\nurl = "https://relay.example.com/mcp"\n',
    );
    expect(run(["codex", ...cmdFlag], { CODEX_HOME: home }).out).toContain("nothing changed");
  });

  it("chains an existing notify program with --then instead of replacing it", () => {
    const home = tmp();
    const file = join(home, "config.toml");
    writeFileSync(file, 'notify = [\n  "python3",\n  \'/home/me/.codex/notify.py\', # mine\n]\nmodel = "gpt-5"\n');
    run(["codex", "--config", file, ...cmdFlag]);
    const text = readFileSync(file, "utf8");
    expect(text).toBe(
      'notify = ["node", "/opt/lineup/adapter/bin/lineup.mjs", "hook", "codex-notify", "--then", "python3", "/home/me/.codex/notify.py"]\nmodel = "gpt-5"\n',
    );
    // Setting up again keeps the chain.
    expect(mergeCodexConfig(text, ["lineup"]).text).toContain('notify = ["lineup", "hook", "codex-notify", "--then", "python3", "/home/me/.codex/notify.py"]');
    // A notify LineUp cannot read is left alone.
    writeFileSync(file, 'notify = """not an array"""\n');
    expect(run(["codex", "--config", file, ...cmdFlag]).code).toBe(2);
  });

  // regression: config.toml was read by a hand-written parser of string arrays; smol-toml reads it now, and
  // every edit is read back (the new notify, everything else unchanged) before it is written.
  it("reads notify with smol-toml (escapes, ] inside strings, comments) and refuses a file that is not TOML", () => {
    const src = 'notify = ["a\\"b]", \'c\\d\', "\\u00e9"] # x ]\n[tui]\nx = 1\n';
    const r = mergeCodexConfig(src, ["lineup"]);
    expect(r.text).toBe('notify = ["lineup", "hook", "codex-notify", "--then", "a\\"b]", "c\\\\d", "é"] # x ]\n[tui]\nx = 1\n');
    expect(mergeCodexConfig("notify = [\n 'x', # first\n]\n", ["lineup"]).text).toBe('notify = ["lineup", "hook", "codex-notify", "--then", "x"]\n');
    expect(() => mergeCodexConfig('model = "o4\n', ["lineup"])).toThrow(/not valid TOML/);
    expect(() => mergeCodexConfig("notify = [1, 2]\n", ["lineup"])).toThrow(/not an array of strings/);
    // A key LineUp does not find as `notify = [` (quoted) is not written twice: the read-back refuses.
    expect(() => mergeCodexConfig('"notify" = ["x"]\n', ["lineup"])).toThrow(/plain `notify = \[/);
  });
});
