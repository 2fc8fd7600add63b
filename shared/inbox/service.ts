// One inbox's operations, written once (issue 27 §4): `InboxService` is what the edge calls (shared/edge/inbox.ts,
// e2e.ts, push.ts) and `InboxOps` is its one implementation over the inbox's logic (core.ts) and Web Push (push.ts).
// The Worker's Inbox object takes InboxOps' methods as its RPC surface (worker/inbox.ts `adoptInboxOps`), so its
// stub is an InboxService as it stands (worker/host.ts); the LAN server holds an InboxOps per inbox
// (adapter/lan/inbox.ts). A new operation is added here, in the logic, and in its route — nowhere else.
import type { CredentialKind, DeviceInfo, InboxPolicy, InboxState, MachineInfo, SessionReport } from "../contract/inbox.js";
import type { AttentionReason, PushAnswerInput, PushAnswerResult, PushAttentionResult, PushInfo, PushSettings } from "../contract/push.js";
import type { AuthAnswer, Attach, InboxCore, PolicyRefusal, PolicyWrite } from "./core.js";
import type { E2EAnswer, E2ERequest } from "./e2e.js";
import type { PushCore } from "./push.js";
import type { PushSub } from "./push-data.js";

type Member = { id: string; name: string; hash: string };

/** One inbox as the edge sees it: a Durable Object stub, or the LAN server's InboxOps. */
export interface InboxService {
  create(inboxId: string, machine: Member): Promise<boolean>;
  auth(kind: CredentialKind, id: string, hash: string, sid?: string): Promise<AuthAnswer>;
  state(you: { kind: CredentialKind; id: string }): Promise<InboxState | undefined>;
  attach(s: Attach): Promise<boolean>;
  issueCode(kind: "pair" | "join", hash: string): Promise<number | undefined>;
  redeem(kind: "pair" | "join", codeHash: string, member: Member, codeId?: string): Promise<"ok" | "invalid" | "full">;
  // End-to-end encryption's key state (shared/inbox/e2e.ts, shared/edge/e2e.ts)
  e2e(who: { kind: CredentialKind; id: string }, req: E2ERequest): Promise<E2EAnswer>;
  e2eEpoch(): Promise<number>;
  rename(kind: CredentialKind, id: string, name: string): Promise<DeviceInfo | MachineInfo | undefined>;
  revoke(kind: CredentialKind, id: string): Promise<boolean>;
  /** Whether an agent machine is (still) a member: the tokens of the sessions it created name it. */
  machineLive(id: string): Promise<boolean>;
  policy(): Promise<InboxPolicy | undefined>;
  setPolicy(w: PolicyWrite, base?: number): Promise<InboxPolicy | PolicyRefusal | undefined>;
  // Web Push (shared/edge/push.ts, shared/inbox/push.ts)
  pushSubscribe(deviceId: string, sub: PushSub, origin: string): Promise<void>;
  pushUnsubscribe(deviceId: string): Promise<void>;
  pushInfo(deviceId: string | undefined, sid?: string): Promise<PushInfo>;
  pushSettings(p: Partial<PushSettings>): Promise<PushSettings>;
  pushAnswer(hash: string, answer: PushAnswerInput): Promise<PushAnswerResult>;
  pushAttention(sid: string, text: string | undefined, reason?: AttentionReason): Promise<PushAttentionResult>;
}

/** The object's whole RPC surface: the edge's operations, and a session's report of what changed (shared/session/report.ts). */
export interface InboxRpc extends InboxService {
  report(sid: string, epoch: number, r: SessionReport): Promise<void>;
}

/** What InboxOps' methods run over: `this` of an InboxOps, or of the Worker's Inbox object that adopted them. */
export interface InboxParts {
  readonly core: InboxCore;
  readonly push: PushCore;
}

/** The one implementation of InboxRpc. Its methods use only `this.core` and `this.push`: a host with both may adopt them. */
export class InboxOps implements InboxRpc, InboxParts {
  constructor(
    readonly core: InboxCore,
    readonly push: PushCore,
  ) {}

  async create(inboxId: string, machine: Member) {
    return this.core.create(inboxId, machine);
  }
  async auth(kind: CredentialKind, id: string, hash: string, sid?: string) {
    return this.core.auth(kind, id, hash, sid);
  }
  async state(you: { kind: CredentialKind; id: string }) {
    return this.core.state(you);
  }
  async attach(s: Attach) {
    return this.core.attach(s);
  }
  async report(sid: string, epoch: number, r: SessionReport) {
    this.core.report(sid, epoch, r);
  }
  async issueCode(kind: "pair" | "join", hash: string) {
    return this.core.issueCode(kind, hash);
  }
  async redeem(kind: "pair" | "join", codeHash: string, member: Member, codeId?: string) {
    return this.core.redeem(kind, codeHash, member, codeId);
  }
  async e2e(who: { kind: CredentialKind; id: string }, req: E2ERequest) {
    return this.core.e2e(who, req);
  }
  async e2eEpoch() {
    return this.core.e2eEpoch();
  }
  async rename(kind: CredentialKind, id: string, name: string) {
    return this.core.rename(kind, id, name);
  }
  async revoke(kind: CredentialKind, id: string) {
    return this.core.revoke(kind, id);
  }
  async machineLive(id: string) {
    return this.core.machineLive(id);
  }
  async policy() {
    return this.core.policy();
  }
  async setPolicy(w: PolicyWrite, base?: number) {
    return this.core.setPolicy(w, base);
  }
  async pushSubscribe(deviceId: string, sub: PushSub, origin: string) {
    this.push.subscribe(deviceId, sub, origin);
  }
  async pushUnsubscribe(deviceId: string) {
    this.push.unsubscribe(deviceId);
  }
  async pushInfo(deviceId: string | undefined, sid?: string) {
    return this.push.info(deviceId, sid);
  }
  async pushSettings(p: Partial<PushSettings>) {
    return this.push.setSettings(p);
  }
  async pushAnswer(hash: string, answer: PushAnswerInput) {
    return this.push.answer(hash, answer);
  }
  async pushAttention(sid: string, text: string | undefined, reason?: AttentionReason) {
    // i29-room: the row's marker is state, set even when the push itself is throttled.
    this.core.markAttention(sid, reason, this.push.shownAnywhere(sid));
    return this.push.attention(sid, text, reason);
  }
}

/** The names of InboxOps' operations, checked complete against InboxRpc (a missing or extra name does not compile). */
export const INBOX_OPS = Object.keys({
  create: 1,
  auth: 1,
  state: 1,
  attach: 1,
  report: 1,
  issueCode: 1,
  redeem: 1,
  e2e: 1,
  e2eEpoch: 1,
  rename: 1,
  revoke: 1,
  machineLive: 1,
  policy: 1,
  setPolicy: 1,
  pushSubscribe: 1,
  pushUnsubscribe: 1,
  pushInfo: 1,
  pushSettings: 1,
  pushAnswer: 1,
  pushAttention: 1,
} satisfies Record<keyof InboxRpc, 1>) as (keyof InboxRpc)[];

/**
 * Gives a class with `core` and `push` InboxOps' methods on its prototype: the Worker's Inbox object, whose RPC surface
 * must be methods of its own class (Workers RPC calls prototype methods, never instance properties).
 */
export function adoptInboxOps(target: { prototype: InboxParts }): void {
  for (const name of INBOX_OPS) {
    const d = Object.getOwnPropertyDescriptor(InboxOps.prototype, name);
    if (d) Object.defineProperty(target.prototype, name, d);
  }
}
