// The two Durable Object baselines of `npm run bench`, one Worker in its own `wrangler dev`:
// - `Room`, the bare floor: sockets accepted as hibernatable with the tag "agent" or "app", every text frame
//   forwarded verbatim to the other role's sockets. Nothing parsed or stored — the platform's own floor.
// - `DurableRoom`, the durable floor: the same object plus exactly the storage a relay that must not lose a
//   call needs: one SQLite insert on tool.call, one update on tool.result, one delete on tool.ack, each in
//   its own event (so its own implicit commit, which gates the frames sent after it, as in the relay).
//   `?extra=` adds writes the relay's contract forces beyond that floor, one by one, so their cost can be
//   measured in the same harness (`npm run bench -- --extras`): `alarm` (a deadline on the alarm, moved on
//   call and on result), `deliv` (a delivery row per provider, cleared at the result), `dup` (the
//   duplicate-call read before the insert), `check` (a second statement on the call: the relay's old
//   insert-then-mark-checked).
// Plain JS on purpose: the repository's node tsconfig covers bench/ and cannot also load workers types.
import { DurableObject } from "cloudflare:workers";

export class Room extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // A fresh id per construction: the bench asks for it before and after idling to see whether the
    // runtime really evicted (hibernated) the object.
    this.instance = crypto.randomUUID();
  }

  async fetch(req) {
    const role = new URL(req.url).searchParams.get("role") === "app" ? "app" : "agent";
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [role]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  webSocketMessage(ws, msg) {
    if (msg === "whoami") {
      ws.send(JSON.stringify({ type: "whoami", instance: this.instance }));
      return;
    }
    forward(this.ctx, this.ctx.getTags(ws)[0], msg);
  }

  webSocketClose(ws, code) {
    closeBack(ws, code);
  }
}

export class DurableRoom extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.instance = crypto.randomUUID();
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS calls (call_id TEXT PRIMARY KEY, frame TEXT NOT NULL, result TEXT)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS deliveries (call_id TEXT NOT NULL, conn TEXT NOT NULL, PRIMARY KEY (call_id, conn))");
  }

  async fetch(req) {
    const q = new URL(req.url).searchParams;
    const role = q.get("role") === "app" ? "app" : "agent";
    const pair = new WebSocketPair();
    // The extras ride in a tag: tags survive hibernation, and getTags is read per frame anyway.
    this.ctx.acceptWebSocket(pair[1], [role, `x:${q.get("extra") ?? ""}`, `c:${crypto.randomUUID()}`]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async webSocketMessage(ws, msg) {
    if (msg === "whoami") {
      ws.send(JSON.stringify({ type: "whoami", instance: this.instance }));
      return;
    }
    const [role, x] = this.ctx.getTags(ws);
    const extra = x.slice(2);
    // A durable relay must at least know which call a frame is about.
    const f = JSON.parse(msg);
    if (f.type === "tool.call") {
      if (extra.includes("dup") && this.sql.exec("SELECT 1 FROM calls WHERE call_id = ?", f.call_id).toArray().length) return;
      this.sql.exec("INSERT INTO calls (call_id, frame) VALUES (?, ?)", f.call_id, msg);
      if (extra.includes("check")) this.sql.exec("UPDATE calls SET frame = frame WHERE call_id = ?", f.call_id);
      if (extra.includes("deliv"))
        for (const p of this.ctx.getWebSockets("app"))
          this.sql.exec("INSERT OR IGNORE INTO deliveries (call_id, conn) VALUES (?, ?)", f.call_id, this.ctx.getTags(p)[2]);
      if (extra.includes("alarm")) await this.ctx.storage.setAlarm(Date.now() + 600_000);
    } else if (f.type === "tool.result") {
      this.sql.exec("UPDATE calls SET result = ? WHERE call_id = ?", msg, f.call_id);
      if (extra.includes("deliv")) this.sql.exec("DELETE FROM deliveries WHERE call_id = ?", f.call_id);
      if (extra.includes("alarm")) await this.ctx.storage.setAlarm(Date.now() + 3_600_000);
    } else if (f.type === "tool.ack") {
      this.sql.exec("DELETE FROM calls WHERE call_id = ?", f.call_id);
      return;
    }
    forward(this.ctx, role, msg);
  }

  webSocketClose(ws, code) {
    closeBack(ws, code);
  }

  alarm() {
    /* the deadlines of the `alarm` extra: nothing to do, the bench never lets one pass */
  }
}

function forward(ctx, role, msg) {
  for (const peer of ctx.getWebSockets(role === "agent" ? "app" : "agent")) {
    try {
      peer.send(msg);
    } catch {
      /* peer closing */
    }
  }
}

function closeBack(ws, code) {
  try {
    ws.close(code === 1005 || code === 1006 ? 1000 : code, "bye");
  } catch {
    /* already closed */
  }
}

export default {
  fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (req.headers.get("upgrade") !== "websocket") return new Response("websocket only", { status: 426 });
    const room = url.searchParams.get("room") ?? "r";
    const ns = url.pathname === "/durable" ? env.DURABLE : env.ROOMS;
    return ns.get(ns.idFromName(room)).fetch(req);
  },
};
