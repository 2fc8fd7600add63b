// The PWA dials the opened session's socket before the rest of the app evaluates (web/src/early.ts, issue 33):
// the events that came before the session's connection took it are handed over in order, and it is taken once,
// only by a dial to the same address with the same subprotocols. A fake socket stands for the browser's (an
// EventTarget-like object with readyState, as the WebSocket standard's events are dispatched one at a time).
import { describe, expect, it } from "vitest";
import type { SocketEvent } from "../../shared/client/socket.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { EarlySocket, type EarlyRegistration, sessionOfAddress } from "../../web/src/early.js";

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
/** A few turns of the event loop: a settled pin's `then` has run. */
const settle = () => new Promise<void>((r) => setTimeout(r, 0));

const HELLO = JSON.stringify({
  type: "hello",
  protocol: "lineup/1",
  session_id: "s",
  role: "app",
  client_id: "c",
  peers: { agent: { online: true }, apps: 1 },
});
const SEALED_HELLO = JSON.stringify({ ...(JSON.parse(HELLO) as object), sealed: { epoch: 1 } });
const REGISTRATION = JSON.stringify({ type: "tool.list", tools: BUILTIN_TOOLS });

/** The app's registration, its seal pin read as `pinned` once the test says so. */
function registration(): EarlyRegistration & { read(pinned: boolean): void; decisions: boolean[] } {
  let read: (p: boolean) => void = () => undefined;
  const decisions: boolean[] = [];
  return {
    pinned: new Promise<boolean>((r) => (read = r)),
    frame: REGISTRATION,
    read: (p) => read(p),
    decisions,
    decided: (sent) => void decisions.push(sent),
  };
}

/** An early socket with the app's registration (its pin not read yet) whose socket has opened. */
function opened(): { ws: FakeSocket; early: EarlySocket; r: ReturnType<typeof registration> } {
  const ws = new FakeSocket();
  const r = registration();
  const early = new EarlySocket(ws, "u", [], r);
  ws.fire("open");
  return { ws, early, r };
}

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

  // Issue 33: a new device's waiting call left the relay only once the main bundle had evaluated and registered the
  // device's tools (`?register=first` holds calls until then): ≈ 500 ms after the socket's hello on a slow phone.
  it("registers the app's tools on a plaintext session's hello before the app took the socket (a new device's waiting call waited for the main bundle)", async () => {
    const { ws, early, r } = opened();
    ws.fire("message", { data: HELLO });
    r.read(false);
    await settle();
    expect(ws.sent).toEqual([REGISTRATION]);
    expect(JSON.parse(ws.sent[0]!)).toEqual({ type: "tool.list", tools: BUILTIN_TOOLS });
    // The frames still reach the app in order once it takes the socket; a later frame sends nothing more.
    ws.fire("message", { data: '{"type":"tool.call"}' });
    const seen: string[] = [];
    early.take();
    early.addEventListener("open", () => seen.push("open"));
    early.addEventListener("message", (ev) => seen.push(String(ev.data)));
    await tick();
    expect(seen).toEqual(["open", HELLO, '{"type":"tool.call"}']);
    expect(ws.sent).toEqual([REGISTRATION]);
  });

  it("sends nothing on a sealed session's hello, nor for a session this device pinned sealed (issue 26: a downgrade is refused before anything is sent)", async () => {
    const sealed = opened();
    sealed.ws.fire("message", { data: SEALED_HELLO });
    sealed.r.read(false);
    const pinned = opened();
    pinned.ws.fire("message", { data: HELLO });
    pinned.r.read(true);
    await settle();
    expect(sealed.ws.sent).toEqual([]);
    expect(pinned.ws.sent).toEqual([]);
  });

  // Issue 33: the app's start waits for the early card of a waiting question (web/src/early-card.ts), which needs to
  // know whether the registration went and whether the session may be shown in plaintext at all.
  it("tells the hold on the app's start whether the registration went, and whether the session may be shown in plaintext", async () => {
    const plain = opened();
    plain.ws.fire("message", { data: HELLO });
    plain.r.read(false);
    const sealed = opened();
    sealed.ws.fire("message", { data: SEALED_HELLO });
    const pinned = opened();
    pinned.ws.fire("message", { data: HELLO });
    pinned.r.read(true);
    const taken = opened();
    taken.early.take();
    taken.ws.fire("message", { data: HELLO });
    taken.r.read(false);
    await settle();
    expect([plain, sealed, pinned, taken].map((x) => x.r.decisions)).toEqual([[true], [false], [false], [false]]);
    expect(await Promise.all([plain, sealed, pinned].map((x) => x.early.plain))).toEqual([true, false, false]);
  });

  it("leaves the registration to the app once the app took the socket, before or after the hello", async () => {
    const before = opened();
    before.early.take();
    before.ws.fire("message", { data: HELLO });
    before.r.read(false);
    const after = opened();
    after.ws.fire("message", { data: HELLO });
    after.early.take(); // the pin not read yet when the app took it
    after.r.read(false);
    await settle();
    expect(before.ws.sent).toEqual([]);
    expect(after.ws.sent).toEqual([]);
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
