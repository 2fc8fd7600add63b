// The home order (issue 28 item 2): waiting first, then the most recent activity — the same live and after a
// reload. A session object that woke from hibernation has forgotten what it last reported
// (shared/session/report.ts Reporter), so a device's socket connecting makes it report its unchanged state
// again; the inbox (shared/inbox/core.ts) must not read that as activity, or opening the app reorders the list.
import { describe, expect, it } from "vitest";
import { InboxCore, type InboxData } from "../../shared/inbox/core.js";
import type { SessionReport, WaitingCall } from "../../shared/contract/inbox.js";
import { homeRows } from "../../shared/inbox/names.js";

function core(): { inbox: InboxCore; data: () => InboxData } {
  let doc: InboxData | undefined;
  const inbox = new InboxCore({
    load: () => (doc ? structuredClone(doc) : undefined),
    save: (d) => void (doc = structuredClone(d)),
    broadcast: () => {},
    closeDevice: () => {},
    dropClient: async () => {},
    sessionEpoch: async () => {},
    endSession: async () => false,
    wakeEnding: () => {},
  });
  return { inbox, data: () => doc! };
}

const T0 = Date.UTC(2026, 11, 6, 7, 0, 0);
const call = (id: string): WaitingCall => ({ call_id: id, name: "confirm", text: `question ${id}`, created_at: T0 });
const report = (at: number, online: boolean, w: WaitingCall[] = [], closed?: SessionReport["closed"]): SessionReport => ({
  agent_online: online,
  pending: w.length,
  last_activity: at,
  waiting: w,
  ...(closed ? { closed } : {}),
});

function threeProjects() {
  const a = core();
  a.inbox.create("ib_1", { id: "m_1", name: "vm", hash: "h" }, T0);
  for (const [i, dir] of ["api", "web", "docs"].entries())
    a.inbox.attach(
      { session_id: `s_${dir}`, label: dir, project_dir: `/home/me/${dir}`, host: "vm", created_at: T0 + i, expires_at: T0 + 86_400_000, epoch: 1 },
      T0 + i,
    );
  const order = () => homeRows(Object.values(a.data().sessions), (s) => s.waiting.length > 0).map((s) => s.session_id);
  return { ...a, order, at: (sid: string) => a.data().sessions[sid]!.last_activity };
}

describe("the home order across hibernation (issue 28 item 2)", () => {
  it("a session that reports again what it reported before (its object woke when a device connected) keeps its place", () => {
    const a = threeProjects();
    a.inbox.report("s_api", 1, report(T0 + 10, true));
    a.inbox.report("s_web", 1, report(T0 + 20, true));
    a.inbox.report("s_docs", 1, report(T0 + 30, true));
    expect(a.order()).toEqual(["s_docs", "s_web", "s_api"]);
    // The phone reloads: each session object wakes from hibernation as the phone's sockets connect, in
    // whatever order they connect, and reports the same state with a new time.
    a.inbox.report("s_api", 1, report(T0 + 100, true));
    a.inbox.report("s_web", 1, report(T0 + 101, true));
    expect(a.order()).toEqual(["s_docs", "s_web", "s_api"]);
    expect(a.at("s_api")).toBe(T0 + 10);
  });

  it("a change of what the row shows is activity: the agent leaving or coming back, a call waiting or ending", () => {
    const a = threeProjects();
    a.inbox.report("s_api", 1, report(T0 + 10, true));
    a.inbox.report("s_web", 1, report(T0 + 20, true));
    a.inbox.report("s_api", 1, report(T0 + 30, false));
    expect(a.at("s_api")).toBe(T0 + 30);
    a.inbox.report("s_web", 1, report(T0 + 40, true, [call("c1")]));
    expect(a.at("s_web")).toBe(T0 + 40);
    expect(a.order()[0]).toBe("s_web");
    a.inbox.report("s_web", 1, report(T0 + 50, true, [], [{ call_id: "c1", outcome: "answered", by: "dv_phone", answer: "yes" }]));
    expect(a.at("s_web")).toBe(T0 + 50);
    // The same waiting call reported again (the object woke) is no news.
    a.inbox.report("s_api", 1, report(T0 + 60, false, [call("c2")]));
    a.inbox.report("s_api", 1, report(T0 + 70, false, [call("c2")]));
    expect(a.at("s_api")).toBe(T0 + 60);
  });
});
