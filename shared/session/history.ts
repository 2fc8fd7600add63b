// The history budget's placeholders: when the kept history passes its byte budget, the oldest large
// message bodies are replaced by a short text that says what was there and how big it was. The entry
// itself (id, sender, time) stays, so the last 200 are always listed.
import { LIMITS, utf8Length, type ContentBlock, type MessageOut } from "../contract/protocol.js";
import { head } from "../text/cut.js";

const KEEP_TEXT = 280;

const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`);

/** How many bytes the base64 text `b64` stands for. */
const decoded = (b64: string) => Math.floor((b64.length * 3) / 4);

function shrink(b: ContentBlock): ContentBlock {
  const gone = (what: string, bytes: number): ContentBlock => ({
    type: "text",
    text: `[${what}, ${size(bytes)} — removed from the kept history to save space]`,
  });
  if (b.type === "text") {
    const n = utf8Length(b.text);
    return n <= KEEP_TEXT ? b : { type: "text", text: `${head(b.text, KEEP_TEXT)}… [${size(n)} of text, cut from the kept history to save space]` };
  }
  if (b.type === "image" || b.type === "audio") return gone(`${b.type} ${b.mimeType}`, decoded(b.data));
  const r = b.resource;
  const name = r.uri.split("/").pop() || "file";
  if (r.blob !== undefined) return gone(`file ${name}${r.mimeType ? ` (${r.mimeType})` : ""}`, decoded(r.blob));
  if (r.text !== undefined && utf8Length(r.text) > KEEP_TEXT) return gone(`file ${name}`, utf8Length(r.text));
  return b;
}

export function placeholderFor(m: MessageOut): MessageOut {
  return { ...m, content: m.content.map(shrink), elided: true };
}

/** The longest prefix of `text` within `bytes` of UTF-8 (never splitting a surrogate pair). */
export function prefixWithin(text: string, bytes: number): string {
  let k = Math.min(text.length, bytes);
  for (;;) {
    let p = text.slice(0, k);
    if (/[\ud800-\udbff]$/.test(p)) p = p.slice(0, -1);
    const n = utf8Length(p);
    if (n <= bytes) return p;
    k = Math.max(0, Math.floor((k * bytes) / n) - 1);
  }
}

/** The copy of a message the history keeps: its text blocks together at most `maxMessageTextBytes`. */
export function keptCopy(m: MessageOut): MessageOut {
  let left = LIMITS.maxMessageTextBytes;
  let cut = false;
  const content = m.content.map((b): ContentBlock => {
    if (b.type !== "text") return b;
    const n = utf8Length(b.text);
    if (n <= left) {
      left -= n;
      return b;
    }
    cut = true;
    const keep = prefixWithin(b.text, left);
    left = 0;
    return { type: "text", text: `${keep}… [${size(n)} of text; the kept history holds ${size(LIMITS.maxMessageTextBytes)} of a message's text]` };
  });
  return cut ? { ...m, content, elided: true } : m;
}
