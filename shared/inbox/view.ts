// What a device's inbox socket (and GET /api/inbox) is shown of an inbox's data (shared/inbox/core.ts): the whole
// state, or one session's row after a change of that session only (docs/inbox.md "The inbox socket"; the app
// applies it in web/src/inbox.ts).
import type { CredentialKind, DeviceInfo, InboxSession, InboxSessionFrame, InboxState, MachineInfo } from "../contract/inbox.js";
import type { InboxData, Member } from "./core.js";
import { e2eSummary } from "./e2e.js";

export const deviceInfo = (id: string, m: Member): DeviceInfo => ({ id, name: m.name, paired_at: m.since, last_seen: m.last_seen });
export const machineInfo = (id: string, m: Member): MachineInfo => ({ id, name: m.name, joined_at: m.since, last_seen: m.last_seen });

/** A listed session as devices see it (no epoch), or undefined once it expired. */
function shown(s: InboxData["sessions"][string], now: number): InboxSession | undefined {
  if (s.expires_at <= now) return undefined;
  const { epoch: _e, ...rest } = s;
  return { ...rest, sealed: s.sealed === true };
}

export function view(d: InboxData, you: { kind: CredentialKind; id: string }): InboxState {
  const now = Date.now();
  return {
    type: "inbox",
    inbox_id: d.inbox_id,
    you,
    devices: Object.entries(d.devices).map(([id, m]) => deviceInfo(id, m)),
    machines: Object.entries(d.machines).map(([id, m]) => machineInfo(id, m)),
    sessions: Object.values(d.sessions)
      .sort((a, b) => b.last_activity - a.last_activity)
      .flatMap((s) => shown(s, now) ?? []),
    policy_version: d.policy.version,
    e2e: e2eSummary(d.e2e, now),
  };
}

/** One session's row: as `view` lists it, or without `session` when it is not listed (ended or expired). */
export function sessionFrame(d: InboxData, sid: string): InboxSessionFrame {
  const s = Object.hasOwn(d.sessions, sid) ? d.sessions[sid] : undefined;
  const row = s && shown(s, Date.now());
  return { type: "inbox.session", inbox_id: d.inbox_id, session_id: sid, ...(row ? { session: row } : {}) };
}
