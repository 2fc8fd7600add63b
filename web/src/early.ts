// Issue 33 (a phone that opens in a blink): the socket of the session a page opens on is dialled before the rest
// of the app evaluates. This module is built twice: as a classic script of its own (vite.config.ts `earlyDial`,
// an esbuild IIFE that index.html runs in <head>, before the stylesheet and the module scripts — a module script
// waits for the stylesheet and the end of parsing: a throttled phone dialled 130–300 ms after the script was
// there), and as main.tsx's first import, which dials only when the classic script did not (the dev server, a
// script that failed). Both copies keep the socket in one global, `lineupEarly`, so it is dialled and taken once.
// The session's connection (web/src/conn.ts) takes the socket on its first dial when the address and
// subprotocols are the same; the events it missed meanwhile (open, hello, the catch-up's frames, a close) are
// handed over in order. Frames wait as they came (a sealed session's stay sealed). One thing is sent here: a new
// device's registration (see EarlyRegistration), so that a call waiting for it is on its way before the app runs.
// Only the session named by the address is dialled: a v1 link's fragment (`#s=…&t=…`), or `/s/<sid>` of a
// guest session kept on this device (not a session of an inbox: see sessionOfAddress). A socket not taken within
// EARLY_TTL_MS is closed, and so is one whose session dials with another address or token.
import type { SocketEvent, WebSocketLike } from "../../shared/client/socket.js";
import { CLOSE } from "../../shared/contract/close.js";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { isPinned } from "./e2e/store.js";
import { EarlyHold, holdForCard } from "./early-card.js";
import { socketProtocols, socketUrl } from "./session-status.js";
import { deviceId, loadSessions, parsePairing, type SavedSession } from "./storage.js";

/** An early socket nobody took (the app opened another way) is closed after this long. */
export const EARLY_TTL_MS = 10_000;

/**
 * The registration the app sends on a plaintext session's `hello` (web/src/conn.ts: the call book provides
 * BUILTIN_TOOLS), sent by the early socket itself on that `hello` while the app is not there yet. Issue 33: a socket
 * dialled with `?register=first` is handed no call until it registers, and a new device (a cold open) has no
 * registration kept by the relay, so the waiting call left only once the main bundle had evaluated (≈ 500 ms after
 * the hello on a throttled phone). The app's own registration on the same `hello` is then a repeat, which the relay
 * takes as a no-op: the catalog is unchanged and a call already delivered on this connection is not sent again.
 * Never for a sealed session (its `hello` says so) nor one this device pinned sealed (issue 26: a downgrade is
 * refused before anything is sent), and never once the app took the socket (it registers itself then).
 */
export interface EarlyRegistration {
  /** The session's seal pin, read at the dial (web/src/e2e/store.ts isPinned, as the app's SealPin reads it). */
  readonly pinned: Promise<boolean>;
  /** The frame, as text. */
  readonly frame: string;
  /** Told once whether the frame went (false: a sealed `hello`, a pinned session, the socket taken or gone). */
  readonly decided?: (sent: boolean) => void;
}

/** The app's registration (web/src/conn.ts), for an early socket of `origin`'s session `sid`. */
export const appRegistration = (origin: string, sid: string): EarlyRegistration => ({
  pinned: isPinned(origin, sid),
  frame: JSON.stringify({ type: "tool.list", tools: BUILTIN_TOOLS }),
});

type Kind = "open" | "message" | "close" | "error";
const KINDS: readonly Kind[] = ["open", "message", "close", "error"];

/**
 * A dialled socket whose events are kept until it is taken, then handed over in order — its readyState as the
 * events handed over so far say (CONNECTING until "open" was handed over), so a taker never sees it open twice.
 */
export class EarlySocket implements WebSocketLike {
  private readonly kept: { kind: Kind; ev: SocketEvent }[] = [];
  private readonly listeners = new Map<Kind, ((ev: SocketEvent) => void)[]>();
  private taken = false;
  private handing = false;
  private shown = 0;
  /** A frame came (the first is the relay's `hello`). */
  private heard = false;
  /** The socket closed before it was taken. */
  closedEarly = false;

  constructor(
    readonly ws: WebSocketLike,
    readonly url: string,
    readonly protocols: readonly string[],
    registration?: EarlyRegistration,
  ) {
    for (const kind of KINDS)
      ws.addEventListener(kind, (ev) => {
        if (kind === "close" && !this.taken) this.closedEarly = true;
        if (kind === "message" && registration && !this.heard && !this.taken) this.registerOn(ev, registration);
        else if (kind === "message" && registration && !this.heard) registration.decided?.(false);
        if (kind === "message") this.heard = true;
        this.kept.push({ kind, ev });
        if (this.taken && !this.handing) this.handOver();
      });
  }

  /** The socket's first frame: a plaintext `hello` of a session not pinned sealed gets the registration (EarlyRegistration). */
  private registerOn(ev: SocketEvent, r: EarlyRegistration): void {
    let hello: { type?: unknown; sealed?: unknown } | null;
    try {
      hello = JSON.parse(String(ev.data)) as typeof hello;
    } catch {
      return r.decided?.(false);
    }
    if (hello?.type !== "hello" || hello.sealed !== undefined) {
      this.plain = Promise.resolve(false);
      return r.decided?.(false);
    }
    this.plain = r.pinned.then(
      (pinned) => !pinned,
      () => false,
    );
    r.pinned.then(
      (pinned) => {
        const send = !pinned && !this.taken && !this.closedEarly && this.ws.readyState === 1;
        if (send) this.ws.send(r.frame);
        r.decided?.(send);
      },
      () => r.decided?.(false),
    );
  }

  /** Settles true once the `hello` said plaintext and this device did not pin the session sealed (web/src/early-card.ts). */
  plain: Promise<boolean> | undefined;

  /** Whether the app took the socket. */
  get isTaken(): boolean {
    return this.taken;
  }

  get readyState(): number {
    return this.kept.length > 0 || !this.taken ? this.shown : this.ws.readyState;
  }

  send(data: string): void {
    this.ws.send(data);
  }

  close(code?: number, reason?: string): void {
    this.ws.close(code, reason);
  }

  addEventListener(type: Kind, listener: (ev: SocketEvent) => void): void {
    const l = this.listeners.get(type) ?? [];
    l.push(listener);
    this.listeners.set(type, l);
  }

  /** Taken: what was kept is handed over once the taker attached its listeners (a microtask later), then live. */
  take(): this {
    this.taken = true;
    queueMicrotask(() => this.handOver());
    return this;
  }

  private handOver(): void {
    this.handing = true;
    try {
      for (let e = this.kept.shift(); e; e = this.kept.shift()) {
        if (e.kind === "open") this.shown = 1;
        if (e.kind === "close") this.shown = 3;
        for (const l of this.listeners.get(e.kind) ?? []) l(e.ev);
      }
    } finally {
      this.handing = false;
    }
  }
}

declare global {
  /**
   * The page's early socket, shared by the classic script that dialled it and the app's copy of this module:
   * undefined before the page tried to dial, null once it was taken, closed, given up or never dialled.
   */
  var lineupEarly: EarlySocket | null | undefined;
}

/** The session the address names, as this device keeps it (undefined: none, or not one alone). */
export function sessionOfAddress(loc: { hash: string; pathname: string; origin: string }): { saved: SavedSession; clientId: string } | undefined {
  const link = parsePairing(loc.hash);
  if (link) return { saved: { sid: link.sid, token: link.token, origin: loc.origin, label: "", addedAt: 0 }, clientId: deviceId() };
  const sid = /^\/s\/([A-Za-z0-9_-]{8,64})$/.exec(loc.pathname)?.[1];
  if (!sid) return undefined;
  // A session of an inbox is not dialled here: its connection dialled another socket in a test (browser-who-won's
  // two tabs), and an untaken socket of the same client id may be handed the session's calls (not done, issue 33).
  const guest = loadSessions().find((s) => s.sid === sid && s.origin === loc.origin);
  return guest ? { saved: guest, clientId: guest.clientId ?? deviceId() } : undefined;
}

/** Dials the address's session now (once per page); a failure to dial leaves the app to dial as before. */
export function dialEarly(): void {
  if (globalThis.lineupEarly !== undefined || typeof WebSocket !== "function") return;
  globalThis.lineupEarly = null; // one try a page, whichever copy makes it
  try {
    const s = sessionOfAddress(location);
    if (!s) return;
    const url = socketUrl(s.saved, s.clientId);
    const protocols = socketProtocols(s.saved.token);
    // Dialled before the seal pin's IndexedDB read starts (its open took a throttled phone's main thread 10–30 ms);
    // a socket's events come in later tasks, so the listeners added just after miss none.
    const ws = new WebSocket(url, protocols);
    // The classic script (not main.tsx's copy, whose app has loaded already) holds the app's start
    // (web/src/early-card.ts): until the card of a waiting question is painted, or none is coming.
    const classic = typeof document !== "undefined" && document.currentScript !== null;
    let decided: (sent: boolean) => void = () => undefined;
    const registration = { ...appRegistration(s.saved.origin, s.saved.sid), decided: (sent: boolean) => decided(sent) };
    const mine = new EarlySocket(ws, url, protocols, registration);
    if (classic) decided = holdForCard(mine, s.saved.sid, new EarlyHold());
    globalThis.lineupEarly = mine;
    setTimeout(() => {
      if (globalThis.lineupEarly !== mine) return;
      globalThis.lineupEarly = null;
      mine.ws.close(CLOSE.normal, "unused");
    }, EARLY_TTL_MS);
  } catch {
    globalThis.lineupEarly = null;
  }
}

/** The early socket when it was dialled to this address with these subprotocols and is still usable (once). */
export function takeEarly(url: string, protocols: readonly string[]): WebSocketLike | undefined {
  const e = globalThis.lineupEarly;
  if (!e) return undefined;
  if (e.url !== url || e.protocols.length !== protocols.length || e.protocols.some((p, i) => p !== protocols[i])) {
    // The same session dialled otherwise: the early socket goes now (the relay could hand it the session's calls).
    if (new URL(e.url).pathname === new URL(url).pathname) {
      globalThis.lineupEarly = null;
      e.close(CLOSE.normal, "unused");
    }
    return undefined;
  }
  globalThis.lineupEarly = null;
  if (e.closedEarly) return undefined;
  return e.take();
}

dialEarly();

/** The session's socket: the early one when it was dialled to this address with these subprotocols, else a new one. */
export function dialSession(saved: SavedSession, clientId: string): WebSocketLike {
  const url = socketUrl(saved, clientId);
  const protocols = socketProtocols(saved.token);
  return takeEarly(url, protocols) ?? new WebSocket(url, protocols);
}
