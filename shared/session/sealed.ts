// The relay's side of sealed sessions (docs/e2e.md "Wiring"): pure checks and frame shapes the router calls.
// The relay never opens anything: it checks envelopes' shape (shared/contract/protocol.ts), their epoch, their size,
// and forwards them with their author named for the associated data.
import type {
  Envelope,
  InFrame,
  MessageOut,
  SealedArgs,
  SealedMessageOut,
  SealedToolCallOut,
  SealedToolDef,
  SealedToolDefOut,
  ToolDef,
} from "../contract/protocol.js";
import type { CallRow } from "./store.js";

export type { SealedArgs };

/** Every envelope a frame carries (none for a plaintext payload). */
function envelopesOf(f: InFrame): Envelope[] {
  const args = (a: SealedArgs) => (a.preview ? [a.sealed, a.preview] : [a.sealed]);
  switch (f.type) {
    case "tool.list":
      return f.tools && "sealed" in f.tools ? f.tools.sealed.map((t) => t.sealed) : [];
    case "tool.call":
      return "sealed" in f.args ? args(f.args.sealed) : [];
    case "tool.reseal":
      return args(f.args);
    case "tool.result":
      return "sealed" in f.answer ? [f.answer.sealed.sealed] : [];
    case "message":
      return "sealed" in f.body ? [f.body.sealed] : [];
    case "status":
      return f.detail && "sealed" in f.detail ? [f.detail.sealed] : [];
    case "tool.cancel":
      return f.sealed ? [f.sealed] : [];
    case "tool.ack":
      return [];
    case "rtc.signal":
      return "sealed" in f.signal ? [f.signal.sealed] : [];
  }
}

/** The lowest epoch below the session's current one among a frame's envelopes (refused: `stale_epoch`), or
 * undefined. `current` is only read when the frame carries an envelope. */
export function staleEpoch(f: InFrame, current: () => number): { epoch: number; current: number } | undefined {
  const envelopes = envelopesOf(f);
  if (envelopes.length === 0) return undefined;
  const now = current();
  let low: number | undefined;
  for (const e of envelopes) if (e.e < now && (low === undefined || e.e < low)) low = e.e;
  return low === undefined ? undefined : { epoch: low, current: now };
}

/** A sealed call as forwarded to its providers: the envelopes, the caller as `sender`, never arguments. */
export function sealedCallFrame(c: CallRow): SealedToolCallOut {
  const a = JSON.parse(c.args) as SealedArgs;
  const f: SealedToolCallOut = {
    type: "tool.call",
    call_id: c.call_id,
    name: c.name,
    sealed: a.sealed,
    deadline: c.deadline,
    from: c.caller_role,
    sender: c.caller,
  };
  if (a.preview) f.preview = a.preview;
  if (c.action !== null) f.action = c.action;
  if (c.timeout_s !== null) f.timeout_s = c.timeout_s;
  return f;
}

/** A sealed tool list's entries as kept in a registration: each names its author (`sender`, the AAD's). The
 * catalog code reads only `name`, `type` and action names of them, so they share ToolDef's storage. */
export function sealedTools(tools: readonly SealedToolDef[], sender: string): SealedToolDefOut[] {
  return tools.map((t) => ({ ...t, sender }));
}

/** The history budget's placeholder for a sealed message: the whole envelope goes (docs/e2e.md). */
export function elidedSealed(m: SealedMessageOut): SealedMessageOut {
  const { sealed: _s, ...rest } = m;
  return { ...rest, elided: true };
}

/** A kept message of a sealed session (it has `sealed`, or nothing once elided, never `content`). */
export const isSealedMessage = (m: MessageOut | SealedMessageOut): m is SealedMessageOut => !("content" in m);
