// App-wide signals that several screens read (kept out of app.tsx so screens do not import the shell).
import { signal } from "@preact/signals";
import type { AnyKey } from "./i18n.js";

export const online = signal(navigator.onLine);
export const flash = signal<string>("");

/** A message that stays until dismissed (pairing results); a key, so it follows a language switch. */
export interface Notice {
  key: AnyKey;
  vars?: Record<string, string>;
  tone: "info" | "error";
  /** Offer renaming this device (right after pairing). */
  rename?: boolean;
}
export const notice = signal<Notice | null>(null);

/** Inboxes (origin + id) with E2E on for which this device holds no key: it must pair again. */
export const needsPairing = signal<ReadonlySet<string>>(new Set());
/** Pairings with a key under way on this device (main.tsx): while one waits for its key, the "pair again"
 * banner stays hidden, so the human sees one banner with one instruction (issue 28). */
export const joining = signal(0);
