// The inbox in workerd with eviction variants: pairing codes, credentials, the Waiting list reported by
// sessions and revocation all survive the inbox's and the sessions' objects being evicted (memory wiped,
// hibernatable sockets kept).
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ASK_QUESTION } from "../../shared/contract/builtin-tools.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { authed } from "./contract-fixtures.js";
import { Client, connect, fetchWorker, RELAY_KEY, stubOf } from "./helpers.js";
import { InboxView } from "../helpers/inbox-view.js";

const post = (path: string, token: string | undefined, body: unknown = {}) =>
  fetchWorker(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
const inboxStub = (id: string) => env.INBOXES.get(env.INBOXES.idFromName(id));

async function inbox(): Promise<MachineCreated> {
  const r = await post("/api/inboxes", RELAY_KEY, { machine_name: "laptop" });
  expect(r.status).toBe(201);
  return r.json();
}
async function session(m: MachineCreated, dir: string): Promise<SessionCreated> {
  const r = await post("/api/inbox/sessions", m.machine_credential, { project_dir: dir, host: "laptop" });
  expect(r.status).toBe(201);
  return r.json();
}
async function code(m: MachineCreated): Promise<CodeIssued> {
  const r = await post("/api/inbox/pairings", m.machine_credential);
  expect(r.status).toBe(201);
  return r.json();
}
async function redeem(c: CodeIssued, name: string): Promise<Response> {
  return post("/api/pair", undefined, { code: c.code, name });
}
async function state(token: string): Promise<InboxState> {
  const r = await fetchWorker("/api/inbox", authed(token));
  expect(r.status).toBe(200);
  return r.json();
}
async function inboxSocket(d: DevicePaired): Promise<Client> {
  const res = await fetchWorker("/api/inbox/ws", {
    headers: { upgrade: "websocket", "sec-websocket-protocol": `lineup.v1, lineup.token.${d.device_credential}` },
  });
  expect(res.status).toBe(101);
  res.webSocket!.accept();
  return new Client(res.webSocket!);
}

describe("inbox in workerd, across evictions", () => {
  it("a pairing code issued before the inbox object was evicted still pairs once, and only once", async () => {
    const m = await inbox();
    const c = await code(m);
    await evictDurableObject(inboxStub(m.inbox_id));
    const r = await redeem(c, "phone");
    expect(r.status).toBe(201);
    await evictDurableObject(inboxStub(m.inbox_id));
    expect((await redeem(c, "thief")).status).toBe(404);
    expect((await state(m.machine_credential)).devices.map((d) => d.name)).toEqual(["phone"]);
  });

  it("a device's credential works after both objects were evicted, and connects as its device id", async () => {
    const m = await inbox();
    const s = await session(m, "/p/api");
    const d: DevicePaired = await (await redeem(await code(m), "phone")).json();
    await evictDurableObject(inboxStub(m.inbox_id));
    await evictDurableObject(stubOf(s.session_id));
    const c = await connect(s.session_id, d.device_credential, { via: "subprotocol" });
    expect(c.hello).toMatchObject({ type: "hello", client_id: d.device_id });
    c.close();
  });

  it("a session evicted with its sockets hibernating still reports a new waiting call to the live inbox socket", async () => {
    const m = await inbox();
    const s = await session(m, "/p/web");
    const d: DevicePaired = await (await redeem(await code(m), "phone")).json();
    const live = await inboxSocket(d);
    const view = new InboxView(live);
    await view.next();
    const agent = await connect(s.session_id, s.agent_token);
    const app = await connect(s.session_id, d.device_credential, { via: "subprotocol" });
    app.send({ type: "tool.list", tools: [ASK_QUESTION] });
    await agent.next((f) => f.type === "tool.list" && JSON.stringify(f).includes("ask_question"));
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    await evictDurableObject(inboxStub(m.inbox_id), { webSockets: "hibernate" });
    agent.send({ type: "tool.call", call_id: "w1", name: "ask_question", arguments: { project_directory: "/p/web", question: "Ship it?" } });
    const f = await view.next((x) => JSON.stringify(x).includes("Ship it?"));
    expect(f.sessions[0]).toMatchObject({ label: "web · laptop", pending: 1, agent_online: true });
    await app.next("tool.call");
    app.send({ type: "tool.result", call_id: "w1", result: { message: "yes" } });
    await agent.next("tool.result");
    await view.next((x) => x.sessions[0]?.pending === 0);
    for (const c of [agent, app, live]) c.close();
  });

  it("revoking a device after evictions closes its hibernated sockets with 4401 and refuses it; the other device stays", async () => {
    const m = await inbox();
    const s = await session(m, "/p/x");
    const lost: DevicePaired = await (await redeem(await code(m), "lost")).json();
    const kept: DevicePaired = await (await redeem(await code(m), "kept")).json();
    const a = await connect(s.session_id, lost.device_credential, { via: "subprotocol" });
    const b = await connect(s.session_id, kept.device_credential, { via: "subprotocol" });
    const live = await inboxSocket(lost);
    await live.next("inbox");
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    await evictDurableObject(inboxStub(m.inbox_id), { webSockets: "hibernate" });
    const del = await fetchWorker(`/api/inbox/devices/${lost.device_id}`, authed(m.machine_credential, { method: "DELETE" }));
    expect(del.status).toBe(204);
    expect(await a.next((f) => f.type === "error" && f.code === "revoked")).toBeTruthy();
    expect(await live.next("revoked")).toMatchObject({ type: "revoked" });
    expect((await a.closedWith()).code).toBe(4401);
    expect((await live.closedWith()).code).toBe(4401);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(lost.device_credential))).status).toBe(401);
    b.send("ping");
    await b.next("pong");
    expect(b.closed).toBeUndefined();
    b.close();
  });

  it("a session deleted by its agent leaves the inbox's list", async () => {
    const m = await inbox();
    const s = await session(m, "/p/gone");
    expect((await state(m.machine_credential)).sessions).toHaveLength(1);
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }))).status).toBe(204);
    for (let i = 0; i < 50 && (await state(m.machine_credential)).sessions.length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await state(m.machine_credential)).sessions).toEqual([]);
  });
});
