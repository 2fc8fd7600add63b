// The inbox object's storage in workerd (worker/inbox-store.ts, docs/inbox.md "Storage"): one SQLite row per
// session, device and machine plus `meta`; an eviction (memory wiped) finds everything in the rows; an inbox
// stored the old way — one `state` row holding everything — keeps working and is split into rows on first load.
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ASK_QUESTION } from "../../shared/contract/builtin-tools.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { Inbox } from "../../worker/inbox.js";
import { authed } from "./contract-fixtures.js";
import { connect, fetchWorker, RELAY_KEY } from "./helpers.js";

const json = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetchWorker(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const inboxStub = (id: string) => env.INBOXES.get(env.INBOXES.idFromName(id));
const state = async (token: string): Promise<InboxState> => {
  const r = await fetchWorker("/api/inbox", authed(token));
  expect(r.status).toBe(200);
  return r.json();
};
const keys = (id: string) =>
  runInDurableObject(inboxStub(id), (_i: Inbox, st) =>
    st.storage.sql
      .exec<{ k: string }>("SELECT k FROM inbox WHERE k NOT LIKE 'p:%' ORDER BY k")
      .toArray()
      .map((r) => r.k),
  );

/** An inbox with a machine, a paired phone, two sessions, and a question waiting in the second. */
async function world() {
  const m: MachineCreated = await (await json("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
  const c: CodeIssued = await (await json("POST", "/api/inbox/pairings", m.machine_credential)).json();
  const phone: DevicePaired = await (await json("POST", "/api/pair", undefined, { code: c.code, name: "Pixel" })).json();
  const sessions: SessionCreated[] = [];
  for (const dir of ["/p/api", "/p/web"])
    sessions.push(await (await json("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: dir, host: "laptop" })).json());
  const s = sessions[1]!;
  const agent = await connect(s.session_id, s.agent_token);
  const app = await connect(s.session_id, phone.device_credential, { via: "subprotocol" });
  app.send({ type: "tool.list", tools: [ASK_QUESTION] });
  await agent.next((f) => f.type === "tool.list" && JSON.stringify(f).includes("ask_question"));
  agent.send({ type: "tool.call", call_id: "q1", name: "ask_question", arguments: { project_directory: "/p/web", question: "Ship it?" } });
  await app.next("tool.call");
  // The session reports to its inbox on its own: wait until the question is listed.
  for (let i = 0; i < 200 && !JSON.stringify(await state(phone.device_credential)).includes("Ship it?"); i++) await new Promise((r) => setTimeout(r, 25));
  return { m, phone, sessions, agent, app };
}

describe("the inbox's rows in workerd", () => {
  it("an eviction after single-row changes (a report, a rename, a mark, a second device) finds the same state in SQLite", async () => {
    const w = await world();
    expect((await json("PATCH", `/api/inbox/devices/${w.phone.device_id}`, w.m.machine_credential, { name: "Pixel 9" })).status).toBe(200);
    const mark = await json("POST", "/api/inbox/push/attention", w.m.machine_credential, { session_id: w.sessions[0]!.session_id, reason: "completed" });
    expect(mark.status).toBe(202);
    const c: CodeIssued = await (await json("POST", "/api/inbox/pairings", w.m.machine_credential)).json();
    const tablet: DevicePaired = await (await json("POST", "/api/pair", undefined, { code: c.code, name: "iPad" })).json();
    const before = await state(w.phone.device_credential);
    expect(before.sessions.map((s) => s.session_id).sort()).toEqual(w.sessions.map((s) => s.session_id).sort());

    await evictDurableObject(inboxStub(w.m.inbox_id), { webSockets: "hibernate" });
    const after = await state(w.phone.device_credential);
    expect(after).toEqual(before);
    expect(after.devices.map((d) => d.name).sort()).toEqual(["Pixel 9", "iPad"]);
    expect(after.sessions.find((s) => s.session_id === w.sessions[0]!.session_id)?.attention?.reason).toBe("completed");
    expect(after.sessions.find((s) => s.session_id === w.sessions[1]!.session_id)?.waiting.map((q) => q.text)).toEqual(["Ship it?"]);
    expect(await keys(w.m.inbox_id)).toEqual(
      [`d:${w.phone.device_id}`, `d:${tablet.device_id}`, `m:${w.m.machine_id}`, "meta", ...w.sessions.map((s) => `s:${s.session_id}`)].sort(),
    );
    // And the answer still reaches the agent once: exactly-once is the session's, the inbox only lists it.
    w.app.send({ type: "tool.result", call_id: "q1", result: { message: "yes" } });
    expect((await w.agent.next("tool.result")).call_id).toBe("q1");
    for (const x of [w.agent, w.app]) x.close();
  });

  it("an inbox stored the old way (one `state` row) keeps working after the upgrade: all of it is there, now as rows", async () => {
    const w = await world();
    const before = await state(w.phone.device_credential);
    // The old layout, exactly as the old object wrote it: JSON.stringify of the whole InboxData in row `state`.
    await runInDurableObject(inboxStub(w.m.inbox_id), (i: Inbox, st) => {
      const old = JSON.stringify(i.core.read());
      st.storage.sql.exec("DELETE FROM inbox WHERE k NOT LIKE 'p:%'");
      st.storage.sql.exec("INSERT INTO inbox (k, v) VALUES ('state', ?)", old);
    });
    await evictDurableObject(inboxStub(w.m.inbox_id), { webSockets: "hibernate" });

    expect(await state(w.phone.device_credential)).toEqual(before);
    expect(await keys(w.m.inbox_id)).not.toContain("state");
    // The machine's credential still creates sessions, the phone's still answers.
    const s3 = await json("POST", "/api/inbox/sessions", w.m.machine_credential, { project_dir: "/p/cli", host: "laptop" });
    expect(s3.status).toBe(201);
    w.app.send({ type: "tool.result", call_id: "q1", result: { message: "yes" } });
    expect((await w.agent.next("tool.result")).call_id).toBe("q1");
    await evictDurableObject(inboxStub(w.m.inbox_id));
    expect((await state(w.phone.device_credential)).sessions).toHaveLength(3);
    for (const x of [w.agent, w.app]) x.close();
  });
});
