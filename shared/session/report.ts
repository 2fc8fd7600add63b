// What a session attached to an inbox tells it: agent online, the calls waiting for a human and their
// question text. When it is sent (only when it changed, one in flight at a time) is shared/session/report-queue.ts.
import { INBOX_LIMITS, type SessionReport, type WaitingCall } from "../contract/inbox.js";
import { PUSH_LIMITS, type ClosedCall } from "../contract/push.js";
import type { Peer } from "./router.js";
import type { CallRow, Store } from "./store.js";
import type { Glance } from "./report-queue.js";
import type { SealedArgs } from "./sealed.js";
import { cut } from "../text/cut.js";
import { summaryOf } from "../tools/meaning.js";
import { pushExtras } from "../tools/push-extras.js";

/** The human-readable line of a call for the Waiting list. */
export function callText(name: string, args: unknown): string {
  return cut(summaryOf(name, args), INBOX_LIMITS.maxWaitingText);
}

export { pushExtras };

/** How a call that left the Waiting list ended, from its kept row (none: it was cancelled and dropped). */
function outcomeOf(store: Store, callId: string): ClosedCall {
  const row = store.getCall(callId);
  if (!row) return { call_id: callId, outcome: "cancelled" };
  if (row.status === "open") return { call_id: callId, outcome: "error" }; // still open but no longer listed (past the 20)
  let f: { answered_by?: unknown; result?: { message?: unknown }; error?: { code?: unknown }; sealed?: unknown } = {};
  try {
    f = JSON.parse(row.result ?? "{}") as typeof f;
  } catch {
    /* our own JSON */
  }
  const by = typeof f.answered_by === "string" ? f.answered_by : undefined;
  const out: ClosedCall = {
    call_id: callId,
    outcome: f.result || f.sealed ? "answered" : f.error?.code === "timeout" ? "timeout" : f.error?.code === "declined" ? "declined" : "error",
  };
  if (by) out.by = by;
  const msg = f.result?.message;
  if (typeof msg === "string" && msg !== "") out.answer = cut(msg, PUSH_LIMITS.maxAnswer);
  return out;
}

/** The listed call ids of the last report, kept in the session's own storage so an eviction forgets nothing. */
const LISTED_KEY = "inbox.listed";

/** A sealed call's entry (docs/e2e.md): no text, labels or options — its sealed preview and its caller. */
function sealedEntry(c: CallRow): WaitingCall {
  const w: WaitingCall = { call_id: c.call_id, name: c.name, text: "", created_at: c.created_at, deadline_at: c.deadline, sealed: true, from: c.caller };
  try {
    const a = JSON.parse(c.args || "{}") as Partial<SealedArgs>;
    if (a.preview) w.preview = a.preview;
  } catch {
    /* our own JSON */
  }
  return w;
}

/** The agent's open calls, oldest first. Unchecked calls too: a call waits unchecked until a device that serves it connects once. */
const agentCalls = (store: Store) =>
  store
    .openCalls()
    .filter((c) => c.caller_role === "agent")
    .sort((x, y) => x.created_at - y.created_at);
export const agentOnline = (peers: readonly Peer[]) => peers.some((p) => p.role === "agent" && !p.clientId.startsWith("~"));

/** What a report would say, without parsing any arguments (shared/session/report-queue.ts decides with it). */
export function glance(store: Store, peers: readonly Peer[]): Glance {
  const { listed, pending } = store.agentOpen(INBOX_LIMITS.maxWaitingPerSession);
  return { online: agentOnline(peers), listed, pending };
}

export function summarize(store: Store, peers: readonly Peer[], now: number, sealed = false): SessionReport {
  const open = agentCalls(store);
  const waiting: WaitingCall[] = open.slice(0, INBOX_LIMITS.maxWaitingPerSession).map((c) => {
    if (sealed) return sealedEntry(c);
    let args: unknown = {};
    try {
      args = JSON.parse(c.args || "{}");
    } catch {
      /* kept args are our own JSON; an empty one reads as {} */
    }
    return { call_id: c.call_id, name: c.name, text: callText(c.name, args), created_at: c.created_at, deadline_at: c.deadline, ...pushExtras(c.name, args) };
  });
  const agent_online = agentOnline(peers);
  const report: SessionReport = { agent_online, pending: open.length, last_activity: now, waiting };
  // Which listed calls left since the last report, and how: the inbox updates their notifications.
  let listed: string[] = [];
  try {
    listed = JSON.parse(store.meta(LISTED_KEY) ?? "[]") as string[];
  } catch {
    /* our own JSON */
  }
  const ids = waiting.map((w) => w.call_id);
  const left = listed.filter((id) => !ids.includes(id));
  if (left.length) report.closed = left.map((id) => outcomeOf(store, id));
  if (left.length || ids.some((id) => !listed.includes(id))) store.setMeta(LISTED_KEY, JSON.stringify(ids));
  return report;
}
