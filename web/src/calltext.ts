// The one line that says what a call asks ("Deploy now?"): for the "Waiting for you" list and a collapsed
// card. Markdown questions lose their markers here; the card itself still renders them.
import type { CallEntry } from "./conn.js";
import { cut } from "../../shared/text/cut.js";
import { askedArg, permissionLine } from "../../shared/tools/meaning.js";

/** The first line of markdown with its block and emphasis markers removed, cut to `max` characters. */
export function plainLine(md: string, max = 200): string {
  const line =
    md
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l && !/^(```|~~~|---+|\*\*\*+|\|?[-:| ]+\|?)$/.test(l)) ?? "";
  const plain = line
    .replace(/^(#{1,6}\s+|>\s*|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+)+/, "")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|__|~~|`)/g, "")
    .replace(/(^|\W)[*_](\S(?:.*?\S)?)[*_](?=\W|$)/g, "$1$2")
    .trim();
  return cut(plain, max);
}

/** A table's separator row (`|---|:--:|`), alone or inside a line the relay flattened. */
const TABLE_RULE = /\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?\s*)?/g;

/**
 * All of a markdown text as one plain line for a preview (the Waiting list): block markers, emphasis, links,
 * fences and rules go; a table's separator row goes and its cell pipes become " · ". Works on multi-line
 * markdown and on the relay's text, whose newlines are already spaces (shared/tools/meaning.ts summaryOf).
 */
export function previewText(md: string, max = 280): string {
  const flat = md
    .split("\n")
    .map((l) => plainLine(l, 1e9))
    .join(" ")
    .replace(TABLE_RULE, " ")
    .replace(/(^|\s)#{1,6}\s+/g, "$1")
    .split("|")
    .map((x) => x.trim())
    .filter(Boolean)
    .join(" · ");
  return cut(flat.replace(/\s+/g, " "), max);
}

const asked = (c: Pick<CallEntry, "args">): string => askedArg(c.args);

/** What the call asks, its first line as plain text (a collapsed card); "" when nothing readable. */
export function callText(c: Pick<CallEntry, "args">): string {
  return plainLine(asked(c));
}

/** All of what it asks on one line, as the relay's inbox lists it (shared/session/report.ts callText), markdown
 * stripped; a permission by its tool and command (a sealed one's relay text is empty: this is the waiting list's title). */
export function waitText(c: Pick<CallEntry, "args"> & { name?: string }): string {
  return c.name === "permission" ? cut(permissionLine(c.args), 280) : previewText(asked(c), 280);
}

/** A value as the tool log shows it: a string as it is, anything else as JSON, cut to `n` characters. */
export function logText(v: unknown, n = 160): string {
  return cut(typeof v === "string" ? v : (JSON.stringify(v) ?? String(v)), n);
}
