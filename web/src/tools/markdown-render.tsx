// Agent markdown as Preact nodes, never an HTML string: marked's lexer (GFM) makes tokens, this file makes
// elements from them, and Preact escapes every text node and attribute. Raw HTML in the text shows as
// text; links only for http(s)/mailto; images become links (no request leaves the app by itself).
// Input bounds against hangs: ./markdown-bounds.ts. A lazily loaded chunk with marked (./markdown.tsx).
import type { MarkedToken, Token, Tokens } from "marked";
import type { ComponentChildren, VNode } from "preact";
import { useMemo } from "preact/hooks";
import { lang, t } from "../i18n.js";
import { decodeEntities, lexMarkdown, safeHref } from "./markdown-bounds.js";

// Deeper token trees (possible only inline, e.g. links in emphasis in links...) are shown as their source.
const MAX_RENDER_DEPTH = 48;

type Align = Tokens.TableCell["align"];
const alignClass = (a: Align): string | undefined => (a === "left" ? "al-l" : a === "center" ? "al-c" : a === "right" ? "al-r" : undefined);

function inlines(tokens: Token[] | undefined, depth: number): ComponentChildren[] {
  return (tokens ?? []).map((tk, i) => inline(tk, i, depth + 1));
}

function inline(token: Token, key: number, depth: number): ComponentChildren {
  if (depth > MAX_RENDER_DEPTH) return token.raw;
  const tk = token as MarkedToken;
  switch (tk.type) {
    case "text":
      return tk.tokens ? inlines(tk.tokens, depth) : decodeEntities(tk.text);
    case "escape":
      return tk.text;
    case "strong":
      return <strong key={key}>{inlines(tk.tokens, depth)}</strong>;
    case "em":
      return <em key={key}>{inlines(tk.tokens, depth)}</em>;
    case "del":
      return <del key={key}>{inlines(tk.tokens, depth)}</del>;
    case "codespan":
      return <code key={key}>{tk.text}</code>;
    case "br":
      return <br key={key} />;
    case "html":
      return tk.text; // raw HTML: as text
    case "checkbox":
      return <input key={key} type="checkbox" checked={tk.checked} disabled />;
    case "link": {
      const href = safeHref(tk.href, tk.autolink !== true);
      const label = inlines(tk.tokens, depth);
      if (!href)
        return (
          <span key={key} class="md-nolink">
            {label}
          </span>
        );
      return (
        <a key={key} href={href} title={tk.title ? decodeEntities(tk.title) : undefined} target="_blank" rel="noopener noreferrer">
          {label}
        </a>
      );
    }
    case "image": {
      // A link to the picture, never an <img>: the agent cannot make the app fetch anything (tracking pixels).
      const href = safeHref(tk.href, true);
      const alt = decodeEntities(tk.text) || t("image");
      return href ? (
        <a key={key} class="md-img" href={href} target="_blank" rel="noopener noreferrer">
          🖼 {alt}
        </a>
      ) : (
        <span key={key} class="md-nolink">
          🖼 {alt}
        </span>
      );
    }
    default:
      return token.raw;
  }
}

function blocks(tokens: Token[], depth: number): ComponentChildren[] {
  return tokens.map((tk, i) => block(tk, i, depth + 1));
}

function listItem(item: Tokens.ListItem, key: number, depth: number): VNode {
  return (
    <li key={key} class={item.task ? "task" : undefined}>
      {blocks(item.tokens, depth)}
    </li>
  );
}

function block(token: Token, key: number, depth: number): ComponentChildren {
  if (depth > MAX_RENDER_DEPTH) return <p key={key}>{token.raw}</p>;
  const tk = token as MarkedToken;
  switch (tk.type) {
    case "space":
    case "def":
      return null;
    case "paragraph":
      return <p key={key}>{inlines(tk.tokens, depth)}</p>;
    case "text": // the text of a tight list item
      return tk.tokens ? inlines(tk.tokens, depth) : decodeEntities(tk.text);
    case "heading": {
      const Tag = `h${Math.min(6, tk.depth + 2)}` as "h3"; // agent headings stay below the screen's own
      return <Tag key={key}>{inlines(tk.tokens, depth)}</Tag>;
    }
    case "code":
      return (
        <pre key={key} class="md-code" tabIndex={0}>
          <code>{tk.text}</code>
        </pre>
      );
    case "blockquote":
      return <blockquote key={key}>{blocks(tk.tokens, depth)}</blockquote>;
    case "hr":
      return <hr key={key} />;
    case "html":
      return (
        <p key={key} class="md-raw">
          {tk.text}
        </p>
      ); // raw HTML: as text
    case "list": {
      const items = tk.items.map((it, i) => listItem(it, i, depth));
      const tasks = tk.items.some((it) => it.task) ? "md-tasks" : undefined;
      if (!tk.ordered)
        return (
          <ul key={key} class={tasks}>
            {items}
          </ul>
        );
      const start = typeof tk.start === "number" && tk.start !== 1 ? tk.start : undefined;
      return (
        <ol key={key} class={tasks} start={start}>
          {items}
        </ol>
      );
    }
    case "table":
      // The table scrolls sideways inside its own box; focusable so the keyboard can scroll it too.
      return (
        <div key={key} class="md-table" tabIndex={0}>
          <table>
            <thead>
              <tr>
                {tk.header.map((c, i) => (
                  <th key={i} scope="col" class={alignClass(c.align)}>
                    {inlines(c.tokens, depth)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {tk.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((c, i) => (
                    <td key={i} class={alignClass(c.align)}>
                      {inlines(c.tokens, depth)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    default:
      return <p key={key}>{inline(token, 0, depth)}</p>;
  }
}

export function Markdown({ text }: { text: string }): VNode {
  const l = lang.value; // the plain-text note is translated
  return useMemo(() => {
    const lexed = lexMarkdown(text);
    if (lexed.kind === "plain") {
      return (
        <div class="md md-plain">
          <p class="md-note">{t(lexed.reason === "length" ? "mdTooLong" : "mdTooDeep")}</p>
          <pre class="md-plain-text" tabIndex={0}>
            {text}
          </pre>
        </div>
      );
    }
    return <div class="md">{blocks(lexed.tokens, 0)}</div>;
  }, [text, l]);
}
