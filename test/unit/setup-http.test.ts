// `lineup setup claude --http` (issue 29 item 6, docs/permissions.md §7.12): PreToolUse, PermissionRequest and
// the AskUserQuestion hook become Claude Code `type: "http"` hooks (fields as the hooks reference documents them:
// url, headers with `$VAR` interpolation, allowedEnvVars, timeout) that POST to the relay; merged into what is
// there, never clobbering it, and the machine credential is never written into the file.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runSetup } from "../../adapter/setup/index.js";

const CMD = ["node", "/opt/lineup/adapter/bin/lineup.mjs"];
const CRED = "lum1.AAAAAAAAAAAA.mc_BBBBBBBBBB.CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC";
const RELAY = "https://relay.example.workers.dev";

function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = runSetup(args, { out: (s) => out.push(s), err: (s) => err.push(s), env });
  return { code, out: out.join("\n"), err: err.join("\n") };
}
type J = { [k: string]: J };
const settingsOf = (dir: string) => JSON.parse(readFileSync(join(dir, ".claude", "settings.json"), "utf8")) as J;
const http = (sub: string, timeout: number, wait?: number) => ({
  type: "http",
  url: `${RELAY}/api/hooks/claude/${sub}${wait !== undefined ? `?wait=${wait}` : ""}`,
  headers: { Authorization: "Bearer $LINEUP_MACHINE_CREDENTIAL" },
  allowedEnvVars: ["LINEUP_MACHINE_CREDENTIAL"],
  timeout,
});

describe("lineup setup claude --http", () => {
  it("replaces LineUp's three per-call command hooks by http hooks, keeps the user's own hooks and LineUp's report hooks, and never writes the credential", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-setup-http-"));
    mkdirSync(join(dir, ".claude"));
    const guard = { matcher: "Bash", hooks: [{ type: "command", command: "./scripts/guard.sh", timeout: 5 }] };
    writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify({ model: "opus", hooks: { PreToolUse: [guard] } }));
    // First the command hooks, as `lineup setup claude` writes them; then --http converts them in place.
    expect(run(["claude", "--project", dir, "--command", CMD.join(" ")]).code).toBe(0);
    const env = { LINEUP_MACHINE_CREDENTIAL: CRED, LINEUP_RELAY_URL: RELAY };
    const r = run(["claude", "--project", dir, "--command", CMD.join(" "), "--http"], env);
    expect(r.code).toBe(0);
    expect(r.out).toContain("replaced the command hook by an http PermissionRequest hook");
    const text = readFileSync(join(dir, ".claude", "settings.json"), "utf8");
    expect(text).not.toContain(CRED);
    const s = settingsOf(dir);
    expect(s.model).toBe("opus");
    expect(s.hooks!.PreToolUse).toEqual([
      guard,
      { matcher: "*", hooks: [http("pre-tool-use", 10)] },
      { matcher: "AskUserQuestion", hooks: [http("ask-user-question", 130, 120)] },
    ]);
    // The relay holds the request at most 380 s: Cloudflare drops a client connection idle for 400 s.
    expect(s.hooks!.PermissionRequest).toEqual([{ matcher: "*", hooks: [http("permission-request", 600, 380)] }]);
    // What the relay does not answer stays a command hook.
    expect(JSON.stringify(s.hooks!.Elicitation)).toContain("hook elicitation");
    expect(JSON.stringify(s.hooks!.Stop)).toContain("hook stop");
    // Again: nothing to change. Without --http: back to the command hooks, no http entry left.
    expect(run(["claude", "--project", dir, "--command", CMD.join(" "), "--http"], env).out).toContain("already set up, nothing changed");
    expect(run(["claude", "--project", dir, "--command", CMD.join(" ")]).code).toBe(0);
    const back = settingsOf(dir);
    expect(JSON.stringify(back.hooks)).not.toContain('"http"');
    expect(back.hooks!.PermissionRequest).toEqual([
      { matcher: "*", hooks: [{ type: "command", command: `${CMD.join(" ")} hook permission-request --wait 590`, timeout: 600 }] },
    ]);
    expect(back.hooks!.PreToolUse![0]).toEqual(guard);
  });

  it("refuses to send the credential over plain http to another machine (exit 2, nothing written), and --relay needs --http", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-setup-http-"));
    const r = run(["claude", "--project", dir, "--http", "--relay", "http://relay.lan:8787"]);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining("over plain http")]);
    expect(() => readFileSync(join(dir, ".claude", "settings.json"))).toThrow();
    expect(run(["claude", "--project", dir, "--relay", RELAY]).code).toBe(2);
    // This machine's own relay (npm run dev) is fine.
    expect(run(["claude", "--project", dir, "--http", "--relay", "http://127.0.0.1:8787", "--dry-run"]).code).toBe(0);
  });
});
