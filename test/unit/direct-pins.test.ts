// Issue 32: the machines' direct keys the PWA pins (web/src/direct-pins.ts), in localStorage beside the device's
// credentials. localStorage is a Map-backed stand-in with the Web Storage methods the module uses
// (getItem/setItem/removeItem, https://html.spec.whatwg.org/multipage/webstorage.html#the-storage-interface).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pinFromLink, pinOf } from "../../web/src/direct-pins.js";
import type { SavedSession } from "../../web/src/storage.js";

class MemoryStorage {
  readonly m = new Map<string, string>();
  getItem(k: string): string | null {
    return this.m.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.m.set(k, String(v));
  }
  removeItem(k: string): void {
    this.m.delete(k);
  }
}

beforeEach(() => Object.defineProperty(globalThis, "localStorage", { value: new MemoryStorage(), configurable: true }));
afterEach(() => Reflect.deleteProperty(globalThis, "localStorage"));

const ORIGIN = "https://relay.example";
const K1 = "A".repeat(87);
const K2 = "B".repeat(87);
const inboxSession = (sid: string): SavedSession => ({ sid, token: "lud1.x", origin: ORIGIN, label: "", addedAt: 0, clientId: "dev1", inbox: "ib1" });

describe("pinned direct keys", () => {
  it("the pairing link's key stands for the inbox's only machine, and is kept for that machine once it answered", () => {
    pinFromLink(`#pair=ib1.code&k=secret&dk=${K1}`, ORIGIN, "ib1");
    const pin = pinOf(inboxSession("s1"), () => ({ machine: "m1", machines: 1 }));
    expect(pin.get()).toBe(K1);
    pin.keep(K1);
    // A second machine joined later: the first one's sessions still have its key.
    expect(pinOf(inboxSession("s1"), () => ({ machine: "m1", machines: 2 })).get()).toBe(K1);
  });

  it("a second machine of the inbox does not inherit the link's key: its first verified key is pinned for it alone", () => {
    pinFromLink(`#pair=ib1.code&dk=${K1}`, ORIGIN, "ib1");
    const other = pinOf(inboxSession("s2"), () => ({ machine: "m2", machines: 2 }));
    expect(other.get()).toBeUndefined();
    other.keep(K2);
    expect(other.get()).toBe(K2);
    expect(pinOf(inboxSession("s3"), () => ({ machine: "m1", machines: 2 })).get()).toBeUndefined();
  });

  it("a guest session's pin is its own, and forgetting it leaves trust on first use", () => {
    const guest: SavedSession = { sid: "g1", token: "t", origin: ORIGIN, label: "", addedAt: 0 };
    const pin = pinOf(guest, () => ({ machines: 0 }));
    expect(pin.get()).toBeUndefined();
    pin.keep(K1);
    expect(pinOf(guest, () => ({ machines: 0 })).get()).toBe(K1);
    expect(pinOf({ ...guest, sid: "g2" }, () => ({ machines: 0 })).get()).toBeUndefined();
    pin.forget();
    expect(pin.get()).toBeUndefined();
  });

  it("forgetting a machine's pin also drops the link's key it stood on", () => {
    pinFromLink(`#pair=ib1.code&dk=${K1}`, ORIGIN, "ib1");
    const pin = pinOf(inboxSession("s1"), () => ({ machine: "m1", machines: 1 }));
    pin.keep(K1);
    pin.forget();
    expect(pin.get()).toBeUndefined();
  });

  it("a link whose dk is not a key's shape pins nothing", () => {
    pinFromLink("#pair=ib1.code&dk=short", ORIGIN, "ib1");
    expect(pinOf(inboxSession("s1"), () => ({ machine: "m1", machines: 1 })).get()).toBeUndefined();
  });
});
