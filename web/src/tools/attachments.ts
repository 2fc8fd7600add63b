// Turns files, photos and voice notes into MCP content blocks (base64). A frame is at most 1 MiB
// (LIMITS.maxFrameBytes), so attachments are capped at MAX_ATTACH_BYTES raw in all and big photos are
// re-encoded smaller first.
import type { ContentBlock } from "../../../shared/contract/protocol.js";

/** Raw bytes of all attachments of one answer or message: base64 (4/3) plus JSON stays under 1 MiB. */
export const MAX_ATTACH_BYTES = 700 * 1024;
/** Photos over this size are scaled to MAX_IMAGE_SIDE and re-encoded as JPEG. */
const SHRINK_OVER = 300 * 1024;
const MAX_IMAGE_SIDE = 1600;

export interface Attachment {
  name: string;
  block: ContentBlock;
  bytes: number;
}

function toBase64(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function shrink(file: Blob): Promise<Blob> {
  if (file.size <= SHRINK_OVER || !/^image\/(png|jpeg|webp)$/.test(file.type) || typeof createImageBitmap !== "function") return file;
  try {
    const img = await createImageBitmap(file);
    const k = Math.min(1, MAX_IMAGE_SIDE / Math.max(img.width, img.height));
    const c = document.createElement("canvas");
    c.width = Math.round(img.width * k);
    c.height = Math.round(img.height * k);
    c.getContext("2d")?.drawImage(img, 0, 0, c.width, c.height);
    const out = await new Promise<Blob | null>((r) => c.toBlob(r, "image/jpeg", 0.82));
    return out && out.size < file.size ? out : file;
  } catch {
    return file;
  }
}

/** One file (or recorded blob) as a content block: image, audio, or a resource with a blob. */
export async function toAttachment(file: Blob, name: string): Promise<Attachment> {
  const blob = file.type.startsWith("image/") ? await shrink(file) : file;
  const data = toBase64(await blob.arrayBuffer());
  const mimeType = blob.type || "application/octet-stream";
  let block: ContentBlock;
  if (mimeType.startsWith("image/")) block = { type: "image", data, mimeType };
  else if (mimeType.startsWith("audio/")) block = { type: "audio", data, mimeType };
  else block = { type: "resource", resource: { uri: `attachment:///${encodeURIComponent(name)}`, mimeType, blob: data } };
  return { name, block, bytes: blob.size };
}

export const totalBytes = (list: Attachment[]): number => list.reduce((n, a) => n + a.bytes, 0);

/** A data: URL for showing a block (images and audio only; data URLs cannot run script in img/audio). */
export function dataUrl(b: ContentBlock): string | undefined {
  if (b.type === "image" && /^image\/(png|jpeg|gif|webp|bmp|avif)$/.test(b.mimeType)) return `data:${b.mimeType};base64,${b.data}`;
  if (b.type === "audio" && /^audio\//.test(b.mimeType)) return `data:${b.mimeType};base64,${b.data}`;
  return undefined;
}

/** Voice notes through MediaRecorder. */
export class VoiceRecorder {
  private rec: MediaRecorder | null = null;
  private chunks: Blob[] = [];

  static supported(): boolean {
    return typeof MediaRecorder !== "undefined" && !!navigator.mediaDevices?.getUserMedia;
  }

  async start(): Promise<void> {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    const type = ["audio/webm;codecs=opus", "audio/webm", "audio/mp4", "audio/ogg"].find((m) => MediaRecorder.isTypeSupported(m));
    this.rec = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    this.chunks = [];
    this.rec.ondataavailable = (e) => e.data.size && this.chunks.push(e.data);
    this.rec.start();
  }

  async stop(): Promise<Blob> {
    const rec = this.rec;
    if (!rec) throw new Error("not recording");
    const done = new Promise<void>((r) => (rec.onstop = () => r()));
    rec.stop();
    await done;
    rec.stream.getTracks().forEach((t) => t.stop());
    this.rec = null;
    const type = (rec.mimeType || "audio/webm").split(";")[0] ?? "audio/webm";
    return new Blob(this.chunks, { type });
  }
}
