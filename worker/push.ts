// The Inbox object's side of Web Push (shared/inbox/push.ts, docs/push.md): its document in the object's
// SQLite (worker/push-store.ts: rows per subscription, job, queue item), the one alarm, the relay's VAPID keys, `fetch` to push services, device views from socket
// attachments and answers routed into the session objects.
import { parseConfig } from "../shared/edge/config.js";
import type { InboxData } from "../shared/inbox/core.js";
import type { PushPorts } from "../shared/inbox/push.js";
import type { DeviceView } from "../shared/contract/push.js";
import type { Env } from "./env.js";
import { relayVapid } from "./relay.js";
import { PushStore } from "./push-store.js";

/** What an inbox socket's attachment holds: its device and what that device last said it shows. */
export interface InboxSocketTag {
  device: string;
  view?: DeviceView;
}

/** Sockets accepted before views existed carry the bare device id. */
export function tagOf(ws: WebSocket): InboxSocketTag | null {
  const a = ws.deserializeAttachment() as InboxSocketTag | string | null;
  return typeof a === "string" ? { device: a } : a;
}

/** The ports, and `alarmFired()` for the alarm handler: the runtime cleared the alarm that ran. */
export function workerPushPorts(ctx: DurableObjectState, env: Env, inbox: () => InboxData | undefined): PushPorts & { alarmFired(): void } {
  const store = new PushStore(ctx.storage.sql, (fn) => ctx.storage.transactionSync(fn));
  const cfg = parseConfig(env);
  let alarmAt: number | null | undefined;
  return {
    alarmFired: () => (alarmAt = undefined),
    load: () => store.load(),
    save: (d) => store.save(d),
    inbox,
    views: (device) => ctx.getWebSockets(device).flatMap((ws) => (ws.readyState === WebSocket.OPEN && tagOf(ws)?.view ? [tagOf(ws)!.view!] : [])),
    wake: (at) => {
      // No setTimeout in a Durable Object: one alarm, never later than the earliest due time (anything past fires
      // at once). Only ever moved earlier while it is still ahead, as the session's (worker/session.ts): an alarm
      // left early finds nothing due and the handler's pump sets the next one. Each move is written with the change
      // that made it, and in workerd a commit that moves the alarm takes about 1 ms longer (issue 33: a push moved
      // it to its lease, then to its reminder — twice per push, once in the push's own path).
      const next = at === undefined ? null : Math.max(Date.now(), at);
      if (typeof alarmAt === "number" && alarmAt > Date.now() && (next === null || alarmAt <= next)) return;
      if (next === alarmAt) return;
      alarmAt = next;
      const done = next === null ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(next);
      done.catch((e: unknown) => {
        alarmAt = undefined;
        console.error("inbox: alarm not set", (e as Error).message);
      });
    },
    vapid: async () => ({ keys: await relayVapid(env), ...(cfg.ok && cfg.config.vapidSubject ? { subject: cfg.config.vapidSubject } : {}) }),
    send: async (req) => {
      const r = await fetch(req.url, req.init);
      await r.body?.cancel().catch(() => undefined);
      return { status: r.status, retryAfter: r.headers.get("retry-after") };
    },
    answer: (sid, epoch, device, callId, action) => env.SESSIONS.get(env.SESSIONS.idFromName(sid)).pushAnswer(epoch, device, callId, action),
  };
}
