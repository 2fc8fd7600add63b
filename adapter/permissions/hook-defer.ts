// The hook side of deferral (issue 29 item 4, docs/permissions.md §9.2; branch i29-defer): one card for a
// PreToolUse call in a headless run. A record for this tool call already there (the run was resumed) answers at
// once; else the card waits until the hook's wait and then, unanswered, stays open on the relay while the hook
// writes the record and answers "defer".
import type { ToolResultBody } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { DEFER_DEFAULTS, outcomeToAsked, readRecord, recordName, removeRecord, writeRecord } from "./defer.js";
import { connectSession, leftMs, sessionFor, type Ctx } from "./hook-context.js";

export type PhoneAsked =
  | { kind: "result"; result: ToolResultBody }
  | { kind: "declined" }
  | { kind: "timeout" }
  | { kind: "error"; code: string; message: string }
  | { kind: "defer" };

export interface DeferrableAsk {
  projectDir: string;
  tool: string;
  args: Record<string, unknown>;
  what: string;
  event: "pre-tool-use" | "ask-user-question";
  hook: { session_id: string; transcript_path?: string | undefined; cwd: string; tool_use_id?: string | undefined; tool_name: string };
}

/** Whether this call can be deferred: `--defer`, a headless run (defer.ts isHeadless), and a tool_use_id to key the record. */
export function canDefer(cx: Ctx, hook: { tool_use_id?: string | undefined }, headless: boolean): boolean {
  return cx.o.defer && headless && typeof hook.tool_use_id === "string" && hook.tool_use_id !== "";
}

export const DEFER_LINE = "no answer yet: the run stops here (defer); lineup connect / lineup daemon resumes it when the human answers";

/** Asks the phone, or answers from this tool call's record; never cancels the card of a deferrable call. */
export async function askOrDefer(cx: Ctx, a: DeferrableAsk): Promise<PhoneAsked> {
  const toolUseId = a.hook.tool_use_id ?? "";
  const name = recordName(toolUseId);
  const rec = readRecord(cx.o.stateDir, name);
  if (rec && rec.claude.session_id === a.hook.session_id) {
    // A card that ended unanswered (its 24 h deadline): asked anew, with a new card.
    if (rec.state === "expired") removeRecord(cx.o.stateDir, name);
    // "answered"/"resuming": the watcher's resume; "failed": the human resumed by hand after "Could not resume".
    else if (rec.outcome) {
      // The resumed run: the human's answer, applied once; the record goes (its watcher reads that as "resumed").
      removeRecord(cx.o.stateDir, name);
      cx.say(`answering ${a.what} from the answer given in the LineUp app (deferred ${new Date(rec.createdAt).toISOString()})`);
      return outcomeToAsked(rec.outcome);
    }
    if (rec.state === "waiting") {
      cx.say(`still no answer on the phone: deferring again (${name})`);
      return { kind: "defer" };
    }
  }
  let s: { sessionId: string; token: string };
  try {
    s = await sessionFor(cx, a.projectDir);
  } catch (e) {
    return { kind: "error", code: (e as { code?: string }).code ?? "connect", message: e instanceof Error ? e.message : String(e) };
  }
  const clientId = `hook_d_${randomId(8)}`;
  let client: Awaited<ReturnType<typeof connectSession>>;
  try {
    client = await connectSession(cx, a.projectDir, { ...s, clientId });
  } catch (e) {
    const code = (e as { code?: string }).code ?? "connect";
    return { kind: "error", code, message: e instanceof Error ? e.message : String(e) };
  }
  const callId = `d_${randomId(12)}`;
  cx.say(`asking the human on their phone: ${a.what}${client.presence.apps === 0 ? " (no app connected yet)" : ""}`);
  const before = client.presence.agent.status;
  client.setStatus("waiting", a.what);
  let ended: PhoneAsked | undefined;
  // The card's deadline (default: the contract's maximum, 24 h; `--defer-for`) outlives this hook, which never cancels it.
  const call = client.call(a.tool, undefined, a.args, { callId, timeoutS: cx.o.deferForS ?? DEFER_DEFAULTS.relayTimeoutS }).then(
    (result): PhoneAsked => (ended = { kind: "result", result }),
    (e: unknown): PhoneAsked => {
      const code = typeof (e as { code?: unknown }).code === "string" ? (e as { code: string }).code : "internal";
      return (ended = code === "declined" ? { kind: "declined" } : { kind: "error", code, message: e instanceof Error ? e.message : String(e) });
    },
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = await Promise.race([call, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, leftMs(cx)))))]);
  clearTimeout(timer);
  if (waited) {
    // Another agent's status comes back; a hook's left-over one does not (as in hook-asks.ts).
    if (before && !/^(permission|question|deferred): /.test(before.detail ?? "")) client.setStatus(before.state, before.detail);
    else client.setStatus("idle");
    await client.close();
    return waited;
  }
  // Unanswered: the record first (so nothing is lost if we are killed now), then leave without a cancel.
  const now = Date.now();
  writeRecord(cx.o.stateDir, {
    v: 1,
    callId,
    clientId,
    relayUrl: cx.o.relayUrl,
    sessionId: s.sessionId,
    token: s.token,
    tool: a.tool,
    what: a.what,
    event: a.event,
    projectDir: a.projectDir,
    claude: {
      session_id: a.hook.session_id,
      ...(a.hook.transcript_path !== undefined ? { transcript_path: a.hook.transcript_path } : {}),
      cwd: a.hook.cwd,
      tool_use_id: toolUseId,
      tool_name: a.hook.tool_name,
    },
    state: "waiting",
    createdAt: now,
    updatedAt: now,
  });
  client.setStatus("waiting", `deferred: ${a.what}`);
  await client.close();
  // An answer that came while we were closing was received here (and acked): it is used now, not deferred.
  if (ended?.kind === "result" || ended?.kind === "declined") {
    removeRecord(cx.o.stateDir, name);
    return ended;
  }
  return { kind: "defer" };
}
