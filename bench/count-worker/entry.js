// The relay with meters, for the cost count of `npm run bench -- --inbox` (bench/lib/inbox-count.ts) only: the
// repository's own Worker and Durable Object classes, unchanged, each object given a `ctx` whose storage counts
// what Cloudflare bills — SQLite rows read and written (the cursors' own `rowsRead` / `rowsWritten`), KV-API keys
// read and written, `setAlarm()` calls — and an `env` whose Durable Object stubs count every call made on them
// (each one a Durable Object request); the runtime's own invocations (incoming WebSocket messages, alarms) and
// every outgoing `fetch` (a subrequest: a Web Push POST) are counted too. `GET /api/__bench/count` answers the counts
// and resets them. Local workerd runs the Worker and its objects in one isolate, so one module-level meter sees
// all. The bench copies this file into its snapshot of the relay (the imports below resolve there as here).
// Plain JS on purpose, like bench/baseline-do: the node tsconfig that covers bench/ cannot load workers types.
import * as relay from "../../worker/index.js";

const fresh = () => ({ requests: {}, ws_messages: {}, alarms: {}, rows_read: {}, rows_written: {}, set_alarm: {}, subrequests: 0 });
let meter = fresh();
const add = (k, cls, n = 1) => {
  meter[k][cls] = (meter[k][cls] ?? 0) + n;
};
let cursors = [];
/** Rows of the cursors made since the last look (a cursor's figures are final once it was read). */
function settle() {
  for (const { cls, c } of cursors) {
    add("rows_read", cls, c.rowsRead ?? 0);
    add("rows_written", cls, c.rowsWritten ?? 0);
  }
  cursors = [];
}

const originalFetch = globalThis.fetch;
globalThis.fetch = (...a) => {
  meter.subrequests++;
  return originalFetch(...a);
};

/** Forwards every property of `t`, functions bound to it, except those `over` answers. */
function forward(t, over) {
  return new Proxy(t, {
    get(target, p) {
      if (Object.hasOwn(over, p)) return over[p];
      const v = Reflect.get(target, p, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/**
 * Meters an object's storage in place (its methods overridden on the instance): workerd's DurableObject base
 * class accepts only the real DurableObjectState, so the state itself is kept and only its storage's methods wrap.
 */
function meterStorage(storage, cls) {
  if (storage.__metered) return;
  storage.__metered = true;
  const keys = (k) => (Array.isArray(k) ? k.length : 1);
  const sql = storage.sql;
  const exec = sql.exec;
  sql.exec = (...a) => {
    const c = exec.apply(sql, a);
    cursors.push({ cls, c });
    return c;
  };
  const wrap = (m, count) => {
    const f = storage[m];
    storage[m] = (...a) => {
      count(...a);
      return f.apply(storage, a);
    };
  };
  wrap("get", (k) => add("rows_read", cls, keys(k)));
  wrap("put", (k) => add("rows_written", cls, typeof k === "object" && !Array.isArray(k) ? Object.keys(k).length : 1));
  wrap("delete", (k) => add("rows_written", cls, keys(k)));
  wrap("setAlarm", () => add("set_alarm", cls));
}

const CLASS_OF = { SESSIONS: "Session", INBOXES: "Inbox", RELAY: "Relay", OAUTH: "OAuth" };
function meteredEnv(env) {
  const over = {};
  for (const [binding, cls] of Object.entries(CLASS_OF)) {
    const ns = env[binding];
    if (!ns) continue;
    const stub = (s) =>
      new Proxy(s, {
        get(target, p) {
          const v = Reflect.get(target, p, target);
          if (typeof v !== "function" || p === "then") return v;
          return (...a) => {
            add("requests", cls);
            return target[p](...a); // not v.apply(): on an RPC stub "apply" would be a remote method's name
          };
        },
      });
    over[binding] = forward(ns, { get: (id, o) => stub(ns.get(id, o)), getByName: (n, o) => stub(ns.getByName(n, o)) });
  }
  return forward(env, over);
}

function metered(Base, cls) {
  class Metered extends Base {
    constructor(ctx, env) {
      meterStorage(ctx.storage, cls);
      super(ctx, meteredEnv(env));
    }
  }
  for (const [m, k] of [
    ["webSocketMessage", "ws_messages"],
    ["alarm", "alarms"],
  ]) {
    if (typeof Base.prototype[m] !== "function") continue;
    Metered.prototype[m] = function (...a) {
      add(k, cls);
      return Base.prototype[m].apply(this, a);
    };
  }
  return Metered;
}

export const Session = metered(relay.Session, "Session");
export const Inbox = metered(relay.Inbox, "Inbox");
export const Relay = metered(relay.Relay, "Relay");
export const OAuth = metered(relay.OAuth, "OAuth");

export default {
  fetch(req, env, ctx) {
    if (new URL(req.url).pathname === "/api/__bench/count") {
      settle();
      const out = meter;
      meter = fresh();
      return Response.json(out);
    }
    return relay.default.fetch(req, meteredEnv(env), ctx);
  },
};
