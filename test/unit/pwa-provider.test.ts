// The PWA's host of the one call book (web/src/provider.ts over shared/client/call-book.ts) and its wire
// (web/src/wire.ts): answers made offline survive a reload in localStorage and go out after the next hello; a
// sealed session's outbox never reaches localStorage in plaintext; a sealed call that does not open becomes a
// card that keeps its deadline. localStorage is a Map-backed stand-in with the Web Storage methods the app uses
// (getItem/setItem/removeItem, https://html.spec.whatwg.org/multipage/webstorage.html#the-storage-interface).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Codec, type Decoded } from "../../shared/client/codec.js";
import type { ClientFrame, HelloFrame, ToolCallOut } from "../../shared/contract/protocol.js";
import { generateContentKey } from "../../shared/crypto/e2e/index.js";
import { Provider, type ProviderHost } from "../../web/src/provider.js";
import { unopenable } from "../../web/src/wire.js";

class MemoryStorage {
  // Like a real Storage, its keys are its enumerable own properties (Object.keys(localStorage) lists them).
  readonly #m = new Map<string, string>();
  getItem(k: string): string | null {
    return this.#m.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.#m.set(k, String(v));
    Object.defineProperty(this, k, { value: String(v), enumerable: true, configurable: true });
  }
  removeItem(k: string): void {
    this.#m.delete(k);
    Reflect.deleteProperty(this, k);
  }
  dump(): string {
    return JSON.stringify([...this.#m]);
  }
}

let store: MemoryStorage;
beforeEach(() => {
  store = new MemoryStorage();
  Object.defineProperty(globalThis, "localStorage", { value: store, configurable: true });
});
afterEach(() => {
  Reflect.deleteProperty(globalThis, "localStorage");
});

const SID = "s1234567";
const call = (id: string, deadline = Date.now() + 60_000): ToolCallOut => ({
  type: "tool.call",
  call_id: id,
  name: "confirm",
  arguments: { question: "Deploy now?" },
  deadline,
  from: "agent",
});

function rig(sealed = false, alsoDirect?: ProviderHost["alsoDirect"]) {
  const sent: ClientFrame[] = [];
  const kept: unknown[][] = [];
  const host: ProviderHost = {
    send: (f) => sent.push(f),
    refresh: () => undefined,
    lost: () => undefined,
    sent: () => undefined,
    auto: () => undefined,
    sealed: () => sealed,
    keepSealed: (frames) => kept.push([...frames]),
    ...(alsoDirect ? { alsoDirect } : {}),
  };
  const p = new Provider(SID, host, () => false);
  return { p, sent, kept };
}

describe("the PWA's call book host", () => {
  it("an answer made while the relay is down also goes on an open direct path at once: the card says answered, and the relay still gets its copy after hello (issue 32)", () => {
    const direct: ClientFrame[] = [];
    const { p, sent } = rig(false, (f) => (direct.push(f), true));
    p.hello(() => true);
    p.receive(call("d1"));
    p.book.down();
    expect(p.answer("d1", { result: { message: "yes" } }, "me")).toBe(true);
    expect(direct).toEqual([{ type: "tool.result", call_id: "d1", name: "confirm", result: { message: "yes" } }]);
    expect(p.find("d1")?.state).toBe("answered");
    expect(store.getItem(`lineup.outbox.${SID}`)).toContain('"call_id":"d1"');
    p.hello(() => true);
    expect(sent).toContainEqual({ type: "tool.result", call_id: "d1", name: "confirm", result: { message: "yes" } });
  });

  it("keeps an answer made offline in localStorage; after a reload the new page sends it after hello and the card says answered", () => {
    const first = rig();
    first.p.hello(() => true);
    first.p.receive(call("c1"));
    first.p.book.down(); // the connection dropped
    expect(first.p.answer("c1", { result: { message: "yes" } }, "me")).toBe(true);
    expect(first.p.find("c1")?.state).toBe("queued");
    expect(store.getItem(`lineup.outbox.${SID}`)).toContain('"call_id":"c1"');

    const reloaded = rig();
    expect(reloaded.p.find("c1")?.state).toBe("queued");
    reloaded.p.hello(() => true);
    expect(reloaded.sent).toContainEqual({ type: "tool.result", call_id: "c1", name: "confirm", result: { message: "yes" } });
    expect(reloaded.p.find("c1")?.state).toBe("answered");
    expect(store.getItem(`lineup.outbox.${SID}`)).toBeNull();
  });

  it("re-sends a kept answer when the relay delivers its call again after a reload, and shows no second card", () => {
    const first = rig();
    first.p.hello(() => true);
    first.p.receive(call("c2"));
    first.p.answer("c2", { result: { message: "no" } }, "me");
    const reloaded = rig();
    reloaded.p.hello(() => true);
    reloaded.p.receive(call("c2"));
    expect(reloaded.sent.filter((f) => f.type === "tool.result")).toEqual([{ type: "tool.result", call_id: "c2", name: "confirm", result: { message: "no" } }]);
    expect(reloaded.p.log.calls.value.filter((c) => c.call_id === "c2")).toHaveLength(1);
  });

  it("writes a sealed session's offline answer only through keepSealed (sealed), never in plaintext", () => {
    const { p, kept } = rig(true);
    p.hello(() => true);
    p.receive(call("c3"));
    p.book.down();
    p.answer("c3", { result: { message: "secret answer" } }, "me");
    expect(kept.at(-1)).toEqual([{ type: "tool.result", call_id: "c3", name: "confirm", result: { message: "secret answer" } }]);
    expect(store.dump()).not.toContain("secret answer");
    expect(store.dump()).not.toContain("Deploy now?");
  });

  it("sends envelopes a sealed session kept in an earlier page load as they are, after the registration", () => {
    store.setItem(`lineup.outbox.${SID}`, JSON.stringify([{ type: "tool.result", call_id: "c4", name: "confirm", sealed: { v: 1 } }]));
    const { p, sent } = rig(true);
    const raw: object[] = [];
    p.hello((f) => (raw.push(f), true));
    expect(sent[0]).toMatchObject({ type: "tool.list" });
    expect(raw).toEqual([{ type: "tool.result", call_id: "c4", name: "confirm", sealed: { v: 1 } }]);
  });

  it("regression: a sealed call that does not open here keeps its deadline on its can't-open card (the codec's unopenable names it)", async () => {
    const got: Decoded[] = [];
    const mine = await generateContentKey(1);
    const other = await generateContentKey(1);
    const keys = (k: typeof mine) => ({ keyOf: (e: number) => (e === k.epoch ? k : undefined), current: () => k, refresh: async () => {} });
    const agent = new Codec({ sessionId: SID, sender: () => "agent:a1", keys: keys(other), write: (w) => (wire.push({ ...w }), true), deliver: () => {} });
    const app = new Codec({ sessionId: SID, sender: () => "app:dv_x", keys: keys(mine), write: () => true, deliver: (d) => got.push(d) });
    const wire: Record<string, unknown>[] = [];
    const h: HelloFrame = {
      type: "hello",
      protocol: "lineup/1",
      session_id: SID,
      role: "app",
      client_id: "dv_x",
      peers: { agent: { online: true }, apps: 1 },
      sealed: { epoch: 1 },
    };
    agent.hello(h);
    app.hello(h);
    const deadline = Date.now() + 90_000;
    agent.out({ type: "tool.call", call_id: "c5", name: "confirm", arguments: { question: "?" } });
    await agent.idle();
    // The relay adds the deadline in plaintext beside the envelope.
    app.in({ ...wire[0], deadline, from: "agent" });
    await app.idle();
    const d = got[0];
    expect(d && "unopenable" in d).toBe(true);
    const shown = d && "unopenable" in d ? unopenable(d.unopenable) : undefined;
    expect(shown).toEqual({ call: { type: "tool.call", call_id: "c5", name: "confirm", arguments: {}, deadline, from: "agent" } });
  });

  it("who won: a cancel{answered} that overtakes our sent answer makes the card lost with the winner's device and answer (issue 28 §4)", () => {
    const { p } = rig();
    p.hello(() => true);
    p.receive(call("w1"));
    p.answer("w1", { result: { message: "no", confirmed: false } }, "me");
    p.receive({ type: "tool.cancel", call_id: "w1", reason: "answered", answered_by: "iPhone · Safari", answer: "yes" });
    p.receive({ type: "error", code: "unknown_call", message: "no open call", call_id: "w1" });
    expect(p.find("w1")).toMatchObject({ state: "lost", by: "other", answeredBy: "iPhone · Safari", answerText: "yes" });
  });

  it("who won while away: an answer queued offline that lost names the winner and its answer from the inbox's recent list (issue 28 §4)", () => {
    const { p } = rig();
    p.hello(() => true);
    p.receive(call("q1"));
    p.book.down(); // offline: the answer waits in the outbox, and the relay's cancel goes out without this device
    p.answer("q1", { result: { message: "no", confirmed: false } }, "me");
    p.hello(() => true);
    p.receive({ type: "error", code: "unknown_call", message: "no open call", call_id: "q1" });
    expect(p.find("q1")).toMatchObject({ state: "lost" });
    expect(p.find("q1")).not.toHaveProperty("answeredBy");
    p.fromRecent([{ call_id: "q1", outcome: "answered", by: "dv_iphone", answer: "yes" }]);
    expect(p.find("q1")).toMatchObject({ state: "lost", by: "other", answeredBy: "dv_iphone", answerText: "yes" });
  });

  it("in a sealed session the recent list names the winning device but an answer in it (the relay's words) is never shown", () => {
    const { p } = rig(true);
    p.hello(() => true);
    p.receive(call("s1"));
    p.settle("s1", "gone", "other");
    p.fromRecent([{ call_id: "s1", outcome: "answered", by: "dv_iphone", answer: "yes, says the relay" }]);
    expect(p.find("s1")).toMatchObject({ state: "elsewhere", answeredBy: "dv_iphone" });
    expect(p.find("s1")).not.toHaveProperty("answerText");
  });

  it("a card found closed on the way back is shown as answered on the device the recent list names; a timeout or a named winner stays", () => {
    const { p } = rig();
    p.hello(() => true);
    p.receive(call("g1"));
    p.receive(call("g2"));
    p.receive({ type: "tool.cancel", call_id: "g2", reason: "answered", answered_by: "Pixel 8", answer: "no" });
    p.receive(call("g3"));
    // Back from away, the catch-up found g1 and g3 closed (web/src/provider.ts "gone").
    p.settle("g1", "gone", "other");
    p.settle("g3", "gone", "other");
    p.fromRecent([
      { call_id: "g1", outcome: "answered", by: "dv_iphone", answer: "yes" },
      { call_id: "g2", outcome: "answered", by: "dv_other", answer: "maybe" },
      { call_id: "g3", outcome: "timeout" },
    ]);
    expect(p.find("g3")).toMatchObject({ state: "gone" });
    expect(p.find("g1")).toMatchObject({ state: "elsewhere", answeredBy: "dv_iphone", answerText: "yes" });
    expect(p.find("g2")).toMatchObject({ state: "elsewhere", answeredBy: "Pixel 8", answerText: "no" });
  });

  it("a timeout that overtakes our sent answer closes the card as timed out, not as lost to another device", () => {
    const { p } = rig();
    p.hello(() => true);
    p.receive(call("w2"));
    p.answer("w2", { result: { message: "yes", confirmed: true } }, "me");
    p.receive({ type: "tool.cancel", call_id: "w2", reason: "timeout" });
    expect(p.find("w2")?.state).toBe("timeout");
  });

  it("a call that closes drops the draft typed for it (issue 28 §6)", () => {
    const { p } = rig();
    p.hello(() => true);
    p.receive(call("w3"));
    store.setItem(`lineup.draft.${SID}.w3`, JSON.stringify("half a reply"));
    p.receive({ type: "tool.cancel", call_id: "w3", reason: "cancelled" });
    expect(store.getItem(`lineup.draft.${SID}.w3`)).toBeNull();
  });

  it("forgetting a session drops its drafts, and only its own (issue 28 §6)", () => {
    const { p } = rig();
    store.setItem(`lineup.draft.${SID}`, JSON.stringify("chat"));
    store.setItem(`lineup.draft.${SID}.c1`, JSON.stringify("reply"));
    store.setItem(`lineup.draft.${SID}9`, JSON.stringify("another session's"));
    p.forget();
    expect([store.getItem(`lineup.draft.${SID}`), store.getItem(`lineup.draft.${SID}.c1`), store.getItem(`lineup.draft.${SID}9`)]).toEqual([
      null,
      null,
      JSON.stringify("another session's"),
    ]);
  });
});
