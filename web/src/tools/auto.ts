// The tools this app answers without a human (calculator and canvas, ../shared/spec/builtin-tools.md): one
// session's canvas boards and the answer to an automatic call. The connection (web/src/conn.ts) only hands
// the call over and sends what comes back.
import { signal } from "@preact/signals";
import { readJson, remove, writeJson } from "../storage.js";
import { calculate, type Answer } from "./calculator.js";
import { applyCanvas, snapshotPng, type CanvasInstance } from "./canvas.js";

/** Tools this app answers without a human. */
export const AUTOMATIC = new Set(["calculator", "canvas"]);
/** Sealed sessions: how long a canvas call for an instance this device does not hold is left to its owner. */
const NOT_MINE_MS = 5_000;

/** An automatic call as the connection's log holds it. */
export interface AutoCall {
  call_id: string;
  name: string;
  action?: string;
  args: Record<string, unknown>;
}

export class AutoTools {
  /** The session's canvas boards, newest state (the session screen draws them). */
  readonly boards = signal<CanvasInstance[]>([]);
  private readonly map: Map<string, CanvasInstance>;

  /** `kept()` is false for a sealed session: its boards stay in memory only (docs/e2e.md). */
  constructor(
    private readonly sid: string,
    private readonly kept: () => boolean,
  ) {
    this.map = new Map(readJson<CanvasInstance[]>(this.key, []).map((b) => [b.id, b]));
    this.boards.value = [...this.map.values()];
  }

  private get key(): string {
    return `boards.${this.sid}`;
  }

  /** Drops what this device kept of the boards (forget, or the session became sealed). */
  forget(): void {
    remove(this.key);
  }

  /**
   * The answer to an automatic call, or null when it is no longer this device's to give. A sealed call is
   * offered to every provider (the relay cannot read `instance_id`): another device's canvas is left to its
   * owner for NOT_MINE_MS, and answered here ("gone") only if `stillPending()` says nobody answered meanwhile.
   */
  async answer(c: AutoCall, sealed: boolean, stillPending: () => boolean): Promise<Answer | null> {
    if (sealed && c.name === "canvas" && c.action !== "open" && !this.map.has(String(c.args.instance_id))) {
      await new Promise((r) => setTimeout(r, NOT_MINE_MS));
      if (!stillPending()) return null;
    }
    if (c.name === "calculator") return calculate(c.action, c.args);
    if (c.action === "snapshot") {
      const b = this.map.get(String(c.args.instance_id));
      if (!b || !b.open) return { error: { code: "instance_gone", message: `canvas instance "${String(c.args.instance_id)}" is not open` } };
      try {
        return { result: { message: `snapshot of ${b.id} (${b.width}x${b.height} PNG)`, instance_id: b.id, content: [await snapshotPng(b)] } };
      } catch (e) {
        return { error: { code: "snapshot_failed", message: String(e) } };
      }
    }
    const a = applyCanvas(this.map, c.action, c.args);
    this.boards.value = [...this.map.values()].map((b) => ({ ...b }));
    if (this.kept()) writeJson(this.key, this.boards.value);
    return a;
  }
}
