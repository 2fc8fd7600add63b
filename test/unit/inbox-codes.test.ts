// Pairing and join codes in the inbox's own logic (shared/inbox/core.ts), with the clock passed in: the 10-minute
// validity the CLI prints, single use, the kinds kept apart, and the caps. Both edges run this same core.
import { describe, expect, it } from "vitest";
import { InboxCore, type InboxData } from "../../shared/inbox/core.js";
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";

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
const member = (id: string) => ({ id, name: id, hash: `h-${id}` });

describe("inbox codes", () => {
  it("a pairing code pairs until 10 minutes have passed, and not at the 10-minute mark or after", () => {
    const a = core();
    a.inbox.create("ib_1", member("m_1"), T0);
    expect(a.inbox.issueCode("pair", "c1", T0)).toBe(T0 + INBOX_LIMITS.codeTtlMs);
    expect(INBOX_LIMITS.codeTtlMs).toBe(10 * 60_000);
    expect(a.inbox.redeem("pair", "c1", member("dv_late"), undefined, T0 + INBOX_LIMITS.codeTtlMs)).toBe("invalid");
    expect(a.data().devices).toEqual({});

    a.inbox.issueCode("pair", "c2", T0);
    expect(a.inbox.redeem("pair", "c2", member("dv_ok"), undefined, T0 + INBOX_LIMITS.codeTtlMs - 1)).toBe("ok");
    expect(Object.keys(a.data().devices)).toEqual(["dv_ok"]);
  });

  it("a code is spent by its first use, and a pairing code cannot join a machine nor a join code pair a device", () => {
    const a = core();
    a.inbox.create("ib_1", member("m_1"), T0);
    a.inbox.issueCode("pair", "p", T0);
    a.inbox.issueCode("join", "j", T0);
    expect(a.inbox.redeem("join", "p", member("m_x"), undefined, T0)).toBe("invalid");
    expect(a.inbox.redeem("pair", "j", member("dv_x"), undefined, T0)).toBe("invalid");
    expect(a.inbox.redeem("pair", "p", member("dv_1"), undefined, T0)).toBe("ok");
    expect(a.inbox.redeem("pair", "p", member("dv_2"), undefined, T0)).toBe("invalid");
    expect(a.inbox.redeem("join", "j", member("m_2"), undefined, T0)).toBe("ok");
    expect(Object.keys(a.data().devices)).toEqual(["dv_1"]);
    expect(Object.keys(a.data().machines).sort()).toEqual(["m_1", "m_2"]);
  });

  it("expired codes are swept when a new one is issued, and at most 16 stay open (the oldest goes first)", () => {
    const a = core();
    a.inbox.create("ib_1", member("m_1"), T0);
    a.inbox.issueCode("pair", "old", T0);
    a.inbox.issueCode("pair", "new", T0 + INBOX_LIMITS.codeTtlMs);
    expect(a.data().codes.map((c) => c.hash)).toEqual(["new"]);
    for (let i = 0; i < INBOX_LIMITS.maxOpenCodes; i++) a.inbox.issueCode("pair", `k${i}`, T0 + INBOX_LIMITS.codeTtlMs);
    expect(a.data().codes).toHaveLength(INBOX_LIMITS.maxOpenCodes);
    expect(a.inbox.redeem("pair", "new", member("dv_1"), undefined, T0 + INBOX_LIMITS.codeTtlMs)).toBe("invalid");
    expect(a.inbox.redeem("pair", `k${INBOX_LIMITS.maxOpenCodes - 1}`, member("dv_1"), undefined, T0 + INBOX_LIMITS.codeTtlMs)).toBe("ok");
  });

  it("past 32 devices a code answers full and stays unspent", () => {
    const a = core();
    a.inbox.create("ib_1", member("m_1"), T0);
    for (let i = 0; i < INBOX_LIMITS.maxDevices; i++) {
      a.inbox.issueCode("pair", `c${i}`, T0);
      expect(a.inbox.redeem("pair", `c${i}`, member(`dv_${i}`), undefined, T0)).toBe("ok");
    }
    a.inbox.issueCode("pair", "one-more", T0);
    expect(a.inbox.redeem("pair", "one-more", member("dv_x"), undefined, T0)).toBe("full");
    expect(a.data().codes.map((c) => c.hash)).toEqual(["one-more"]);
    expect(Object.keys(a.data().devices)).toHaveLength(INBOX_LIMITS.maxDevices);
  });
});
