// The one reconnecting socket (shared/client/socket.ts), driven with a fake WebSocket class and fake timers:
// backoff, heartbeat, hello timeout, terminal closes, and dials that are constructor calls or async upgrades.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import WS from "ws";
import { CLOSE } from "../../shared/contract/close.js";
import { ReconnectingSocket, dialWith, type SocketEvent, type WebSocketCtor, type WebSocketLike } from "../../shared/client/socket.js";

// The three runtimes' sockets fit the injected shape (checked by the type checker).
const wsCtor: WebSocketCtor = WS;
void wsCtor;

type L = (ev: SocketEvent) => void;
class FakeWs implements WebSocketLike {
  static all: FakeWs[] = [];
  readyState = 0;
  sent: string[] = [];
  closedWith: [number | undefined, string | undefined] | undefined;
  private readonly ls: Record<string, L[]> = {};
  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
  ) {
    FakeWs.all.push(this);
  }
  addEventListener(type: string, l: L): void {
    (this.ls[type] ??= []).push(l);
  }
  send(d: string): void {
    this.sent.push(d);
  }
  close(code?: number, reason?: string): void {
    this.closedWith = [code, reason];
  }
  fire(type: string, ev: Partial<SocketEvent> = {}): void {
    for (const l of this.ls[type] ?? []) l({ type, ...ev });
  }
  open(): void {
    this.readyState = 1;
    this.fire("open");
  }
  hello(): void {
    this.fire("message", { data: JSON.stringify({ type: "hello", client_id: "c" }) });
  }
  drop(code: number, reason = ""): void {
    this.readyState = 3;
    this.fire("close", { code, reason });
  }
}
const last = () => FakeWs.all[FakeWs.all.length - 1]!;

function make(o: Partial<ConstructorParameters<typeof ReconnectingSocket>[0]> = {}) {
  const s = new ReconnectingSocket({ dial: dialWith(FakeWs, "wss://relay/ws", ["lineup.v1"]), backoff: { random: () => 0.999999 }, ...o });
  const log: string[] = [];
  s.on("open", () => log.push("open"));
  s.on("frame", (f) => log.push(`frame ${String(f.type)}`));
  s.on("close", (c) => log.push(`close ${c.code} retry ${c.delayMs + 1}`));
  s.on("terminal", (t) => log.push(`terminal ${t.name}`));
  return { s, log };
}

beforeEach(() => {
  FakeWs.all = [];
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

describe("the reconnecting socket", () => {
  it("dials with the injected constructor and hands every JSON frame over, hello first; pong and non-JSON are not frames", () => {
    const { s, log } = make();
    s.start();
    expect(last().url).toBe("wss://relay/ws");
    expect(last().protocols).toEqual(["lineup.v1"]);
    expect(s.send({ type: "x" })).toBe(false); // nothing is sent before hello
    last().open();
    last().hello();
    last().fire("message", { data: "pong" });
    last().fire("message", { data: "{not json" });
    last().fire("message", { data: JSON.stringify({ type: "presence" }) });
    expect(log).toEqual(["open", "frame hello", "frame presence"]);
    expect(s.connected).toBe(true);
    expect(s.send({ type: "tool.ack", call_id: "c1" })).toBe(true);
    expect(last().sent).toEqual(['{"type":"tool.ack","call_id":"c1"}']);
  });

  it("reconnects after a non-terminal close with the growing backoff, and resets it only after a connection stayed up", () => {
    const { s, log } = make();
    s.start();
    last().open();
    last().hello();
    last().drop(1006);
    vi.advanceTimersByTime(500);
    expect(FakeWs.all).toHaveLength(2);
    last().open();
    last().hello();
    last().drop(1001); // up for 0 s: the counter keeps growing
    expect(log.filter((l) => l.startsWith("close"))).toEqual(["close 1006 retry 500", "close 1001 retry 1000"]);
    vi.advanceTimersByTime(1000);
    last().open();
    last().hello();
    vi.advanceTimersByTime(10_000);
    last().drop(1006);
    expect(log.at(-1)).toBe("close 1006 retry 500");
  });

  it("stops for good on a terminal close code of the CLOSE table, and never dials again", () => {
    const { s, log } = make();
    s.start();
    last().open();
    last().hello();
    last().drop(CLOSE.replaced, "replaced by a newer connection");
    vi.advanceTimersByTime(60_000);
    expect(FakeWs.all).toHaveLength(1);
    expect(log.at(-1)).toBe("terminal replaced");
    expect(s.isStopped).toBe(true);
  });

  it("asks the host for terminal verdicts beyond the close codes (a refused upgrade)", () => {
    const { s, log } = make({ terminalOf: (c) => (c.error === "401" ? "auth" : undefined) });
    s.start();
    last().fire("error", { message: "401" });
    last().drop(1006);
    expect(log).toEqual(["terminal auth"]);
  });

  it("drops a connection that says no hello within the hello timeout, then retries", () => {
    const { s, log } = make({ helloTimeoutMs: 2000 });
    s.start();
    last().open();
    vi.advanceTimersByTime(2000);
    expect(log).toEqual(["open", "close 1006 retry 500"]);
    expect(last().closedWith).toEqual([undefined, undefined]);
    vi.advanceTimersByTime(500);
    expect(FakeWs.all).toHaveLength(2);
    expect(s.attempts).toBe(1);
  });

  it("pings every heartbeat and drops a socket silent for longer than deadMs", () => {
    const { s, log } = make({ heartbeatMs: 20_000, deadMs: 45_000 });
    s.start();
    last().open();
    last().hello();
    vi.advanceTimersByTime(40_000);
    expect(last().sent).toEqual(["ping", "ping"]);
    last().fire("message", { data: "pong" }); // any frame is life
    vi.advanceTimersByTime(40_000);
    expect(log).not.toContain("close 1006 retry 500");
    vi.advanceTimersByTime(20_000);
    expect(log.at(-1)).toBe("close 1006 retry 500");
  });

  it("takes an async dial (workerd's fetch upgrade): an already open socket needs no open event; a rejected dial is retried or terminal", async () => {
    const refusals = ["session_not_found", "link_failed"];
    const dial = vi.fn(async (): Promise<WebSocketLike> => {
      const why = refusals.pop();
      if (why) throw new Error(why);
      const ws = new FakeWs("internal");
      ws.readyState = 1;
      return ws;
    });
    const { s, log } = make({ dial, terminalOf: (c) => (c.cause instanceof Error && c.cause.message === "session_not_found" ? "session_gone" : undefined) });
    s.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual(["close 1006 retry 500"]);
    await vi.advanceTimersByTimeAsync(500);
    expect(log).toEqual(["close 1006 retry 500", "terminal session_gone"]);
    refusals.length = 0;
    const t = make({ dial });
    t.s.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.log).toEqual(["open"]);
  });

  it("stop() closes with the code given, reports terminal `stopped` and ignores the late close", async () => {
    const { s, log } = make();
    s.start();
    last().open();
    last().hello();
    const done = s.stop(CLOSE.normal, "bye");
    expect(last().closedWith).toEqual([1000, "bye"]);
    last().drop(1000);
    await done;
    expect(log).toEqual(["open", "frame hello", "terminal stopped"]);
    vi.advanceTimersByTime(60_000);
    expect(FakeWs.all).toHaveLength(1);
  });

  it("renew() replaces the connection at once; poke() skips a waiting retry; a one-shot socket ends on any close", () => {
    const { s } = make();
    s.start();
    last().open();
    last().hello();
    s.renew();
    expect(FakeWs.all).toHaveLength(2);
    expect(FakeWs.all[0]!.closedWith).toEqual([1000, "renew"]);
    last().drop(1006);
    s.poke();
    expect(FakeWs.all).toHaveLength(3);
    const one = make({ reconnect: false });
    one.s.start();
    last().open();
    last().drop(1006);
    expect(one.log).toEqual(["open", "terminal closed_1006"]);
  });
});
