// The tools this app answers without a human (calculator and canvas, ../shared/spec/builtin-tools.md): one
// session's canvas boards and the answer to an automatic call. The connection (web/src/conn.ts) only hands
// the call over and sends what comes back; the answers themselves load with the first automatic call
// (web/src/tools/auto-answer.ts, its own chunk).
import { signal } from "@preact/signals";
import { readJson, remove, writeJson } from "../storage.js";
import type { Answer } from "./calculator.js";
import type { CanvasInstance } from "./canvas.js";

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
  /** One load of the answers' chunk: calls awaiting it go on in the order they came. */
  private answers: Promise<typeof import("./auto-answer.js")> | undefined;

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
    const p = (this.answers ??= import("./auto-answer.js"));
    // A chunk that failed to load (offline before the service worker cached it) is tried again next time.
    p.catch(() => this.answers === p && (this.answers = undefined));
    const a = await (await p).answerAuto(this.map, c.name, c.action, c.args);
    if (c.name === "canvas" && c.action !== "snapshot") {
      this.boards.value = [...this.map.values()].map((b) => ({ ...b }));
      if (this.kept()) writeJson(this.key, this.boards.value);
    }
    return a;
  }
}
