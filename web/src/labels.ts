// What a person calls a session of their inbox: the project directory's name and the host
// ("api-server · laptop"), never the session id. Two sessions that would read the same get as many parent
// directories as it takes to tell them apart; a long name keeps its end, which is what differs.
import type { InboxSession } from "../../shared/contract/inbox.js";
import { cutStart } from "../../shared/text/cut.js";

const MAX = 48;

const parts = (p: string): string[] => p.split(/[\\/]+/).filter(Boolean);

/** Keeps the end of a long text ("…/work/clients/api-server"): the start of a path is what sessions share. */
export function tail(s: string, n = MAX): string {
  return cutStart(s, n);
}

function name(s: InboxSession, depth: number): string {
  const dir = s.project_dir ? parts(s.project_dir) : [];
  if (dir.length) return dir.slice(-depth).join("/");
  const label = s.label.trim();
  // A label that is itself a path reads like one: its last directories.
  return label.includes("/") ? parts(label).slice(-depth).join("/") || label : label;
}

function full(s: InboxSession, depth: number): string {
  const n = name(s, depth);
  const host = s.host?.trim() ?? "";
  if (!n) return tail(host);
  return host ? `${tail(n, Math.max(16, MAX - host.length - 3))} · ${tail(host, 24)}` : tail(n);
}

/** Display labels for the sessions of one inbox, keyed by session id ("" when nothing names a session). */
export function labelsFor(list: InboxSession[]): Map<string, string> {
  const depth = new Map(list.map((s) => [s.session_id, 1]));
  // Deepen only the colliding ones, a few rounds at most (paths are short).
  for (let round = 0; round < 6; round++) {
    const groups = new Map<string, InboxSession[]>();
    for (const s of list) {
      const k = full(s, depth.get(s.session_id)!);
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    let changed = false;
    for (const g of groups.values()) {
      if (g.length < 2) continue;
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
