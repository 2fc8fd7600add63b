// The hold on the PWA's start and the early card of a waiting question (web/src/early-card.ts, issue 33): the app
// starts once the card of the first waiting question was painted, at once for a call no early card shows, never
// with a sealed session's call drawn, HOLD_NO_CALL_MS after the registration when no call comes, and after
// HOLD_MAX_MS whatever happens. The drawing is a stub here (no DOM in Node); test/browser/browser-phone-open.test.ts
// draws the real card in Chromium.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  EARLY_STRINGS,
  EarlyHold,
  type EarlyCall,
  type WatchedSocket,
  HOLD_MAX_MS,
  HOLD_NO_CALL_MS,
  holdForCard,
  takeEarlyIntent,
} from "../../web/src/early-card.js";
import { t } from "../../web/src/i18n.js";
import { zh } from "../../web/src/i18n-zh.js";

type Listener = (ev: { data?: unknown }) => void;
class FakeSocket {
  private readonly ls = new Map<string, Listener[]>();
  addEventListener(type: string, l: Listener): void {
    this.ls.set(type, [...(this.ls.get(type) ?? []), l]);
  }
  fire(type: string, data?: unknown): void {
    for (const l of this.ls.get(type) ?? []) l({ data: typeof data === "string" ? data : JSON.stringify(data) });
  }
}

const call = (id: string, name = "ask_question") => ({ type: "tool.call", call_id: id, name, arguments: { question: `Q ${id}?` }, deadline: 0, from: "agent" });

/** A watched early socket whose `hello` said plaintext (or not), a hold, and a stub drawing whose paint the test settles. */
function watched(plain: boolean | undefined) {
  const ws = new FakeSocket();
  const e: WatchedSocket & { isTaken: boolean } = { ws, plain: plain === undefined ? undefined : Promise.resolve(plain), isTaken: false };
  const hold = new EarlyHold();
  const drawn: { call: EarlyCall; paint: () => void; dropped: boolean }[] = [];
  const draw = (c: EarlyCall) => {
    let paint: () => void = () => undefined;
    const painted = new Promise<void>((r) => (paint = r));
    const d = { call: c, paint, dropped: false };
    drawn.push(d);
    return { painted, drop: () => void (d.dropped = true) };
  };
  const decided = holdForCard(e, "sid", hold, draw);
  return { ws, e, hold, drawn, decided };
}

describe("the PWA's early card and the hold on its start", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
    globalThis.lineupEarlyUi = undefined;
  });

  it("starts the app a task after the first waiting question's card was painted, not before", async () => {
    const { ws, hold, drawn } = watched(true);
    ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    expect(drawn.map((d) => d.call.call_id)).toEqual(["c1"]);
    expect(hold.freed).toBe(false);
    drawn[0]!.paint();
    await vi.advanceTimersByTimeAsync(0);
    expect(hold.freed).toBe(true);
  });

  it("draws every waiting question handed over before the app started, once each", async () => {
    const { ws, drawn } = watched(true);
    ws.fire("message", call("c1"));
    ws.fire("message", call("c2", "confirm"));
    ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    expect(drawn.map((d) => d.call.call_id)).toEqual(["c1", "c2"]);
  });

  it("starts the app at once for a call no early card shows (the app shows it)", async () => {
    const { ws, hold, drawn } = watched(true);
    ws.fire("message", call("k1", "calculator"));
    await vi.advanceTimersByTimeAsync(0);
    expect(drawn).toHaveLength(0);
    expect(hold.freed).toBe(true);
  });

  it("never draws a sealed session's call, whatever the relay sends (a sealed hello, or a session this device pinned sealed)", async () => {
    const { ws, hold, drawn } = watched(false);
    ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    expect(drawn).toHaveLength(0);
    expect(hold.freed).toBe(true);
  });

  it("draws nothing before the hello (no seal known yet) and nothing once the app took the socket", async () => {
    const before = watched(undefined);
    before.ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    expect(before.drawn).toHaveLength(0);
    expect(before.hold.freed).toBe(true);

    const taken = watched(true);
    taken.e.isTaken = true;
    taken.ws.fire("message", call("c2"));
    await vi.advanceTimersByTimeAsync(0);
    expect(taken.drawn).toHaveLength(0);
  });

  it("starts the app HOLD_NO_CALL_MS after the registration went when no call comes, and at once when it did not go", async () => {
    const sent = watched(true);
    sent.decided(true);
    await vi.advanceTimersByTimeAsync(HOLD_NO_CALL_MS - 1);
    expect(sent.hold.freed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent.hold.freed).toBe(true);

    const none = watched(true);
    none.decided(false);
    expect(none.hold.freed).toBe(true);
  });

  it("starts the app when the socket closes or fails, and after HOLD_MAX_MS whatever the socket does", async () => {
    const closed = watched(true);
    closed.ws.fire("close");
    expect(closed.hold.freed).toBe(true);

    const silent = watched(true);
    await vi.advanceTimersByTimeAsync(HOLD_MAX_MS - 1);
    expect(silent.hold.freed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(silent.hold.freed).toBe(true);
  });

  it("takes a card away when its call is cancelled, and what was pressed on it with it (a call sent again is asked again)", async () => {
    const { ws, drawn } = watched(true);
    ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    globalThis.lineupEarlyUi!.intents.set("c1", { kind: "send", text: "ok" });
    ws.fire("message", { type: "tool.cancel", call_id: "c1", reason: "cancelled" });
    expect(drawn[0]!.dropped).toBe(true);
    expect(takeEarlyIntent("c1")).toBeUndefined();
  });

  it("starts the app at once when the page has nowhere to draw the card yet", async () => {
    const ws = new FakeSocket();
    const hold = new EarlyHold();
    holdForCard({ ws, plain: Promise.resolve(true), isTaken: false }, "sid", hold, () => undefined);
    ws.fire("message", call("c1"));
    await vi.advanceTimersByTimeAsync(0);
    expect(hold.freed).toBe(true);
  });

  it("hands what was done on an early card to the app's card once", () => {
    globalThis.lineupEarlyUi = { intents: new Map([["c1", { kind: "yes" }]]) };
    expect(takeEarlyIntent("c1")).toEqual({ kind: "yes" });
    expect(takeEarlyIntent("c1")).toBeUndefined();
  });

  it("says what the app's card says (its strings are the app's, in English and Chinese)", () => {
    for (const k of Object.keys(EARLY_STRINGS.en) as (keyof typeof EARLY_STRINGS.en)[]) {
      expect(EARLY_STRINGS.en[k]).toBe(t(k));
      expect(EARLY_STRINGS.zh[k]).toBe(zh[k]);
    }
  });
});
