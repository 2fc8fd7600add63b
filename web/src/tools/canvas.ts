// canvas (app): open → draw/undo/clear/snapshot → close, answered by the app itself. Instances are kept
// per session in localStorage so an agent's later `draw` still finds its board after a reload.
import type { ContentBlock } from "../../../shared/contract/protocol.js";
import { randomId } from "../storage.js";
import type { Answer } from "./calculator.js";

export interface Stroke {
  d: string;
  color: string;
  width: number;
}
export interface CanvasInstance {
  id: string;
  width: number;
  height: number;
  strokes: Stroke[];
  /** Earlier stroke lists, for undo (draw and clear each push one). */
  past: Stroke[][];
  open: boolean;
}

/** Largest board side; the canvas tool's inputSchema says the same (1…4096). */
const MAX_SIDE = 4096;
/** Undo depth kept per instance. */
const MAX_PAST = 50;
const PATH_RE = /^[MmLlHhVvCcSsQqTtAaZz0-9eE.,+\-\s]{1,20000}$/;
const COLOR_RE = /^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{1,30}|(rgb|rgba|hsl|hsla)\([0-9.,%\s]{1,40}\))$/;

export const safeColor = (c: unknown): string => (typeof c === "string" && COLOR_RE.test(c) ? c : "currentColor");

const gone = (id: unknown): Answer => ({ error: { code: "instance_gone", message: `canvas instance "${String(id)}" is not open` } });

/** Applies one canvas action to `boards` (mutated in place). `snapshot` is answered by snapshotPng. */
export function applyCanvas(boards: Map<string, CanvasInstance>, action: string | undefined, args: Record<string, unknown>): Answer {
  if (action === "open") {
    const w = args.width,
      h = args.height;
    if (!Number.isInteger(w) || !Number.isInteger(h) || (w as number) < 1 || (h as number) < 1 || (w as number) > MAX_SIDE || (h as number) > MAX_SIDE) {
      return { error: { code: "invalid_arguments", message: `width and height must be integers 1…${MAX_SIDE}` } };
    }
    const id = randomId("cv_", 10);
    boards.set(id, { id, width: w as number, height: h as number, strokes: [], past: [], open: true });
    return { result: { message: `instance_id: ${id}`, instance_id: id } };
  }
  const b = boards.get(String(args.instance_id));
  if (!b || !b.open) return gone(args.instance_id);
  const remember = () => {
    b.past.push(b.strokes);
    if (b.past.length > MAX_PAST) b.past.shift();
  };
  switch (action) {
    case "draw": {
      const d = typeof args.path === "string" ? args.path.trim() : "";
      if (!PATH_RE.test(d)) return { error: { code: "invalid_arguments", message: "path must be SVG path data (commands and numbers)" } };
      const width = typeof args.width === "number" && args.width > 0 ? Math.min(args.width, 200) : 2;
      remember();
      b.strokes = [...b.strokes, { d, color: safeColor(args.color), width }];
      return { result: { message: `drawn; ${b.strokes.length} path(s) on ${b.id}`, instance_id: b.id } };
    }
    case "undo": {
      const prev = b.past.pop();
      if (!prev) return { result: { message: "nothing to undo", instance_id: b.id } };
      b.strokes = prev;
      return { result: { message: `undone; ${b.strokes.length} path(s) on ${b.id}`, instance_id: b.id } };
    }
    case "clear":
      remember();
      b.strokes = [];
      return { result: { message: `cleared ${b.id}`, instance_id: b.id } };
    case "close":
      b.open = false;
      return { result: { message: `closed ${b.id}`, instance_id: b.id } };
    default:
      return { error: { code: "unknown_action", message: `canvas has no action "${action ?? ""}"` } };
  }
}

/** Renders an instance to PNG through a 2D canvas (Path2D takes SVG path data) and returns it as a content block. */
export async function snapshotPng(b: CanvasInstance): Promise<ContentBlock> {
  const c = document.createElement("canvas");
  c.width = b.width;
  c.height = b.height;
  const g = c.getContext("2d");
  if (!g) throw new Error("no 2d context");
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, b.width, b.height);
  g.lineCap = "round";
  g.lineJoin = "round";
  for (const s of b.strokes) {
    g.strokeStyle = s.color === "currentColor" ? "#111111" : s.color;
    g.lineWidth = s.width;
    g.stroke(new Path2D(s.d));
  }
  const url = c.toDataURL("image/png");
  return { type: "image", mimeType: "image/png", data: url.slice(url.indexOf(",") + 1) };
}
