// One Durable Object per inbox (docs/inbox.md): the shared inbox logic (shared/inbox/core.ts) over SQLite rows
// (worker/inbox-store.ts: one per session, device, machine) and hibernatable sockets tagged with their device id. The edge has checked the credential (in
// `auth`, here) before anything else is called. Web Push (shared/inbox/push.ts, worker/push.ts) lives here
// too: its document is a second row, its sends run from the object's one alarm.
import { SUBPROTOCOL } from "../shared/contract/limits.js";
import { DurableObject } from "cloudflare:workers";
import { InboxCore } from "../shared/inbox/core.js";
import { PushCore } from "../shared/inbox/push.js";
import { adoptInboxOps, type InboxRpc } from "../shared/inbox/service.js";
import { MAX_VISIBILITY_FRAME, VisibilityFrame } from "../shared/contract/push.js";
import { closeQuietly, sendIfOpen } from "../shared/session/sockets.js";
import type { Env } from "./env.js";
import { InboxStore } from "./inbox-store.js";
import { tagOf, workerPushPorts, type InboxSocketTag } from "./push.js";

const earliest = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

// Its RPC surface is InboxOps' (shared/inbox/service.ts), adopted onto this class below: declared here, written there once.
export interface Inbox extends InboxRpc {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: see the interface above.
export class Inbox extends DurableObject<Env> {
  /** Read by the adopted InboxOps methods (never over RPC: only prototype methods are). */
  readonly core: InboxCore;
  readonly push: PushCore;
  private readonly pushPorts: ReturnType<typeof workerPushPorts>;
  private readonly store: InboxStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new InboxStore(ctx.storage.sql, (fn) => ctx.storage.transactionSync(fn));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.pushPorts = workerPushPorts(ctx, env, () => this.core.read());
    // One alarm for both: Web Push's next send and the retry of ending a revoked machine's sessions.
    const pushWake = this.pushPorts.wake;
    this.pushPorts.wake = (at) => pushWake(earliest(at, this.core.endingDue()));
    this.push = new PushCore(this.pushPorts);
    this.core = new InboxCore(
      {
        load: () => this.store.load(),
        save: (d, touched) => this.store.save(d, touched),
        forget: () => this.store.forget(),
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
        wakeEnding: (at) => this.pushPorts.wake(earliest(at, this.push.nextDue())),
      },
      {
        reported: (sid, before, after, r) => {
          // A push due now leaves from this request, not after an alarm round (issue 33): its queue item is leased
          // before the send, so the alarm — set in the same change, the backstop after an eviction — never sends it twice.
          const sending = this.push.reported(sid, before, after, r, Date.now(), true);
          if (sending) ctx.waitUntil(sending);
        },
        revoked: (id) => this.push.unsubscribe(id, true),
      },
    );
  }

  async alarm(): Promise<void> {
    this.pushPorts.alarmFired();
    await this.core.finishEnding();
    await this.push.pump();
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
    if (req.headers.get("x-lineup-subprotocol") === "1") headers.set("sec-websocket-protocol", SUBPROTOCOL);
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
    ws.serializeAttachment({
      device: tag.device,
      view: { view: f.data.view, ...(f.data.session_id ? { session_id: f.data.session_id } : {}), at: Date.now() },
    } satisfies InboxSocketTag);
    if (f.data.view === "session" && f.data.session_id) this.core.seen(f.data.session_id); // i29-room: the row's marker
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    closeQuietly(ws, code, "bye");
  }
}
adoptInboxOps(Inbox);
