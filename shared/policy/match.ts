// Matching `Bash(…)` rule patterns against commands. Two questions:
// - shellMatch: does the command, as written, match? (allow, and a definite deny/ask)
// - mayMatch: could the command match once the shell has expanded the parts known only at run time
//   (`git ${x:-push}`, `git push${IFS}origin`, `git p*`, `xargs git`)? A deny or ask rule that may match
//   makes the call "ask" — it is never silently allowed (docs/permissions.md §4.1).
import type { Rule } from "./rules.js";
import type { Word, WordPart } from "./shell.js";

export type ShellRule = Extract<Rule, { kind: "shell" }>;

/** A command as literal text and `null` parts whose text (any text, blanks included) is known only at run time. */
export type Template = WordPart[];

/** Matches a command string against `Bash(…)`: exact, `prefix *` (word boundary), or `*` anywhere. */
export function shellMatch(rule: ShellRule, text: string, forAllow: boolean, exactOnly: boolean): boolean {
  if (rule.match === "exact") return text === rule.pattern;
  if (forAllow && exactOnly) return false;
  if (rule.match === "prefix") return text === rule.pattern || text.startsWith(rule.pattern + " ");
  return wildcard(rule.pattern).test(text);
}

const wildcardCache = new Map<string, RegExp>();
function wildcard(pattern: string): RegExp {
  let re = wildcardCache.get(pattern);
  if (re) return re;
  const { body, optionalTail } = splitTail(pattern);
  let src = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? "";
    if (c === "\\" && i + 1 < body.length) {
      src += escapeRe(body[i + 1] ?? "");
      i++;
    } else if (c === "*") src += "[\\s\\S]*";
    else src += escapeRe(c);
  }
  re = new RegExp(`^${src}${optionalTail ? "(?: [\\s\\S]*)?" : ""}$`);
  wildcardCache.set(pattern, re);
  return re;
}

/** A trailing ` *` is optional, so `git * main *` also matches `git log main`. */
function splitTail(pattern: string): { body: string; optionalTail: boolean } {
  const optionalTail = pattern.endsWith(" *") && !pattern.endsWith("\\ *");
  return { body: optionalTail ? pattern.slice(0, -2) : pattern, optionalTail };
}

/** The words of a command as a template. A word that is unknown as a whole may vanish (`$EMPTY git push`). */
export function templateOf(ws: readonly Word[]): Template {
  const out: Template = [];
  let prevWhole = false;
  ws.forEach((w, i) => {
    const whole = w.parts.length === 1 && w.parts[0] === null;
    // The blank next to a vanishing word is left to its unknown part, which can be "" or " x".
    if (i > 0 && !whole && !prevWhole) out.push(" ");
    out.push(...w.parts);
    prevWhole = whole;
  });
  return out;
}

export const hasUnknown = (ws: readonly Word[]): boolean => ws.some((w) => w.parts.includes(null));

// A rule pattern as tokens: one character each, or STAR for `*` (any text).
const STAR = 0;
type Tok = string | typeof STAR;
const tokenCache = new Map<string, Tok[][]>();

function ruleTokens(rule: ShellRule): Tok[][] {
  const key = `${rule.match}\u0000${rule.pattern}`;
  const hit = tokenCache.get(key);
  if (hit) return hit;
  let alts: Tok[][];
  if (rule.match === "exact") alts = [[...rule.pattern]];
  else if (rule.match === "prefix") alts = [[...rule.pattern], [...rule.pattern, " ", STAR]];
  else {
    const { body, optionalTail } = splitTail(rule.pattern);
    const toks: Tok[] = [];
    for (let i = 0; i < body.length; i++) {
      const c = body[i] ?? "";
      if (c === "\\" && i + 1 < body.length) toks.push(body[++i] ?? "");
      else toks.push(c === "*" ? STAR : c);
    }
    alts = optionalTail ? [toks, [...toks, " ", STAR]] : [toks];
  }
  tokenCache.set(key, alts);
  return alts;
}

/**
 * Whether some run-time text for the unknown parts makes the command match the rule. Decided by running
 * the pattern as an automaton over the template: a literal character moves each state on, an unknown part
 * can produce any text and so reaches every later state. (Both sides are patterns with only `*`.)
 */
export function mayMatch(rule: ShellRule, t: Template): boolean {
  return ruleTokens(rule).some((p) => intersects(p, t));
}

function intersects(p: readonly Tok[], t: Template): boolean {
  const m = p.length;
  let states = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  states[0] = 1;
  const close = (s: Uint8Array) => {
    for (let i = 0; i < m; i++) if (s[i] && p[i] === STAR) s[i + 1] = 1;
  };
  close(states);
  for (const part of t) {
    if (part === null) {
      const first = states.indexOf(1);
      if (first === -1) return false;
      states.fill(1, first);
      continue;
    }
    for (const c of part) {
      next.fill(0);
      let any = false;
      for (let i = 0; i < m; i++) {
        if (!states[i]) continue;
        if (p[i] === STAR) next[i] = 1;
        else if (p[i] === c) next[i + 1] = 1;
        else continue;
        any = true;
      }
      if (!any) return false;
      close(next);
      [states, next] = [next, states];
    }
  }
  return states[m] === 1;
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
