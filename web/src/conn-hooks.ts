// What a session connection (conn.ts) tells the app and asks of it, and its phases.
import type { InboxLink } from "./e2e/index.js";
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
