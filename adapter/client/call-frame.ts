// The frame of a call the agent makes, checked before it goes anywhere: its shape (contract §4.1, the relay's own
// zod schema) and, in a sealed session, its arguments against the app's tool — the relay cannot check them any
// more, so the caller does (docs/e2e.md rule 2).
import { describeIssues, ToolCallIn, type ToolDef } from "../../shared/contract/protocol.js";
import type { CallFrame } from "../../shared/client/call-book.js";
import { LineUpError } from "../../shared/client/errors.js";
import { checkCallArguments } from "../e2e/frames.js";

export interface CallAsked {
  callId: string;
  name: string;
  action: string | undefined;
  args: Record<string, unknown>;
  timeoutS: number | undefined;
}

/** The call's frame, or the error the call fails with at once (`bad_frame`, `e2e_no_key`, `invalid_arguments`). */
export function callFrameOf(c: CallAsked, sealed: { hasKey: boolean; appTools: ToolDef[] } | undefined): CallFrame | LineUpError {
  const raw: Record<string, unknown> = { type: "tool.call", call_id: c.callId, name: c.name, arguments: c.args };
  if (c.action !== undefined && c.action !== "") raw.action = c.action;
  if (c.timeoutS !== undefined) raw.timeout_s = c.timeoutS;
  const parsed = ToolCallIn.safeParse(raw);
  if (!parsed.success) return new LineUpError("bad_frame", describeIssues(parsed.error));
  const frame = parsed.data;
  if (sealed) {
    if (!sealed.hasKey) return new LineUpError("e2e_no_key", "this session is sealed but this machine holds no content key of its inbox (`lineup e2e status`)");
    const bad = checkCallArguments(sealed.appTools, c.name, frame.action, frame.arguments);
    if (bad) return new LineUpError("invalid_arguments", bad);
  }
  return frame;
}
