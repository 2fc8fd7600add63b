// When a session's report leaves for its inbox (shared/session/report-queue.ts): one in flight, the latest state
// when it returns, automatic tools' calls alone held up to REPORT_DELAY_MS. Pure: a fake clock and a send the
// test settles by hand.
import { describe, expect, it } from "vitest";
import type { SessionReport } from "../../shared/contract/inbox.js";
import { REPORT_DELAY_MS, ReportQueue, type Glance } from "../../shared/session/report-queue.js";

function harness() {
  const state: { online: boolean; calls: { id: string; name: string; fp: string }[] } = { online: true, calls: [] };
  let now = 1_000_000;
  const sent: SessionReport[] = [];
  const inFlight: (() => void)[] = [];
  let schedules = 0;
  const glance = (): Glance => ({ online: state.online, listed: [...state.calls], pending: state.calls.length });
  const q = new ReportQueue(
    {
      glance,
      summarize: () => ({
        agent_online: state.online,
        pending: state.calls.length,
        last_activity: now,
        waiting: state.calls.map((c) => ({ call_id: c.id, name: c.name, text: c.name, created_at: 0 })),
      }),
      send: (r) => {
        sent.push(r);
        return new Promise<void>((resolve) => inFlight.push(resolve));
      },
      schedule: () => void schedules++,
    },
    () => now,
  );
  const call = (id: string, name: string) => {
    state.calls.push({ id, name, fp: `fp-${id}` });
    q.changed();
  };
  const answer = (id: string) => {
    state.calls = state.calls.filter((c) => c.id !== id);
    q.changed();
  };
  /** The inbox answers the report in flight (its promise settles; the queue reacts in a microtask). */
  const returns = async () => {
    inFlight.shift()!();
    await new Promise((r) => setTimeout(r, 0));
  };
  const listed = (r: SessionReport | undefined) => r?.waiting.map((w) => w.call_id);
  return {
    q,
    state,
    sent,
    call,
    answer,
    returns,
    listed,
    advance: (ms: number) => void (now += ms),
    now: () => now,
    schedules: () => schedules,
  };
}

/** A queue that has sent its first report (the agent online, nothing waiting) and had it returned. */
async function settled() {
  const h = harness();
  h.q.changed();
  await h.returns();
  h.sent.length = 0;
  return h;
}

describe("a session's reports to its inbox", () => {
  it("the first change after a wake goes at once: nothing is known to have been sent", () => {
    const h = harness();
    h.call("c1", "calculator");
    expect(h.sent).toHaveLength(1);
    expect(h.listed(h.sent[0])).toEqual(["c1"]);
  });

  it("a calculator call answered before its report left costs no report, and nothing stays owed", async () => {
    const h = await settled();
    h.call("c1", "calculator");
    expect(h.sent).toHaveLength(0);
    expect(h.q.due()).toBe(h.now() + REPORT_DELAY_MS);
    h.answer("c1");
    expect(h.sent).toHaveLength(0);
    expect(h.q.due()).toBeUndefined();
  });

  it("a calculator call still waiting when the delay has passed is reported (the alarm calls in)", async () => {
    const h = await settled();
    h.call("c1", "calculator");
    h.advance(REPORT_DELAY_MS - 1);
    h.q.changed(); // an early alarm: not yet
    expect(h.sent).toHaveLength(0);
    h.advance(1);
    h.q.changed();
    expect(h.listed(h.sent[0])).toEqual(["c1"]);
    expect(h.q.due()).toBeUndefined();
  });

  it("says it holds a report only while one of automatic calls alone is owed, not in flight, and its time has not come", async () => {
    const h = await settled();
    expect(h.q.holding()).toBe(false); // nothing owed
    h.call("c1", "calculator");
    expect(h.q.holding()).toBe(true);
    h.advance(REPORT_DELAY_MS);
    expect(h.q.holding()).toBe(false); // its time came: the next change (the alarm) sends it
    h.q.changed();
    expect(h.sent).toHaveLength(1);
    h.call("c2", "calculator");
    expect(h.q.holding()).toBe(false); // one in flight: its return reads the latest state
    await h.returns();
    expect(h.q.holding()).toBe(true);
    h.q.stop();
    expect(h.q.holding()).toBe(false);
  });

  it("a call a human answers goes at once and takes the held calculator call along", async () => {
    const h = await settled();
    h.call("c1", "calculator");
    h.call("q1", "confirm");
    expect(h.sent).toHaveLength(1);
    expect(h.listed(h.sent[0])).toEqual(["c1", "q1"]);
  });

  it("changes while a report is in flight go as one report, the latest state, when it returns", async () => {
    const h = await settled();
    h.call("q1", "confirm");
    h.call("q2", "confirm");
    h.answer("q1");
    h.call("q3", "ask_question");
    expect(h.sent).toHaveLength(1);
    expect(h.q.due()).toBeDefined(); // owed: an eviction before the return is covered by the alarm
    await h.returns();
    expect(h.sent).toHaveLength(2);
    expect(h.listed(h.sent[1])).toEqual(["q2", "q3"]);
    await h.returns();
    expect(h.sent).toHaveLength(2);
  });

  it("a change undone while a report is in flight sends nothing more", async () => {
    const h = await settled();
    h.call("q1", "confirm");
    h.state.online = false;
    h.q.changed();
    h.state.online = true;
    h.q.changed();
    await h.returns();
    expect(h.sent).toHaveLength(1);
    expect(h.q.due()).toBeUndefined();
  });

  it("a report in flight past the delay pushes the alarm out instead of firing it again and again", async () => {
    const h = await settled();
    h.call("q1", "confirm");
    h.call("q2", "confirm");
    h.advance(REPORT_DELAY_MS * 3);
    h.q.changed();
    expect(h.sent).toHaveLength(1);
    expect(h.q.due()).toBe(h.now() + REPORT_DELAY_MS);
  });

  it("presence changes go at once", async () => {
    const h = await settled();
    h.state.online = false;
    h.q.changed();
    expect(h.sent.map((r) => r.agent_online)).toEqual([false]);
  });

  it("after stop (the session ended: its last report goes on its own) nothing more is sent", async () => {
    const h = await settled();
    h.q.stop();
    h.call("q1", "confirm");
    expect(h.sent).toHaveLength(0);
    expect(h.q.due()).toBeUndefined();
  });
});
