// One session's call log as this device shows it (web/src/conn.ts feeds it): every call seen, its state
// and who settled it, kept in localStorage for a plaintext session (big attachments stripped) and in memory
// only for a sealed one (docs/e2e.md: no plaintext at rest outside the key's reach).
import { signal } from "@preact/signals";
import type { ToolError, ToolResultBody } from "../../shared/contract/protocol.js";
import { readJson, remove, writeJson } from "./storage.js";
import { dropDrafts } from "./draft.js";

export type CallState = "pending" | "queued" | "answered" | "elsewhere" | "lost" | "timeout" | "cancelled" | "gone";

export interface CallEntry {
  call_id: string;
  name: string;
  action?: string;
  args: Record<string, unknown>;
  deadline: number;
  /** When this device first saw the call (epoch ms). */
  at: number;
  state: CallState;
  result?: ToolResultBody;
  error?: ToolError;
  by?: "me" | "auto" | "other";
  doneAt?: number;
  /** Big attachments were dropped when this entry was stored; its answer can no longer be re-sent. */
  slim?: boolean;
  /** Answered elsewhere: by which device (name or client id) and what (the winner's result.message). */
  answeredBy?: string;
  answerText?: string;
  /** Answered in another tab of this device (its log in localStorage said so); kept in this tab's memory only. */
  tab?: true;
  /** Sealed session: the call did not open on this device (wrong key or epoch, or moved from another call). */
  unreadable?: boolean;
  /** Asked through the relay's remote-MCP endpoint (issue 28): the agent's presence is not the caller's. */
  via?: "mcp";
}

/** Log entries kept per session (oldest finished ones go first). */
const MAX_LOG = 300;
/** Content over this many characters is not written to localStorage (the relay keeps the real thing). */
const MAX_STORED_CONTENT = 4_000;

/** Strips big base64 payloads before a log goes to localStorage. */
function slim(e: CallEntry): CallEntry {
  const big = (v: unknown) => JSON.stringify(v ?? null).length > MAX_STORED_CONTENT;
  const { tab: _tab, ...out }: CallEntry = { ...e };
  if (e.result?.content && big(e.result.content)) {
    out.result = { ...e.result, content: [{ type: "text", text: `[${e.result.content.length} attachment(s)]` }] };
    out.slim = true;
  }
  if (big(e.args)) out.args = { note: "[arguments too large to keep on this device]" };
  return out;
}

/** What settling a call did: nothing, a plain settle, or an answer of ours queued offline that lost the race. */
export type Settled = "none" | "settled" | "lost";

export class CallLog {
  readonly calls = signal<CallEntry[]>([]);

  /** `kept()` is false for a sealed session: nothing of its log is written to localStorage. */
  constructor(
    private readonly sid: string,
    private readonly kept: () => boolean,
  ) {
    this.calls.value = readJson<CallEntry[]>(this.key, []);
  }

  private get key(): string {
    return `calls.${this.sid}`;
  }

  /** Drops what this device kept of the log and the session's drafts (forget, or the session became sealed). */
  forget(): void {
    remove(this.key);
    dropDrafts(this.sid);
  }

  find(callId: string): CallEntry | undefined {
    return this.calls.value.find((c) => c.call_id === callId);
  }

  /**
   * The call as another tab of this device answered it: its entry in localStorage, answered or queued by a
   * person there while this tab's copy is not (a plaintext session; a sealed one keeps nothing at rest).
   */
  answeredInTab(callId: string): CallEntry | undefined {
    const mine = this.find(callId);
    if (!this.kept() || mine?.by === "me") return undefined;
    const kept = readJson<CallEntry[]>(this.key, []).find((c) => c.call_id === callId);
    return kept && kept.by === "me" && (kept.state === "answered" || kept.state === "queued") ? kept : undefined;
  }

  add(entry: CallEntry): void {
    this.set([...this.calls.value, entry]);
  }

  update(callId: string, patch: Partial<CallEntry>): void {
    // A call no longer waiting keeps no draft of an answer (web/src/draft.ts).
    if (patch.state && patch.state !== "pending") remove(`draft.${this.sid}.${callId}`);
    this.set(this.calls.value.map((c) => (c.call_id === callId ? { ...c, ...patch } : c)));
  }

  /** Keeps the entries `keep` says yes to. */
  filter(keep: (c: CallEntry) => boolean): void {
    this.set(this.calls.value.filter(keep));
  }

  /**
   * Closes a call the relay (or the clock) closed. An answer that was still queued here when another device
   * answered is "lost" (the caller says so); answered and lost calls never change again.
   */
  settle(callId: string, state: CallState, by: CallEntry["by"], extra: Partial<CallEntry> = {}): Settled {
    const c = this.find(callId);
    if (!c || c.state === "answered" || c.state === "lost") return "none";
    if (c.state === "queued" && state === "elsewhere") {
      this.update(callId, { state: "lost", by: "other", doneAt: Date.now(), ...extra });
      return "lost";
    }
    if (c.state !== "pending" && c.state !== "queued") return "none";
    this.update(callId, { state, by, doneAt: Date.now(), ...extra });
    return "settled";
  }

  private set(list: CallEntry[]): void {
    if (list.length > MAX_LOG) {
      const drop = list.length - MAX_LOG;
      let n = 0;
      list = list.filter((c) => !(n < drop && c.state !== "pending" && c.state !== "queued" && ++n));
    }
    this.calls.value = list;
    if (this.kept()) writeJson(this.key, list.map(slim));
  }
}

/** Who answered a call elsewhere, as a person reads it: a device's name when its inbox knows the id. */
export function answeredBy(c: CallEntry, nameOf?: (clientId: string) => string | undefined): string | undefined {
  if (!c.answeredBy) return undefined;
  const named = nameOf?.(c.answeredBy);
  if (named) return named;
  // A bare client id (a guest link's `app-…`, an unknown device) tells a person nothing.
  return /^(app-|dv_|~)[A-Za-z0-9_-]*$/.test(c.answeredBy) ? undefined : c.answeredBy;
}
