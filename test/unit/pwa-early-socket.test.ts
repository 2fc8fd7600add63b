// The PWA dials the opened session's socket before the rest of the app evaluates (web/src/early.ts, issue 33):
// the events that came before the session's connection took it are handed over in order, and it is taken once,
// only by a dial to the same address with the same subprotocols. A fake socket stands for the browser's (an
// EventTarget-like object with readyState, as the WebSocket standard's events are dispatched one at a time).
import { describe, expect, it } from "vitest";
import type { SocketEvent } from "../../shared/client/socket.js";
import { EarlySocket, sessionOfAddress } from "../../web/src/early.js";

class FakeSocket {
  readyState = 0;
  sent: string[] = [];
  private readonly ls = new Map<string, ((ev: SocketEvent) => void)[]>();
  addEventListener(type: string, l: (ev: SocketEvent) => void): void {
    this.ls.set(type, [...(this.ls.get(type) ?? []), l]);
  }
  send(d: string): void {
    this.sent.push(d);
  }
  close(): void {
    this.readyState = 3;
  }
  fire(type: string, ev: Partial<SocketEvent> = {}): void {
    if (type === "open") this.readyState = 1;
    if (type === "close") this.readyState = 3;
    for (const l of this.ls.get(type) ?? []) l({ type, ...ev });
  }
}

const tick = () => new Promise<void>((r) => queueMicrotask(r));

describe("the PWA's early socket", () => {
  it("hands the open and the frames that came before it was taken over in order, then the later ones as they come", async () => {
    const ws = new FakeSocket();
    const early = new EarlySocket(ws, "ws://relay/api/sessions/s/ws", ["lineup.v1"]);
    ws.fire("open");
    ws.fire("message", { data: '{"type":"hello"}' });
    ws.fire("message", { data: '{"type":"tool.call"}' });
    const seen: string[] = [];
    early.take();
    for (const t of ["open", "message", "close", "error"] as const) early.addEventListener(t, (ev) => seen.push(`${t}${ev.data ? ` ${String(ev.data)}` : ""}`));
    expect(seen).toEqual([]);
    await tick();
    expect(seen).toEqual(["open", 'message {"type":"hello"}', 'message {"type":"tool.call"}']);
    ws.fire("message", { data: '{"type":"tool.list"}' });
    ws.fire("close", { code: 1006 });
    expect(seen.slice(3)).toEqual(['message {"type":"tool.list"}', "close"]);
  });

  it("says CONNECTING until its open was handed over, so a taker that reads readyState never sees it open twice", async () => {
    const ws = new FakeSocket();
    const early = new EarlySocket(ws, "u", []);
    ws.fire("open");
    expect(ws.readyState).toBe(1);
    expect(early.readyState).toBe(0);
    early.take();
    expect(early.readyState).toBe(0);
    await tick();
    expect(early.readyState).toBe(1);
    early.send("ping");
    expect(ws.sent).toEqual(["ping"]);
  });

  it("dials a v1 link's session from the fragment, a kept session from /s/<sid>, and nothing for other addresses", () => {
    const link = sessionOfAddress({ hash: "#s=abcdefgh12&t=tok.en", pathname: "/", origin: "https://relay.example" });
    expect(link?.saved).toMatchObject({ sid: "abcdefgh12", token: "tok.en", origin: "https://relay.example" });
    expect(sessionOfAddress({ hash: "", pathname: "/", origin: "https://relay.example" })).toBeUndefined();
    expect(sessionOfAddress({ hash: "", pathname: "/settings", origin: "https://relay.example" })).toBeUndefined();
    // No storage here: a session the device does not keep is not dialled.
    expect(sessionOfAddress({ hash: "", pathname: "/s/abcdefgh12", origin: "https://relay.example" })).toBeUndefined();
  });
});
