// The one session host (shared/session/host.ts) over the in-memory store with recording ports, and the socket
// identity the edge hands it (shared/session/identity.ts).
import { describe, expect, it } from "vitest";
import { SessionHost, type HostPorts } from "../../shared/session/host.js";
import { identityOf, withIdentity } from "../../shared/session/identity.js";
import { keyOf, type Peer } from "../../shared/session/router.js";
import { MemoryStore } from "../../shared/session/store.js";

function host() {
  const open: Peer[] = [];
  const log: string[] = [];
  let scheduled = 0;
  const store = new MemoryStore();
  const ports: HostPorts = {
    sockets: {
      peers: () => open,
      send: (to, data) => log.push(`send ${"conn" in to ? to.conn : to.key} ${JSON.parse(data).type}:${JSON.parse(data).code ?? ""}`),
      close: (to, code) => log.push(`close ${"conn" in to ? to.conn : to.key} ${code}`),
      unroute: (conn, code) => {
        open.splice(
          open.findIndex((p) => p.conn === conn),
          1,
        );
        log.push(`unroute ${conn} ${code}`);
      },
    },
    txn: (fn) => store.txn(fn),
    schedule: () => void scheduled++,
    sleep: async () => undefined,
    report: () => undefined,
  };
  const h = new SessionHost(store, ports, { rate: { perS: 100, burst: 100 }, newId: () => `id${log.length}${Math.random()}` });
  h.engine.init({ session_id: "sess0001", expires_at: Date.now() + 60_000, epoch: 7 });
  return { h, open, log, store, scheduled: () => scheduled };
}

describe("the session host", () => {
  it("refuses a socket of another incarnation with 404 session_not_found, before the engine's client-id rules", () => {
    const { h } = host();
    expect(h.admit({ role: "agent", epoch: 6, clientId: "bad id!", subprotocol: false })).toMatchObject({ ok: false, status: 404, code: "session_not_found" });
    expect(h.admit(undefined)).toMatchObject({ ok: false, status: 404 });
    expect(h.admit({ role: "agent", epoch: 7, clientId: "bad id!", subprotocol: false })).toMatchObject({ ok: false, status: 400, code: "bad_client_id" });
    expect(h.admit({ role: "app", epoch: 7, clientId: "dv_1", subprotocol: true, name: "Phone" })).toMatchObject({
      ok: true,
      peer: { role: "app", clientId: "dv_1", name: "Phone", cred: "dv_1" },
    });
  });

  it("regression: a frame routed from outside a socket (a push answer, the IM bridge) re-arms the timer without its host remembering to", async () => {
    const { h, scheduled } = host();
    const before = scheduled();
    await h.engine.route(
      { role: "app", clientId: "dv_1", conn: "push", virtual: true },
      { type: "tool.call", call_id: "c1", name: "note", args: { plain: {} } },
    );
    expect(h.store.getCall("c1")?.status).toBe("open");
    expect(scheduled()).toBeGreaterThan(before);
  });

  it("revoking a client tells each of its connections why, unroutes and closes them with the code, and leaves others alone", async () => {
    const { h, open, log } = host();
    const a = h.admit({ role: "app", epoch: 7, clientId: "dv_1", subprotocol: false });
    const b = h.admit({ role: "app", epoch: 7, clientId: "dv_2", subprotocol: false });
    if (!a.ok || !b.ok) throw new Error("admit");
    open.push(a.peer, b.peer);
    log.length = 0;
    h.revoke(keyOf(a.peer), 4401, "device revoked");
    expect(log.filter((l) => l.includes(a.peer.conn))).toEqual([`send ${a.peer.conn} error:revoked`, `unroute ${a.peer.conn} 4401`]);
    expect(open).toEqual([b.peer]);
  });
});

describe("socket identity between the edge and the session", () => {
  it("travels as one value: written by the edge, parsed once by the session, a client's own x-lineup-* headers dropped", () => {
    const req = new Request("http://relay.test/api/sessions/s/ws", { headers: { "x-lineup-internal": "1", "x-lineup-role": "agent", upgrade: "websocket" } });
    const sent = withIdentity(req, { role: "app", epoch: 42, clientId: "dv_1", subprotocol: true, name: "Zoë's phone" });
    expect(identityOf(sent.headers)).toEqual({ role: "app", epoch: 42, clientId: "dv_1", subprotocol: true, name: "Zoë's phone" });
    expect(sent.headers.get("upgrade")).toBe("websocket");
  });

  it("is undefined when missing or malformed (the session answers 404), never a guessed role", () => {
    expect(identityOf(new Headers())).toBeUndefined();
    expect(identityOf(new Headers({ "x-lineup-role": "admin", "x-lineup-epoch": "1" }))).toBeUndefined();
    expect(identityOf(new Headers({ "x-lineup-role": "agent", "x-lineup-epoch": "1", "x-lineup-name": "%E0%A4%A" }))).toBeUndefined();
    expect(identityOf(new Headers({ "x-lineup-role": "agent", "x-lineup-epoch": "1" }))).toEqual({
      role: "agent",
      epoch: 1,
      clientId: null,
      subprotocol: false,
    });
  });
});
