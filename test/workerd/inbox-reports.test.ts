// When a session reports to its inbox (shared/session/report-queue.ts, issue 33): a calculator call the app
// answers at once costs no report, one left waiting is listed once the delay has passed — also when the session's
// object was evicted meanwhile — and calls a human answers are listed right, however many change at once.
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CALCULATOR, CONFIRM } from "../../shared/contract/builtin-tools.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Client, connect, fetchWorker, RELAY_KEY, stubOf } from "./helpers.js";
import { InboxView } from "../helpers/inbox-view.js";

const post = async <T>(path: string, token: string | undefined, body: unknown = {}): Promise<T> => {
  const r = await fetchWorker(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(201);
  return r.json();
};

/** An inbox with one session, one paired device, the device's inbox socket, the agent and the device's app socket
 * on the session (serving calculator and confirm). */
async function setup(dir: string) {
  const m = await post<MachineCreated>("/api/inboxes", RELAY_KEY, { machine_name: "laptop" });
  const s = await post<SessionCreated>("/api/inbox/sessions", m.machine_credential, { project_dir: dir, host: "laptop" });
  const c = await post<CodeIssued>("/api/inbox/pairings", m.machine_credential);
  const d = await post<DevicePaired>("/api/pair", undefined, { code: c.code, name: "phone" });
  const res = await fetchWorker("/api/inbox/ws", {
    headers: { upgrade: "websocket", "sec-websocket-protocol": `lineup.v1, lineup.token.${d.device_credential}` },
  });
  expect(res.status).toBe(101);
  res.webSocket!.accept();
  const live = new Client(res.webSocket!);
  const agent = await connect(s.session_id, s.agent_token);
  const app = await connect(s.session_id, d.device_credential, { via: "subprotocol" });
  app.send({ type: "tool.list", tools: [CALCULATOR, CONFIRM] });
  await agent.next((f) => f.type === "tool.list" && JSON.stringify(f).includes("calculator"));
  const view = new InboxView(live);
  await view.next((st) => st.sessions[0]?.agent_online === true);
  return { m, d, s, live, view, agent, app };
}

const listedIn = (st: InboxState) => st.sessions.flatMap((x) => x.waiting.map((w) => w.call_id));
const lists = (ids: string[]) => (st: InboxState) => JSON.stringify(listedIn(st).sort()) === JSON.stringify([...ids].sort());

describe("a session's reports to its inbox", () => {
  it("a report sends each device socket only the reporting session's row, not the whole inbox; folded, it is the state GET /api/inbox gives", async () => {
    const { m, d, live, view, agent, app } = await setup("/p/rows");
    await post<SessionCreated>("/api/inbox/sessions", m.machine_credential, { project_dir: "/p/other-project", host: "laptop" });
    await view.next((st) => st.sessions.length === 2);
    agent.send({ type: "tool.call", call_id: "r1", name: "confirm", arguments: { question: "Ship?" } });
    await view.next(lists(["r1"]), 10_000);
    // Regression (issue 33): every report sent each device the whole InboxState, every session's row in it.
    expect(view.last?.type).toBe("inbox.session");
    expect(JSON.stringify(view.last)).not.toContain("other-project");
    const got = (await (await fetchWorker("/api/inbox", { headers: { authorization: `Bearer ${d.device_credential}` } })).json()) as InboxState;
    expect(view.state!.sessions).toEqual(got.sessions);
    await app.next((f) => f.type === "tool.call" && f.call_id === "r1");
    app.send({ type: "tool.result", call_id: "r1", result: { message: "yes", confirmed: true } });
    await view.next(lists([]), 10_000);
    for (const c of [live, agent, app]) c.close();
  });

  it("a calculator call the app answers at once is never reported: the inbox's next state lists the confirm that follows", async () => {
    const { live, view, agent, app } = await setup("/p/calc");
    const from = view.history.length;
    agent.send({ type: "tool.call", call_id: "calc-1", name: "calculator", action: "multiply", arguments: { a: 6, b: 7 } });
    await app.next((f) => f.type === "tool.call" && f.call_id === "calc-1");
    app.send({ type: "tool.result", call_id: "calc-1", result: { message: "42" } });
    await agent.next((f) => f.type === "tool.result" && f.call_id === "calc-1");
    agent.send({ type: "tool.ack", call_id: "calc-1" });
    agent.send({ type: "tool.call", call_id: "ask-1", name: "confirm", arguments: { question: "Deploy?" } });
    await view.next(lists(["ask-1"]), 10_000);
    await app.next((f) => f.type === "tool.call" && f.call_id === "ask-1");
    app.send({ type: "tool.result", call_id: "ask-1", result: { message: "yes", confirmed: true } });
    await view.next(lists([]), 10_000);
    // Every state the inbox socket got since: none ever listed the calculator call.
    expect(view.history.slice(from).flatMap(listedIn)).not.toContain("calc-1");
    for (const c of [live, agent, app]) c.close();
  });

  it("a calculator call nobody answers is listed once the delay has passed, also after the session's object was evicted", async () => {
    const { s, live, view, agent, app } = await setup("/p/slow");
    agent.send({ type: "tool.call", call_id: "calc-2", name: "calculator", action: "add", arguments: { a: 1, b: 1 } });
    await app.next((f) => f.type === "tool.call" && f.call_id === "calc-2");
    // A frame answered after it: the call's frame, its report decision and its alarm are done.
    agent.send({ type: "tool.cancel", call_id: "no-such-call" });
    await agent.next("error");
    await evictDurableObject(stubOf(s.session_id), { webSockets: "hibernate" });
    const f = await view.next(lists(["calc-2"]), 15_000);
    expect(f.sessions[0]).toMatchObject({ pending: 1, agent_online: true });
    app.send({ type: "tool.result", call_id: "calc-2", result: { message: "2" } });
    await view.next(lists([]), 15_000);
    for (const c of [live, agent, app]) c.close();
  });

  it("calculator calls made while one's report is held are all listed with a confirm that follows, and when they end", async () => {
    const { live, view, agent, app } = await setup("/p/held");
    for (const id of ["k1", "k2", "k3"]) {
      agent.send({ type: "tool.call", call_id: id, name: "calculator", action: "add", arguments: { a: 1, b: 1 } });
      await app.next((f) => f.type === "tool.call" && f.call_id === id);
    }
    agent.send({ type: "tool.call", call_id: "ask-h", name: "confirm", arguments: { question: "Ship?" } });
    await view.next(lists(["k1", "k2", "k3", "ask-h"]), 10_000);
    app.send({ type: "tool.result", call_id: "ask-h", result: { message: "yes", confirmed: true } });
    await view.next(lists(["k1", "k2", "k3"]), 10_000);
    for (const id of ["k1", "k2", "k3"]) app.send({ type: "tool.result", call_id: id, result: { message: "2" } });
    await view.next(lists([]), 15_000);
    for (const c of [live, agent, app]) c.close();
  });

  it("twelve confirms made and answered in bursts leave the inbox listing exactly the calls still waiting", async () => {
    const { live, view, agent, app } = await setup("/p/burst");
    const ids = Array.from({ length: 12 }, (_, i) => `q${i}`);
    for (const id of ids) agent.send({ type: "tool.call", call_id: id, name: "confirm", arguments: { question: `Step ${id}?` } });
    await view.next(lists(ids), 15_000);
    for (const id of ids) await app.next((f) => f.type === "tool.call" && f.call_id === id);
    for (const id of ids.slice(0, 7)) app.send({ type: "tool.result", call_id: id, result: { message: "yes", confirmed: true } });
    await view.next(lists(ids.slice(7)), 15_000);
    for (const id of ids.slice(7)) app.send({ type: "tool.result", call_id: id, result: { message: "no", confirmed: false } });
    await view.next(lists([]), 15_000);
    for (const c of [live, agent, app]) c.close();
  });
});
