// The device's paired sessions and their live connections (one SessionConn each, started at load, so
// automatic tools keep answering and the home list shows live presence).
import { signal } from "@preact/signals";
import { SessionConn } from "./conn.js";
import { loadSessions, storeSessions, type SavedSession } from "./storage.js";

export const sessions = signal<SavedSession[]>(loadSessions());
const conns = new Map<string, SessionConn>();

export function connOf(sid: string): SessionConn | undefined {
  const s = sessions.value.find((x) => x.sid === sid);
  if (!s) return undefined;
  let c = conns.get(sid);
  if (!c) {
    c = new SessionConn(s, (label) => setLabel(sid, label));
    conns.set(sid, c);
    c.start();
  }
  return c;
}

export function startAll(): void {
  for (const s of sessions.value) connOf(s.sid);
}

/** Saves (or refreshes the token of) a session; restarts its connection if the token changed. */
export function addSession(s: SavedSession): void {
  const old = sessions.value.find((x) => x.sid === s.sid);
  const list = old ? sessions.value.map((x) => (x.sid === s.sid ? { ...s, label: s.label || x.label } : x)) : [...sessions.value, s];
  sessions.value = list;
  storeSessions(list);
  if (old && (old.token !== s.token || old.origin !== s.origin)) {
    conns.get(s.sid)?.stop();
    conns.delete(s.sid);
  }
  connOf(s.sid);
}

export function setLabel(sid: string, label: string): void {
  const list = sessions.value.map((x) => (x.sid === sid ? { ...x, label } : x));
  sessions.value = list;
  storeSessions(list);
}

export function forgetSession(sid: string): void {
  conns.get(sid)?.forget();
  conns.delete(sid);
  const list = sessions.value.filter((x) => x.sid !== sid);
  sessions.value = list;
  storeSessions(list);
}

export function pokeAll(): void {
  for (const c of conns.values()) c.poke();
}

export function sweepAll(): void {
  for (const c of conns.values()) c.sweep();
}

export function dropAll(): void {
  for (const c of conns.values()) c.drop();
}
