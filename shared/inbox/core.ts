// One inbox's logic, run by the Worker's Inbox object (worker/inbox.ts) and the LAN server
// (adapter/lan/inbox.ts) alike. Its state is one small document in memory (≤ 32 devices, 16 machines,
// 200 sessions): every change is read → modify → write with no await in between, so concurrent requests
// never interleave inside one. Each write names the entities it touched (`Touched`), so a host that keeps
// one row per entity (worker/inbox-store.ts) writes only those. Secrets never reach it: the edge hashes them.
import { CLOSE } from "../contract/close.js";
import {
  INBOX_LIMITS,
  type CredentialKind,
  type DeviceInfo,
  type InboxPolicy,
  type InboxSession,
  type InboxState,
  type MachineInfo,
  type RecentCall,
  type SessionReport,
  type WaitingCall,
} from "../contract/inbox.js";
import type { AttentionReason, ClosedCall } from "../contract/push.js";
import type { Envelope } from "../crypto/e2e/envelope.js";
import { cut } from "../text/cut.js";
import { deviceInfo, machineInfo, sessionFrame, view } from "./view.js";
import { e2eState, e2eWrite, emptyE2E, prunePairings, recordPairing, revokeHolder, type E2EAnswer, type E2EData, type E2ERequest } from "./e2e.js";

export interface Member {
  name: string;
  hash: string;
  since: number;
  last_seen: number;
}
interface Code {
  kind: "pair" | "join";
  hash: string;
  expires_at: number;
}
export interface InboxData {
  inbox_id: string;
  created_at: number;
  devices: Record<string, Member>;
  machines: Record<string, Member>;
  sessions: Record<string, InboxSession & { epoch: number }>;
  codes: Code[];
  policy: InboxPolicy;
  /** The key state of end-to-end encryption (docs/e2e.md); absent in inboxes made before it. */
  e2e?: E2EData;
  /** Sessions of revoked machines whose end has not reached them yet (docs/inbox.md "Revocation"), by id:
   * written with the revocation itself, dropped once the session ended (or expired), retried until then. */
  ending?: Record<string, Ending>;
}

interface Ending {
  epoch: number;
  expires_at: number;
  /** When the next attempt is due, and how many failed. */
  due: number;
  tries: number;
}

/** What one write changed: these sessions, devices, machines (present: written; gone: deleted) and/or the
 * rest (`meta`: id, codes, policy, E2E). Absent from a save: anything may have changed. */
export interface Touched {
  sessions?: string[];
  devices?: string[];
  machines?: string[];
  meta?: true;
}

export interface InboxPorts {
  /** The inbox's data; may be the host's cache itself: changed only inside a change that ends in `save`. */
  load(): InboxData | undefined;
  save(d: InboxData, touched?: Touched): void;
  /** A change threw half-way: the data `load` gave may be ahead of storage (a cache reloads from it). */
  forget?(): void;
  /** Sends to every open inbox socket: `frame(deviceId)` builds each device's own view. */
  broadcast(frame: (deviceId: string) => string): void;
  /** Closes the inbox sockets of one device. */
  closeDevice(deviceId: string, code: number, reason: string): void;
  /** Closes a client's connections to one session (revocation reaches every session of the inbox). */
  dropClient(sid: string, clientId: string, code: number, reason: string): Promise<void>;
  /** Tells a sealed session the inbox's new epoch (it refuses older envelopes from then on). */
  sessionEpoch(sid: string, epoch: number): Promise<void>;
  /** Ends a session of a revoked machine as `DELETE /api/sessions/:sid` does (sockets close with 4004 and
   * `reason`); false when that incarnation was gone already. Rejects when it could not be reached. */
  endSession(sid: string, epoch: number, reason: string): Promise<boolean>;
  /** Run `finishEnding` at `at` (the Worker's one alarm, the LAN server's timer). */
  wakeEnding(at: number): void;
}

/** What else listens to the inbox (Web Push, shared/inbox/push.ts); called after each change was saved. */
export interface InboxHooks {
  /** A live session's report arrived: its Waiting list before and after (after is empty when it ended). */
  reported?(sid: string, before: WaitingCall[], after: WaitingCall[], r: SessionReport): void;
  /** A device was revoked (its push subscription goes too). */
  revoked?(deviceId: string): void;
}

/** A write of the inbox policy: plaintext lists (E2E off), or the sealed envelope and its author's id. */
export type PolicyWrite = { permissions: Partial<InboxPolicy["permissions"]> } | { sealed: Envelope; by: string };
export type PolicyRefusal = "conflict" | "e2e_on" | "e2e_off" | "stale_epoch";

export type AuthAnswer = { ok: false } | { ok: true; name: string; session?: { epoch: number; expires_at: number; machine_id?: string } };
export type Attach = Omit<InboxSession, keyof SessionReport> & { epoch: number };

export class InboxCore {
  constructor(
    private readonly ports: InboxPorts,
    private readonly hooks: InboxHooks = {},
  ) {}

  /** Read → modify → write: `fn` changes `d` and returns its answer, `touched` says what it changed. */
  private change<T>(fn: (d: InboxData) => T, push = true, touched?: Touched | ((r: T) => Touched | undefined)): T | undefined {
    return this.edit((d) => {
      const r = fn(d);
      this.ports.save(d, typeof touched === "function" ? touched(r) : touched);
      if (push) this.push(d);
      return r;
    });
  }

  /** Runs `fn` on the loaded data (it saves what it changed); a throw makes the host forget its cache. */
  private edit<T>(fn: (d: InboxData) => T): T | undefined {
    const d = this.ports.load();
    if (!d) return undefined;
    try {
      return fn(d);
    } catch (e) {
      this.ports.forget?.();
      throw e;
    }
  }

  /** Every device socket gets the whole state; with `sid`, only that session's row (issue 33: a report must not
   * cost each phone the whole inbox — a socket has the whole state from its first frame on). */
  private push(d: InboxData, sid?: string): void {
    if (sid !== undefined) {
      const f = JSON.stringify(sessionFrame(d, sid));
      this.ports.broadcast(() => f);
    } else this.ports.broadcast((id) => JSON.stringify(view(d, { kind: "device", id })));
  }

  /** Makes the inbox with its first machine; false when it exists (ids are random: never in practice). */
  create(inboxId: string, machine: { id: string; name: string; hash: string }, now = Date.now()): boolean {
    if (this.ports.load()) return false;
    this.ports.save({
      inbox_id: inboxId,
      created_at: now,
      devices: {},
      machines: { [machine.id]: { name: machine.name, hash: machine.hash, since: now, last_seen: now } },
      sessions: {},
      codes: [],
      policy: { permissions: { allow: [], ask: [], deny: [] }, version: 0 },
    });
    return true;
  }

  /** Checks a credential by its hash; with `sid`, also that the session is one of this inbox. */
  auth(kind: CredentialKind, id: string, hash: string, sid?: string, now = Date.now()): AuthAnswer {
    const d = this.ports.load();
    const m = d && (kind === "device" ? d.devices : d.machines)[id];
    if (!d || !m || m.hash !== hash) return { ok: false };
    if (now - m.last_seen >= INBOX_LIMITS.lastSeenEveryMs) {
      m.last_seen = now;
      this.ports.save(d, kind === "device" ? { devices: [id] } : { machines: [id] });
    }
    if (sid === undefined) return { ok: true, name: m.name };
    const s = d.sessions[sid];
    if (!s || s.expires_at <= now) return { ok: true, name: m.name };
    return {
      ok: true,
      name: m.name,
      session: { epoch: s.epoch, expires_at: s.expires_at, ...(s.machine_id !== undefined ? { machine_id: s.machine_id } : {}) },
    };
  }

  /** The inbox's data as stored, for its listeners: read it, never change it. */
  read(): InboxData | undefined {
    return this.ports.load();
  }

  state(you: { kind: CredentialKind; id: string }): InboxState | undefined {
    const d = this.ports.load();
    return d && view(d, you);
  }

  /** Whether agent machine `id` is a member (the edge's check of an inbox session's tokens). */
  machineLive(id: string): boolean {
    return this.ports.load()?.machines[id] !== undefined;
  }

  /** A new session of this inbox (its object was just created). Past the cap the least active goes.
   * False when its machine was revoked meanwhile (the edge then deletes the session). */
  attach(s: Attach, now = Date.now()): boolean {
    const gone: string[] = [];
    return (
      this.change(
        (d) => {
          if (s.machine_id !== undefined && !d.machines[s.machine_id]) return false;
          d.sessions[s.session_id] = { ...s, agent_online: false, pending: 0, last_activity: now, waiting: [] };
          const n = Object.keys(d.sessions).length;
          if (n > INBOX_LIMITS.maxSessions) {
            const all = Object.values(d.sessions).sort((a, b) => a.last_activity - b.last_activity);
            for (const old of all.slice(0, n - INBOX_LIMITS.maxSessions)) {
              delete d.sessions[old.session_id];
              gone.push(old.session_id);
            }
          }
          return true;
        },
        true,
        (ok) => (ok ? { sessions: [s.session_id, ...gone] } : {}),
      ) ?? false
    );
  }

  /** A session's own report (it changed); `ended` removes it. Unknown sessions are ignored. */
  report(sid: string, epoch: number, r: SessionReport): void {
    this.edit((d) => this.reportIn(d, sid, epoch, r));
  }

  private reportIn(d: InboxData, sid: string, epoch: number, r: SessionReport): void {
    const s = Object.hasOwn(d.sessions, sid) ? d.sessions[sid] : undefined;
    if (!s || s.epoch !== epoch) return;
    const before = s.waiting;
    if (r.ended) delete d.sessions[sid];
    else {
      // Activity is a change of what the row shows. A session object that woke from hibernation forgot what it
      // last reported and reports the same again when a device connects: not news, or opening the app (its
      // sockets connecting in any order) would reorder the home list (issue 28 item 2).
      const news =
        s.agent_online !== r.agent_online ||
        s.pending !== r.pending ||
        !!r.closed?.length ||
        before.length !== r.waiting.length ||
        r.waiting.some((w, i) => w.call_id !== before[i]?.call_id);
      Object.assign(s, {
        agent_online: r.agent_online,
        pending: r.pending,
        last_activity: news ? r.last_activity : s.last_activity,
        waiting: r.waiting.slice(0, INBOX_LIMITS.maxWaitingPerSession),
      });
      const recent = recentAfter(s.recent ?? [], before, r.closed ?? [], r.last_activity);
      if (recent.length) s.recent = recent;
      else delete s.recent;
      // i29-room: the agent moved on — a call it made after its "needs you" / "finished" waits now.
      if (s.attention && s.waiting.some((w) => w.created_at >= s.attention!.at && !before.some((b) => b.call_id === w.call_id))) delete s.attention;
    }
    this.ports.save(d, { sessions: [sid] });
    this.push(d, sid);
    this.hooks.reported?.(sid, before, r.ended ? [] : s.waiting, r);
  }

  // ---- i29-room (issue 29 item 3): the home row's "needs you" / "finished" (SessionAttention, docs/inbox.md)

  /** An agent's attention report: `needs_input` / `completed` mark its session's row ("waiting" leaves it);
   * not when a device shows that session right now (`shown`). False for an unknown or expired session. */
  markAttention(sid: string, reason: AttentionReason | undefined, shown: boolean, now = Date.now()): boolean {
    const d = this.ports.load();
    const s = d && Object.hasOwn(d.sessions, sid) ? d.sessions[sid] : undefined; // never "__proto__"'s
    if (!d || !s || s.expires_at <= now) return false;
    if (reason === undefined || reason === "waiting" || shown) return true;
    s.attention = { reason, at: now };
    this.ports.save(d, { sessions: [sid] });
    this.push(d, sid);
    return true;
  }

  /** A device shows session `sid` (its visibility frame): the person has seen what the row said. */
  seen(sid: string): void {
    const d = this.ports.load();
    const s = d && Object.hasOwn(d.sessions, sid) ? d.sessions[sid] : undefined;
    if (!d || !s?.attention) return;
    delete s.attention;
    this.ports.save(d, { sessions: [sid] });
    this.push(d, sid);
  }

  issueCode(kind: "pair" | "join", hash: string, now = Date.now()): number | undefined {
    const expires = now + INBOX_LIMITS.codeTtlMs;
    return this.change(
      (d) => {
        d.codes = d.codes.filter((c) => c.expires_at > now).slice(-(INBOX_LIMITS.maxOpenCodes - 1));
        d.codes.push({ kind, hash, expires_at: expires });
        return expires;
      },
      false,
      { meta: true },
    );
  }

  /** Spends a code once; "invalid" for unknown, used and expired alike, "full" past the member cap. With
   * `codeId` (docs/e2e.md), the new member is recorded as the joiner of that pairing. */
  redeem(
    kind: "pair" | "join",
    codeHash: string,
    member: { id: string; name: string; hash: string },
    codeId?: string,
    now = Date.now(),
  ): "ok" | "invalid" | "full" {
    return (
      this.edit((d) => {
        const i = d.codes.findIndex((c) => c.kind === kind && c.hash === codeHash && c.expires_at > now);
        if (i < 0) return "invalid";
        const group = kind === "pair" ? d.devices : d.machines;
        if (Object.keys(group).length >= (kind === "pair" ? INBOX_LIMITS.maxDevices : INBOX_LIMITS.maxMachines)) return "full";
        const [spent] = d.codes.splice(i, 1);
        group[member.id] = { name: member.name, hash: member.hash, since: now, last_seen: now };
        if (codeId !== undefined) recordPairing((d.e2e ??= emptyE2E()), codeId, member.id, spent!.expires_at, now);
        this.ports.save(d, { meta: true, ...(kind === "pair" ? { devices: [member.id] } : { machines: [member.id] }) });
        this.push(d);
        return "ok";
      }) ?? "invalid"
    );
  }

  rename(kind: CredentialKind, id: string, name: string): DeviceInfo | MachineInfo | undefined {
    return this.change(
      (d) => {
        const m = (kind === "device" ? d.devices : d.machines)[id];
        if (!m) return undefined;
        m.name = name;
        return kind === "device" ? deviceInfo(id, m) : machineInfo(id, m);
      },
      true,
      kind === "device" ? { devices: [id] } : { machines: [id] },
    );
  }

  /**
   * Revokes a device or machine: its credential is gone at once; a device's sockets close with 4401 in
   * the inbox and in every session of it before this resolves. A machine's sessions leave the list and
   * are ended: recorded with the revocation (one write), tried here, retried from `finishEnding`.
   */
  async revoke(kind: CredentialKind, id: string, now = Date.now()): Promise<boolean> {
    const r = this.change((d) => {
      const group = kind === "device" ? d.devices : d.machines;
      if (!group[id]) return undefined;
      delete group[id];
      if (d.e2e) revokeHolder(d.e2e, id);
      const ended = kind === "machine" ? Object.values(d.sessions).filter((s) => s.machine_id === id) : [];
      for (const s of ended) {
        delete d.sessions[s.session_id];
        (d.ending ??= {})[s.session_id] = { epoch: s.epoch, expires_at: s.expires_at, due: now + INBOX_LIMITS.endRetryBaseMs, tries: 0 };
      }
      return { sessions: Object.keys(d.sessions), ended };
    });
    if (!r) return false;
    if (kind === "device") {
      this.hooks.revoked?.(id);
      this.ports.closeDevice(id, CLOSE.revoked, "device revoked");
      await Promise.all(r.sessions.map((sid) => this.ports.dropClient(sid, id, CLOSE.revoked, "device revoked").catch(() => undefined)));
    } else if (r.ended.length) {
      // The retry is armed before the first attempt: an eviction from here on loses nothing.
      this.ports.wakeEnding(now + INBOX_LIMITS.endRetryBaseMs);
      const gone: SessionReport = { agent_online: false, pending: 0, last_activity: now, waiting: [], ended: true };
      for (const s of r.ended) this.hooks.reported?.(s.session_id, s.waiting, [], gone);
      await this.endSessions(
        r.ended.map((s) => s.session_id),
        now,
      );
    }
    return true;
  }

  /** The sessions of revoked machines due now are ended (the alarm); the rest wait for their retry. */
  async finishEnding(now = Date.now()): Promise<void> {
    const ending = this.ports.load()?.ending ?? {};
    await this.endSessions(
      Object.keys(ending).filter((sid) => ending[sid]!.due <= now),
      now,
    );
  }

  /** The earliest retry of an ending session, if any (the Worker shares its alarm with Web Push). */
  endingDue(): number | undefined {
    const due = Object.values(this.ports.load()?.ending ?? {}).map((e) => e.due);
    return due.length ? Math.min(...due) : undefined;
  }

  /** One attempt per session; idempotent (an ended incarnation answers false), so overlaps are harmless. */
  private async endSessions(sids: string[], now = Date.now()): Promise<void> {
    if (!sids.length) {
      const at = this.endingDue();
      if (at !== undefined) this.ports.wakeEnding(at);
      return;
    }
    const load = () => this.ports.load()?.ending ?? {};
    const tried = await Promise.all(
      sids.map(async (sid) => {
        const e = load()[sid];
        if (!e || e.expires_at <= now) return { sid, ok: true }; // it ends by itself at its expiry
        return this.ports.endSession(sid, e.epoch, "machine revoked").then(
          () => ({ sid, ok: true }),
          () => ({ sid, ok: false }),
        );
      }),
    );
    const left = this.change((d) => {
      for (const { sid, ok } of tried) {
        const e = d.ending?.[sid];
        if (!e) continue;
        if (ok) delete d.ending![sid];
        else Object.assign(e, { tries: e.tries + 1, due: now + Math.min(INBOX_LIMITS.endRetryMaxMs, INBOX_LIMITS.endRetryBaseMs * 2 ** (e.tries + 1)) });
      }
      if (d.ending && Object.keys(d.ending).length === 0) delete d.ending;
      return d.ending ? Math.min(...Object.values(d.ending).map((e) => e.due)) : undefined;
    }, false);
    if (left !== undefined) this.ports.wakeEnding(left);
  }

  // ---------------------------------------------------------------- end-to-end encryption (docs/e2e.md)

  /** The key endpoints, as a member `who` of the inbox (the edge checked the credential). A refusal
   * changes nothing; a re-key tells every sealed session of the inbox the new epoch before it resolves. */
  async e2e(who: { kind: CredentialKind; id: string }, req: E2ERequest, now = Date.now()): Promise<E2EAnswer> {
    const d = this.ports.load();
    if (!d) return { status: 404, code: "not_found", message: "no such inbox" };
    const e = structuredClone(d.e2e ?? emptyE2E());
    if (req.op === "get") {
      prunePairings(e, now);
      return { status: 200, body: e2eState(e, who.id, now) };
    }
    let r: E2EAnswer;
    if (req.op === "claim") {
      const i = d.codes.findIndex((c) => c.hash === req.codeHash && c.expires_at > now);
      if (i < 0) return { status: 404, code: "invalid_code", message: "this code is unknown, was already used or has expired" };
      recordPairing(e, req.code_id, who.id, d.codes[i]!.expires_at, now); // on the copy first: a throw changes nothing
      d.codes.splice(i, 1);
      r = { status: 200, body: { code_id: req.code_id } };
    } else {
      const members = new Set([...Object.keys(d.devices), ...Object.keys(d.machines)]);
      r = e2eWrite(e, d.inbox_id, who.id, members, req, now);
      if (r.status >= 400) return r;
    }
    d.e2e = e;
    this.ports.save(d, { meta: true });
    this.push(d);
    if (req.op === "put") {
      const sealed = Object.values(d.sessions).filter((s) => s.sealed === true && s.expires_at > now);
      await Promise.all(sealed.map((s) => this.ports.sessionEpoch(s.session_id, e.epoch).catch(() => undefined)));
    }
    return r;
  }

  /** The inbox's current epoch (0: E2E off): a sealed session starts at it. */
  e2eEpoch(): number {
    return this.ports.load()?.e2e?.epoch ?? 0;
  }

  policy(): InboxPolicy | undefined {
    return this.ports.load()?.policy;
  }

  /**
   * Plaintext: replaces the lists given (only while the inbox's epoch is 0, else "e2e_on"). Sealed
   * (docs/e2e.md "The inbox policy"): replaces the whole policy with the envelope, which must be of the
   * current epoch ("stale_epoch"; "e2e_off" at epoch 0). "conflict" when `base` is not the current version.
   * A refusal changes nothing.
   */
  setPolicy(w: PolicyWrite, base?: number): InboxPolicy | PolicyRefusal | undefined {
    const d = this.ports.load();
    if (!d) return undefined;
    const epoch = d.e2e?.epoch ?? 0;
    if ("sealed" in w ? epoch === 0 : epoch > 0) return "sealed" in w ? "e2e_off" : "e2e_on";
    if ("sealed" in w && w.sealed.e !== epoch) return "stale_epoch";
    if (base !== undefined && base !== d.policy.version) return "conflict";
    d.policy =
      "sealed" in w
        ? { permissions: { allow: [], ask: [], deny: [] }, version: d.policy.version + 1, sealed: w.sealed, sealed_by: w.by }
        : { permissions: { ...d.policy.permissions, ...w.permissions }, version: d.policy.version + 1 };
    this.ports.save(d, { meta: true });
    this.push(d);
    return d.policy;
  }
}

/** The recent list after a report: the calls that just left (as they were listed), newest last, bounded. */
function recentAfter(recent: RecentCall[], before: WaitingCall[], closed: ClosedCall[], now: number): RecentCall[] {
  const added = closed.flatMap((c): RecentCall[] => {
    const w = before.find((b) => b.call_id === c.call_id);
    if (!w) return [];
    return [{ ...c, name: w.name, text: cut(w.text, INBOX_LIMITS.maxRecentText), at: now }];
  });
  return [...recent, ...added].filter((x) => now - x.at < INBOX_LIMITS.recentTtlMs).slice(-INBOX_LIMITS.maxRecentPerSession);
}
