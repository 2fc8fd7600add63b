// The report events of `lineup hook`: Claude Code's Notification and Stop, Codex's notify, and the
// background refresh of the inbox policy — messages into the session's thread, a push when the agent waits.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import type { AttentionReason } from "../../shared/contract/push.js";
import { CodexNotifyPayload, NotificationInput, StopInput } from "../../shared/policy/hooks.js";
import { beforeDeadline, connectSession, HookUsage, leftMs, parseJson, projectDirFor, type Ctx } from "./hook-context.js";
import { unreportedPolicyDecisions, summarize } from "./log.js";
import { findInboxAccess, refreshInboxPolicy } from "./policy-store.js";

/** What a report pushes: `plain` in a plaintext session; a sealed one sends no text, only `reason`. */
interface Attention {
  plain: string;
  reason?: AttentionReason;
}

async function report(cx: Ctx, projectDir: string, texts: string[], attention?: Attention): Promise<boolean> {
  try {
    const client = await beforeDeadline(cx, connectSession(cx, projectDir));
    try {
      for (const t of texts) client.send(t);
    } finally {
      await client.close();
    }
    // A sealed session's push carries no words of the agent: the relay must not read them (docs/e2e.md).
    if (attention !== undefined) await pushAttention(cx, client.sessionId, client.sealed ? undefined : attention.plain, attention.reason);
    return true;
  } catch (e) {
    cx.say(`could not report to the thread: ${e instanceof Error ? e.message : String(e)}`);
    return false;
  }
}

/** At most `n` UTF-16 units (the relay's limit), never half a character. */
function upTo(s: string, n: number): string {
  let out = "";
  for (const ch of s) {
    if (out.length + ch.length > n) break;
    out += ch;
  }
  return out;
}

/** The push of a "waiting for you" report, when this machine is in an inbox: best effort, never fails the hook. */
async function pushAttention(cx: Ctx, sessionId: string, text: string | undefined, reason: AttentionReason | undefined): Promise<void> {
  const access = findInboxAccess(cx.o.stateDir, cx.o.relayUrl, cx.env);
  if (!access) return; // a v1 session: no paired devices to push to
  const [{ InboxApi }, { PUSH_LIMITS }] = await Promise.all([import("../client/inbox.js"), import("../../shared/contract/push.js")]);
  const api = new InboxApi(access.relayUrl);
  const body = text === undefined ? undefined : upTo(text, PUSH_LIMITS.maxAttentionText);
  try {
    const r = await beforeDeadline(
      cx,
      api.pushAttention(access.credential, sessionId, body, reason).catch((e: unknown) => {
        // A relay older than `reason` refuses the field (400, a strict body): the same push without it.
        if (reason !== undefined && (e as { status?: number }).status === 400) return api.pushAttention(access.credential, sessionId, body);
        throw e;
      }),
    );
    cx.say(`pushed "waiting for you" to ${r.queued} device${r.queued === 1 ? "" : "s"}`);
  } catch (e) {
    cx.say(`no push: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Notification types that mean "the agent waits for the human" (docs/permissions.md §7.3). */
const WAITING = new Set(["idle_prompt", "elicitation_dialog"]);

/**
 * i29-agents (issue 29 item 3): `agent_needs_input` and `agent_completed` get words of their own, in the thread
 * and in the push ("Claude needs you in my-app: <Claude's message>"). A sealed session's push carries no text at
 * all, only the reason: the service worker says "The agent needs you" / "The agent finished" under the session's
 * label. One attention push per session a minute, shared with idle_prompt (docs/push.md).
 */
const KINDS: Record<string, { thread: string; push: string; reason: AttentionReason }> = {
  agent_needs_input: { thread: "⏳ **{agent} needs you**", push: "{short} needs you in {project}", reason: "needs_input" },
  agent_completed: { thread: "✅ **{agent} finished**", push: "{short} finished in {project}", reason: "completed" },
};

export async function notify(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, NotificationInput, "Notification");
  const kind = input.notification_type !== undefined ? KINDS[input.notification_type] : undefined;
  if (input.notification_type !== undefined && !WAITING.has(input.notification_type) && !kind) return 0;
  const agent = cx.o.agent ?? "Claude Code";
  const detail = input.message && input.message.trim() !== "" ? `\n\n> ${input.message.trim().replace(/\n/g, "\n> ")}` : "";
  const msg = input.message?.trim();
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  if (kind) {
    const fill = (t: string) =>
      t
        .replaceAll("{agent}", agent)
        .replaceAll("{short}", cx.o.agent ?? "Claude")
        .replaceAll("{project}", basename(projectDir) || projectDir);
    const head = fill(kind.push);
    await report(cx, projectDir, [`${fill(kind.thread)} in \`${input.cwd}\`.${detail}`], { plain: msg ? `${head}: ${msg}` : head, reason: kind.reason });
    return 0;
  }
  await report(cx, projectDir, [`⏳ **${agent} is waiting for you** in \`${input.cwd}\`.${detail}`], { plain: `${agent}: ${msg || "waiting for you"}` });
  return 0;
}

/**
 * A finished turn into the thread: `last` (the agent's words) and the project's unreported policy decisions.
 * `finished` (Codex's and Cursor's stop, whose only "done" signal it is) also pushes "<agent> finished in <project>"
 * like Claude Code's agent_completed: one attention push per session a minute, the device showing it spared.
 */
export async function reportTurn(cx: Ctx, projectDir: string, last: string | undefined, finished?: { agent: string; words?: string }): Promise<void> {
  const pending = unreportedPolicyDecisions(cx.o.stateDir, projectDir);
  const summary = summarize(pending.decisions);
  const texts = [...(last ? [last] : []), ...(summary ? [summary] : [])];
  if (texts.length === 0) return;
  const head = finished && `${finished.agent} finished in ${basename(projectDir) || projectDir}`;
  const attention = finished && head ? { plain: finished.words ? `${head}: ${finished.words}` : head, reason: "completed" as const } : undefined;
  if (await report(cx, projectDir, texts, attention)) pending.markReported();
}

export async function stop(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, StopInput, "Stop");
  await reportTurn(cx, projectDirFor(input.cwd, cx.o, cx.env), input.last_assistant_message?.trim() || undefined);
  return 0;
}

/**
 * Whether this process is the first to report Codex turn `turnId` (the Stop hook and the older `notify` both
 * see every turn; whichever comes first reports it). Markers older than a day are removed.
 */
export function claimCodexTurn(stateDir: string, turnId: string | undefined): boolean {
  if (!turnId) return true;
  const dir = join(stateDir, "codex-turns");
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const now = Date.now();
    for (const f of readdirSync(dir)) {
      try {
        if (now - statSync(join(dir, f)).mtimeMs > 86_400_000) unlinkSync(join(dir, f));
      } catch {
        /* another hook removed it */
      }
    }
    closeSync(openSync(join(dir, createHash("sha256").update(turnId).digest("hex").slice(0, 32)), "wx"));
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "EEXIST";
  }
}

export async function codexNotify(cx: Ctx): Promise<number> {
  const raw = cx.o.positionals[cx.o.positionals.length - 1];
  // Run the notify program this one replaced first, whatever happens to ours (fire and forget, as Codex does).
  if (cx.o.then.length > 0 && raw !== undefined) {
    try {
      spawn(cx.o.then[0]!, [...cx.o.then.slice(1), raw], { detached: true, stdio: "ignore" }).unref();
    } catch (e) {
      cx.say(`--then ${cx.o.then[0]}: ${(e as Error).message}`);
    }
  }
  if (raw === undefined) throw new HookUsage("codex-notify expects Codex's JSON payload as its last argument");
  const payload = parseJson(raw, CodexNotifyPayload, "Codex notify");
  if (payload.type !== "agent-turn-complete") return 0;
  // Codex with lifecycle hooks also runs `lineup hook codex-stop` for this turn: one report per turn.
  if (!claimCodexTurn(cx.o.stateDir, payload["turn-id"])) return 0;
  const msg = payload["last-assistant-message"]?.trim();
  const cwd = payload.cwd ?? process.cwd();
  const agent = cx.o.agent ?? "Codex";
  await report(cx, projectDirFor(cwd, cx.o, cx.env), [msg ? `**${agent}** finished a turn:\n\n${msg}` : `**${agent}** finished a turn in \`${cwd}\`.`]);
  return 0;
}

export async function refreshPolicy(cx: Ctx): Promise<number> {
  const access = findInboxAccess(cx.o.stateDir, cx.o.relayUrl, cx.env);
  if (!access) return 0;
  const c = await refreshInboxPolicy(cx.o.stateDir, access, Math.max(500, leftMs(cx)));
  cx.say(c ? `inbox policy v${c.version} cached` : "the inbox policy could not be fetched");
  return 0;
}
