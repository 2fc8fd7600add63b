// Revoking an agent machine in the inbox's own logic (shared/inbox/core.ts), which both servers run, with the
// clock passed in and a session port that can fail: the revocation and the sessions it must end are one
// write, the retry is armed before the first attempt, an unreachable session is retried with backoff until it
// answers, one past its expiry is let go (it ends by itself), and a session attached after its machine was
// revoked is refused. Issue 26 §8.
import { describe, expect, it } from "vitest";
import { InboxCore, type Attach, type InboxData } from "../../shared/inbox/core.js";
import { INBOX_LIMITS, type SessionReport, type WaitingCall } from "../../shared/contract/inbox.js";

type Event =
  | { kind: "save"; ending: string[]; machines: string[] }
  | { kind: "wake"; at: number }
  | { kind: "end"; sid: string; epoch: number; reason: string };

function core(opts: { failFirst?: number } = {}) {
  let doc: InboxData | undefined;
  const events: Event[] = [];
  const reported: { sid: string; before: WaitingCall[]; after: WaitingCall[]; r: SessionReport }[] = [];
  let failures = opts.failFirst ?? 0;
  const inbox = new InboxCore(
    {
      load: () => (doc ? structuredClone(doc) : undefined),
      save: (d) => {
        doc = structuredClone(d);
        events.push({ kind: "save", ending: Object.keys(d.ending ?? {}), machines: Object.keys(d.machines) });
      },
      broadcast: () => {},
      closeDevice: () => {},
      dropClient: async () => {},
      sessionEpoch: async () => {},
      endSession: async (sid, epoch, reason) => {
        events.push({ kind: "end", sid, epoch, reason });
        if (failures-- > 0) throw new Error("session object unreachable");
        return true;
      },
      wakeEnding: (at) => void events.push({ kind: "wake", at }),
    },
    { reported: (sid, before, after, r) => void reported.push({ sid, before, after, r }) },
  );
  return { inbox, events, reported, data: () => doc! };
}

const T0 = Date.now();
const member = (id: string) => ({ id, name: id, hash: `h-${id}` });
const attach = (sid: string, machine: string, expires_at = T0 + 3_600_000): Attach => ({
  session_id: sid,
  label: sid,
  machine_id: machine,
  created_at: T0,
  expires_at,
  epoch: T0,
});
const waiting: WaitingCall = { call_id: "c1", name: "confirm", text: "Deploy?", created_at: T0 };

function world(opts: { failFirst?: number } = {}) {
  const a = core(opts);
  a.inbox.create("ib_1", member("mc_gone"), T0);
  a.inbox.issueCode("join", "j", T0);
  a.inbox.redeem("join", "j", member("mc_kept"), undefined, T0);
  expect(a.inbox.attach(attach("s_gone", "mc_gone"), T0)).toBe(true);
  expect(a.inbox.attach(attach("s_kept", "mc_kept"), T0)).toBe(true);
  a.inbox.report("s_gone", T0, { agent_online: true, pending: 1, last_activity: T0, waiting: [waiting] });
  a.events.length = 0;
  a.reported.length = 0;
  return a;
}

describe("revoking an agent machine (the inbox's logic)", () => {
  it("the machine and the sessions it must end are one write, the retry is armed before the first attempt, and only its sessions end", async () => {
    const a = world();
    expect(await a.inbox.revoke("machine", "mc_gone", T0)).toBe(true);
    const first = a.events.findIndex((e) => e.kind === "end");
    expect(a.events.slice(0, first)).toEqual([
      { kind: "save", ending: ["s_gone"], machines: ["mc_kept"] },
      { kind: "wake", at: T0 + INBOX_LIMITS.endRetryBaseMs },
    ]);
    expect(a.events.filter((e) => e.kind === "end")).toEqual([{ kind: "end", sid: "s_gone", epoch: T0, reason: "machine revoked" }]);
    expect(Object.keys(a.data().sessions)).toEqual(["s_kept"]);
    expect(a.data().ending).toBeUndefined();
    expect(a.inbox.machineLive("mc_gone")).toBe(false);
    expect(a.inbox.machineLive("mc_kept")).toBe(true);
    expect(a.inbox.state({ kind: "machine", id: "mc_kept" })!.sessions.map((s) => s.session_id)).toEqual(["s_kept"]);
    // Its waiting call leaves the notifications as "ended" (Web Push closes them: docs/push.md).
    expect(a.reported).toEqual([{ sid: "s_gone", before: [waiting], after: [], r: expect.objectContaining({ ended: true }) }]);
  });

  it("a session that could not be reached is retried after 2 s, then 4 s, and not before, until it answers", async () => {
    const a = world({ failFirst: 2 });
    await a.inbox.revoke("machine", "mc_gone", T0);
    expect(a.data().ending).toEqual({ s_gone: { epoch: T0, expires_at: T0 + 3_600_000, due: T0 + 2000, tries: 1 } });
    expect(a.events.at(-1)).toEqual({ kind: "wake", at: T0 + 2000 });
    await a.inbox.finishEnding(T0 + 1999);
    expect(a.events.filter((e) => e.kind === "end")).toHaveLength(1);
    await a.inbox.finishEnding(T0 + 2000);
    expect(a.data().ending).toEqual({ s_gone: { epoch: T0, expires_at: T0 + 3_600_000, due: T0 + 6000, tries: 2 } });
    expect(a.inbox.endingDue()).toBe(T0 + 6000);
    await a.inbox.finishEnding(T0 + 6000);
    expect(a.events.filter((e) => e.kind === "end")).toHaveLength(3);
    expect(a.data().ending).toBeUndefined();
    expect(a.inbox.endingDue()).toBeUndefined();
  });

  it("the retries stay at most a minute apart, and a session past its expiry is let go without another attempt (it ends by itself)", async () => {
    const a = world({ failFirst: 100 });
    await a.inbox.revoke("machine", "mc_gone", T0);
    const gaps: number[] = [];
    for (let i = 0; i < 7; i++) {
      const at = a.inbox.endingDue()!;
      await a.inbox.finishEnding(at);
      gaps.push(a.inbox.endingDue()! - at);
    }
    expect(gaps).toEqual([4000, 8000, 16000, 32000, 60000, 60000, 60000]);
    expect(INBOX_LIMITS.endRetryMaxMs).toBe(60_000);
    const attempts = a.events.filter((x) => x.kind === "end").length;
    await a.inbox.finishEnding(T0 + 3_600_000);
    expect(a.events.filter((x) => x.kind === "end")).toHaveLength(attempts);
    expect(a.data().ending).toBeUndefined();
  });

  it("a session attached after its machine was revoked is refused, and a second revocation is 'no such machine'", async () => {
    const a = world();
    await a.inbox.revoke("machine", "mc_gone", T0);
    expect(a.inbox.attach(attach("s_late", "mc_gone"), T0)).toBe(false);
    expect(Object.keys(a.data().sessions)).toEqual(["s_kept"]);
    expect(await a.inbox.revoke("machine", "mc_gone", T0)).toBe(false);
  });

  it("a late report of the ended session does not bring it back into the list", async () => {
    const a = world();
    await a.inbox.revoke("machine", "mc_gone", T0);
    a.inbox.report("s_gone", T0, { agent_online: true, pending: 0, last_activity: T0 + 1, waiting: [] });
    expect(Object.keys(a.data().sessions)).toEqual(["s_kept"]);
  });
});
