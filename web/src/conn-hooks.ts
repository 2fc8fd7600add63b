// What a session connection (conn.ts) tells the app and asks of it, and its phases.
import { type Signal, signal } from "@preact/signals";
import { CLOSE } from "../../shared/contract/close.js";
import type { InboxLink } from "./e2e/index.js";
import type { Key } from "./i18n.js";
import type { MachineOf } from "./direct-pins.js";
import type { ClosedCall } from "../../shared/contract/push.js";

export interface ConnHooks {
  /** The relay's status gave the session a (new) label. */
  onLabel?: (label: string) => void;
  /** The relay refused the credential over HTTP (401): for a device, the inbox decides whether it was revoked. */
  onAuthFail?: () => void;
  /** A socket closed with 4401: this device was removed from its inbox. */
  onRevoked?: () => void;
  /** A human name for a client id (a device's name from its inbox), when known. */
  nameOf?: (clientId: string) => string | undefined;
  /** The inbox this session belongs to: its keyring opens sealed sessions (docs/e2e.md). */
  inbox?: InboxLink;
  /** The inbox's calls of this session that recently left its Waiting list (read in an effect: a signal). */
  recentOf?: () => readonly ClosedCall[] | undefined;
  /** Issue 32: which machine of the inbox runs the session (its direct key is pinned per machine). */
  machineOf?: () => MachineOf;
}

export type Phase = "connecting" | "online" | "offline" | "stopped";

/** Why a session stopped for good, as its screen says it (an i18n key) and the relay's words when it gave some. */
export type StopReason = { key: Key; reason?: string };

/** The stop a terminal close (4000–4999, contract §5) means; `revoked`: this device left its inbox (4401). */
export function terminalStop(code: number, reason: string, ofInbox: boolean): StopReason | "revoked" {
  if (code === CLOSE.revoked && ofInbox) return "revoked";
  const key: Key = code === CLOSE.sessionEnded ? "stopped4004" : code === CLOSE.replaced ? "stopped4409" : "stoppedOther";
  return { key, reason: reason || String(code) };
}

/** The stop an HTTP status of the session's status read means when a socket failed before `hello` (401 is
 * `auth`: the app asks the inbox whether the device was revoked); none for any other status. */
export function refusedStop(status: number): StopReason | "auth" | undefined {
  return status === 401 ? "auth" : status === 404 ? { key: "stoppedGone" } : status === 403 ? { key: "stoppedOrigin" } : undefined;
}

/** How long a notice ("another device answered first") stays on screen. */
const NOTICE_MS = 10_000;

/** A one-off notice on the session screen: `flash` shows it, and it clears itself after NOTICE_MS unless a newer one came. */
export function notices(): { notice: Signal<{ key: Key; at: number } | null>; flash: (key: Key) => void } {
  const notice = signal<{ key: Key; at: number } | null>(null);
  const flash = (key: Key) => {
    const at = Date.now();
    notice.value = { key, at };
    setTimeout(() => {
      if (notice.value?.at === at) notice.value = null;
    }, NOTICE_MS);
  };
  return { notice, flash };
}
