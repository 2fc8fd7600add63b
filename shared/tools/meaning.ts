// What the built-in tools (../contract/builtin-tools.ts) mean to a human, written once (issue 27 §6): the one line that
// says what a call asks, what a tap answers, and what a notification needs to offer those taps. Used by the
// PWA's cards and one-line texts, the service worker, push answers, the inbox report and the WuKongIM text.
// Imports nothing at run time, so the service worker bundles it alone; push extras are ./push-extras.ts.
import type { ToolResultBody } from "../contract/protocol.js";
import { choiceResult, permissionChoices, type PermissionChoice } from "./choices.js";

type Args = Record<string, unknown>;

export const asArgs = (v: unknown): Args => (v && typeof v === "object" && !Array.isArray(v) ? (v as Args) : {});

/** The arguments that say what a call asks, in this order: the first one with text is its one line. */
export const ASKED_ARGS = ["question", "summary", "title", "prompt", "message"] as const;

/** What a call asks, as the agent wrote it (markdown, untrimmed); "" when no argument says it. A question
 * set (`ask_questions`) asks its questions, one after the other. */
export function askedArg(args: unknown): string {
  const a = asArgs(args);
  const set = Array.isArray(a.questions) ? a.questions.map((q) => asArgs(q).question).join(" · ") : 0;
  return [...ASKED_ARGS.map((k) => a[k]), set].find((v): v is string => typeof v === "string" && v.trim() !== "") ?? "";
}

/** A permission call's tool and what it acts on: the input's command, file, URL or pattern ("" when none). */
export function permissionParts(args: unknown): { tool: string; detail: string } {
  const a = asArgs(args);
  const input = asArgs(a.input);
  const detail = [input.command, input.file_path, input.url, input.pattern].find((v): v is string => typeof v === "string") ?? "";
  return { tool: typeof a.tool_name === "string" ? a.tool_name : "tool", detail: detail.replace(/\s+/g, " ").trim() };
}

/** A permission call's subject: its tool and the input's command, file, URL or pattern ("Bash: npm test"). */
export function permissionSubject(args: unknown): string {
  const { tool, detail } = permissionParts(args);
  return `${tool}${detail ? `: ${detail}` : ""}`;
}

/** A permission call as a collapsed row or a waiting item reads it: "Bash · rm -rf node_modules" (the tool alone when nothing is named). */
export function permissionLine(args: unknown): string {
  const { tool, detail } = permissionParts(args);
  return detail ? `${tool} · ${detail}` : tool;
}

/** What a call asks on one line (its tool's name when nothing says it), not yet cut. */
export function summaryOf(name: string, args: unknown): string {
  return (name === "permission" ? permissionSubject(args) : askedArg(args) || name).replace(/\s+/g, " ").trim();
}

/** The results a tap gives, the same from a card, a notification and an IM reply. */
export const ANSWERS = {
  yes: (): ToolResultBody => ({ message: "yes", confirmed: true }),
  no: (): ToolResultBody => ({ message: "no", confirmed: false }),
  picked: (options: string[]): ToolResultBody => ({ message: options.join(", "), selected: options }),
  allow: (): ToolResultBody => ({ message: "allow", behavior: "allow" }),
  deny: (): ToolResultBody => ({ message: "deny", behavior: "deny" }),
  approved: (): ToolResultBody => ({ message: "approved", approved: true }),
};

/** The notification action of a permission choice (`once` keeps the old `allow`). */
const choiceAction = (c: PermissionChoice): string => (c === "once" ? "allow" : c);

/** A notification action: `yes`/`no` (confirm), `allow`/`deny` (permission; with `choices` also `session`/`always`), `opt:<i>` (a single choice). */
export type TapAction = { action: string; title: string };

/**
 * What the tap `action` on a call answers, from the call's options (a choice's `options`, a sealed preview's),
 * or undefined when that tap does not answer this call. A permission's "always" needs the card (choosing a rule).
 */
export function tapResult(name: string, action: string, options?: unknown, multiple = false): ToolResultBody | undefined {
  if (name === "confirm") return action === "yes" ? ANSWERS.yes() : action === "no" ? ANSWERS.no() : undefined;
  if (name === "permission") {
    // With `choices` (passed here as `options`): exactly those; without: Allow / Deny.
    const offered = permissionChoices(options) ?? (["once", "deny"] as PermissionChoice[]);
    const c = offered.find((x) => choiceAction(x) === action);
    return c === undefined ? undefined : choiceResult(c);
  }
  const m = /^opt:(\d{1,2})$/.exec(action);
  if (name !== "choice" || !m || multiple || !Array.isArray(options)) return undefined;
  const o: unknown = options[Number(m[1])];
  return typeof o === "string" ? ANSWERS.picked([o]) : undefined;
}

/** The labels a notification's taps fall back to, in its language. */
export interface TapLabels {
  yes: string;
  no: string;
  allow: string;
  deny: string;
  /** A permission's "allow for this session" and "always allow" (only with `choices`). */
  session?: string;
  always?: string;
}

/** The taps a notification offers (at most `max`, the browser's Notification.maxActions): none when they do not fit. */
export function tapActions(tool: string, extras: { confirm?: { yes?: string; no?: string }; options?: unknown }, L: TapLabels, max: number): TapAction[] {
  if (tool === "confirm" && max >= 2)
    return [
      { action: "yes", title: extras.confirm?.yes || L.yes },
      { action: "no", title: extras.confirm?.no || L.no },
    ];
  // A permission: Allow / Deny here; "Always allow" (choosing a rule) needs the card. With `choices` (the
  // extras' options): those choices; when more than `max`, deny and the first others (the rest on the card).
  if (tool === "permission" && max >= 2) {
    const cs = permissionChoices(extras.options) ?? (["once", "deny"] as PermissionChoice[]);
    const kept = cs.includes("deny") ? [...cs.filter((c) => c !== "deny").slice(0, max - 1), "deny" as const] : cs.slice(0, max);
    const title = (c: PermissionChoice) => (c === "once" ? L.allow : c === "deny" ? L.deny : (L[c] ?? c));
    return kept.map((c) => ({ action: choiceAction(c), title: title(c) }));
  }
  const o = extras.options;
  if (Array.isArray(o) && o.length > 0 && o.length <= max) return o.map((x, i) => ({ action: `opt:${i}`, title: String(x) }));
  return [];
}
