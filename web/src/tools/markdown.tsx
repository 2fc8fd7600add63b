// A tiny markdown renderer that builds Preact nodes, never HTML strings: agent text cannot inject markup
// (Preact escapes every text node and attribute). Supports headings, paragraphs, lists, fenced and
// inline code, bold, italic, links (http/https/mailto only), block quotes and rules.
import type { ComponentChildren, VNode } from "preact";

const SAFE_URL = /^(https?:|mailto:)/i;

/** Inline: `code`, **bold**, *italic* / _italic_, [text](url), bare https:// links. */
export function inline(text: string, key = 0): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+)/g;
  let last = 0;
  let m: RegExpExecArray | null;
  let k = key * 1000;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    k++;
    if (m[1] !== undefined) out.push(<code key={k}>{m[1]}</code>);
    else if (m[2] !== undefined || m[3] !== undefined) out.push(<strong key={k}>{inline(m[2] ?? m[3] ?? "", k)}</strong>);
    else if (m[4] !== undefined || m[5] !== undefined) out.push(<em key={k}>{inline(m[4] ?? m[5] ?? "", k)}</em>);
    else if (m[6] !== undefined && m[7] !== undefined) {
      out.push(SAFE_URL.test(m[7]) ? <a key={k} href={m[7]} target="_blank" rel="noopener noreferrer">{inline(m[6], k)}</a> : m[0]);
    } else if (m[8] !== undefined) out.push(<a key={k} href={m[8]} target="_blank" rel="noopener noreferrer">{m[8]}</a>);
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ text }: { text: string }): VNode {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const blocks: VNode[] = [];
  let i = 0;
  let para: string[] = [];
  const flush = () => {
    if (para.length) blocks.push(<p key={blocks.length}>{inline(para.join(" "), blocks.length)}</p>);
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i] ?? "";
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? "").trim().startsWith(fence[1] ?? "```")) body.push(lines[i++] ?? "");
      i++;
      blocks.push(<pre key={blocks.length}><code>{body.join("\n")}</code></pre>);
      continue;
    }
    const h = /^(#{1,6})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const level = Math.min(6, (h[1] ?? "#").length + 2); // keep agent headings below the screen's own
      const Tag = `h${level}` as "h3";
      blocks.push(<Tag key={blocks.length}>{inline(h[2] ?? "", blocks.length)}</Tag>);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      blocks.push(<hr key={blocks.length} />);
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1] ?? "");
      const items: string[] = [];
      while (i < lines.length) {
        const mm = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i] ?? "");
        if (!mm) break;
        items.push(mm[2] ?? "");
        i++;
      }
      const lis = items.map((t, j) => <li key={j}>{inline(t, blocks.length * 100 + j)}</li>);
      blocks.push(ordered ? <ol key={blocks.length}>{lis}</ol> : <ul key={blocks.length}>{lis}</ul>);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const q: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i] ?? "")) q.push((lines[i++] ?? "").replace(/^\s*>\s?/, ""));
      blocks.push(<blockquote key={blocks.length}>{inline(q.join(" "), blocks.length)}</blockquote>);
      continue;
    }
    if (line.trim() === "") flush();
    else para.push(line.trim());
    i++;
  }
  flush();
  return <div class="md">{blocks}</div>;
}
