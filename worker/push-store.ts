// Web Push's document (shared/inbox/push-data.ts) in the inbox object's SQLite (docs/inbox.md "Storage"): one row
// per subscription (`p:s:<device>`), per call's job (`p:j:<session>/<call>`) and per queue item (`p:q:<id>`), plus
// `p:meta` (settings, origin, sequence, attention times) and `p:log` (the last 200 attempts). A save writes only
// the rows whose JSON changed and deletes the ones gone. A document stored the old way, one `push` row, is split
// on its first load. Memory is a cache; each load hands out a copy of its containers and settings (the push logic
// keeps documents across awaits). Jobs, subscriptions and queue items are shared with the cache, frozen: the push
// logic copies one before it changes it (`own`, `ownItem`, shared/inbox/push-data.ts), and a save stringifies only
// those that are not the cached objects — so a load and a save cost the same beside 100 kept jobs as beside one
// (issue 33: a push's four loads cloned every job, and its saves stringified every job, in the push's path).
import type { PushData } from "../shared/inbox/push-data.js";
import type { SqlLike, Txn } from "./inbox-store.js";

const META = "p:meta";
const LOG = "p:log";
const SUB = "p:s:";
const JOB = "p:j:";
const ITEM = "p:q:";
const UPSERT = "INSERT INTO inbox (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v";

/** Freezes a parsed JSON value through and through: a change the push logic makes without `own` throws. */
function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/** Each row's JSON. `logJson` answers for a log the store wrote already (PushStore.logJson), `kept` for a job or
 * subscription that is the very object last written under its key (frozen: unchanged). */
function rowsOf(
  d: PushData,
  logJson: (log: PushData["log"]) => string = (l) => JSON.stringify(l),
  kept: (key: string, v: object) => string | undefined = () => undefined,
): Map<string, string> {
  const { subs, jobs, queue, log, ...meta } = d;
  const rows = new Map<string, string>([
    [META, JSON.stringify(meta)],
    [LOG, logJson(log)],
  ]);
  for (const [id, s] of Object.entries(subs)) rows.set(SUB + id, kept(SUB + id, s) ?? JSON.stringify(s));
  for (const [key, j] of Object.entries(jobs)) rows.set(JOB + key, kept(JOB + key, j) ?? JSON.stringify(j));
  for (const q of queue) rows.set(ITEM + q.id, kept(ITEM + q.id, q) ?? JSON.stringify(q));
  return rows;
}

export class PushStore {
  private cache: PushData | undefined;
  /** Each row's JSON as last written (or read). */
  private readonly written = new Map<string, string>();
  /** The job, subscription or queue item each of those rows was made from, frozen (the cache's own). */
  private readonly objects = new Map<string, object>();
  /** The log as last written: its entries (never changed once logged: the log only appends and drops its oldest,
   * shared/inbox/push.ts) and their JSON — a save whose log holds the same entries writes it without stringifying
   * 200 entries again, as every push's three or four saves did (issue 33: the push delay). */
  private logKept: { entries: PushData["log"]; json: string } | undefined;

  constructor(
    private readonly sql: SqlLike,
    private readonly txn: Txn = (fn) => fn(),
  ) {}

  load(): PushData | undefined {
    this.cache ??= this.read();
    if (!this.cache) return undefined;
    // A copy: a change that throws half-way must not leave the cache ahead of SQLite. Its jobs and subscriptions
    // are the cache's, frozen (see the top); the log's entries are never changed once logged, so the copy's log is
    // a new array of the same entries.
    const { subs, jobs, queue, log, settings, attention, ...rest } = this.cache;
    return {
      ...rest,
      settings: { ...settings },
      ...(attention ? { attention: { ...attention } } : {}),
      subs: { ...subs },
      jobs: { ...jobs },
      queue: queue.slice(),
      log: log.slice(),
    };
  }

  private logJson(log: PushData["log"]): string {
    const k = this.logKept;
    // The log only appends and drops its oldest, and its entries never change: the same length, first and last
    // entry is the same window of the same sequence.
    if (k && k.entries.length === log.length && k.entries[0] === log[0] && k.entries.at(-1) === log.at(-1)) return k.json;
    const json = JSON.stringify(log);
    this.logKept = { entries: log.slice(), json };
    return json;
  }

  save(d: PushData): void {
    const fresh: [string, object][] = [];
    const rows = rowsOf(
      d,
      (l) => this.logJson(l),
      (k, v) => {
        if (this.objects.get(k) === v) return this.written.get(k);
        fresh.push([k, v]);
        return undefined;
      },
    );
    try {
      this.txn(() => {
        for (const k of [...this.written.keys()])
          if (!rows.has(k)) {
            this.sql.exec("DELETE FROM inbox WHERE k = ?", k);
            this.written.delete(k);
            this.objects.delete(k);
          }
        for (const [k, v] of rows)
          if (this.written.get(k) !== v) {
            this.sql.exec(UPSERT, k, v);
            this.written.set(k, v);
          }
      });
    } catch (e) {
      this.cache = undefined;
      this.written.clear();
      this.objects.clear();
      this.logKept = undefined;
      throw e;
    }
    // The cache keeps its own containers (the caller's `d` stays the caller's) and freezes what it now shares:
    // only what was stringified is new.
    for (const [k, v] of fresh) this.objects.set(k, deepFreeze(v));
    this.cache = { ...d, subs: { ...d.subs }, jobs: { ...d.jobs }, queue: d.queue.slice() };
  }

  /** Freezes every job, subscription and queue item of `d` (read from SQLite) and remembers it as written. */
  private adopt(d: PushData): PushData {
    for (const [id, s] of Object.entries(d.subs)) this.objects.set(SUB + id, deepFreeze(s));
    for (const [key, j] of Object.entries(d.jobs)) this.objects.set(JOB + key, deepFreeze(j));
    for (const q of d.queue) this.objects.set(ITEM + q.id, deepFreeze(q));
    return d;
  }

  private read(): PushData | undefined {
    this.written.clear();
    this.objects.clear();
    const old = this.sql.exec("SELECT v FROM inbox WHERE k = 'push'").toArray()[0];
    if (old) {
      const d = JSON.parse(String(old.v)) as PushData;
      this.txn(() => {
        this.sql.exec("DELETE FROM inbox WHERE k = 'push'");
        for (const [k, v] of rowsOf(d)) {
          this.sql.exec(UPSERT, k, v);
          this.written.set(k, v);
        }
      });
      return this.adopt(d);
    }
    const rows = this.sql.exec("SELECT k, v FROM inbox WHERE k >= 'p:' AND k < 'p;'").toArray();
    const meta = rows.find((r) => r.k === META);
    if (!meta) return undefined;
    const d = { ...(JSON.parse(String(meta.v)) as Omit<PushData, "subs" | "jobs" | "queue" | "log">), subs: {}, jobs: {}, queue: [], log: [] } as PushData;
    for (const { k, v } of rows) {
      const key = String(k);
      const json = String(v);
      const id = (p: string) => (key.startsWith(p) ? key.slice(p.length) : undefined);
      const [sub, job, item] = [id(SUB), id(JOB), id(ITEM)];
      if (key === LOG) d.log = JSON.parse(json) as PushData["log"];
      else if (sub && sub !== "__proto__") d.subs[sub] = JSON.parse(json) as PushData["subs"][string];
      else if (job && job !== "__proto__") d.jobs[job] = JSON.parse(json) as PushData["jobs"][string];
      else if (item) d.queue.push(JSON.parse(json) as PushData["queue"][number]);
      else if (key !== META) continue;
      this.written.set(key, json);
    }
    d.queue.sort((a, b) => a.id - b.id);
    return this.adopt(d);
  }
}
