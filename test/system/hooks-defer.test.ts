// Issue 29 item 4 through the real bin and the real relay (`wrangler dev`): in a headless Claude Code run a
// card nobody answered within the hook's wait ends with PreToolUse "defer", stays on the phone, and when it is
// answered later `lineup daemon` (the watcher `lineup connect` also runs) resumes the run exactly once with
// `claude -p --resume <session>` in the run's directory. Claude Code cannot run here: a fake `claude` (a node
// script written below) records its argv and cwd and, on --resume, fires PreToolUse again for the same tool call
// by running the real `lineup hook …`, as the hooks reference says Claude Code does ("Defer a tool call for
// later", https://code.claude.com/docs/en/hooks). Hook stdin as documented there (PreToolUse).
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { ASK_QUESTIONS, PERMISSION } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { appClient, BIN, newSession, runCli, spawnCli, waitFor } from "../helpers/adapter-helpers.js";
import { SimDevice } from "../helpers/e2e-device.js";
import { countingListener, project, runHook } from "../helpers/hooks-helpers.js";
import type { RawClient } from "../helpers/raw-client.js";

const relay = inject("relayUrl");

const QUESTIONS = [{ question: "Which database?", header: "DB", multiSelect: false, options: [{ label: "PostgreSQL" }, { label: "SQLite" }] }];
const preToolUseStdin = (cwd: string, tool_name: string, tool_input: Record<string, unknown>, tool_use_id: string) =>
  JSON.stringify({
    session_id: "sess-defer-1",
    transcript_path: "/tmp/t.jsonl",
    cwd,
    permission_mode: "default",
    hook_event_name: "PreToolUse",
    tool_name,
    tool_input,
    tool_use_id,
  });

/** The fake `claude`: logs {argv, cwd} and, on --resume, runs the real hook with the recorded tool call. */
function fakeClaude(dir: string): { bin: string; log: string; calls: () => { argv: string[]; cwd: string; hook: { code: number; stdout: string } }[] } {
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, "claude");
  const log = join(dir, "claude-log.jsonl");
  writeFileSync(
    bin,
    `#!${process.execPath}
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const argv = process.argv.slice(2);
const entry = { argv, cwd: process.cwd() };
const i = argv.indexOf("--resume");
if (i >= 0) {
  const h = spawnSync(process.execPath, [${JSON.stringify(BIN)}, "hook", process.env.FAKE_HOOK, "--defer", "--wait", "20"], {
    input: fs.readFileSync(process.env.FAKE_CALL, "utf8"),
    env: { ...process.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" },
    encoding: "utf8",
  });
  entry.hook = { code: h.status, stdout: h.stdout.trim() };
}
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(entry) + "\\n");
process.stdout.write(JSON.stringify({ type: "result", subtype: "success", stop_reason: "end_turn", is_error: false, result: "done", session_id: argv[i + 1] }) + "\\n");
`,
  );
  chmodSync(bin, 0o755);
  const calls = () =>
    existsSync(log)
      ? readFileSync(log, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { argv: string[]; cwd: string; hook: { code: number; stdout: string } })
      : [];
  return { bin, log, calls };
}

interface Setup {
  p: ReturnType<typeof project>;
  env: Record<string, string>;
  app: RawClient;
  claude: ReturnType<typeof fakeClaude>;
  s: { session_id: string; app_token: string };
}

async function setup(hook: string, stdinFor: (dir: string) => string): Promise<Setup & { stdin: string }> {
  const p = project({ ask: ["Bash(git push:*)"] });
  const s = await newSession(relay);
  const app = await appClient(relay, s.session_id, s.app_token, [PERMISSION, ASK_QUESTIONS], "phone");
  const claude = fakeClaude(join(p.stateDir, "..", "bin"));
  const call = join(p.stateDir, "..", "call.json");
  const stdin = stdinFor(p.dir);
  writeFileSync(call, stdin);
  const env = {
    LINEUP_RELAY_URL: relay,
    LINEUP_SESSION: s.session_id,
    LINEUP_TOKEN: s.agent_token,
    LINEUP_STATE_DIR: p.stateDir,
    HOME: p.stateDir,
    LINEUP_CLAUDE_BIN: claude.bin,
    FAKE_HOOK: hook,
    FAKE_CALL: call,
  };
  return { p, env, app, claude, s, stdin };
}

const deferred = (stateDir: string) =>
  existsSync(join(stateDir, "deferred")) ? readdirSync(join(stateDir, "deferred")).filter((f) => f.endsWith(".json")) : [];

describe("a headless run defers an unanswered card and resumes when it is answered", () => {
  it("AskUserQuestion: defer after the wait, the card stays, a daemon restart loses nothing, the answer resumes the run once with the answers applied", async () => {
    const x = await setup("ask-user-question", (dir) => preToolUseStdin(dir, "AskUserQuestion", { questions: QUESTIONS }, "toolu_01defer"));
    const real = x.stdin;
    const daemons: ReturnType<typeof spawnCli>[] = [];
    try {
      const run = await runHook(["ask-user-question", "--defer", "--wait", "6"], real, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      const card = await x.app.next("tool.call", 10_000);
      expect(card.name).toBe("ask_questions");
      expect([run.code, run.stdout.trim()]).toEqual([0, JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "defer" } })]);
      expect(deferred(x.p.stateDir)).toEqual(["toolu_01defer.json"]);
      // The card is still on the phone: a phone that connects now gets it.
      await x.app.close();
      const phone = await appClient(relay, x.s.session_id, x.s.app_token, [PERMISSION, ASK_QUESTIONS], "phone");
      const again = await phone.next((f) => f.type === "tool.call" && f.call_id === card.call_id, 10_000);
      expect(again.name).toBe("ask_questions");

      // A daemon starts watching, and is stopped before the answer: its successor picks the record up.
      const first = spawnCli(["daemon"], x.env, x.p.dir);
      daemons.push(first);
      await waitFor(() => (first.output().stderr.includes("waiting for the answer") ? true : undefined), "the first daemon watching", 20_000);
      first.kill("SIGTERM");
      await first.done;
      // Two watchers at once — `lineup connect` (which runs the same watcher) and a daemon: one resumes.
      daemons.push(spawnCli(["connect", "--no-qr"], x.env, x.p.dir), spawnCli(["daemon"], x.env, x.p.dir));
      await waitFor(() => (daemons.slice(1).some((d) => d.output().stderr.includes("waiting for the answer")) ? true : undefined), "a daemon watching", 20_000);
      expect(x.claude.calls()).toEqual([]);

      phone.send({
        type: "tool.result",
        call_id: card.call_id,
        name: "ask_questions",
        result: { message: "DB: SQLite", answers: { "Which database?": "SQLite" } },
      });
      const msg = await phone.next((f) => f.type === "message" && JSON.stringify(f.content).includes("Resumed"), 30_000);
      expect(JSON.stringify(msg.content)).toContain("with your answer to question: Which database?");
      const calls = x.claude.calls();
      expect(calls).toHaveLength(1);
      expect(calls[0]!.argv).toEqual(["-p", "--resume", "sess-defer-1", "--output-format", "json"]);
      expect(calls[0]!.cwd).toBe(x.p.dir);
      // The resumed run's PreToolUse got the human's answer at once, in Claude Code's shape.
      expect(calls[0]!.hook.code).toBe(0);
      expect(JSON.parse(calls[0]!.hook.stdout)).toEqual({
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "allow",
          permissionDecisionReason: "Answered in the LineUp app",
          updatedInput: { questions: QUESTIONS, answers: { "Which database?": "SQLite" } },
        },
      });
      expect(deferred(x.p.stateDir)).toEqual([]);
      for (const d of daemons.slice(1)) d.kill("SIGTERM");
      await Promise.all(daemons.map((d) => d.done));
      expect(x.claude.calls()).toHaveLength(1);
      await phone.close();
    } finally {
      for (const d of daemons) d.kill("SIGKILL");
    }
  }, 120_000);

  it("a permission (pre-tool-use --defer): the policy's ask becomes a card; unanswered → defer; allowed later → the resumed run's PreToolUse allows", async () => {
    const x = await setup("pre-tool-use", (dir) => preToolUseStdin(dir, "Bash", { command: "git push origin main" }, "toolu_02perm"));
    const stdin = x.stdin;
    const daemon = spawnCli(["daemon"], x.env, x.p.dir);
    try {
      const run = await runHook(["pre-tool-use", "--defer", "--wait", "5"], stdin, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      expect(run.stdout.trim()).toBe(JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "defer" } }));
      const card = await x.app.next("tool.call", 10_000);
      expect([card.name, (card.arguments as { tool_name: string }).tool_name]).toEqual(["permission", "Bash"]);
      x.app.send({ type: "tool.result", call_id: card.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      await x.app.next((f) => f.type === "message" && JSON.stringify(f.content).includes("Resumed"), 30_000);
      const calls = x.claude.calls();
      expect(calls.map((c) => [c.argv, c.cwd])).toEqual([[["-p", "--resume", "sess-defer-1", "--output-format", "json"], x.p.dir]]);
      expect(JSON.parse(calls[0]!.hook.stdout)).toEqual({
        hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: "Allowed in the LineUp app" },
      });
    } finally {
      daemon.kill("SIGTERM");
      await daemon.done;
      await x.app.close();
    }
  }, 90_000);

  it("an interactive session is never deferred: pre-tool-use --defer stays policy-only and offline, ask-user-question --defer falls back to the terminal", async () => {
    const p = project({ ask: ["Bash(git push:*)"] });
    const nobody = await countingListener();
    try {
      const env = { LINEUP_RELAY_URL: nobody.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir, CLAUDE_CODE_ENTRYPOINT: "cli" };
      const pre = await runHook(["pre-tool-use", "--defer", "--wait", "5"], preToolUseStdin(p.dir, "Bash", { command: "git push" }, "toolu_03"), env, p.dir);
      expect([pre.code, pre.stdout]).toEqual([0, ""]);
      expect(nobody.connections()).toBe(0);
    } finally {
      await nobody.close();
    }
    const s = await newSession(relay);
    const app = await appClient(relay, s.session_id, s.app_token, [ASK_QUESTIONS], "phone");
    try {
      const env = { LINEUP_RELAY_URL: relay, LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
      const ask = runHook(
        ["ask-user-question", "--defer", "--wait", "5"],
        preToolUseStdin(p.dir, "AskUserQuestion", { questions: QUESTIONS }, "toolu_04"),
        { ...env, CLAUDE_CODE_ENTRYPOINT: "cli" },
        p.dir,
      );
      const card = await app.next("tool.call", 10_000);
      // The interactive fallback: the card is cancelled, no output, no record.
      const cancel = await app.next((f) => f.type === "tool.cancel" && f.call_id === card.call_id, 15_000);
      expect(cancel.type).toBe("tool.cancel");
      const r = await ask;
      expect([r.code, r.stdout]).toEqual([0, ""]);
      expect(deferred(p.stateDir)).toEqual([]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it("a claude that does not re-run the deferred call: the thread says it could not resume, and a resume by hand still gets the answer", async () => {
    const x = await setup("ask-user-question", (dir) => preToolUseStdin(dir, "AskUserQuestion", { questions: QUESTIONS }, "toolu_05broken"));
    // This claude exits 1 at once, as a claude without the session (or one that ignores defer) would.
    writeFileSync(x.claude.bin, `#!${process.execPath}\nprocess.stderr.write("No conversation found with session ID: sess-defer-1\\n");\nprocess.exit(1);\n`);
    const daemon = spawnCli(["daemon"], x.env, x.p.dir);
    try {
      const run = await runHook(["ask-user-question", "--defer", "--wait", "5"], x.stdin, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      expect(JSON.parse(run.stdout).hookSpecificOutput.permissionDecision).toBe("defer");
      const card = await x.app.next("tool.call", 10_000);
      x.app.send({
        type: "tool.result",
        call_id: card.call_id,
        name: "ask_questions",
        result: { message: "DB: SQLite", answers: { "Which database?": "SQLite" } },
      });
      const msg = await x.app.next((f) => f.type === "message" && JSON.stringify(f.content).includes("Could not resume"), 30_000);
      expect(JSON.stringify(msg.content)).toContain("No conversation found with session ID: sess-defer-1");
      expect(JSON.stringify(msg.content)).toContain("claude -p --resume sess-defer-1");
      const rec = JSON.parse(readFileSync(join(x.p.stateDir, "deferred", "toolu_05broken.json"), "utf8")) as { state: string };
      expect(rec.state).toBe("failed");
      // Resumed by hand (`claude -p --resume`), the run's PreToolUse still gets the human's answer, once.
      const byHand = await runHook(["ask-user-question", "--defer", "--wait", "5"], x.stdin, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      expect(JSON.parse(byHand.stdout).hookSpecificOutput.updatedInput.answers).toEqual({ "Which database?": "SQLite" });
      expect(deferred(x.p.stateDir)).toEqual([]);
    } finally {
      daemon.kill("SIGTERM");
      await daemon.done;
      await x.app.close();
    }
  }, 60_000);

  it("a deferred card nobody answers before its deadline (--defer-for; 24 h by default) is not resumed: the thread says so, claude never runs, and a resume by hand asks again", async () => {
    const x = await setup("ask-user-question", (dir) => preToolUseStdin(dir, "AskUserQuestion", { questions: QUESTIONS }, "toolu_06expire"));
    const daemon = spawnCli(["daemon"], x.env, x.p.dir);
    try {
      const args = ["ask-user-question", "--defer", "--defer-for", "10", "--wait", "4"];
      const run = await runHook(args, x.stdin, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      expect(JSON.parse(run.stdout).hookSpecificOutput.permissionDecision).toBe("defer");
      const card = await x.app.next("tool.call", 10_000);
      // The relay's deadline passes with nobody answering: the card ends as a timeout.
      const msg = await x.app.next((f) => f.type === "message" && JSON.stringify(f.content).includes("Not resumed"), 30_000);
      expect(JSON.stringify(msg.content)).toContain("question: Which database?");
      expect(JSON.stringify(msg.content)).toContain("claude -p --resume sess-defer-1");
      const rec = JSON.parse(readFileSync(join(x.p.stateDir, "deferred", "toolu_06expire.json"), "utf8")) as { state: string; callId: string };
      expect([rec.state, rec.callId]).toEqual(["expired", card.call_id]);
      expect(x.claude.calls()).toEqual([]);
      // Resumed by hand after the deadline: the expired record is dropped and the phone is asked again.
      const byHand = runHook(args, x.stdin, { ...x.env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, x.p.dir);
      const again = await x.app.next((f) => f.type === "tool.call" && f.call_id !== card.call_id, 10_000);
      x.app.send({
        type: "tool.result",
        call_id: again.call_id,
        name: "ask_questions",
        result: { message: "DB: SQLite", answers: { "Which database?": "SQLite" } },
      });
      expect(JSON.parse((await byHand).stdout).hookSpecificOutput.updatedInput.answers).toEqual({ "Which database?": "SQLite" });
    } finally {
      daemon.kill("SIGTERM");
      await daemon.done;
      await x.app.close();
    }
  }, 60_000);

  it("--defer-for outside 10–86400 seconds is refused with exit 1 and a clear message", async () => {
    const p = project();
    for (const v of ["5", "soon"]) {
      const r = await runHook(["ask-user-question", "--defer", "--defer-for", v], "{}", { LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir }, p.dir);
      expect([r.code, r.stderr]).toEqual([1, expect.stringContaining("--defer-for must be a whole number of seconds from 10 to 86400")]);
    }
  });

  it("sealed (E2E): the deferred question set stays sealed on the phone, and its sealed answer resumes the run", async () => {
    const p = project();
    const claude = fakeClaude(join(p.stateDir, "..", "bin"));
    const call = join(p.stateDir, "..", "call.json");
    const stdin = preToolUseStdin(p.dir, "AskUserQuestion", { questions: QUESTIONS }, "toolu_06sealed");
    writeFileSync(call, stdin);
    const env = {
      LINEUP_RELAY_URL: relay,
      LINEUP_RELAY_KEY: DEV_RELAY_KEY,
      LINEUP_STATE_DIR: p.stateDir,
      LINEUP_E2E_POLL_MS: "300",
      HOME: p.stateDir,
      LINEUP_CLAUDE_BIN: claude.bin,
      FAKE_HOOK: "ask-user-question",
      FAKE_CALL: call,
    };
    const cli = async (a: string[]) => {
      const r = await runCli(a, env, p.dir);
      expect(r.code, r.stderr).toBe(0);
      return r;
    };
    await cli(["e2e", "on", "--json"]);
    const { url } = JSON.parse((await cli(["pair", "--json"])).stdout.trim().split("\n").pop()!) as { url: string };
    const dev = await SimDevice.redeem(relay, url);
    expect(await dev.hello()).toBe(201);
    const run = runHook(["ask-user-question", "--defer", "--wait", "15"], stdin, { ...env, CLAUDE_CODE_ENTRYPOINT: "sdk-cli" }, p.dir, 60_000);
    await waitFor(() => dev.takeReply(), "the sponsor's reply (the hook pairs the device first)", 30_000);
    const s = await waitFor(async () => (await dev.sessions()).find((x) => x.sealed === true && x.waiting.length > 0), "the sealed card waiting", 30_000);
    const first = await dev.join(s.session_id, [ASK_QUESTIONS]);
    const f = await first.ws.next("tool.call", 20_000);
    expect(f.arguments).toBeUndefined();
    const out = await run;
    expect(JSON.parse(out.stdout).hookSpecificOutput.permissionDecision).toBe("defer");
    await first.ws.close();
    const daemon = spawnCli(["daemon"], env, p.dir);
    try {
      await waitFor(() => (daemon.output().stderr.includes("waiting for the answer") ? true : undefined), "the daemon watching", 20_000);
      // Later, the phone opens the session again: the card is still there, still sealed.
      const { ws, sender } = await dev.join(s.session_id, [ASK_QUESTIONS]);
      const again = await ws.next((g) => g.type === "tool.call" && g.call_id === f.call_id, 20_000);
      expect(again.arguments).toBeUndefined();
      expect((await dev.open(s.session_id, again)).name).toBe("ask_questions");
      const answers = { "Which database?": "PostgreSQL" };
      ws.send(
        await dev.seal(s.session_id, sender, {
          type: "tool.result",
          call_id: String(f.call_id),
          name: "ask_questions",
          result: { message: "DB: PostgreSQL", answers },
        }),
      );
      const said = await waitFor(
        async () => {
          const m = await ws.next("message", 30_000);
          const opened = await dev.open(s.session_id, m);
          return JSON.stringify(opened).includes("Resumed") ? opened : undefined;
        },
        "the sealed 'Resumed' message",
        40_000,
      );
      expect(JSON.stringify(said)).toContain("with your answer to question: Which database?");
      const calls = claude.calls();
      expect(calls.map((c) => [c.argv, c.cwd])).toEqual([[["-p", "--resume", "sess-defer-1", "--output-format", "json"], p.dir]]);
      expect(JSON.parse(calls[0]!.hook.stdout).hookSpecificOutput.updatedInput).toEqual({ questions: QUESTIONS, answers });
      await ws.close();
    } finally {
      daemon.kill("SIGTERM");
      await daemon.done;
    }
  }, 120_000);
});
