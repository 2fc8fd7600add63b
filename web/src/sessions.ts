// Everything this device is connected to: the inboxes it is paired with (one InboxConn each, whose state
// lists their sessions live) and the guest sessions of v1 links. Every session — of an inbox or a guest —
// gets one SessionConn, started at load, so automatic tools keep answering and the home list is live.
import { computed, effect, signal } from "@preact/signals";
import type { InboxSession } from "../../shared/contract/inbox.js";
import { SessionConn } from "./conn.js";
import { InboxConn } from "./inbox.js";
import { labelsFor } from "./labels.js";
import { e2eLoad, e2eOf, watchE2E } from "./e2e-watch.js";
import { navigate, path } from "./router.js";
import { deviceId, loadInboxes, loadSessions, readJson, storeInboxes, storeSessions, writeJson, type SavedInbox, type SavedSession } from "./storage.js";

/** Guest sessions (v1 links `#s=…&t=…`): a shared token each, kept in `lineup.sessions`. */
export const sessions = signal<SavedSession[]>(loadSessions());
export const inboxes = signal<InboxConn[]>([]);
/** Set when an inbox removed this device (4401 or 401): the app says so until dismissed. */
export const removed = signal<{ origin: string } | null>(null);
/** Inbox sessions removed from this device (issue 28), by id, kept in `lineup.hidden`: not listed while their
 * agent is away and nothing of them waits; one whose agent comes back, or with a call, is listed again. */
const hidden = signal<string[]>(readJson("hidden", []));

export interface Entry {
  sid: string;
  saved: SavedSession;
  /** What the person reads ("api-server · laptop"); "" when nothing names it yet. */
  label: string;
  guest: boolean;
  inbox?: InboxConn;
  info?: InboxSession;
}

const sameInbox = (a: SavedInbox, b: SavedInbox) => a.origin === b.origin && a.inbox_id === b.inbox_id;

/** Every session shown on this device: the inboxes' first (a guest link to one of them is the same session). */
export const entries = computed<Entry[]>(() => {
  const out: Entry[] = [];
  const seen = new Set<string>();
  for (const ib of inboxes.value) {
    const st = ib.state.value;
    if (!st) continue;
    const names = labelsFor(st.sessions);
    for (const info of st.sessions) {
      if (seen.has(info.session_id) || (hidden.value.includes(info.session_id) && !info.agent_online && !info.waiting.length)) continue;
      seen.add(info.session_id);
      const label = names.get(info.session_id) ?? "";
      out.push({
        sid: info.session_id,
        label,
        guest: false,
        inbox: ib,
        info,
        saved: {
          sid: info.session_id,
          token: ib.saved.device_credential,
          origin: ib.saved.origin,
          label,
          addedAt: info.created_at,
          clientId: ib.saved.device_id,
          inbox: ib.saved.inbox_id,
        },
      });
    }
  }
  for (const s of sessions.value) if (!seen.has(s.sid)) out.push({ sid: s.sid, saved: s, label: s.label, guest: true });
  return out;
});

const conns = new Map<string, SessionConn>();

export const entryOf = (sid: string): Entry | undefined => entries.value.find((x) => x.sid === sid);

export function connOf(sid: string): SessionConn | undefined {
  const e = entryOf(sid);
  if (!e) return undefined;
  let c = conns.get(sid);
  // The same session seen through another credential (a guest link that is now in an inbox, or back):
  // the old connection's token and client id are no longer the right ones.
  if (c && (c.saved.token !== e.saved.token || c.saved.origin !== e.saved.origin || c.clientId !== (e.saved.clientId ?? deviceId()))) {
    c.stop();
    conns.delete(sid);
    c = undefined;
  }
  if (!c) {
    const ib = e.inbox;
    c = new SessionConn(
      e.saved,
      ib
        ? {
            onAuthFail: () => ib.verify(),
            onRevoked: () => revokeInbox(ib),
            nameOf: (id) => ib.state.value?.devices.find((d) => d.id === id)?.name ?? (id === ib.saved.device_id ? ib.saved.name : undefined),
            inbox: ib,
            recentOf: () => ib.state.value?.sessions.find((x) => x.session_id === sid)?.recent,
            machineOf: () => {
              const st = ib.state.value;
              return { machine: st?.sessions.find((x) => x.session_id === sid)?.machine_id, machines: st?.machines.length ?? 0 };
            },
          }
        : { onLabel: (label) => setLabel(sid, label) },
    );
    conns.set(sid, c);
    c.start();
  }
  return c;
}

/** Starts connections for new sessions and ends those of sessions that left their inbox (they ended). */
function syncConns(): void {
  const live = new Set(entries.value.map((e) => e.sid));
  for (const [sid, c] of conns) {
    if (live.has(sid)) continue;
    if (c.saved.inbox) c.forget();
    else c.stop();
    conns.delete(sid);
  }
  for (const sid of live) connOf(sid);
}

function makeInbox(saved: SavedInbox): InboxConn {
  const ib: InboxConn = new InboxConn(saved, {
    onState: (st) => {
      // Renamed (here or on another device): remember it, and reconnect so answers carry the new name.
      const mine = st.devices.find((d) => d.id === ib.saved.device_id);
      if (mine && mine.name !== ib.saved.name) setDeviceName(ib, mine.name);
      syncConns();
      // Issue 26: a session the inbox lists as sealed is pinned sealed on this device from now on.
      for (const info of st.sessions) if (info.sealed === true) conns.get(info.session_id)?.markSealed();
      watchE2E(ib, st); // issue 19: pairings to answer, a re-key due, or this device without a key
    },
    onRevoked: () => revokeInbox(ib),
  });
  return ib;
}

let started = false;
export function startAll(): void {
  if (started) return;
  started = true;
  inboxes.value = loadInboxes().map(makeInbox);
  for (const ib of inboxes.value) ib.start();
  syncConns();
}

/**
 * Runs `fn` once every session connection started so far has settled (caught up with the relay, or offline),
 * or after `capMs`: for work that must not take a slow phone's main thread while the waiting cards arrive.
 */
export function whenSettled(fn: () => void, capMs: number): void {
  let done = false;
  let stop: (() => void) | undefined;
  const go = () => {
    if (done) return;
    done = true;
    clearTimeout(cap);
    queueMicrotask(() => stop?.());
    fn();
  };
  const cap = setTimeout(go, capMs);
  const all = [...conns.values()];
  stop = effect(() => {
    if (all.every((c) => c.settled.value)) go();
  });
}

/** Saves a paired inbox and connects it. Pairing again with the same inbox replaces the old device. */
export function addInbox(saved: SavedInbox): void {
  const old = inboxes.value.find((x) => sameInbox(x.saved, saved));
  if (old) {
    old.stop();
    for (const [sid, c] of conns) {
      if (c.saved.inbox === old.saved.inbox_id && c.saved.origin === old.saved.origin) {
        c.stop();
        conns.delete(sid);
      }
    }
  }
  const ib = makeInbox(saved);
  inboxes.value = [...inboxes.value.filter((x) => x !== old), ib];
  storeInboxes([...loadInboxes().filter((x) => !sameInbox(x, saved)), saved]);
  ib.start();
  syncConns();
  // The old device would otherwise stay listed (and valid) forever; the new credential removes it.
  if (old && old.saved.device_id !== saved.device_id) void ib.revokeDevice(old.saved.device_id).catch(() => undefined);
}

/** This device was removed from the inbox: stop everything of it and forget its credential. */
export function revokeInbox(ib: InboxConn): void {
  if (!inboxes.value.includes(ib)) return;
  // Its E2E keys are of no use any more (the inbox re-keys without it): not left behind in IndexedDB.
  if ((e2eOf(ib.state.value)?.epoch ?? 0) > 0)
    void e2eLoad()
      .then((m) => m.deleteKeys(m.recordId(ib.saved.origin, ib.saved.inbox_id)))
      .catch(() => undefined);
  ib.forget();
  for (const [sid, c] of conns) {
    if (c.saved.inbox === ib.saved.inbox_id && c.saved.origin === ib.saved.origin) {
      c.forget();
      conns.delete(sid);
    }
  }
  inboxes.value = inboxes.value.filter((x) => x !== ib);
  // From storage, not memory: another tab may have paired again meanwhile (a new device id).
  storeInboxes(loadInboxes().filter((x) => x.device_id !== ib.saved.device_id));
  removed.value = { origin: ib.saved.origin };
  syncConns();
  // Not left on the screen of a session this device can no longer open.
  const open = /^\/s\/([A-Za-z0-9_-]+)/.exec(path.value)?.[1];
  if (open && !entryOf(open)) navigate("/", true);
}

/** Renames this device in its copy (the relay already has the new name). A session learns a device's name
 * when the device connects, so the connections of this inbox are renewed. */
export function setDeviceName(ib: InboxConn, name: string): void {
  if (ib.saved.name === name) return;
  ib.saved.name = name;
  storeInboxes(loadInboxes().map((x) => (x.device_id === ib.saved.device_id ? { ...x, name } : x)));
  for (const c of conns.values()) if (c.saved.inbox === ib.saved.inbox_id && c.saved.origin === ib.saved.origin) c.renew();
}

/** This device just received the inbox's key: its sealed sessions connect again, so what did not open
 * before (redelivered on catch-up) opens now. */
export function reopenSessions(ib: InboxConn): void {
  for (const c of conns.values()) if (c.saved.inbox === ib.saved.inbox_id && c.saved.origin === ib.saved.origin) c.keysChanged();
}

/** Saves (or refreshes the token of) a guest session; restarts its connection if the token changed. */
export function addSession(s: SavedSession): void {
  const old = sessions.value.find((x) => x.sid === s.sid);
  const list = old ? sessions.value.map((x) => (x.sid === s.sid ? { ...s, label: s.label || x.label } : x)) : [...sessions.value, s];
  sessions.value = list;
  storeSessions(list);
  connOf(s.sid);
}

export function setLabel(sid: string, label: string): void {
  const list = sessions.value.map((x) => (x.sid === sid ? { ...x, label } : x));
  sessions.value = list;
  storeSessions(list);
}

export function forgetSession(sid: string): void {
  if (entryOf(sid)?.info) {
    // Only ids still listed are kept: the record stays as small as the inbox's list.
    hidden.value = [...hidden.value.filter((k) => inboxes.value.some((ib) => ib.state.value?.sessions.some((x) => x.session_id === k))), sid];
    writeJson("hidden", hidden.value);
    return syncConns();
  }
  const c = conns.get(sid);
  if (c && !c.saved.inbox) {
    c.forget();
    conns.delete(sid);
  }
  const list = sessions.value.filter((x) => x.sid !== sid);
  sessions.value = list;
  storeSessions(list);
}

export function pokeAll(): void {
  for (const ib of inboxes.value) ib.poke();
  for (const c of conns.values()) c.poke();
}

export function sweepAll(): void {
  for (const c of conns.values()) c.sweep();
}

export function dropAll(): void {
  for (const ib of inboxes.value) ib.drop();
  for (const c of conns.values()) c.drop();
}

// Another tab of this browser paired, was removed or forgot something: follow it, so two tabs never
// write each other's lists back.
addEventListener("storage", (e: Event) => {
  if (!(e instanceof StorageEvent)) return;
  if (e.key === "lineup.sessions") {
    sessions.value = loadSessions();
    syncConns();
  } else if (e.key === "lineup.inboxes") {
    const stored = loadInboxes();
    for (const ib of inboxes.value) {
      if (!stored.some((x) => x.device_id === ib.saved.device_id)) {
        ib.stop();
        for (const [sid, c] of conns) {
          if (c.saved.inbox !== ib.saved.inbox_id) continue;
          c.stop();
          conns.delete(sid);
        }
      }
    }
    const kept = inboxes.value.filter((ib) => stored.some((x) => x.device_id === ib.saved.device_id));
    const added = stored.filter((x) => !kept.some((ib) => ib.saved.device_id === x.device_id)).map(makeInbox);
    inboxes.value = [...kept, ...added];
    for (const ib of added) ib.start();
    syncConns();
  }
});
