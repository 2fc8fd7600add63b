// Shows MCP content blocks: text (markdown), images, audio players, and files as download links.
// Each block has its own error boundary, so one that cannot be shown leaves the others (and the thread).
import type { ContentBlock } from "../../../shared/contract/protocol.js";
import { t } from "../i18n.js";
import { Markdown } from "../tools/markdown.js";
import { dataUrl } from "../tools/attachments.js";
import { ErrorBoundary } from "./ErrorBoundary.js";

/** decodeURIComponent that leaves malformed escapes ("%", "%E0%A4%A") as written instead of throwing. */
export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function fileLink(b: Extract<ContentBlock, { type: "resource" }>) {
  const name = safeDecode(b.resource.uri.split("/").pop() || "file");
  if (b.resource.text !== undefined) {
    return (
      <details class="file">
        <summary>{name}</summary>
        <pre>{b.resource.text}</pre>
      </details>
    );
  }
  // Download as a neutral type so the browser never renders agent-provided HTML or SVG in our origin.
  const href = b.resource.blob ? `data:application/octet-stream;base64,${b.resource.blob}` : undefined;
  return href ? (
    <a class="file" href={href} download={name}>
      ⤓ {name}
    </a>
  ) : (
    <span class="file">{b.resource.uri}</span>
  );
}

function Block({ b }: { b: ContentBlock }) {
  if (b.type === "text") return <Markdown text={b.text} />;
  const url = dataUrl(b);
  if (b.type === "image") return url ? <img class="att-img" src={url} alt={t("image")} /> : <span>[{b.mimeType}]</span>;
  if (b.type === "audio") return url ? <audio controls src={url} aria-label={t("voice")} /> : <span>[{b.mimeType}]</span>;
  return <div>{fileLink(b)}</div>;
}

export function Content({ blocks }: { blocks: ContentBlock[] }) {
  return (
    <div class="content">
      {blocks.map((b, i) => (
        <ErrorBoundary key={i}>
          <Block b={b} />
        </ErrorBoundary>
      ))}
    </div>
  );
}
