// What a person calls the sessions of an inbox and which of them the home list shows (issue 28 items 1, 2):
// the project first and the machine second ("api-server · laptop"), never the session id or a cut temp path;
// one row per project and machine (the newest session; an older twin only while something of it waits);
// waiting first, then the most recent activity. Shared by the PWA's home and `lineup sessions`, so both
// list the same rows by the same names.
import type { InboxSession } from "../contract/inbox.js";
import { cutStart } from "../text/cut.js";

const MAX = 48;

const parts = (p: string): string[] => p.split(/[\\/]+/).filter(Boolean);

/** Keeps the end of a long text ("…/work/clients/api-server"): the start of a path is what sessions share. */
export function tail(s: string, n = MAX): string {
  return cutStart(s, n);
}

type Named = Pick<InboxSession, "session_id" | "label" | "project_dir" | "host" | "machine_id">;

/** Sessions of one project on one machine share this key (a session without a directory has its own). */
export function twinKey(s: Named): string {
  const dir = s.project_dir ? parts(s.project_dir).join("/") : "";
  return dir ? `${s.machine_id ?? s.host ?? ""}\u0000${dir}` : `\u0001${s.session_id}`;
}

function name(s: Named, depth: number): string {
  const dir = s.project_dir ? parts(s.project_dir) : [];
  if (dir.length) return dir.slice(-depth).join("/");
  const label = s.label.trim();
  // A label that is itself a path reads like one: its last directories.
  return label.includes("/") ? parts(label).slice(-depth).join("/") || label : label;
}

function full(s: Named, depth: number): string {
  const n = name(s, depth);
  const host = s.host?.trim() ?? "";
  if (!n) return tail(host);
  return host ? `${tail(n, Math.max(16, MAX - host.length - 3))} · ${tail(host, 24)}` : tail(n);
}

/**
 * Display labels keyed by session id ("" when nothing names a session). Two sessions that would read the
 * same get as many parent directories as it takes to tell them apart — but only when their directories
 * differ: sessions of the same project and machine (twins) keep the short name (the home shows one row).
 */
export function labelsFor(list: Named[]): Map<string, string> {
  const depth = new Map(list.map((s) => [s.session_id, 1]));
  for (let round = 0; round < 6; round++) {
    const groups = new Map<string, Named[]>();
    for (const s of list) {
      const k = full(s, depth.get(s.session_id)!);
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    let changed = false;
    for (const g of groups.values()) {
      if (new Set(g.map(twinKey)).size < 2) continue;
      for (const s of g) {
        const d = depth.get(s.session_id)!;
        if (s.project_dir && parts(s.project_dir).length > d) {
          depth.set(s.session_id, d + 1);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return new Map(list.map((s) => [s.session_id, full(s, depth.get(s.session_id)!)]));
}

/**
 * The sessions the home list shows, in order: one per project and machine — its newest session, and an older
 * one only while something of it waits (a superseded plaintext twin after `lineup e2e on`) — waiting first,
 * then the most recent activity, then the newest: the same order live and after a reload.
 */
export function homeRows<T extends Named & Pick<InboxSession, "created_at" | "last_activity">>(list: T[], waits: (s: T) => boolean): T[] {
  const newest = new Map<string, T>();
  for (const s of list) {
    const k = twinKey(s);
    const n = newest.get(k);
    if (!n || s.created_at > n.created_at) newest.set(k, s);
  }
  const w = (s: T) => (waits(s) ? 1 : 0);
  return list
    .filter((s) => newest.get(twinKey(s)) === s || waits(s))
    .sort((a, b) => w(b) - w(a) || b.last_activity - a.last_activity || b.created_at - a.created_at || (a.session_id < b.session_id ? -1 : 1));
}
