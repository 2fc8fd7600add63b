// What this device sends while it cannot (web/src/conn.ts): answers and chat messages kept in localStorage
// until the next `hello`, so a reload offline loses nothing. A sealed session's frames are only ever kept in
// their sealed form (the connection seals them before they come here).
import type { ContentBlock, ToolDef, ToolError, ToolResultBody } from "../../shared/contract/protocol.js";
import { readJson, remove, writeJson } from "./storage.js";

/** A frame this app sends. */
export type OutFrame =
  | { type: "tool.list"; tools?: ToolDef[] }
  | { type: "tool.result"; call_id: string; name: string; action?: string; result?: ToolResultBody; error?: ToolError }
  | { type: "tool.ack"; call_id: string }
  | { type: "message"; id: string; content: ContentBlock[] };

/** A frame as JSON whose shape this side does not read: a sealed envelope (docs/e2e.md). */
export type Loose = Record<string, unknown>;

/** The call id or message id a kept frame is about ("" for none). */
export function frameId(f: OutFrame | Loose): string {
  if ("call_id" in f && typeof f.call_id === "string") return f.call_id;
  return "id" in f && typeof f.id === "string" ? f.id : "";
}

export class Outbox {
  constructor(private readonly sid: string) {}

  private get key(): string {
    return `outbox.${this.sid}`;
  }

  push(f: OutFrame | Loose): void {
    const box = readJson<(OutFrame | Loose)[]>(this.key, []);
    box.push(f);
    writeJson(this.key, box);
  }

  /** Forgets what was kept about a call (it closed, or another device answered it). */
  drop(callId: string): void {
    const box = readJson<(OutFrame | Loose)[]>(this.key, []);
    const rest = box.filter((f) => !("call_id" in f) || f.call_id !== callId);
    if (rest.length !== box.length) writeJson(this.key, rest);
  }

  /** Offers every kept frame to `send` in order; the ones it refuses stay for the next time. */
  flush(send: (f: OutFrame | Loose) => boolean): (OutFrame | Loose)[] {
    const box = readJson<(OutFrame | Loose)[]>(this.key, []);
    if (!box.length) return [];
    const sent: (OutFrame | Loose)[] = [];
    const left: (OutFrame | Loose)[] = [];
    for (const f of box) (send(f) ? sent : left).push(f);
    if (left.length) writeJson(this.key, left);
    else remove(this.key);
    return sent;
  }

  forget(): void {
    remove(this.key);
  }
}
