// What a holder takes from the relay in a sealed session (issue 26; docs/e2e.md "What a lying relay cannot
// do"): content only inside envelopes that open with the inbox's key, and in plaintext only what the relay
// itself makes — its own errors, which can END a call but never answer it. The adapter, the PWA and the
// service worker screen every frame of a sealed session with `screenSealed` before anything else reads it.
import type { Frame } from "./frames.js";

/** Errors the relay puts into a call's `tool.result` itself (shared/session/router.ts): the only plaintext results a
 * sealed session accepts, and only to end the call with that error. `internal` is the router's "no result". */
export const RELAY_CALL_ERRORS: readonly string[] = ["timeout", "unknown_tool", "unknown_action", "too_many_calls", "instance_gone", "over_budget", "internal"];
/** Codes of the relay's own `error` frames (shared/contract/protocol.ts ErrorCode): about a frame this client sent. */
export const RELAY_FRAME_ERRORS: readonly string[] = [
  "bad_json",
  "bad_frame",
  "too_large",
  "forbidden",
  "rate_limited",
  "revoked",
  "unknown_call",
  "duplicate_call",
  "over_budget",
  "tool_conflict",
  "stale_epoch",
  "peer_offline",
  "internal",
];
/** Why the relay closes a call on the other holders (`tool.cancel.reason`): it only ever stops work or a card. */
export const RELAY_CANCEL_REASONS: readonly string[] = ["answered", "cancelled", "timeout"];

export type Screened = { frame: Frame } | { drop: string };

const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const omit = (f: Frame, keys: readonly string[]): Frame => Object.fromEntries(Object.entries(f).filter(([k]) => !keys.includes(k)));

/** An agent status as a sealed session may show it: its state, and its detail only inside an envelope. */
function screenStatus(st: unknown): unknown {
  if (!obj(st)) return st;
  return omit(st, ["detail"]);
}

function screenAgent(a: unknown): unknown {
  return obj(a) && a.status !== undefined ? { ...a, status: screenStatus(a.status) } : a;
}

function screenPeers(p: unknown): unknown {
  return obj(p) ? { ...p, agent: screenAgent(p.agent) } : p;
}

/**
 * A frame from the relay in a sealed session, before it is opened: the plaintext that may stand beside an
 * envelope is cut off (an envelope's sealed fields, a status detail, a cancel's `answer`), and a frame whose
 * content is plaintext is dropped with the reason — except the relay's own errors (RELAY_CALL_ERRORS in a
 * `tool.result` without `result`, RELAY_FRAME_ERRORS in an `error`), which may only end a call.
 */
export function screenSealed(f: Frame): Screened {
  const sealed = f.sealed !== undefined;
  switch (f.type) {
    case "hello":
      return { frame: f.peers === undefined ? f : { ...f, peers: screenPeers(f.peers) } };
    case "presence":
      return { frame: f.agent === undefined ? f : { ...f, agent: screenAgent(f.agent) } };
    case "tool.call":
      return sealed ? { frame: omit(f, ["arguments"]) } : { drop: "a plaintext tool.call (its arguments would be the relay's)" };
    case "tool.result": {
      if (sealed) return { frame: omit(f, ["result", "error"]) };
      const code = obj(f.error) ? f.error.code : undefined;
      if (f.result === undefined && typeof code === "string" && RELAY_CALL_ERRORS.includes(code)) return { frame: omit(f, ["result"]) };
      return {
        drop: `a plaintext tool.result${typeof code === "string" ? ` with error ${code}` : ""} (only the relay's own errors travel in plaintext, and they never answer)`,
      };
    }
    case "message":
      if (sealed) return { frame: omit(f, ["content"]) };
      // The history budget's placeholder of an old sealed message: no content, nothing to take.
      if (f.elided === true && f.content === undefined) return { frame: f };
      return { drop: "a plaintext message" };
    case "tool.cancel":
      if (sealed) return { frame: omit(f, ["reason", "answer"]) };
      if (typeof f.reason === "string" && RELAY_CANCEL_REASONS.includes(f.reason)) return { frame: omit(f, ["answer"]) };
      return { drop: "a plaintext tool.cancel with a reason the relay does not make" };
    case "tool.list": {
      if (!Array.isArray(f.tools)) return { frame: f };
      const tools = (f.tools as unknown[]).filter((t) => obj(t) && t.sealed !== undefined);
      return { frame: { ...f, tools } };
    }
    case "rtc.signal":
      return sealed ? { frame: omit(f, ["signal", "for"]) } : { drop: "a plaintext rtc.signal (its SDP would be the relay's)" };
    case "error":
      return typeof f.code === "string" && RELAY_FRAME_ERRORS.includes(f.code)
        ? { frame: f }
        : { drop: `an error frame with code ${JSON.stringify(f.code)} the relay does not make` };
    default:
      return { drop: `an unknown frame type ${JSON.stringify(f.type)}` };
  }
}

/** The plaintext tool entries a `tool.list` of a sealed session carried (dropped by screenSealed), for logs. */
export function plaintextTools(f: Frame): string[] {
  if (f.type !== "tool.list" || !Array.isArray(f.tools)) return [];
  return (f.tools as unknown[]).filter((t) => !(obj(t) && t.sealed !== undefined)).map((t) => (obj(t) && typeof t.name === "string" ? t.name : "?"));
}
