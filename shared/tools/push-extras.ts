// What a notification of a built-in tool needs beyond its text (docs/push.md "What is sent"): a confirm's
// labels and a short single choice's options, cut for a push. Written once beside ./meaning.ts.
import type { WaitingCall } from "../contract/inbox.js";
import { PUSH_LIMITS } from "../contract/push.js";
import { cut } from "../text/cut.js";
import { asArgs } from "./meaning.js";
import { permissionChoices } from "./choices.js";

/** The notification extras of a call (confirm labels, a short single choice's options, a permission's `choices` — i34-hermes), cut for a push; also a sealed call's preview (adapter/e2e/frames.ts). */
export function pushExtras(name: string, args: unknown): Pick<WaitingCall, "yes_label" | "no_label" | "options"> {
  const a = asArgs(args);
  const label = (v: unknown) => (typeof v !== "string" || v.trim() === "" ? undefined : cut(v.replace(/\s+/g, " ").trim(), PUSH_LIMITS.maxLabel));
  const out: Pick<WaitingCall, "yes_label" | "no_label" | "options"> = {};
  if (name === "confirm") {
    const yes = label(a.yes_label);
    const no = label(a.no_label);
    if (yes) out.yes_label = yes;
    if (no) out.no_label = no;
  } else if (name === "choice" && a.multiple !== true && Array.isArray(a.options) && a.options.length >= 1 && a.options.length <= PUSH_LIMITS.maxOptions) {
    const opts = a.options.map(label);
    if (opts.every((o): o is string => o !== undefined)) out.options = opts;
  } else if (name === "permission") {
    const cs = permissionChoices(a.choices);
    if (cs) out.options = cs;
  }
  return out;
}
