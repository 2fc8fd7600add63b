// The deferred records of issue 29 item 4 (adapter/permissions/defer.ts): which runs count as headless, that a
// record is written whole and found by its tool call, and that one process at a time holds it — a lock left by
// a process that is gone is taken over (a restarted `lineup connect`), a live holder's is not (two watchers).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  deferDir,
  isHeadless,
  listRecords,
  lockRecord,
  readRecord,
  recordName,
  unlockRecord,
  writeRecord,
  type DeferredRecord,
} from "../../adapter/permissions/defer.js";

const rec = (toolUseId: string): DeferredRecord => ({
  v: 1,
  callId: "d_1",
  clientId: "hook_d_1",
  relayUrl: "http://127.0.0.1:8787",
  sessionId: "s1",
  token: "t",
  tool: "ask_questions",
  what: "question: Which database?",
  event: "ask-user-question",
  projectDir: "/p",
  claude: { session_id: "abc", cwd: "/p", tool_use_id: toolUseId, tool_name: "AskUserQuestion" },
  state: "waiting",
  createdAt: 1,
  updatedAt: 1,
});

describe("which runs are headless", () => {
  it("claude -p and the Agent SDK (sdk-…) are; an interactive session (cli), an unknown or missing entry point are not; LINEUP_HEADLESS decides when set", () => {
    expect(isHeadless({ CLAUDE_CODE_ENTRYPOINT: "sdk-cli" })).toBe(true);
    expect(isHeadless({ CLAUDE_CODE_ENTRYPOINT: "sdk-ts" })).toBe(true);
    expect(isHeadless({ CLAUDE_CODE_ENTRYPOINT: "cli" })).toBe(false);
    expect(isHeadless({ CLAUDE_CODE_ENTRYPOINT: "something-new" })).toBe(false);
    expect(isHeadless({})).toBe(false);
    expect(isHeadless({ LINEUP_HEADLESS: "1" })).toBe(true);
    expect(isHeadless({ LINEUP_HEADLESS: "0", CLAUDE_CODE_ENTRYPOINT: "sdk-cli" })).toBe(false);
  });
});

describe("records", () => {
  it("are written whole (mode 0600, no temp file left), found by their tool call, and a file that is not a record is not one", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-defer-"));
    writeRecord(dir, rec("toolu_01/../x"));
    const name = recordName("toolu_01/../x");
    expect(name).toBe("toolu_01____x");
    expect(readRecord(dir, name)?.claude.tool_use_id).toBe("toolu_01/../x");
    expect(statSync(join(deferDir(dir), `${name}.json`)).mode & 0o777).toBe(0o600);
    expect(readdirSync(deferDir(dir))).toEqual([`${name}.json`]);
    writeFileSync(join(deferDir(dir), "junk.json"), "{not json");
    expect(listRecords(dir).sort()).toEqual(["junk", name].sort());
    expect(readRecord(dir, "junk")).toBeUndefined();
  });

  it("one process holds a record: a live holder keeps it, a dead holder's lock is taken over", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-defer-"));
    mkdirSync(deferDir(dir), { recursive: true });
    // A process that has exited: its pid is free (as after a killed `lineup connect`).
    const gone = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout;
    writeFileSync(join(deferDir(dir), "a.lock"), gone);
    expect(lockRecord(dir, "a")).toBe(true);
    expect(lockRecord(dir, "a")).toBe(false); // already ours: not taken twice
    unlockRecord(dir, "a");
    expect(existsSync(join(deferDir(dir), "a.lock"))).toBe(false);
    // A live process (our parent) holds b: not ours to take.
    writeFileSync(join(deferDir(dir), "b.lock"), String(process.ppid));
    expect(lockRecord(dir, "b")).toBe(false);
    unlockRecord(dir, "b"); // not ours: left alone
    expect(existsSync(join(deferDir(dir), "b.lock"))).toBe(true);
  });
});
