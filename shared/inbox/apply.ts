// The one-session frame of an inbox socket applied to the state the socket's first frame carried (the app's
// web/src/inbox.ts and the tests' inbox view; the relay makes the frame in shared/inbox/view.ts).
import type { InboxSessionFrame, InboxState } from "../contract/inbox.js";

/** The state after a one-session frame (shared/inbox/view.ts `sessionFrame`): that row replaced, added or
 * removed, in the relay's order (newest activity first). */
export function applySessionFrame(st: InboxState, f: InboxSessionFrame): InboxState {
  const i = st.sessions.findIndex((s) => s.session_id === f.session_id);
  const sessions = st.sessions.slice();
  if (i >= 0) sessions.splice(i, 1);
  if (f.session) sessions.splice(i >= 0 ? i : sessions.length, 0, f.session);
  return { ...st, sessions: sessions.sort((a, b) => b.last_activity - a.last_activity) };
}
