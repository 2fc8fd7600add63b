// The home row's "needs you" / "finished" (issue 29 item 3, i29-room; docs/inbox.md "Needs you and finished") in
// workerd: an agent's attention report with a reason marks its session in the inbox state, every device's socket
// is told, and the mark goes when a device opens the session or a new call waits in it. It lives in the inbox
// object's SQLite (an eviction keeps it) and works the same for a sealed session (the reason is no secret).
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { generateContentKey, generateHolderKeyPair, holderSelf, sealRoster, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, InboxSession, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { Inbox } from "../../worker/inbox.js";
import { authed } from "./contract-fixtures.js";
import { Client, connect, fetchWorker, RELAY_KEY, type Frame } from "./helpers.js";
import { InboxView } from "../helpers/inbox-view.js";

const json = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

interface World {
  m: MachineCreated;
  s: SessionCreated;
  agent: Client;
  phone: DevicePaired;
}
async function world(sealed = false): Promise<World> {
  const m: MachineCreated = await (await json("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
  if (sealed) {
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wraps = { [machine.id]: await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck }) };
    const e2e = await json("PUT", "/api/inbox/e2e", m.machine_credential, {
      base_epoch: 0,
      epoch: 1,
      wraps,
      roster: await sealRoster(ck, m.inbox_id, machine.id, []),
    });
    expect(e2e.status).toBe(200);
  }
  const r = await json("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/api", host: "laptop", ...(sealed ? { sealed: true } : {}) });
  expect(r.status).toBe(201);
  const s: SessionCreated = await r.json();
  const agent = await connect(s.session_id, s.agent_token);
  const c: CodeIssued = await (await json("POST", "/api/inbox/pairings", m.machine_credential)).json();
  const phone: DevicePaired = await (await json("POST", "/api/pair", undefined, { code: c.code, name: "Pixel" })).json();
  return { m, s, agent, phone };
}

async function inboxSocket(d: DevicePaired): Promise<Client> {
  const res = await fetchWorker("/api/inbox/ws", {
    headers: { upgrade: "websocket", "sec-websocket-protocol": `lineup.v1, lineup.token.${d.device_credential}` },
  });
  expect(res.status).toBe(101);
  res.webSocket!.accept();
  const c = new Client(res.webSocket!);
  const view = new InboxView(c);
  views.set(c, view);
  await view.next();
  return c;
}
const views = new WeakMap<Client, InboxView>();

const rowOf = (state: InboxState | Frame, sid: string): InboxSession | undefined => (state as InboxState).sessions.find((x) => x.session_id === sid);
const row = async (w: World): Promise<InboxSession | undefined> =>
  rowOf(await (await fetchWorker("/api/inbox", authed(w.phone.device_credential))).json(), w.s.session_id);
const attention = (w: World, reason?: string) =>
  json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.s.session_id, ...(reason ? { reason } : {}) });
/** The next state frame on an inbox socket in which `pred` holds for the session's row. */
const stateWhere = (sock: Client, sid: string, pred: (r: InboxSession | undefined) => boolean) => views.get(sock)!.next((st) => pred(rowOf(st, sid)));

describe("the home row's needs you / finished", () => {
  it("an agent's needs_input marks its row and tells the device's socket; a device opening the session clears it", async () => {
    const w = await world();
    const sock = await inboxSocket(w.phone);
    expect((await row(w))?.attention).toBeUndefined();
    const before = Date.now();
    expect((await attention(w, "needs_input")).status).toBe(202);
    const marked = await stateWhere(sock, w.s.session_id, (r) => r?.attention !== undefined);
    const a = rowOf(marked, w.s.session_id)!.attention!;
    expect(a.reason).toBe("needs_input");
    expect(a.at).toBeGreaterThanOrEqual(before);
    expect((await row(w))?.attention).toEqual(a);
    // The device shows the session (the frame it sends while the session is on screen): seen.
    sock.send({ type: "visible", view: "session", session_id: w.s.session_id });
    await stateWhere(sock, w.s.session_id, (r) => r !== undefined && r.attention === undefined);
    expect((await row(w))?.attention).toBeUndefined();
    sock.ws.close();
    w.agent.close();
  });

  it("the latest word wins even when its push is throttled: completed replaces needs_input; waiting or no reason leaves it", async () => {
    const w = await world();
    expect((await attention(w, "needs_input")).status).toBe(202);
    expect((await attention(w, "completed")).status).toBe(429); // one push a minute; the row still follows
    expect((await row(w))?.attention?.reason).toBe("completed");
    expect((await attention(w, "waiting")).status).toBe(429);
    expect((await attention(w)).status).toBe(429);
    expect((await row(w))?.attention?.reason).toBe("completed");
    w.agent.close();
  });

  it("a new call waiting in the session clears the mark (the agent moved on); a call that was waiting before does not", async () => {
    const w = await world();
    const sock = await inboxSocket(w.phone);
    w.agent.send({ type: "tool.call", call_id: "c1", name: "confirm", arguments: { question: "Deploy?" }, timeout_s: 600 });
    await stateWhere(sock, w.s.session_id, (r) => r?.waiting.some((x) => x.call_id === "c1") === true);
    expect((await attention(w, "needs_input")).status).toBe(202);
    await stateWhere(sock, w.s.session_id, (r) => r?.attention?.reason === "needs_input");
    w.agent.send({ type: "tool.call", call_id: "c2", name: "confirm", arguments: { question: "And prod?" }, timeout_s: 600 });
    const moved = await stateWhere(sock, w.s.session_id, (r) => r?.waiting.some((x) => x.call_id === "c2") === true);
    expect(rowOf(moved, w.s.session_id)!.attention).toBeUndefined();
    sock.ws.close();
    w.agent.close();
  });

  it("is not marked while a device shows that session: the person is looking at it", async () => {
    const w = await world();
    const sock = await inboxSocket(w.phone);
    sock.send({ type: "visible", view: "session", session_id: w.s.session_id });
    // The frame has no reply: wait until the object holds it as the device's view.
    const stub = env.INBOXES.get(env.INBOXES.idFromName(w.m.inbox_id));
    for (let i = 0; !(await runInDurableObject(stub, (o: Inbox) => o.push.shownAnywhere(w.s.session_id))); i++) {
      if (i > 200) throw new Error("the visibility frame never reached the inbox object");
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await attention(w, "completed")).status).toBe(202);
    expect((await row(w))?.attention).toBeUndefined();
    sock.ws.close();
    w.agent.close();
  });

  it("survives an eviction of the inbox object (SQLite is the truth), and a device opening the session after it still clears it", async () => {
    const w = await world();
    expect((await attention(w, "completed")).status).toBe(202);
    const stub = env.INBOXES.get(env.INBOXES.idFromName(w.m.inbox_id));
    await evictDurableObject(stub, { webSockets: "close" });
    expect((await row(w))?.attention?.reason).toBe("completed");
    const sock = await inboxSocket(w.phone);
    sock.send({ type: "visible", view: "session", session_id: w.s.session_id });
    await stateWhere(sock, w.s.session_id, (r) => r !== undefined && r.attention === undefined);
    await evictDurableObject(stub, { webSockets: "close" });
    expect((await row(w))?.attention).toBeUndefined();
    w.agent.close();
  });

  it("works the same for a sealed session: the reason is no secret, and no text is kept", async () => {
    const w = await world(true);
    expect((await row(w))?.sealed).toBe(true);
    const r = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, {
      session_id: w.s.session_id,
      text: "secret words",
      reason: "needs_input",
    });
    expect(r.status).toBe(202);
    const got = await row(w);
    expect(got?.attention?.reason).toBe("needs_input");
    expect(JSON.stringify(got)).not.toContain("secret words");
    w.agent.close();
  });

  // Regression: `sessions["__proto__"]` is Object.prototype, whose missing expires_at passed the expiry check.
  it("a session id that names an Object property (__proto__) is an unknown session: 404, nothing marked, nothing pushed", async () => {
    const w = await world();
    const r = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: "__proto__", reason: "needs_input" });
    expect(r.status).toBe(404);
    const state: InboxState = await (await fetchWorker("/api/inbox", authed(w.phone.device_credential))).json();
    expect(state.sessions.map((x) => x.attention)).toEqual([undefined]);
    w.agent.close();
  });
});
