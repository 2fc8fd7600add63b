// The inbox state's `recent` list (shared/inbox/core.ts): how each call that left a session's Waiting list ended,
// with its text as it was listed, kept bounded (3 per session, 10 minutes) — what `lineup connect` prints.
import { describe, expect, it } from "vitest";
import { InboxCore, type InboxData } from "../../shared/inbox/core.js";
import { INBOX_LIMITS, type SessionReport, type WaitingCall } from "../../shared/contract/inbox.js";

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

const T0 = Date.UTC(2026, 11, 4, 12, 0, 0);
const waiting = (id: string, text = `question ${id}`): WaitingCall => ({ call_id: id, name: "confirm", text, created_at: T0 });
const report = (at: number, w: WaitingCall[], closed?: SessionReport["closed"]): SessionReport => ({
  agent_online: true,
  pending: w.length,
  last_activity: at,
  waiting: w,
  ...(closed ? { closed } : {}),
});

function withSession() {
  const a = core();
  a.inbox.create("ib_1", { id: "m_1", name: "laptop", hash: "h" }, T0);
  a.inbox.attach({ session_id: "s1", label: "api", created_at: T0, expires_at: T0 + 86_400_000, epoch: 1 }, T0);
  return { ...a, recent: () => a.data().sessions.s1!.recent };
}

describe("recently ended calls in the inbox state", () => {
  it("a call that leaves the Waiting list is listed with its text, outcome, who answered and the answer", () => {
    const a = withSession();
    a.inbox.report("s1", 1, report(T0 + 1, [waiting("c1", "Deploy now?")]));
    expect(a.recent()).toBeUndefined();
    a.inbox.report("s1", 1, report(T0 + 2, [], [{ call_id: "c1", outcome: "answered", by: "dv_phone", answer: "yes" }]));
    expect(a.recent()).toEqual([{ call_id: "c1", name: "confirm", text: "Deploy now?", outcome: "answered", by: "dv_phone", answer: "yes", at: T0 + 2 }]);
  });

  it("keeps the last 3, for 10 minutes, with the text cut to 120 characters; a report of another epoch changes nothing", () => {
    const a = withSession();
    const ids = ["c1", "c2", "c3", "c4"];
    a.inbox.report(
      "s1",
      1,
      report(
        T0,
        ids.map((id) => waiting(id, id === "c4" ? "x".repeat(300) : `q ${id}`)),
      ),
    );
    a.inbox.report(
      "s1",
      1,
      report(
        T0 + 10,
        [],
        ids.map((call_id) => ({ call_id, outcome: "timeout" as const })),
      ),
    );
    expect(a.recent()?.map((r) => r.call_id)).toEqual(["c2", "c3", "c4"]);
    expect(a.recent()?.[2]?.text).toHaveLength(INBOX_LIMITS.maxRecentText);
    a.inbox.report("s1", 2, report(T0 + 20, [waiting("c9")]));
    expect(a.data().sessions.s1!.waiting).toEqual([]);
    // Any later report of the session drops what is older than 10 minutes.
    a.inbox.report("s1", 1, report(T0 + 10 + INBOX_LIMITS.recentTtlMs, [waiting("c5")]));
    expect(a.recent()).toBeUndefined();
  });

  it("a closed call the inbox never listed (past the 20) is not invented", () => {
    const a = withSession();
    a.inbox.report("s1", 1, report(T0, [waiting("c1")]));
    a.inbox.report(
      "s1",
      1,
      report(
        T0 + 1,
        [],
        [
          { call_id: "c1", outcome: "cancelled" },
          { call_id: "c-unlisted", outcome: "answered" },
        ],
      ),
    );
    expect(a.recent()?.map((r) => [r.call_id, r.outcome])).toEqual([["c1", "cancelled"]]);
  });
});
