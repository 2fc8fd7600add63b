// Unit tests of the pure half of the PWA's markdown renderer (web/src/tools/markdown-bounds.ts): the
// input bounds that keep marked from hanging the page, entity decoding and the link filter. What the
// tokens become in the DOM is tested in Chromium (browser-content.test.ts).
import type { Token, Tokens } from "marked";
import { describe, expect, it } from "vitest";
import { decodeEntities, elementCount, inlineCost, lexMarkdown, MARKDOWN_LIMITS, nestingDepth, safeHref } from "../../web/src/tools/markdown-bounds.js";

const nested = (n: number, unit: (i: number) => string) => Array.from({ length: n }, (_, i) => unit(i)).join("\n");

function tokensOf(text: string): Token[] {
  const r = lexMarkdown(text);
  if (r.kind !== "markdown") throw new Error(`expected markdown, got plain (${r.reason})`);
  return r.tokens;
}

function timed<T>(f: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = f();
  return { value, ms: performance.now() - t0 };
}

describe("markdown input bounds", () => {
  it("measures nesting from quote markers, list markers and indentation", () => {
    expect(nestingDepth("plain text\nmore")).toBe(0);
    expect(nestingDepth("> a\n> > b\n> > > c")).toBe(3);
    expect(nestingDepth("- a\n  - b\n    - c")).toBe(3); // one marker and 4 columns of indentation
    expect(nestingDepth("> - a\n>   - b")).toBe(3);
    expect(nestingDepth("1. a\n   1) b")).toBe(2);
    expect(nestingDepth("- - - - x")).toBe(4);
    expect(nestingDepth("> - > - x")).toBe(4);
    expect(nestingDepth("\t\tcode")).toBe(4);
    expect(nestingDepth("-no space, no marker\n**bold**")).toBe(0);
  });

  it("parses ordinary markdown, but shows text over the length or nesting bound as plain text", () => {
    expect(lexMarkdown("**hi**").kind).toBe("markdown");
    expect(lexMarkdown("a".repeat(MARKDOWN_LIMITS.chars))).toMatchObject({ kind: "markdown" });
    expect(lexMarkdown("a".repeat(MARKDOWN_LIMITS.chars + 1))).toEqual({ kind: "plain", reason: "length" });
    expect(lexMarkdown(`${"> ".repeat(MARKDOWN_LIMITS.depth)}x`).kind).toBe("markdown");
    expect(lexMarkdown(`${"> ".repeat(MARKDOWN_LIMITS.depth + 1)}x`)).toEqual({ kind: "plain", reason: "depth" });
    expect(lexMarkdown(nested(40, (i) => `${"  ".repeat(i * 2)}- item ${i}`))).toEqual({ kind: "plain", reason: "depth" });
  });

  it("costs an inline run its length times its emphasis and link delimiters", () => {
    expect(inlineCost("plain words only")).toBe(0);
    expect(inlineCost("**a** _b_")).toBe(6 * 9);
    expect(inlineCost("[x](y) ~~z~~")).toBe(5 * 12);
  });

  it("leaves an inline run over the budget as one plain text token, and still formats ordinary runs", () => {
    const hostile = "a*_a".repeat(4000); // 16 KB of delimiters: seconds in marked without the budget
    const tokens = tokensOf(`Intro with **bold**\n\n${hostile}`);
    const [intro, space, para] = tokens as [Tokens.Paragraph, Token, Tokens.Paragraph];
    expect(intro.tokens.map((t) => t.type)).toEqual(["text", "strong"]);
    expect(space.type).toBe("space");
    expect(para.tokens).toEqual([{ type: "text", raw: hostile, text: hostile, escaped: true }]);
  });

  it("counts the elements tokens become, and shows text that would become too many as plain text", () => {
    expect(elementCount(tokensOf("plain"))).toBe(1); // <p>
    expect(elementCount(tokensOf("**a** and [b](https://x.test)\n\n- c\n- d"))).toBe(1 + 2 + 1 + 2); // p, strong, a, ul, 2 li
    expect(elementCount(tokensOf("|a|b|\n|-|-|\n|1|2|\n|3|4|"))).toBe(1 + 2 + 2 + 6); // table, thead+tbody, rows, cells
    const items = (n: number) => "- a\n".repeat(n);
    expect(lexMarkdown(items(MARKDOWN_LIMITS.elements - 1)).kind).toBe("markdown");
    expect(lexMarkdown(items(MARKDOWN_LIMITS.elements))).toEqual({ kind: "plain", reason: "length" });
  });

  it("keeps the structure of a numbered list whose first item has nested bullets", () => {
    const [, , list] = tokensOf("Options\n\n1. Online migration\n   - zero downtime\n   - takes ~4 hours\n2. Maintenance window (15 min)\n3. Do nothing") as [
      Token,
      Token,
      Tokens.List,
    ];
    const ol = tokensOf("1. Online migration\n   - zero downtime\n   - takes ~4 hours\n2. Maintenance window (15 min)\n3. Do nothing")[0] as Tokens.List;
    for (const l of [list, ol]) {
      expect(l.type).toBe("list");
      expect(l.ordered).toBe(true);
      expect(l.items.map((i) => i.text.split("\n")[0])).toEqual(["Online migration", "Maintenance window (15 min)", "Do nothing"]);
      const inner = l.items[0]!.tokens.find((t): t is Tokens.List => t.type === "list");
      expect(inner?.ordered).toBe(false);
      expect(inner?.items.map((i) => i.text)).toEqual(["zero downtime", "takes ~4 hours"]);
    }
  });

  // Each of these hangs or crashes marked without the bounds (measured: tens of seconds, a stack
  // overflow, or an out-of-memory abort). The bound here only says "does not hang".
  const pathological: Array<[string, string]> = [
    ['"[" × 200 000', "[".repeat(200_000)],
    ['"*" × 100 000', "*".repeat(100_000)],
    ['"_a" × 50 000', "_a".repeat(50_000)],
    ['"a*_a" just under the length bound', "a*_a".repeat(MARKDOWN_LIMITS.chars / 4 - 1)],
    ['"_a" just under the length bound', "_a".repeat(MARKDOWN_LIMITS.chars / 2 - 1)],
    ['"[a](" just under the length bound', "[a](".repeat(MARKDOWN_LIMITS.chars / 4 - 1)],
    ["5000 nested quotes on one line", `${">".repeat(5000)} x`],
    ["quotes nested 1..5000 deep, one per line", nested(5000, (i) => `${">".repeat(i + 1)} x`)],
    ["a list nested 5000 deep", nested(5000, (i) => `${"  ".repeat(i)}- x`)],
    [
      "a list nested to the depth bound, repeated to the length bound",
      nested(32, (i) => `${"  ".repeat(i)}- x`)
        .repeat(40)
        .slice(0, MARKDOWN_LIMITS.chars),
    ],
    ['one run of "a*_a" just under the inline budget', "a*_a".repeat(700)],
    ['paragraphs of "a*_a" to the length bound', `${"a*_a".repeat(250)}\n\n`.repeat(40).slice(0, MARKDOWN_LIMITS.chars)],
    ["lines of 32 list markers to the length bound", `${"- ".repeat(32)}x\n`.repeat(500).slice(0, MARKDOWN_LIMITS.chars)],
    ["lazy quote continuations to the length bound", "> a\nb\n".repeat(6000).slice(0, MARKDOWN_LIMITS.chars)],
    ["a 1 MiB single line", "word ".repeat(209_716)],
  ];
  it.each(pathological)("lexes %s without hanging", (_name, input) => {
    const { ms } = timed(() => lexMarkdown(input));
    expect(ms).toBeLessThan(3000);
  });
});

describe("entities and links", () => {
  it("resolves the character references marked leaves in text, and leaves unknown ones as written", () => {
    expect(decodeEntities("a &amp; b &lt;i&gt; &quot;q&quot; &copy; &#65;&#x42; &bogus; & x")).toBe('a & b <i> "q" © AB &bogus; & x');
    expect(decodeEntities("&#0; &#xD800; &#x110000;")).toBe("\ufffd \ufffd \ufffd");
  });

  it("allows only absolute http, https and mailto link targets", () => {
    expect(safeHref("https://x.test/a?b=1&amp;c=2", true)).toBe("https://x.test/a?b=1&c=2");
    expect(safeHref("http://192.168.1.5:9527/", false)).toBe("http://192.168.1.5:9527/");
    expect(safeHref("mailto:me@x.test", false)).toBe("mailto:me@x.test");
    for (const bad of [
      "javascript:alert(1)",
      " JavaScript:alert(1)",
      "javascript&#58;alert(1)",
      "data:text/html,<b>x</b>",
      "vbscript:x",
      "/relative",
      "//evil.test/x",
      "#frag",
      "file:///etc/passwd",
      "https://",
    ]) {
      expect(safeHref(bad, true), bad).toBeNull();
    }
  });
});
