// i34-hermes: a `permission` call may name the choices its caller accepts (`choices`, docs/permissions.md §14):
// which ones, in which order, and the result each gives. Apart from ./meaning.ts so that the PWA's lazy
// permission card, which uses it, adds nothing to the app's first load.
import type { ToolResultBody } from "../contract/protocol.js";

/** The choices a permission caller may accept, in the order cards and notifications offer them. */
export const PERMISSION_CHOICES = ["once", "session", "always", "deny"] as const;
export type PermissionChoice = (typeof PERMISSION_CHOICES)[number];

/** A permission call's `choices`, checked: the known ones in PERMISSION_CHOICES' order, or undefined (no
 * `choices`, or a list that names none we know — Claude Code's card and taps). */
export function permissionChoices(v: unknown): PermissionChoice[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const got = PERMISSION_CHOICES.filter((c) => v.includes(c));
  return got.length ? got : undefined;
}

/** The result a permission choice gives: `once` is Claude Code's `allow`; `session`/`always` allow (no rule). */
export const choiceResult = (c: PermissionChoice): ToolResultBody =>
  c === "once" ? { message: "allow", behavior: "allow" } : c === "deny" ? { message: "deny", behavior: "deny" } : { message: c, behavior: "allow" };
