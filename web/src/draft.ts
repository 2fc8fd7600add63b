// Text typed and not yet sent (issue 28 §6): an input or ask_question card's per call, the chat box's per
// session, kept across a reload and closing the app (localStorage "lineup.draft.<sid>[.<call_id>]") and
// cleared when it is sent or its call closes. A sealed session keeps its drafts in this page's memory only
// (no plaintext at rest, docs/e2e.md): they survive switching screens, not a reload. Attachments are not kept.
import { useState } from "preact/hooks";
import { readJson, remove, writeJson } from "./storage.js";

/** Where a draft is kept: its key, and whether only in memory (a sealed session). */
export type DraftAt = { key: string; sealed: boolean };

const mem = new Map<string, string>();

export const draftAt = (sid: string, sealed: boolean, callId?: string): DraftAt => ({ key: `draft.${sid}${callId ? `.${callId}` : ""}`, sealed });

/** Forgets a draft (its call closed). */
export function dropDraft(d: DraftAt): void {
  mem.delete(d.key);
  remove(d.key);
}

/** Forgets every draft of a session (it is forgotten, or became sealed: no plaintext at rest). */
export function dropDrafts(sid: string): void {
  try {
    for (const k of Object.keys(localStorage)) if (k.startsWith("lineup.draft.") && k.split(".")[2] === sid) localStorage.removeItem(k);
  } catch {
    /* disabled storage: nothing was kept */
  }
}

/** A text field's value, kept as it is typed; setting "" forgets it. */
export function useDraft(d: DraftAt | undefined, initial = ""): [string, (v: string) => void] {
  const [v, setV] = useState(() => (d && (d.sealed ? mem.get(d.key) : readJson<string | null>(d.key, null))) ?? initial);
  const set = (x: string) => {
    setV(x);
    if (!d) return;
    if (!x) dropDraft(d);
    else if (d.sealed) mem.set(d.key, x);
    else writeJson(d.key, x);
  };
  return [v, set];
}
