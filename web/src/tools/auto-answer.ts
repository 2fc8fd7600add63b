// The answers of the calculator and canvas (web/src/tools/auto.ts loads this chunk when the first automatic
// call comes: the app's initial bundle does not carry them).
import type { Answer } from "./calculator.js";
import { calculate } from "./calculator.js";
import { applyCanvas, snapshotPng, type CanvasInstance } from "./canvas.js";

/** The answer to one calculator or canvas call; `boards` is the session's canvas instances (changed in place). */
export async function answerAuto(
  boards: Map<string, CanvasInstance>,
  name: string,
  action: string | undefined,
  args: Record<string, unknown>,
): Promise<Answer> {
  if (name === "calculator") return calculate(action, args);
  if (action === "snapshot") {
    const b = boards.get(String(args.instance_id));
    if (!b || !b.open) return { error: { code: "instance_gone", message: `canvas instance "${String(args.instance_id)}" is not open` } };
    try {
      return { result: { message: `snapshot of ${b.id} (${b.width}x${b.height} PNG)`, instance_id: b.id, content: [await snapshotPng(b)] } };
    } catch (e) {
      return { error: { code: "snapshot_failed", message: String(e) } };
    }
  }
  return applyCanvas(boards, action, args);
}
