// The reconnecting socket (shared/client/socket.ts) for a protocol without a `hello` frame: the PWA's inbox socket
// (web/src/inbox.ts) counts the transport's open as its hello (`helloOnOpen`). Fake WebSocket, fake timers.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ReconnectingSocket, dialWith, type SocketEvent, type WebSocketLike } from "../../shared/client/socket.js";

type L = (ev: SocketEvent) => void;
class FakeWs implements WebSocketLike {
  static all: FakeWs[] = [];
  readyState = 0;
  sent: string[] = [];
  private readonly ls: Record<string, L[]> = {};
  constructor(readonly url: string) {
    FakeWs.all.push(this);
  }
  addEventListener(type: string, l: L): void {
    (this.ls[type] ??= []).push(l);
  }
  send(d: string): void {
    this.sent.push(d);
  }
  close(): void {}
  fire(type: string, ev: Partial<SocketEvent> = {}): void {
    for (const l of this.ls[type] ?? []) l({ type, ...ev });
  }
  open(): void {
    this.readyState = 1;
    this.fire("open");
  }
  drop(code: number): void {
    this.readyState = 3;
    this.fire("close", { code, reason: "" });
  }
}
const last = () => FakeWs.all[FakeWs.all.length - 1]!;

function make(helloOnOpen: boolean) {
  const s = new ReconnectingSocket({
    dial: dialWith(FakeWs, "wss://relay/api/inbox/ws", []),
    backoff: { random: () => 0.999999 },
    helloTimeoutMs: 0,
    helloOnOpen,
  });
  const closes: number[] = [];
  s.on("close", (c) => closes.push(c.delayMs + 1));
  return { s, closes };
}

beforeEach(() => {
  FakeWs.all = [];
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

describe("a socket whose open is its hello (the inbox socket)", () => {
  it("sends once the transport is open, with no hello frame", () => {
    const { s } = make(true);
    s.start();
    expect(s.send("view")).toBe(false);
    last().open();
    expect(s.connected).toBe(true);
    expect(s.send('{"type":"view"}')).toBe(true);
    expect(last().sent).toEqual(['{"type":"view"}']);
  });

  it("resets its backoff after a connection that stayed open, as a session socket does after hello", () => {
    const { s, closes } = make(true);
    s.start();
    last().drop(1006); // never opened
    vi.advanceTimersByTime(500);
    last().open();
    vi.advanceTimersByTime(10_000);
    last().drop(1006); // up for 10 s: the next retry is at the base delay again
    expect(closes).toEqual([500, 500]);
  });

  it("without the option, an open with no hello frame is not connected and never resets the backoff", () => {
    const { s, closes } = make(false);
    s.start();
    last().drop(1006);
    vi.advanceTimersByTime(500);
    last().open();
    expect(s.send("view")).toBe(false);
    vi.advanceTimersByTime(10_000);
    last().drop(1006);
    expect(closes).toEqual([500, 1000]);
  });
});
