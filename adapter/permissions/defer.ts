// Approvals that never silently expire (issue 29 item 4, docs/permissions.md §9.2; branch i29-defer). In a
// headless Claude Code run (`claude -p`, the Agent SDK) a card nobody answered within the hook's wait does not
// end the question: the hook writes a durable record (<state dir>/deferred/<tool_use_id>.json), leaves the card
// open on the relay (no cancel; its deadline is the contract's maximum) and answers PreToolUse "defer", so the
// run stops cleanly with `tool_deferred`. `lineup connect` / `lineup daemon` (resume.ts) pick up the answer and
// run `claude -p --resume <session>`; Claude Code then fires PreToolUse again for the same tool call
// (hooks reference, "Defer a tool call for later"), and the hook answers at once from the record.
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "../../shared/contract/zod.js";
import { LIMITS } from "../../shared/contract/limits.js";
import type { ToolResultBody } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import type { Env } from "./hook-context.js";

export const DEFER_DEFAULTS = {
  /** The card's deadline on the relay: the contract's maximum `timeout_s` (24 h). */
  relayTimeoutS: LIMITS.maxTimeoutS,
  /** How often `lineup connect` / `lineup daemon` look for new records. */
  pollMs: 2000,
} as const;

/**
 * Whether this hook runs inside a headless Claude Code run, where `defer` is honoured. `LINEUP_HEADLESS=1|0`
 * decides when set; else Claude Code's `CLAUDE_CODE_ENTRYPOINT` (`sdk-cli` for `claude -p`, `sdk-…` for the
 * Agent SDK; `cli` for an interactive session). The variable is undocumented (reported in
 * PeonPing/peon-ping#339, open request anthropics/claude-code#27015): an unknown value counts as interactive,
 * so a wrong guess falls back to today's behaviour (the terminal dialog), never to a defer nobody resumes.
 */
export function isHeadless(env: Env): boolean {
  if (env.LINEUP_HEADLESS === "1") return true;
  if (env.LINEUP_HEADLESS === "0") return false;
  return /^sdk-/.test(env.CLAUDE_CODE_ENTRYPOINT ?? "");
}

const Outcome = z.union([z.object({ result: z.record(z.string(), z.unknown()) }), z.object({ error: z.object({ code: z.string(), message: z.string() }) })]);
export type DeferOutcome = z.infer<typeof Outcome>;

export const DeferredRecord = z.object({
  v: z.literal(1),
  /** the card: its call on the relay, made by its own agent client id (the relay re-sends its result to that id) */
  callId: z.string(),
  clientId: z.string(),
  relayUrl: z.string(),
  sessionId: z.string(),
  token: z.string(),
  tool: z.string(),
  what: z.string(),
  event: z.enum(["pre-tool-use", "ask-user-question"]),
  projectDir: z.string(),
  claude: z.object({
    session_id: z.string(),
    transcript_path: z.string().optional(),
    cwd: z.string(),
    tool_use_id: z.string(),
    tool_name: z.string(),
  }),
  state: z.enum(["waiting", "answered", "resuming", "failed", "expired"]),
  outcome: Outcome.optional(),
  note: z.string().optional(),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type DeferredRecord = z.infer<typeof DeferredRecord>;

export const deferDir = (stateDir: string) => join(stateDir, "deferred");
/** One file per tool call: the key the resumed run's hook looks up. */
export const recordName = (toolUseId: string) => toolUseId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 120);
const fileOf = (stateDir: string, name: string) => join(deferDir(stateDir), `${name}.json`);

/** Reads one record; undefined when missing or not a record (a broken file is reported by the caller). */
export function readRecord(stateDir: string, name: string): DeferredRecord | undefined {
  let text: string;
  try {
    text = readFileSync(fileOf(stateDir, name), "utf8");
  } catch {
    return undefined;
  }
  try {
    const r = DeferredRecord.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a record atomically (a temp file renamed over it), mode 0600: it holds the session's agent token. */
export function writeRecord(stateDir: string, rec: DeferredRecord): void {
  mkdirSync(deferDir(stateDir), { recursive: true, mode: 0o700 });
  const name = recordName(rec.claude.tool_use_id);
  const tmp = join(deferDir(stateDir), `.${name}.${process.pid}.${randomId(4)}.tmp`);
  writeFileSync(tmp, `${JSON.stringify({ ...rec, updatedAt: Date.now() })}\n`, { mode: 0o600 });
  renameSync(tmp, fileOf(stateDir, name));
}

export function removeRecord(stateDir: string, name: string): void {
  rmSync(fileOf(stateDir, name), { force: true });
}

export function listRecords(stateDir: string): string[] {
  try {
    return readdirSync(deferDir(stateDir))
      .filter((f) => f.endsWith(".json") && !f.startsWith("."))
      .map((f) => f.slice(0, -5));
  } catch {
    return [];
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
};

/**
 * Takes the record's lock (`<name>.lock`, created exclusively, holding our pid): one process watches and
 * resumes a record, however many `lineup connect` / `lineup daemon` run. A lock whose process is gone is stale
 * and taken over (a restarted connect picks up where the dead one stopped).
 */
export function lockRecord(stateDir: string, name: string): boolean {
  const file = join(deferDir(stateDir), `${name}.lock`);
  for (let i = 0; i < 2; i++) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") return false;
      const pid = Number(readFileSafe(file));
      if (pid === process.pid || (Number.isInteger(pid) && pid > 0 && alive(pid))) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

export function unlockRecord(stateDir: string, name: string): void {
  const file = join(deferDir(stateDir), `${name}.lock`);
  if (Number(readFileSafe(file)) === process.pid) rmSync(file, { force: true });
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "";
  }
}

/** The stored answer as the hooks read a card's answer. */
export function outcomeToAsked(
  o: DeferOutcome,
): { kind: "result"; result: ToolResultBody } | { kind: "declined" } | { kind: "error"; code: string; message: string } {
  if ("result" in o) return { kind: "result", result: o.result as ToolResultBody };
  if (o.error.code === "declined") return { kind: "declined" };
  return { kind: "error", code: o.error.code, message: o.error.message };
}
