// One conformance suite for the routing core's Store (shared/session/store.ts), run over both stores: the
// in-memory one of the LAN server (test/unit/store-memory.test.ts) and the Durable Object's SQLite one inside
// workerd (test/workerd/store-sqlite.test.ts). The same behaviour sentences, the same data, against each.
import { describe, expect, it } from "vitest";
import { LIMITS, type MessageOut, type ToolDef } from "../../shared/contract/protocol.js";
import { deliveriesOf, type CallRow, type Store } from "../../shared/session/store.js";

/** What a host gives the store around it. */
export interface StoreHost {
  /** The host's transaction: when `fn` throws, none of its writes remain (and the error is rethrown). */
  txn<T>(fn: () => T): T;
  /** The same stored data as read by the host's next wake (SQLite: a new SqlStore, no cached counts; memory: the same store). */
  reopen(): Store;
}

/** Runs `body` against a fresh, empty store. */
export type StoreRunner = (body: (store: Store, host: StoreHost) => void) => void | Promise<void>;

const T0 = 1_700_000_000_000;

/** An open call as the router inserts it. */
export function openCall(call_id: string, over: Partial<CallRow> = {}): CallRow {
  const args = over.args ?? JSON.stringify({ q: call_id });
  return {
    call_id,
    caller: "agent:agent-1",
    caller_role: "agent",
    name: "confirm",
    action: null,
    args,
    timeout_s: 60,
    deadline: T0 + 60_000,
    target: null,
    status: "open",
    checked: 0,
    result: null,
    keep_until: null,
    created_at: T0,
    fingerprint: `fp-${call_id}`,
    bytes: new TextEncoder().encode(args).length,
    deliv: "[]",
    ...over,
  };
}

const result = (call_id: string, text = "yes") => JSON.stringify({ type: "tool.result", call_id, result: { content: [{ type: "text", text }] } });
const bytesOf = (s: string) => new TextEncoder().encode(s).length;
const tool = (name: string): ToolDef => ({ name, type: "action", description: `the ${name} tool`, inputSchema: { type: "object" } });
const message = (id: string, text = `hello ${id}`): Omit<MessageOut, "seq"> => ({
  type: "message",
  id,
  from: { role: "app", client_id: "phone" },
  content: [{ type: "text", text }],
  ts: T0,
});

export function storeConformance(name: string, run: StoreRunner): void {
  describe(`${name}: calls`, () => {
    it("keeps an inserted call and gives back a copy that later edits do not reach", () =>
      run((store) => {
        expect(store.getCall("c1")).toBeUndefined();
        expect(store.insertCall(openCall("c1"))).toBe(true);
        const got = store.getCall("c1")!;
        expect(got).toMatchObject({ call_id: "c1", status: "open", caller: "agent:agent-1", checked: 0, deliv: "[]", timeout_s: 60 });
        got.status = "done";
        expect(store.getCall("c1")!.status).toBe("open");
      }));

    it("refuses a second call with a taken call_id and keeps the first untouched", () =>
      run((store) => {
        store.insertCall(openCall("c1", { name: "confirm" }));
        expect(store.insertCall(openCall("c1", { name: "choice", fingerprint: "other" }))).toBe(false);
        expect(store.getCall("c1")).toMatchObject({ name: "confirm", fingerprint: "fp-c1" });
        expect(store.countOpen()).toBe(1);
      }));

    it("finishes an open call once: the result is kept, the arguments and deliveries go, a second finish changes nothing", () =>
      run((store) => {
        const row = openCall("c1", { deliv: JSON.stringify([{ key: "app:phone", conn: "k1" }]) });
        store.insertCall(row);
        expect(store.finishCall("c1", result("c1", "first"), T0 + 1000, row.bytes)).toBe(true);
        expect(store.getCall("c1")).toMatchObject({ status: "done", result: result("c1", "first"), keep_until: T0 + 1000, args: "", deliv: "[]" });
        expect(store.finishCall("c1", result("c1", "second"), T0 + 2000, bytesOf(result("c1", "first")))).toBe(false);
        expect(store.getCall("c1")).toMatchObject({ result: result("c1", "first"), keep_until: T0 + 1000 });
        expect(store.finishCall("nope", result("nope"), T0, 0)).toBe(false);
        expect(store.getCall("nope")).toBeUndefined();
      }));

    it("reseals only an open call, with its new envelopes and fingerprint", () =>
      run((store) => {
        const row = openCall("c1");
        store.insertCall(row);
        expect(store.resealCall("c1", '{"sealed":"v2"}', "fp-v2", row.bytes)).toBe(true);
        expect(store.getCall("c1")).toMatchObject({ args: '{"sealed":"v2"}', fingerprint: "fp-v2", bytes: bytesOf('{"sealed":"v2"}') });
        store.finishCall("c1", result("c1"), T0 + 1000, bytesOf('{"sealed":"v2"}'));
        expect(store.resealCall("c1", '{"sealed":"v3"}', "fp-v3", 0)).toBe(false);
        expect(store.getCall("c1")).toMatchObject({ args: "", fingerprint: "fp-v2" });
      }));

    it("drops a call only while it is open", () =>
      run((store) => {
        store.insertCall(openCall("open"));
        store.insertCall(openCall("done"));
        store.finishCall("done", result("done"), T0 + 1000, store.getCall("done")!.bytes);
        expect(store.dropOpenCall("open")).toBe(true);
        expect(store.getCall("open")).toBeUndefined();
        expect(store.dropOpenCall("done")).toBe(false);
        expect(store.getCall("done")?.status).toBe("done");
        expect(store.dropOpenCall("absent")).toBe(false);
      }));

    it("marks a call checked with its target, and deletes a call whatever its state", () =>
      run((store) => {
        store.insertCall(openCall("c1"));
        store.setChecked("c1", "agent:provider");
        expect(store.getCall("c1")).toMatchObject({ checked: 1, target: "agent:provider" });
        store.setChecked("absent", null);
        expect(store.getCall("absent")).toBeUndefined();
        store.deleteCall("c1");
        store.deleteCall("absent");
        expect(store.getCall("c1")).toBeUndefined();
        expect(store.countOpen()).toBe(0);
      }));

    it("takes an ack only from the caller of a done call", () =>
      run((store) => {
        store.insertCall(openCall("c1"));
        expect(store.ackCall("c1", "agent:agent-1")).toBe(false); // still open
        store.finishCall("c1", result("c1"), T0 + 1000, store.getCall("c1")!.bytes);
        expect(store.ackCall("c1", "app:phone")).toBe(false);
        expect(store.getCall("c1")?.status).toBe("done");
        expect(store.ackCall("c1", "agent:agent-1")).toBe(true);
        expect(store.getCall("c1")).toBeUndefined();
        expect(store.ackCall("c1", "agent:agent-1")).toBe(false);
      }));

    it("lists open calls oldest first, and a caller's unacked results only", () =>
      run((store) => {
        for (const [i, id] of ["a", "b", "c", "d"].entries())
          store.insertCall(openCall(id, { created_at: T0 + i, caller: i === 3 ? "app:phone" : "agent:agent-1" }));
        store.finishCall("b", result("b"), T0 + 5000, store.getCall("b")!.bytes);
        store.finishCall("d", result("d"), T0 + 5000, store.getCall("d")!.bytes);
        expect(store.openCalls().map((c) => c.call_id)).toEqual(["a", "c"]);
        expect(store.keptResults("agent:agent-1").map((c) => c.call_id)).toEqual(["b"]);
        expect(store.keptResults("app:phone").map((c) => c.call_id)).toEqual(["d"]);
        expect(store.keptResults("agent:nobody")).toEqual([]);
      }));

    it("glances at the agent's open calls: the oldest up to the limit as id, tool and fingerprint, and how many wait", () =>
      run((store, host) => {
        expect(store.agentOpen(2)).toEqual({ listed: [], pending: 0 });
        // Inserted out of age order, one the app's, one ended, two of the same instant (insertion order breaks the tie).
        const rows: [string, number, string][] = [
          ["late", 9, "agent"],
          ["first", 1, "agent"],
          ["app", 0, "app"],
          ["gone", 2, "agent"],
          ["tie1", 5, "agent"],
          ["tie2", 5, "agent"],
        ];
        for (const [id, at, role] of rows)
          store.insertCall(
            openCall(id, {
              created_at: T0 + at,
              caller_role: role === "app" ? "app" : "agent",
              caller: `${role}:x`,
              name: id === "tie2" ? "calculator" : "confirm",
            }),
          );
        store.finishCall("gone", result("gone"), T0 + 5000, store.getCall("gone")!.bytes);
        expect(store.agentOpen(3)).toEqual({
          listed: [
            { id: "first", name: "confirm", fp: "fp-first" },
            { id: "tie1", name: "confirm", fp: "fp-tie1" },
            { id: "tie2", name: "calculator", fp: "fp-tie2" },
          ],
          pending: 4,
        });
        store.resealCall("first", "{}", "fp-new", store.getCall("first")!.bytes);
        store.dropOpenCall("tie1");
        store.deleteCall("late");
        // What memory keeps in step is what a new wake reads from storage.
        for (const s of [store, host.reopen()])
          expect(s.agentOpen(2)).toEqual({
            listed: [
              { id: "first", name: "confirm", fp: "fp-new" },
              { id: "tie2", name: "calculator", fp: "fp-tie2" },
            ],
            pending: 2,
          });
      }));

    it("moves humanVersion for the calls a human answers, and not for the automatic tools' calls once the glance knows them", () =>
      run((store) => {
        const v = () => store.humanVersion?.();
        expect(v()).toBeTypeOf("number");
        store.agentOpen(20);
        let last = v();
        const same = () => expect(v()).toBe(last);
        const moved = () => {
          expect(v()).not.toBe(last);
          last = v();
        };
        for (const id of ["k1", "k2", "k3"]) store.insertCall(openCall(id, { name: "calculator" }));
        store.insertCall(openCall("cv", { name: "canvas" }));
        same();
        store.finishCall("k1", result("k1"), T0 + 1000, store.getCall("k1")!.bytes);
        store.dropOpenCall("k2");
        store.deleteCall("k3");
        store.finishCall("cv", result("cv"), T0 + 1000, store.getCall("cv")!.bytes);
        same();
        store.insertCall(openCall("q1"));
        moved();
        store.resealCall("q1", "{}", "fp-2", store.getCall("q1")!.bytes);
        moved();
        store.finishCall("q1", result("q1"), T0 + 1000, store.getCall("q1")!.bytes);
        moved();
        store.insertCall(openCall("q2", { name: "ask_question" }));
        moved();
        store.dropOpenCall("q2");
        moved();
      }));

    it("counts open calls through inserts, results, drops and deletes", () =>
      run((store) => {
        for (const id of ["a", "b", "c", "d"]) store.insertCall(openCall(id));
        expect(store.countOpen()).toBe(4);
        store.finishCall("a", result("a"), T0 + 1000, store.getCall("a")!.bytes);
        store.dropOpenCall("b");
        store.deleteCall("c");
        expect(store.countOpen()).toBe(1);
        store.insertCall(openCall("a"));
        expect(store.countOpen()).toBe(1); // the taken id wrote nothing
      }));

    it("finds the open calls past their deadline, earliest first, at most the limit", () =>
      run((store) => {
        store.insertCall(openCall("late", { deadline: T0 + 300 }));
        store.insertCall(openCall("first", { deadline: T0 + 100 }));
        store.insertCall(openCall("future", { deadline: T0 + 10_000 }));
        store.insertCall(openCall("second", { deadline: T0 + 200 }));
        store.insertCall(openCall("done", { deadline: T0 }));
        store.finishCall("done", result("done"), T0 + 100_000, store.getCall("done")!.bytes);
        expect(store.dueCalls(T0 + 1000, 10).map((c) => c.call_id)).toEqual(["first", "second", "late"]);
        expect(store.dueCalls(T0 + 1000, 2).map((c) => c.call_id)).toEqual(["first", "second"]);
        expect(store.dueCalls(T0 + 200, 10).map((c) => c.call_id)).toEqual(["first", "second"]);
      }));

    it("purges kept results past their retention only, at most the limit, and says how many", () =>
      run((store) => {
        for (const [id, keep] of [
          ["old1", 100],
          ["old2", 200],
          ["old3", 300],
          ["fresh", 10_000],
        ] as const) {
          store.insertCall(openCall(id));
          store.finishCall(id, result(id), T0 + keep, store.getCall(id)!.bytes);
        }
        store.insertCall(openCall("open", { deadline: T0 }));
        expect(store.purgeResults(T0 + 1000, 2)).toBe(2);
        expect(store.purgeResults(T0 + 1000, 10)).toBe(1);
        expect(store.purgeResults(T0 + 1000, 10)).toBe(0);
        expect(["old1", "old2", "old3"].map((id) => store.getCall(id))).toEqual([undefined, undefined, undefined]);
        expect(store.getCall("fresh")?.status).toBe("done");
        expect(store.getCall("open")?.status).toBe("open");
      }));

    it("records a delivery once per connection in the call's row and on the row it was given", () =>
      run((store) => {
        store.insertCall(openCall("c1"));
        const row = store.getCall("c1")!;
        store.addDelivery(row, "app:phone", "k1");
        store.addDelivery(row, "app:phone", "k1");
        store.addDelivery(row, "app:tablet", "k2");
        const want = [
          { key: "app:phone", conn: "k1" },
          { key: "app:tablet", conn: "k2" },
        ];
        expect(deliveriesOf(row)).toEqual(want);
        expect(deliveriesOf(store.getCall("c1")!)).toEqual(want);
      }));
  });

  describe(`${name}: byte usage and due times`, () => {
    it("counts the bytes of calls, results, registrations and history, and agrees with a fresh read", () =>
      run((store, host) => {
        expect(store.usage()).toBe(0);
        const row = openCall("c1");
        store.insertCall(row);
        expect(store.usage()).toBe(row.bytes);
        store.finishCall("c1", result("c1"), T0 + 1000, row.bytes);
        expect(store.usage()).toBe(bytesOf(result("c1")));
        const tools = [tool("choice")];
        store.register("app:phone", "app", tools, T0);
        const regBytes = bytesOf(JSON.stringify(tools));
        expect(store.registration("app:phone")?.bytes).toBe(regBytes);
        store.addMessage(message("m1"), "app:phone");
        const total = bytesOf(result("c1")) + regBytes + store.historyBytes();
        expect(store.historyBytes()).toBe(bytesOf(JSON.stringify({ ...message("m1"), seq: 1 })));
        expect(store.usage()).toBe(total);
        expect(host.reopen().usage()).toBe(total);
        store.ackCall("c1", "agent:agent-1");
        store.dropRegistration("app:phone");
        expect(store.usage()).toBe(store.historyBytes());
        expect(host.reopen().usage()).toBe(store.historyBytes());
      }));

    it("has no due time when empty, then the earliest open deadline, result expiry or registration idle expiry", () =>
      run((store, host) => {
        expect(store.nextDue()).toBeUndefined();
        store.insertCall(openCall("c1", { deadline: T0 + 5000 }));
        expect(store.nextDue()).toBe(T0 + 5000);
        store.insertCall(openCall("c2", { deadline: T0 + 9000 }));
        store.finishCall("c2", result("c2"), T0 + 3000, store.getCall("c2")!.bytes);
        expect(store.nextDue()).toBe(T0 + 3000);
        store.register("app:phone", "app", [tool("choice")], T0 - LIMITS.registrationIdleMs + 1000);
        expect(store.nextDue()).toBe(T0 + 1000);
        expect(host.reopen().nextDue()).toBe(T0 + 1000);
      }));

    it("never reports a due time later than the earliest one left after removals", () =>
      run((store, host) => {
        store.insertCall(openCall("soon", { deadline: T0 + 1000 }));
        store.insertCall(openCall("later", { deadline: T0 + 8000 }));
        expect(store.nextDue()).toBe(T0 + 1000);
        store.dropOpenCall("soon");
        // The SQLite store may keep an earlier bound until its next wake (worker/sql-store.ts); never a later one.
        expect(store.nextDue()).toBeLessThanOrEqual(T0 + 8000);
        expect(host.reopen().nextDue()).toBe(T0 + 8000);
      }));
  });

  describe(`${name}: registrations and instances`, () => {
    it("lists one side's registrations oldest first, a re-registration moving to the end with its new tools", () =>
      run((store) => {
        store.register("app:phone", "app", [tool("choice")], T0);
        store.register("agent:agent-1", "agent", [tool("build")], T0);
        store.register("app:tablet", "app", [tool("confirm")], T0);
        store.register("app:phone", "app", [tool("choice"), tool("input")], T0 + 1);
        expect(store.registrations("app").map((r) => [r.key, r.tools.map((t) => t.name)])).toEqual([
          ["app:tablet", ["confirm"]],
          ["app:phone", ["choice", "input"]],
        ]);
        expect(store.registrations("agent").map((r) => r.key)).toEqual(["agent:agent-1"]);
        expect(store.registration("app:phone")?.tools.map((t) => t.name)).toEqual(["choice", "input"]);
        expect(store.registration("app:absent")).toBeUndefined();
      }));

    it("finds registrations idle since before a time, a touch keeping one alive, at most the limit", () =>
      run((store) => {
        store.register("app:a", "app", [tool("a")], T0);
        store.register("app:b", "app", [tool("b")], T0 + 10);
        store.register("app:c", "app", [tool("c")], T0 + 20);
        store.touch("app:a", T0 + 1000);
        store.touch("app:absent", T0 + 1000);
        expect(store.idleRegistrations(T0 + 500, 10).sort()).toEqual(["app:b", "app:c"]);
        expect(store.idleRegistrations(T0 + 500, 1)).toHaveLength(1);
        store.dropRegistration("app:b");
        expect(store.idleRegistrations(T0 + 500, 10)).toEqual(["app:c"]);
        expect(store.registration("app:absent")).toBeUndefined();
      }));

    it("binds an instance to one provider, a later bind moving it, and unbinds it", () =>
      run((store) => {
        expect(store.instance("canvas", "i1")).toBeUndefined();
        store.bind("canvas", "i1", "agent:a");
        store.bind("canvas", "i2", "agent:b");
        store.bind("canvas", "i1", "agent:c");
        expect(store.instance("canvas", "i1")).toBe("agent:c");
        expect(store.instance("other", "i1")).toBeUndefined();
        store.unbind("canvas", "i1");
        expect(store.instance("canvas", "i1")).toBeUndefined();
        expect(store.instance("canvas", "i2")).toBe("agent:b");
      }));
  });

  describe(`${name}: history, cursors and meta`, () => {
    it("numbers messages from 1 and pages them newest-limited, oldest first, after or before a sequence number", () =>
      run((store) => {
        expect(store.lastSeq()).toBe(0);
        for (let i = 1; i <= 5; i++) expect(store.addMessage(message(`m${i}`), "app:phone")).toBe(i);
        expect(store.lastSeq()).toBe(5);
        expect(store.messages(0, 10).map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
        expect(store.messages(2, 2).map((m) => m.seq)).toEqual([4, 5]);
        expect(store.messages(5, 10)).toEqual([]);
        expect(store.messagesBefore(4, 2).map((m) => m.seq)).toEqual([2, 3]);
        expect(store.messagesBefore(1, 10)).toEqual([]);
        expect(store.messages(0, 1)[0]).toEqual({ ...message("m5"), seq: 5 });
      }));

    it("knows a message by its sender and id", () =>
      run((store) => {
        store.addMessage(message("m1"), "app:phone");
        expect(store.hasMessage("app:phone", "m1")).toBe(true);
        expect(store.hasMessage("app:tablet", "m1")).toBe(false);
        expect(store.hasMessage("app:phone", "m2")).toBe(false);
      }));

    it("keeps the newest history entries only, freeing the bytes of the trimmed ones", () =>
      run((store) => {
        const n = LIMITS.historySize + 3;
        for (let i = 1; i <= n; i++) store.addMessage(message(`m${i}`), "app:phone");
        const kept = store.messages(0, n + 10);
        expect(kept).toHaveLength(LIMITS.historySize);
        expect(kept[0]!.seq).toBe(4);
        expect(store.lastSeq()).toBe(n);
        expect(store.hasMessage("app:phone", "m1")).toBe(false);
        expect(store.historyBytes()).toBe(kept.reduce((s, m) => s + bytesOf(JSON.stringify(m)), 0));
        expect(store.usage()).toBe(store.historyBytes());
      }));

    it("finds the oldest large entries and replaces one in place, its bytes following", () =>
      run((store) => {
        store.addMessage(message("small"), "app:phone");
        store.addMessage(message("big1", "x".repeat(2000)), "app:phone");
        store.addMessage(message("big2", "y".repeat(3000)), "app:phone");
        const large = store.largeMessages(1000, 1);
        expect(large.map((m) => [m.seq, m.frame.id])).toEqual([[2, "big1"]]);
        expect(large[0]!.bytes).toBe(bytesOf(JSON.stringify({ ...message("big1", "x".repeat(2000)), seq: 2 })));
        const before = store.historyBytes();
        const placeholder: MessageOut = { ...message("big1", "[elided]"), seq: 2, elided: true };
        store.replaceMessage(2, placeholder);
        expect(store.messagesBefore(3, 1)).toEqual([placeholder]);
        expect(store.historyBytes()).toBe(before - large[0]!.bytes + bytesOf(JSON.stringify(placeholder)));
        expect(store.usage()).toBe(store.historyBytes());
        expect(store.hasMessage("app:phone", "big1")).toBe(true);
      }));

    it("keeps each client's history cursor", () =>
      run((store) => {
        expect(store.cursor("app:phone")).toBeUndefined();
        store.setCursor("app:phone", 3);
        store.setCursor("app:phone", 7);
        store.setCursor("app:tablet", 1);
        expect(store.cursor("app:phone")).toBe(7);
        expect(store.cursor("app:tablet")).toBe(1);
      }));

    it("sets, replaces and deletes meta values", () =>
      run((store) => {
        expect(store.meta("session")).toBeUndefined();
        store.setMeta("session", "v1");
        store.setMeta("session", "v2");
        expect(store.meta("session")).toBe("v2");
        store.setMeta("session", undefined);
        expect(store.meta("session")).toBeUndefined();
      }));
  });

  describe(`${name}: transactions and clearing`, () => {
    it("leaves nothing behind when a transaction throws half-way: rows, counts, usage and history as before", () =>
      run((store, host) => {
        store.insertCall(openCall("kept"));
        store.addMessage(message("m1"), "app:phone");
        const usage = store.usage();
        const glance = store.agentOpen(20);
        expect(() =>
          host.txn(() => {
            store.insertCall(openCall("lost"));
            store.finishCall("kept", result("kept"), T0 + 1000, store.getCall("kept")!.bytes);
            store.register("app:phone", "app", [tool("choice")], T0);
            store.bind("canvas", "i1", "agent:a");
            store.addMessage(message("m2"), "app:phone");
            store.setCursor("app:phone", 2);
            store.setMeta("session", "half");
            throw new Error("handler failed half-way");
          }),
        ).toThrow("handler failed half-way");
        for (const s of [store, host.reopen()]) {
          expect(s.getCall("lost")).toBeUndefined();
          expect(s.getCall("kept")?.status).toBe("open");
          expect(s.countOpen()).toBe(1);
          expect(s.agentOpen(20)).toEqual(glance);
          expect(s.usage()).toBe(usage);
          expect(s.registrations("app")).toEqual([]);
          expect(s.instance("canvas", "i1")).toBeUndefined();
          expect(s.lastSeq()).toBe(1);
          expect(s.cursor("app:phone")).toBeUndefined();
          expect(s.meta("session")).toBeUndefined();
        }
      }));

    it("keeps a transaction's writes when it returns", () =>
      run((store, host) => {
        const seq = host.txn(() => {
          store.insertCall(openCall("c1"));
          return store.addMessage(message("m1"), "app:phone");
        });
        expect(seq).toBe(1);
        expect(host.reopen().getCall("c1")?.status).toBe("open");
        expect(host.reopen().lastSeq()).toBe(1);
      }));

    it("erases everything on clear", () =>
      run((store, host) => {
        store.insertCall(openCall("open"));
        store.insertCall(openCall("done"));
        store.finishCall("done", result("done"), T0 + 1000, store.getCall("done")!.bytes);
        store.register("app:phone", "app", [tool("choice")], T0);
        store.bind("canvas", "i1", "agent:a");
        store.addMessage(message("m1"), "app:phone");
        store.setCursor("app:phone", 1);
        store.setMeta("session", "v");
        store.clear();
        for (const s of [store, host.reopen()]) {
          expect([s.getCall("open"), s.getCall("done")]).toEqual([undefined, undefined]);
          expect([s.countOpen(), s.usage(), s.historyBytes()]).toEqual([0, 0, 0]);
          expect(s.nextDue()).toBeUndefined();
          expect(s.registrations("app")).toEqual([]);
          expect(s.instance("canvas", "i1")).toBeUndefined();
          expect(s.messages(0, 10)).toEqual([]);
          expect(s.hasMessage("app:phone", "m1")).toBe(false);
          expect(s.cursor("app:phone")).toBeUndefined();
          expect(s.meta("session")).toBeUndefined();
        }
      }));
  });
}
