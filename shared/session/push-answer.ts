// The session's side of an answer given on a notification (docs/push.md): the inbox checked the token;
// here the tapped action becomes the same result the app's card would send, routed as a `tool.result` of
// that device (a virtual app peer, as the IM bridge's users are), under the router's usual rules — so the
// first answer wins and the other devices learn who answered. Worker session object and LAN server alike.
import type { SessionEngine } from "./engine.js";
import { PUSH_LIMITS, type CallOutcome, type PushAnswerInput, type SessionPushAnswer } from "../contract/push.js";
import type { Peer } from "./router.js";
import type { Store } from "./store.js";
import type { ToolResultBody } from "../contract/protocol.js";
import { tapResult } from "../tools/meaning.js";
import { cut } from "../text/cut.js";

/** What the PWA's cards send for the same tap (shared/tools/meaning.ts), from the call's own arguments. */
export function resultFor(name: string, args: Record<string, unknown>, action: string): ToolResultBody | undefined {
  return tapResult(name, action, name === "permission" ? args.choices : args.options, args.multiple === true);
}

/** What a tap learns of a call that is no longer open: its outcome, who answered and the answer, cut. */
export function closedOf(store: Store, callId: string): SessionPushAnswer {
  const row = store.getCall(callId);
  if (!row) return { status: "closed", outcome: "cancelled" };
  let f: { answered_by?: unknown; result?: { message?: unknown }; error?: { code?: unknown }; sealed?: unknown } = {};
  try {
    f = JSON.parse(row.result ?? "{}") as typeof f;
  } catch {
    /* our own JSON */
  }
  const outcome: CallOutcome =
    f.result || f.sealed ? "answered" : f.error?.code === "timeout" ? "timeout" : f.error?.code === "declined" ? "declined" : "error";
  const out: SessionPushAnswer = { status: "closed", outcome };
  if (typeof f.answered_by === "string") out.by = f.answered_by;
  if (typeof f.result?.message === "string") out.answer = cut(f.result.message, PUSH_LIMITS.maxAnswer);
  return out;
}

export async function answerFromPush(
  engine: SessionEngine,
  store: Store,
  device: { id: string; name: string },
  callId: string,
  answer: PushAnswerInput,
): Promise<SessionPushAnswer> {
  const c = store.getCall(callId);
  if (!c || c.status !== "open" || c.caller_role !== "agent") return closedOf(store, callId);
  const peer: Peer = { role: "app", clientId: device.id, conn: "push", virtual: true, name: device.name };
  // A sealed session takes only a sealed answer (the relay cannot make one from an action), and the reverse.
  const sealed = engine.meta()?.sealed === true;
  if (sealed !== (typeof answer !== "string")) return { status: "bad_action" };
  if (typeof answer !== "string") {
    await engine.route(peer, { type: "tool.result", call_id: callId, answer: { sealed: { sealed: answer.sealed } } });
    const after = closedOf(store, callId);
    return after.status === "closed" && after.by === device.id && after.outcome === "answered" ? { status: "answered" } : after;
  }
  const action = answer;
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(c.args || "{}") as Record<string, unknown>;
  } catch {
    /* our own JSON */
  }
  const result = resultFor(c.name, args, action);
  if (!result) return { status: "bad_action" };
  await engine.route(peer, { type: "tool.result", call_id: callId, answer: { plain: { result } } });
  const after = closedOf(store, callId);
  return after.status === "closed" && after.by === device.id && after.outcome === "answered" ? { status: "answered" } : after;
}
