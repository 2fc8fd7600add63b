// The LAN server's inboxes (docs/inbox.md): the shared inbox logic (shared/inbox/core.ts) over memory and the
// `ws` sockets of this process. Like its sessions, they live as long as the process — and so do its Web
// Push state and VAPID keys (shared/inbox/push.ts; docs/push.md, "LAN mode"): one timer per inbox stands in
// for the alarm.
import type { WebSocket, WebSocketServer } from "ws";
import type { EdgeHost } from "../../shared/edge/host.js";
import { InboxCore, type InboxData } from "../../shared/inbox/core.js";
import { PushCore, type PushData, type PushPorts } from "../../shared/inbox/push.js";
import { InboxOps } from "../../shared/inbox/service.js";
import { httpError } from "../../shared/contract/protocol.js";
import { MAX_VISIBILITY_FRAME, VisibilityFrame, type DeviceView } from "../../shared/contract/push.js";
import { closeQuietly, sendIfOpen } from "../../shared/session/sockets.js";
import { CLOSE } from "../../shared/contract/close.js";
import { generateVapidKeys, type VapidKeys } from "../../shared/crypto/webpush/index.js";
import type { LanUpgrade } from "./static.js";
import { sendPush, systemResolve, type Resolve } from "./push-send.js";

type Sock = { device: string; ws: WebSocket; view?: DeviceView };

export class LanInboxes {
  private readonly data = new Map<string, InboxData>();
  private readonly sockets = new Map<string, Set<Sock>>();
  private readonly cores = new Map<string, InboxOps>();
  private readonly pushData = new Map<string, PushData>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Per inbox: the retry of ending a revoked machine's sessions (shared/inbox/core.ts `finishEnding`). */
  private readonly endingTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private vapid: Promise<VapidKeys> | undefined;

  constructor(
    private readonly wss: WebSocketServer,
    private readonly dropClient: (sid: string, key: string, code: number, reason: string) => void,
    private readonly answer: PushPorts["answer"],
    /** Tells a sealed session the inbox's new epoch (docs/e2e.md). */
    private readonly sessionEpoch: (sid: string, epoch: number) => void = () => undefined,
    /** Resolves push services' names (adapter/lan/push-send.ts); tests give their own. */
    private readonly resolve: Resolve = systemResolve,
    /** Ends a revoked machine's session as DELETE does; false when that incarnation is gone already. */
    private readonly endSession: (sid: string, epoch: number, reason: string) => Promise<boolean> = async () => false,
  ) {}

  /** This process's VAPID keys: made on first use, gone with the process (devices re-subscribe). */
  vapidKeys(): Promise<VapidKeys> {
    return (this.vapid ??= generateVapidKeys());
  }

  private pushPorts(id: string): PushPorts {
    return {
      load: () => {
        const d = this.pushData.get(id);
        return d && (structuredClone(d) as PushData);
      },
      save: (d) => void this.pushData.set(id, structuredClone(d)),
      inbox: () => this.ops(id).core.read(),
      views: (device) => [...(this.sockets.get(id) ?? [])].flatMap((s) => (s.device === device && s.view ? [s.view] : [])),
      wake: (at) => {
        clearTimeout(this.timers.get(id));
        this.timers.delete(id);
        if (at === undefined) return;
        const t = setTimeout(() => void this.cores.get(id)?.push.pump(), Math.min(2 ** 31 - 1, Math.max(0, at - Date.now())));
        t.unref();
        this.timers.set(id, t);
      },
      vapid: async () => ({ keys: await this.vapidKeys() }),
      // Not fetch: node:http(s) with a resolver that checks every address and connects to the checked one.
      send: (req) => sendPush(req, new URL(req.url).protocol === "http:", this.resolve),
      answer: this.answer,
    };
  }

  /** The inbox's service (shared/inbox/service.ts), made on first use. */
  private ops(id: string): InboxOps {
    const had = this.cores.get(id);
    if (had) return had;
    const push = new PushCore(this.pushPorts(id));
    const socks = () => this.sockets.get(id) ?? new Set<Sock>();
    const inbox = new InboxCore(
      {
        // Copies in and out, as SQLite would: a change that throws half-way leaves nothing behind.
        load: () => {
          const d = this.data.get(id);
          return d && (structuredClone(d) as InboxData);
        },
        save: (d) => void this.data.set(id, structuredClone(d)),
        broadcast: (frame) => socks().forEach((s) => sendIfOpen(s.ws, frame(s.device))),
        closeDevice: (device, code, reason) =>
          socks().forEach((s) => {
            if (s.device !== device) return;
            sendIfOpen(s.ws, JSON.stringify({ type: "revoked", message: reason }));
            closeQuietly(s.ws, code, reason);
          }),
        dropClient: async (sid, clientId, code, reason) => this.dropClient(sid, `app:${clientId}`, code, reason),
        sessionEpoch: async (sid, epoch) => this.sessionEpoch(sid, epoch),
        endSession: (sid, epoch, reason) => this.endSession(sid, epoch, reason),
        wakeEnding: (at) => {
          clearTimeout(this.endingTimers.get(id));
          const t = setTimeout(() => void this.cores.get(id)?.core.finishEnding(), Math.min(2 ** 31 - 1, Math.max(0, at - Date.now())));
          t.unref();
          this.endingTimers.set(id, t);
        },
      },
      {
        reported: (sid, before, after, r) => push.reported(sid, before, after, r),
        revoked: (device) => push.unsubscribe(device, true),
      },
    );
    const ops = new InboxOps(inbox, push);
    this.cores.set(id, ops);
    return ops;
  }

  /** The edge's view of the inboxes for one request; `up` is its WebSocket upgrade, if any. */
  edge(up: LanUpgrade | undefined): NonNullable<EdgeHost["inboxes"]> {
    return { inbox: (id) => this.ops(id), connect: async (id, _req, device) => this.connect(id, up, device) };
  }

  /** A checked device's inbox socket: this process's `ws` server takes the upgrade. */
  private connect(id: string, up: LanUpgrade | undefined, device: string): Response {
    if (!up) return Response.json(httpError("upgrade_required", "this endpoint takes a WebSocket upgrade"), { status: 426 });
    up.done = true;
    this.wss.handleUpgrade(up.req, up.socket, up.head, (ws) => {
      const entry: Sock = { device, ws };
      const set = this.sockets.get(id) ?? new Set();
      set.add(entry);
      this.sockets.set(id, set);
      ws.on("message", (data: Buffer) => {
        const text = data.toString();
        if (text === "ping") return void sendIfOpen(ws, "pong");
        // The one frame a device may send: what it shows (push suppression); anything else is ignored.
        if (text.length > MAX_VISIBILITY_FRAME) return;
        try {
          const f = VisibilityFrame.safeParse(JSON.parse(text));
          if (f.success) entry.view = { view: f.data.view, ...(f.data.session_id ? { session_id: f.data.session_id } : {}), at: Date.now() };
          if (f.success && f.data.view === "session" && f.data.session_id) this.ops(id).core.seen(f.data.session_id); // i29-room: the row's marker
        } catch {
          /* not JSON */
        }
      });
      ws.on("close", () => set.delete(entry));
      ws.on("error", () => ws.terminate());
      const s = this.ops(id).core.state({ kind: "device", id: device });
      if (s) sendIfOpen(ws, JSON.stringify(s));
    });
    return new Response(null, { status: 204 });
  }

  /** A session's report to its inbox (shared/session/report.ts). */
  report(inbox: string, sid: string, epoch: number, r: Parameters<InboxCore["report"]>[2]): void {
    this.ops(inbox).core.report(sid, epoch, r);
  }
  closeAll(): void {
    for (const t of [...this.timers.values(), ...this.endingTimers.values()]) clearTimeout(t);
    for (const set of this.sockets.values()) for (const s of set) closeQuietly(s.ws, CLOSE.goingAway, "server stopping");
  }
}
