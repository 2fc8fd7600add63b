// One Durable Object per inbox (docs/inbox.md): the shared inbox logic (shared/inbox/core.ts) over one SQLite
// row and hibernatable sockets tagged with their device id. The edge has checked the credential (in
// `auth`, here) before anything else is called. Web Push (shared/inbox/push.ts, worker/push.ts) lives here
// too: its document is a second row, its sends run from the object's one alarm.
import { DurableObject } from "cloudflare:workers";
import type { E2ERequest } from "../shared/inbox/e2e.js";
import { InboxCore, type Attach, type InboxData, type PolicyWrite } from "../shared/inbox/core.js";
import type { CredentialKind, InboxPolicy, SessionReport } from "../shared/contract/inbox.js";
import { PushCore, type PushSub } from "../shared/inbox/push.js";
import { MAX_VISIBILITY_FRAME, VisibilityFrame, type PushAnswerInput, type PushSettings } from "../shared/contract/push.js";
import { closeQuietly, sendIfOpen } from "../shared/session/sockets.js";
import type { Env } from "./env.js";
import { tagOf, workerPushPorts, type InboxSocketTag } from "./push.js";

const earliest = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

export class Inbox extends DurableObject<Env> {
  private readonly core: InboxCore;
  private readonly pushCore: PushCore;
  private readonly pushPorts: ReturnType<typeof workerPushPorts>;
  private cache: InboxData | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS inbox (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.pushPorts = workerPushPorts(ctx, env, () => this.core.read());
    // One alarm for both: Web Push's next send and the retry of ending a revoked machine's sessions.
    const pushWake = this.pushPorts.wake;
    this.pushPorts.wake = (at) => pushWake(earliest(at, this.core.endingDue()));
    this.pushCore = new PushCore(this.pushPorts);
    this.core = new InboxCore({
      load: () => {
        if (!this.cache) {
          const row = sql.exec<{ v: string }>("SELECT v FROM inbox WHERE k = 'state'").toArray()[0];
          this.cache = row ? (JSON.parse(row.v) as InboxData) : undefined;
        }
        // A copy: a change that throws half-way must not leave the cache ahead of SQLite.
        return this.cache && (structuredClone(this.cache) as InboxData);
      },
      save: (d) => {
        sql.exec("INSERT INTO inbox (k, v) VALUES ('state', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", JSON.stringify(d));
        this.cache = d;
      },
      broadcast: (frame) => {
        for (const ws of ctx.getWebSockets()) {
          const id = tagOf(ws)?.device;
          if (id) sendIfOpen(ws, frame(id));
        }
      },
      // The frame first: a socket closed from another request's context may reach its close event late.
      closeDevice: (id, code, reason) =>
        ctx.getWebSockets(id).forEach((ws) => {
          sendIfOpen(ws, JSON.stringify({ type: "revoked", message: reason }));
          closeQuietly(ws, code, reason);
        }),
      dropClient: (sid, clientId, code, reason) => env.SESSIONS.get(env.SESSIONS.idFromName(sid)).dropClient(`app:${clientId}`, code, reason),
      sessionEpoch: async (sid, epoch) => void (await env.SESSIONS.get(env.SESSIONS.idFromName(sid)).setE2eEpoch(epoch)),
      endSession: async (sid, epoch, reason) => {
        const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sid));
        if (!(await stub.destroy(epoch, reason))) return false;
        await stub.reset().catch(() => undefined); // as DELETE does (worker/host.ts): its sockets end now
        return true;
      },
      wakeEnding: (at) => this.pushPorts.wake(earliest(at, this.pushCore.nextDue())),
    }, {
      reported: (sid, before, after, r) => this.pushCore.reported(sid, before, after, r),
      revoked: (id) => this.pushCore.unsubscribe(id, true),
    });
  }

  async create(inboxId: string, machine: { id: string; name: string; hash: string }) {
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
  async redeem(kind: "pair" | "join", codeHash: string, member: { id: string; name: string; hash: string }, codeId?: string) {
    return this.core.redeem(kind, codeHash, member, codeId);
  }
  // End-to-end encryption's key state (shared/inbox/e2e.ts, docs/e2e.md)
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

  // ---------------------------------------------------------------- Web Push (shared/edge/push.ts)
  async pushSubscribe(deviceId: string, sub: PushSub, origin: string) {
    this.pushCore.subscribe(deviceId, sub, origin);
  }
  async pushUnsubscribe(deviceId: string) {
    this.pushCore.unsubscribe(deviceId);
  }
  async pushInfo(deviceId: string | undefined, sid?: string) {
    return this.pushCore.info(deviceId, sid);
  }
  async pushSettings(p: Partial<PushSettings>) {
    return this.pushCore.setSettings(p);
  }
  async pushAnswer(hash: string, answer: PushAnswerInput) {
    return this.pushCore.answer(hash, answer);
  }
  async pushAttention(sid: string, text: string | undefined) {
    return this.pushCore.attention(sid, text);
  }

  async alarm(): Promise<void> {
    this.pushPorts.alarmFired();
    await this.core.finishEnding();
    await this.pushCore.pump();
  }

  /** The inbox socket of a device the edge checked (worker/host.ts sets the x-lineup-* headers). */
  async fetch(req: Request): Promise<Response> {
    const deviceId = req.headers.get("x-lineup-device");
    if (!deviceId) return new Response(null, { status: 400 });
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, [deviceId]);
    server.serializeAttachment({ device: deviceId } satisfies InboxSocketTag);
    const s = this.core.state({ kind: "device", id: deviceId });
    if (s) sendIfOpen(server, JSON.stringify(s));
    const headers = new Headers();
    if (req.headers.get("x-lineup-subprotocol") === "1") headers.set("sec-websocket-protocol", "lineup.v1");
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  // The one frame a device may send: what it shows right now (push suppression, docs/push.md). Anything
  // else, or anything larger, is ignored.
  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    const tag = tagOf(ws);
    if (!tag || typeof raw !== "string" || raw.length > MAX_VISIBILITY_FRAME) return;
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      return;
    }
    const f = VisibilityFrame.safeParse(v);
    if (!f.success) return;
    ws.serializeAttachment({ device: tag.device, view: { view: f.data.view, ...(f.data.session_id ? { session_id: f.data.session_id } : {}), at: Date.now() } } satisfies InboxSocketTag);
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    closeQuietly(ws, code, "bye");
  }
}
