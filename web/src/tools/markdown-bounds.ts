// The pure half of the markdown renderer (no DOM, so Node tests can run it): marked's lexer with bounds
// that keep hostile or runaway agent text from hanging the page, plus entity and URL helpers.
//
// marked is quadratic on some inputs (measured, marked 18.2, Node 22: "a*_a" repeated to 16 KB takes
// 3.3 s, "_a" × 32 K 1.3 s; 200 nested quotes on one line overflow the stack at ~2000; a list nested
// 5000 deep exhausts 4 GB). So:
//   - text longer than MARKDOWN_LIMITS.chars, or nested deeper than MARKDOWN_LIMITS.depth, is not parsed at
//     all: it is shown as plain preformatted text with a note;
//   - each inline run (a paragraph, heading, table cell, ...) costs its length × its emphasis/link
//     delimiters (* _ ~ [), the factor marked's delimiter matching is quadratic in; runs are parsed while
//     the message's total stays within MARKDOWN_LIMITS.inlineCost, later or bigger ones stay plain text;
//   - tokens that would become more than MARKDOWN_LIMITS.elements elements are shown as plain text too:
//     in Chromium, 8000 list items take 1.2 s to lay out, 30 000 nested lists 2 s.
import { Lexer, type Token, type Tokens } from "marked";

export const MARKDOWN_LIMITS = {
  /** Characters of markdown parsed at all (32 KiB: several thousand words). */
  chars: 32 * 1024,
  /** Container nesting of any line: quote and list markers at its start plus its indentation / 2. */
  depth: 32,
  /** Sum over inline runs of length × delimiters (about 0.1 s of the worst input measured). */
  inlineCost: 4_000_000,
  /** Elements the tokens become: layout, not parsing, is the cost of big documents (0.1–0.15 ms each). */
  elements: 4000,
};

export type Lexed = { kind: "markdown"; tokens: Token[] } | { kind: "plain"; reason: "length" | "depth" };

/** The deepest container nesting of any line (a linear scan of each line's start). */
export function nestingDepth(text: string): number {
  const spaceAfter = (k: number) => {
    const s = text.charCodeAt(k);
    return s === 32 || s === 9;
  };
  let max = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    let depth = 0;
    let cols = 0;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 32) {
        cols++;
        i++;
        continue;
      } // space
      if (c === 9) {
        cols += 4;
        i++;
        continue;
      } // tab
      if (c === 62) {
        depth++;
        i++;
        continue;
      } // >
      if ((c === 45 || c === 42 || c === 43) && spaceAfter(i + 1)) {
        depth++;
        i++;
        continue;
      } // - * +
      if (c >= 48 && c <= 57) {
        let j = i;
        while (j < n && j - i < 9 && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
        const m = text.charCodeAt(j);
        if ((m === 46 || m === 41) && spaceAfter(j + 1)) {
          depth++;
          i = j + 1;
          continue;
        } // 1. 1)
      }
      break;
    }
    // Each marker needs one space after it; further whitespace is indentation (2 columns a list level).
    depth += Math.floor(Math.max(0, cols - depth) / 2);
    if (depth > max) max = depth;
    const nl = text.indexOf("\n", i);
    if (nl < 0) break;
    i = nl + 1;
  }
  return max;
}

/** What one inline run costs marked: its length × its * _ ~ [ delimiters. */
export function inlineCost(src: string): number {
  let d = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 42 || c === 95 || c === 126 || c === 91) d++; // * _ ~ [
  }
  return d * src.length;
}

/** marked's own lexer (GFM), whose inline runs past the message's budget stay one plain text token. */
class BoundedLexer extends Lexer {
  private spent = 0;
  private nested = 0;

  constructor(private readonly budget: number) {
    super({ gfm: true });
  }

  override inlineTokens(src: string, tokens: Token[] = []): Token[] {
    // Only runs count: marked calls this again for the inside of a link or an emphasis, within the run.
    if (this.nested === 0) {
      const cost = inlineCost(src);
      if (this.spent + cost > this.budget) {
        const plain: Tokens.Text = { type: "text", raw: src, text: src, escaped: true };
        tokens.push(plain);
        return tokens;
      }
      this.spent += cost;
    }
    this.nested++;
    try {
      return super.inlineTokens(src, tokens);
    } finally {
      this.nested--;
    }
  }
}

// Tokens that become text, not an element.
const TEXTUAL = new Set(["text", "escape", "space", "def", "html"]);

/** How many elements the tokens become (counting stops past `limit`). */
export function elementCount(tokens: Token[], limit = Infinity): number {
  let n = 0;
  const stack: Token[][] = [tokens];
  while (stack.length && n <= limit) {
    for (const tk of stack.pop()!) {
      if (!TEXTUAL.has(tk.type)) n++;
      if ("tokens" in tk && tk.tokens) stack.push(tk.tokens);
      if (tk.type === "list") stack.push((tk as Tokens.List).items);
      if (tk.type === "table") {
        const table = tk as Tokens.Table;
        n += 2 + table.rows.length; // thead, tbody and a row each
        for (const cell of [...table.header, ...table.rows.flat()]) {
          n++;
          stack.push(cell.tokens);
        }
      }
    }
  }
  return n;
}

/** Lexes agent markdown within MARKDOWN_LIMITS, or says why it is to be shown as plain text. */
export function lexMarkdown(text: string, limits = MARKDOWN_LIMITS): Lexed {
  if (text.length > limits.chars) return { kind: "plain", reason: "length" };
  if (nestingDepth(text) > limits.depth) return { kind: "plain", reason: "depth" };
  const tokens = new BoundedLexer(limits.inlineCost).lex(text);
  if (elementCount(tokens, limits.elements) > limits.elements) return { kind: "plain", reason: "length" };
  return { kind: "markdown", tokens };
}

// marked leaves character references in text for an HTML renderer to resolve; we build text nodes, so we
// resolve the common named ones and every numeric one (others stay as written).
const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
  copy: "©",
  reg: "®",
  trade: "™",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”",
  laquo: "«",
  raquo: "»",
  middot: "·",
  bull: "•",
  deg: "°",
  times: "×",
  divide: "÷",
  plusmn: "±",
  larr: "←",
  rarr: "→",
  uarr: "↑",
  darr: "↓",
  harr: "↔",
  euro: "€",
  pound: "£",
  yen: "¥",
  cent: "¢",
  sect: "§",
  para: "¶",
  check: "✓",
  hearts: "♥",
};

export function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(
    /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/g,
    (m, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
      if (name !== undefined) return ENTITIES[name] ?? m;
      const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex ?? "", 16);
      return cp > 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? String.fromCodePoint(cp) : "\ufffd";
    },
  );
}

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/**
 * The link target to use, or null when it must not be a link: only absolute http(s) and mailto URLs
 * (no javascript:, data:, relative or protocol-relative links). `resolve`: the href still holds
 * character references (every link but an autolink).
 */
export function safeHref(href: string, resolve: boolean): string | null {
  const h = (resolve ? decodeEntities(href) : href).trim();
  if (!/^(?:https?:|mailto:)/i.test(h)) return null;
  try {
    return SAFE_PROTOCOLS.has(new URL(h).protocol) ? h : null;
  } catch {
    return null;
  }
}
