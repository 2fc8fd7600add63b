// Web Push decisions of one inbox (docs/push.md), run by the Worker's Inbox object and the LAN server
// alike: who gets a push for a new waiting call, who is spared (showing it right now), retries, reminders,
// the update that closes the loop, and answers from a notification. Its state is one JSON document, changed
// read → modify → write with no await in between; every send is a queue item in that document, driven by
// one alarm (`wake`), so an eviction between a call and its push loses nothing.
// The document's shape and the hosts' ports are in shared/inbox/push-data.ts.
import type { SessionReport, WaitingCall } from "../contract/inbox.js";
import { attentionMessage, callMessage, encodeMessage, updateMessage } from "./push-payload.js";
import {
  type AttentionReason,
  AUTOMATIC_TOOLS,
  DEFAULT_PUSH_SETTINGS,
  PUSH_LIMITS,
  type ClosedCall,
  type PushAnswerInput,
  type PushAnswerResult,
  type PushAttentionResult,
  type PushInfo,
  type PushKind,
  type PushLogEntry,
  type PushSettings,
} from "../contract/push.js";
import { randomId } from "../crypto/bytes.js";
import { tapResult } from "../tools/meaning.js";
import { publicUrlProblem } from "../edge/public-host.js";
import { buildPushRequest, classifyPushResponse, retryAfterMs, WebPushError, type PushRequest, type VapidKeys } from "../crypto/webpush/index.js";
import {
  backoffMs,
  empty,
  FALLBACK_VAPID_SUBJECT,
  jobKey,
  own,
  ownItem,
  tokenHash,
  topicOf,
  type Item,
  type Job,
  type PushData,
  type PushPorts,
  type PushSub,
} from "./push-data.js";

export { FALLBACK_VAPID_SUBJECT, tokenHash, type PushData, type PushPorts, type PushSub } from "./push-data.js";

export class PushCore {
  /** Runs in flight; they may overlap: each leases what it sends before its first await (issue 33: no waiting). */
  private readonly runs = new Set<Promise<void>>();

  constructor(private readonly ports: PushPorts) {}

  private load(): PushData {
    const d = this.ports.load() ?? empty();
    d.settings ??= { ...DEFAULT_PUSH_SETTINGS };
    return d;
  }

  private save(d: PushData): void {
    this.ports.save(d);
    this.ports.wake(this.nextDue(d));
  }

  nextDue(d: PushData = this.load()): number | undefined {
    const t = [...d.queue.map((q) => q.due), ...Object.values(d.jobs).map((j) => (j.ended ? j.ended.at + PUSH_LIMITS.keepEndedMs : j.next_reminder_at))].filter(
      (x): x is number => x !== undefined,
    );
    return t.length ? Math.min(...t) : undefined;
  }

  private log(d: PushData, e: PushLogEntry): void {
    d.log.push(e);
    if (d.log.length > PUSH_LIMITS.maxLog) d.log.splice(0, d.log.length - PUSH_LIMITS.maxLog);
  }

  private enqueue(d: PushData, job: string, device: string, kind: PushKind, now: number, reminder?: number): void {
    const item: Item = { id: ++d.seq, job, device, kind, attempt: 0, due: now };
    if (reminder !== undefined) item.reminder = reminder;
    d.queue.push(item);
  }

  // ---------------------------------------------------------------- subscriptions and settings

  subscribe(deviceId: string, sub: PushSub, origin: string): void {
    const d = this.load();
    // One browser re-paired under a new device id keeps its endpoint: never push it twice.
    for (const [id, s] of Object.entries(d.subs)) if (id !== deviceId && s.endpoint === sub.endpoint) delete d.subs[id];
    d.subs[deviceId] = sub;
    d.origin = origin;
    this.save(d);
  }

  /** Forgets a device's subscription (turned off, or revoked: then also its part of every call). */
  unsubscribe(deviceId: string, revoked = false): void {
    const d = this.load();
    delete d.subs[deviceId];
    d.queue = d.queue.filter((q) => q.device !== deviceId);
    if (revoked) for (const [k, j] of Object.entries(d.jobs)) if (Object.hasOwn(j.devices, deviceId)) delete own(d, k)!.devices[deviceId];
    this.save(d);
  }

  setSettings(p: Partial<PushSettings>, now = Date.now()): PushSettings {
    const d = this.load();
    d.settings = { ...d.settings, ...p };
    const every = d.settings.reminder_every_min * 60_000;
    for (const [k, open] of Object.entries(d.jobs)) {
      if (open.ended) continue;
      const j = own(d, k)!;
      if (d.settings.reminders && j.reminders < PUSH_LIMITS.maxReminders) j.next_reminder_at = now + every;
      else delete j.next_reminder_at;
    }
    this.save(d);
    return d.settings;
  }

  info(deviceId: string | undefined, sid?: string): PushInfo {
    const d = this.load();
    const names = this.ports.inbox()?.devices ?? {};
    return {
      subscribed: deviceId !== undefined && d.subs[deviceId] !== undefined,
      settings: d.settings,
      log: d.log
        .filter((e) => sid === undefined || e.session_id === sid)
        .map((e) => (names[e.device_id] ? { ...e, device_name: names[e.device_id]!.name } : e)),
    };
  }

  // ---------------------------------------------------------------- what the sessions report

  /** A session's Waiting list changed: new human calls get pushes, calls that left get their update. `inline`: a push due
   * now leaves from here (the pump returned for the host to keep alive), leased in this change (issue 33). */
  reported(sid: string, before: WaitingCall[], after: WaitingCall[], r: SessionReport, now = Date.now(), inline = false): Promise<void> | undefined {
    const d = this.load();
    const was = new Set(before.map((w) => w.call_id));
    const is = new Set(after.map((w) => w.call_id));
    let changed = false;
    const devices = Object.keys(d.subs);
    for (const w of after) {
      const key = jobKey(sid, w.call_id);
      if (was.has(w.call_id) || AUTOMATIC_TOOLS.has(w.name) || d.jobs[key] || devices.length === 0) continue;
      // A job that exists already (a repeated or reordered report) is never notified twice.
      const job: Job = { sid, call: w, at: now, reminders: 0, devices: {} };
      if (d.settings.reminders) job.next_reminder_at = now + d.settings.reminder_every_min * 60_000;
      for (const dev of devices) {
        job.devices[dev] = { tokens: [], notified: false };
        this.enqueue(d, key, dev, "call", now);
      }
      d.jobs[key] = job;
      changed = true;
    }
    for (const w of before) {
      if (is.has(w.call_id)) continue;
      const key = jobKey(sid, w.call_id);
      const job = d.jobs[key];
      if (!job || job.ended) continue;
      const closed = r.closed?.find((c) => c.call_id === w.call_id) ?? { call_id: w.call_id, outcome: r.ended ? "ended" : "cancelled" };
      this.end(d, key, own(d, key)!, closed, now);
      changed = true;
    }
    if (!changed) return undefined;
    this.gc(d, now);
    if (!inline || (this.nextDue(d) ?? Infinity) > now) return void this.save(d);
    // Inline: the pump's lease (same turn, same commit) arms the alarm once; a failed pump leaves it to the alarm.
    this.ports.save(d);
    return this.pump(now).catch((e: unknown) => {
      this.ports.wake(now);
      throw e;
    });
  }

  /**
   * "The agent is waiting for you" in session `sid` with no call (an agent's idle report): one push per
   * subscribed device, no actions, spared like a call's while the device shows that session or the Waiting
   * list. At most one per session a minute; a newer one replaces one still queued. A sealed session's push
   * carries no text (the relay must not put an agent's words into a notification it cannot read).
   */
  attention(sid: string, text: string | undefined, reason?: AttentionReason, now = Date.now()): PushAttentionResult {
    const sessions = this.ports.inbox()?.sessions ?? {};
    const s = Object.hasOwn(sessions, sid) ? sessions[sid] : undefined; // never "__proto__"'s (i29-room)
    if (!s || s.expires_at <= now) return { status: "unknown_session" };
    const d = this.load();
    const last = d.attention?.[sid];
    if (last !== undefined && now - last < PUSH_LIMITS.attentionGapMs)
      return { status: "throttled", retry_after_s: Math.ceil((last + PUSH_LIMITS.attentionGapMs - now) / 1000) };
    const job = jobKey(sid, "attention");
    d.queue = d.queue.filter((q) => q.job !== job);
    const devices = Object.keys(d.subs);
    for (const dev of devices) {
      this.enqueue(d, job, dev, "attention", now);
      const item = d.queue.at(-1)!;
      item.text = s.sealed === true ? "" : (text ?? "").trim();
      if (reason !== undefined && reason !== "waiting") item.reason = reason;
    }
    d.attention = Object.fromEntries([...Object.entries(d.attention ?? {}).filter(([, t]) => now - t < PUSH_LIMITS.attentionGapMs), [sid, now]]);
    this.save(d);
    return { status: "queued", devices: devices.length };
  }

  /** The call left the Waiting list: pending pushes for it go, every notified device but the answerer gets the update. */
  private end(d: PushData, key: string, job: Job, closed: ClosedCall, now: number): void {
    job.ended = { at: now, closed };
    delete job.next_reminder_at;
    d.queue = d.queue.filter((q) => q.job !== key || q.kind === "update");
    for (const [dev, jd] of Object.entries(job.devices)) if (jd.notified && dev !== closed.by && d.subs[dev]) this.enqueue(d, key, dev, "update", now);
  }

  private gc(d: PushData, now: number): void {
    for (const [k, j] of Object.entries(d.jobs)) {
      if (j.ended && j.ended.at + PUSH_LIMITS.keepEndedMs <= now && !d.queue.some((q) => q.job === k)) delete d.jobs[k];
    }
    const keys = Object.keys(d.jobs);
    if (keys.length <= PUSH_LIMITS.maxJobs) return;
    // Over the cap: the oldest finished first, then the oldest open.
    const order = keys.sort((a, b) => Number(!d.jobs[a]!.ended) - Number(!d.jobs[b]!.ended) || d.jobs[a]!.at - d.jobs[b]!.at);
    for (const k of order.slice(0, keys.length - PUSH_LIMITS.maxJobs)) {
      delete d.jobs[k];
      d.queue = d.queue.filter((q) => q.job !== k);
    }
  }

  // ---------------------------------------------------------------- the alarm

  /** Sends what is due (reminders first become queue items); settles when every run in flight has (`runs`). */
  async pump(now = Date.now()): Promise<void> {
    const run: Promise<void> = this.run(now).finally(() => this.runs.delete(run));
    this.runs.add(run);
    await Promise.all([...this.runs]);
  }

  private async run(now: number): Promise<void> {
    const d = this.load();
    this.remind(d, now);
    this.gc(d, now);
    const due = d.queue.filter((q) => q.due <= now).slice(0, PUSH_LIMITS.perRun);
    for (const q of due) ownItem(d, q.id)!.due = now + PUSH_LIMITS.leaseMs; // leased: an eviction mid-send retries it
    this.save(d);
    if (!due.length) return;
    let vapid: { keys: VapidKeys; subject?: string };
    try {
      vapid = await this.ports.vapid();
    } catch {
      return; // the leases make the alarm try again
    }
    await Promise.all(due.map((q) => this.deliver(q.id, vapid).catch((e: unknown) => console.error("push: delivery failed", (e as Error).message))));
    const after = this.load();
    this.save(after); // re-arms the alarm for what is left
  }

  private remind(d: PushData, now: number): void {
    const every = d.settings.reminder_every_min * 60_000;
    for (const [key, due] of Object.entries(d.jobs)) {
      if (due.ended || due.next_reminder_at === undefined || due.next_reminder_at > now) continue;
      const j = own(d, key)!;
      if (!d.settings.reminders || j.reminders >= PUSH_LIMITS.maxReminders || (j.call.deadline_at !== undefined && j.call.deadline_at <= now)) {
        delete j.next_reminder_at;
        continue;
      }
      j.reminders++;
      for (const dev of Object.keys(d.subs)) {
        if (d.queue.some((q) => q.job === key && q.device === dev && q.kind !== "update")) continue; // one still on its way
        j.devices[dev] ??= { tokens: [], notified: false };
        this.enqueue(d, key, dev, "reminder", now, j.reminders);
      }
      if (j.reminders < PUSH_LIMITS.maxReminders) j.next_reminder_at = now + every;
      else delete j.next_reminder_at;
    }
  }

  /** i29-room: whether some device of the inbox shows session `sid` right now. */
  shownAnywhere(sid: string, now = Date.now()): boolean {
    const devices = Object.keys(this.ports.inbox()?.devices ?? {});
    return devices.some((dev) => this.ports.views(dev).some((v) => now - v.at < PUSH_LIMITS.visibleTtlMs && v.view === "session" && v.session_id === sid));
  }

  private showing(deviceId: string, sid: string, now: number): boolean {
    return this.ports
      .views(deviceId)
      .some((v) => now - v.at < PUSH_LIMITS.visibleTtlMs && (v.view === "home" || (v.view === "session" && v.session_id === sid)));
  }

  private async deliver(id: number, vapid: { keys: VapidKeys; subject?: string }): Promise<void> {
    const now = Date.now();
    let d = this.load();
    const item = d.queue.find((q) => q.id === id);
    if (!item) return;
    const job = d.jobs[item.job];
    const sub = d.subs[item.device];
    const [jobSid = "", jobCall = ""] = item.job.split("/");
    const entry = (e: Partial<PushLogEntry> & Pick<PushLogEntry, "outcome">): PushLogEntry => ({
      at: Date.now(),
      session_id: jobSid,
      call_id: jobCall,
      device_id: item.device,
      kind: item.kind,
      ...e,
    });
    // A fresh read: after an await, another delivery may have changed the document.
    const drop = (e?: Partial<PushLogEntry> & Pick<PushLogEntry, "outcome">) => {
      const cur = this.load();
      cur.queue = cur.queue.filter((q) => q.id !== id);
      if (e) this.log(cur, entry(e));
      this.ports.save(cur);
    };
    const inbox = this.ports.inbox();
    if (item.kind === "attention") {
      const s = inbox?.sessions[jobSid];
      if (!sub || !s || s.expires_at <= now) return drop();
      if (this.showing(item.device, jobSid, now)) return drop({ outcome: "suppressed" });
      if (sub.key !== vapid.keys.publicKey) return drop({ outcome: "failed", error: "stale_key" });
      const payload = encodeMessage(
        attentionMessage({ inbox: inbox?.inbox_id ?? "", sid: jobSid, label: s.label, lang: sub.lang, text: item.text ?? "", reason: item.reason }),
      );
      return this.post(id, item, sub, vapid, d, drop, payload, PUSH_LIMITS.attentionTtlS, "normal");
    }
    if (!job || !sub || (item.kind !== "update" && job.ended)) return drop();
    const s = inbox?.sessions[job.sid];
    if (item.kind !== "update") {
      // Decided here, on the relay, never by a silent service worker (iOS drops silent subscriptions).
      if (this.showing(item.device, job.sid, now)) return drop({ outcome: "suppressed" });
      if (job.call.deadline_at !== undefined && job.call.deadline_at <= now) return drop(); // its timeout sends the update
    }
    if (sub.key !== vapid.keys.publicKey) return drop({ outcome: "failed", error: "stale_key" });

    const label = s?.label ?? "LineUp";
    const inboxId = inbox?.inbox_id ?? "";
    let payload: string;
    if (item.kind === "update") {
      const closed = job.ended!.closed;
      const by = closed.by ? (inbox?.devices[closed.by]?.name ?? closed.by) : undefined;
      payload = encodeMessage(updateMessage({ inbox: inboxId, sid: job.sid, label, lang: sub.lang, closed, ...(by ? { by } : {}) }));
    } else {
      // The token's hash is stored before the send: the push service may deliver before fetch returns.
      const secret = randomId(32);
      const hash = await tokenHash(secret);
      d = this.load();
      const jd = own(d, item.job)?.devices[item.device];
      if (!jd || d.jobs[item.job]!.ended || !d.queue.some((q) => q.id === id)) return; // ended meanwhile
      jd.tokens = [...jd.tokens, hash].slice(-2);
      this.ports.save(d);
      payload = encodeMessage(
        callMessage({
          inbox: inboxId,
          sid: job.sid,
          label,
          lang: sub.lang,
          call: job.call,
          token: `lpt1.${inboxId}.${secret}`,
          epoch: inbox?.e2e?.epoch ?? 0,
          ...(item.reminder ? { reminder: item.reminder } : {}),
        }),
      );
    }
    const ttl =
      item.kind === "update" || job.call.deadline_at === undefined
        ? PUSH_LIMITS.updateTtlS
        : Math.min(PUSH_LIMITS.maxTtlS, Math.max(0, Math.floor((job.call.deadline_at - now) / 1000)));
    return this.post(id, item, sub, vapid, d, drop, payload, ttl, item.kind === "update" ? "normal" : "high");
  }

  /** Signs, encrypts and sends one queue item's payload, then settles it. */
  private async post(
    id: number,
    item: Item,
    sub: PushSub,
    vapid: { keys: VapidKeys; subject?: string },
    d: PushData,
    drop: (e: Partial<PushLogEntry> & Pick<PushLogEntry, "outcome">) => void,
    payload: string,
    ttl: number,
    urgency: "normal" | "high",
  ): Promise<void> {
    const subject = vapid.subject ?? (d.origin?.startsWith("https://") ? d.origin : FALLBACK_VAPID_SUBJECT);
    let req: PushRequest;
    try {
      req = await buildPushRequest({
        subscription: { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } },
        payload,
        vapid: { subject, keys: vapid.keys },
        ttl,
        urgency,
        topic: await topicOf(item.job),
        allowLocalHttp: sub.local,
        publicHost: publicUrlProblem,
      });
    } catch (e) {
      return drop({ outcome: "failed", error: e instanceof WebPushError ? e.code : "build_failed" });
    }
    let status = 0;
    let retryAfter: string | null = null;
    try {
      const r = await this.ports.send(req);
      if (r.refused) return drop({ outcome: "failed", error: r.refused });
      status = r.status;
      retryAfter = r.retryAfter;
    } catch {
      status = 0; // no answer: retried like a 5xx
    }
    this.settle(id, item, sub, status, retryAfter);
  }

  /** Records one attempt's outcome and acts on it (a fresh read: much may have happened during the send). */
  private settle(id: number, item: Item, sub: PushSub, status: number, retryAfter: string | null): void {
    const now = Date.now();
    const d = this.load();
    const job = own(d, item.job);
    const verdict = status === 0 ? "retry" : classifyPushResponse(status);
    const base = {
      at: now,
      session_id: job?.sid ?? item.job.split("/")[0]!,
      call_id: job?.call.call_id ?? item.job.split("/")[1] ?? "",
      device_id: item.device,
      kind: item.kind,
      status,
    };
    const current = ownItem(d, id);
    const remove = () => (d.queue = d.queue.filter((q) => q.id !== id));
    if (verdict === "sent") {
      remove();
      this.log(d, { ...base, outcome: "sent" });
      const jd = job?.devices[item.device];
      if (job && jd && item.kind !== "update") {
        jd.notified = true;
        // The call ended while this push was on its way: the device needs the update too.
        if (
          job.ended &&
          job.ended.closed.by !== item.device &&
          d.subs[item.device] &&
          !d.queue.some((q) => q.job === item.job && q.device === item.device && q.kind === "update")
        ) {
          this.enqueue(d, item.job, item.device, "update", now);
        }
      }
    } else if (verdict === "gone") {
      if (d.subs[item.device]?.endpoint === sub.endpoint) delete d.subs[item.device];
      d.queue = d.queue.filter((q) => q.device !== item.device);
      this.log(d, { ...base, outcome: "gone" });
    } else if (verdict === "retry" && current && item.attempt + 1 < PUSH_LIMITS.maxAttempts) {
      current.attempt = item.attempt + 1;
      current.due = now + (retryAfterMs(retryAfter, now) ?? backoffMs(item.attempt));
      this.log(d, { ...base, outcome: "failed", retry_at: current.due });
    } else {
      remove();
      this.log(d, { ...base, outcome: "failed" });
    }
    this.ports.save(d);
  }

  // ---------------------------------------------------------------- answers from a notification

  /** `POST /api/push/answer`: the token's hash (the edge hashed it) and the action the person tapped. */
  async answer(hash: string, input: PushAnswerInput): Promise<PushAnswerResult> {
    // Repeats are recognized by the action, or by a sealed answer's nonce (the same envelope sent again).
    const action = typeof input === "string" ? input : `sealed:${input.sealed.n}`;
    const d = this.load();
    let found: { key: string; job: Job; device: string } | undefined;
    for (const [key, job] of Object.entries(d.jobs)) {
      for (const [device, jd] of Object.entries(job.devices)) if (jd.tokens.includes(hash)) found = { key, job, device };
    }
    if (!found) return { status: "invalid" };
    const { key, job, device } = found;
    const inbox = this.ports.inbox();
    const nameOf = (id: string | undefined) => (id ? (inbox?.devices[id]?.name ?? id) : undefined);
    if (job.answered) {
      if (job.answered.device === device && job.answered.action === action) return { status: "answered" };
      return { status: "already_answered", ...(nameOf(job.answered.device) ? { by: nameOf(job.answered.device)! } : {}) };
    }
    if (job.ended) return this.closedAnswer(job.ended.closed, nameOf);
    // A sealed call takes only a sealed answer (the relay cannot make a result it cannot read), and the reverse.
    // A tap answers what its notification offered: the built-in tools' meaning (shared/tools/meaning.ts) over the
    // call's pushed options (a choice's options, a permission's `choices`).
    const ok = job.call.sealed ? typeof input !== "string" : typeof input === "string" && tapResult(job.call.name, action, job.call.options) !== undefined;
    if (!ok) return { status: "bad_action" };
    const s = inbox?.sessions[job.sid];
    const me = inbox?.devices[device];
    if (!s) return { status: "closed", outcome: "ended" };
    if (!me) return { status: "invalid" }; // revoked meanwhile
    const r = await this.ports.answer(job.sid, s.epoch, { id: device, name: me.name }, job.call.call_id, input);
    if (r.status === "bad_action") return r;
    if (r.status === "closed") {
      if (r.by === device) return { status: "answered" };
      return this.closedAnswer(
        { call_id: job.call.call_id, outcome: r.outcome, ...(r.by ? { by: r.by } : {}), ...(r.answer ? { answer: r.answer } : {}) },
        nameOf,
      );
    }
    const after = this.load();
    const j = own(after, key);
    if (j) {
      j.answered = { device, action };
      this.ports.save(after);
    }
    return { status: "answered" };
  }

  private closedAnswer(c: ClosedCall, nameOf: (id: string | undefined) => string | undefined): PushAnswerResult {
    if (c.outcome === "answered" || c.outcome === "declined") {
      const by = nameOf(c.by);
      return { status: "already_answered", ...(by ? { by } : {}), ...(c.answer ? { answer: c.answer } : {}) };
    }
    return { status: "closed", outcome: c.outcome };
  }
}
