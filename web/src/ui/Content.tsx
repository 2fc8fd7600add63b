// Shows MCP content blocks: text (markdown), images, audio players, and files as download links.
import type { ContentBlock } from "../../../shared/protocol.js";
import { t } from "../i18n.js";
import { Markdown } from "../tools/markdown.js";
import { dataUrl } from "../tools/attachments.js";

function fileLink(b: Extract<ContentBlock, { type: "resource" }>) {
  const name = decodeURIComponent(b.resource.uri.split("/").pop() || "file");
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
    <a class="file" href={href} download={name}>⤓ {name}</a>
  ) : (
    <span class="file">{b.resource.uri}</span>
  );
}

export function Content({ blocks }: { blocks: ContentBlock[] }) {
  return (
    <div class="content">
      {blocks.map((b, i) => {
        if (b.type === "text") return <Markdown key={i} text={b.text} />;
        const url = dataUrl(b);
        if (b.type === "image") return url ? <img key={i} class="att-img" src={url} alt={t("image")} /> : <span key={i}>[{b.mimeType}]</span>;
        if (b.type === "audio") return url ? <audio key={i} controls src={url} aria-label={t("voice")} /> : <span key={i}>[{b.mimeType}]</span>;
        return <div key={i}>{fileLink(b)}</div>;
      })}
    </div>
  );
}
