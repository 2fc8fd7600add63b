// §7 addition: DELETE /api/sessions/:sid/calls/:call_id — an HTTP caller that stops waiting withdraws its open
// call, so the phone shows "cancelled" at once instead of a card that waits for the relay-side timeout.
import { describe, expect, it } from "vitest";
import { ASK, authed, closeAll, errorBody, evict, getStatus, isCall, isCancel, isResult, pair, reconnect, sync } from "./contract-fixtures.js";
import type { MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { generateContentKey, generateHolderKeyPair, holderSelf, sealRoster, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import { fetchWorker, RELAY_KEY } from "./helpers.js";

function post(sid: string, token: string, body: unknown): Promise<Response> {
  return fetchWorker(
    `/api/sessions/${sid}/calls?wait=0`,
    authed(token, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  );
}
const del = (sid: string, token: string, callId: string) =>
  fetchWorker(`/api/sessions/${sid}/calls/${encodeURIComponent(callId)}`, authed(token, { method: "DELETE" }));
const poll = (sid: string, token: string, callId: string, wait = 0) => fetchWorker(`/api/sessions/${sid}/calls/${callId}?wait=${wait}`, authed(token));

describe("DELETE /api/sessions/:sid/calls/:call_id", () => {
  it.each(["none", "hibernate", "close"] as const)(
    "withdraws the open HTTP call: the app gets tool.cancel reason cancelled, the call is gone (evict: %s)",
    async (mode) => {
      const { s, agent, app } = await pair();
      expect((await post(s.session_id, s.agent_token, { call_id: "hc1", name: "choice", arguments: ASK })).status).toBe(202);
      await app.next(isCall("hc1"));
      await evict(s.session_id, mode);
      let phone = app;
      if (mode === "close") {
        await app.closedWith();
        phone = await reconnect(s, "app", "ph");
        await phone.next(isCall("hc1"));
      }
      const res = await del(s.session_id, s.agent_token, "hc1");
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ call_id: "hc1", status: "cancelled" });
      expect(await phone.next(isCancel("hc1"))).toEqual({ type: "tool.cancel", call_id: "hc1", reason: "cancelled" });
      expect((await getStatus(s)).pending_calls).toBe(0);
      expect((await poll(s.session_id, s.agent_token, "hc1")).status).toBe(404);
      // A late answer from the phone finds no call and reaches nobody.
      phone.send({ type: "tool.result", call_id: "hc1", result: { message: "a" } });
      await phone.next((f) => f.type === "error" && f.code === "unknown_call" && f.call_id === "hc1");
      closeAll(agent, phone);
    },
  );

  it("is idempotent: a second DELETE, or one for an ended call, is 404 unknown_call and changes nothing", async () => {
    const { s, agent, app } = await pair();
    await post(s.session_id, s.agent_token, { call_id: "hc2", name: "choice", arguments: ASK });
    await app.next(isCall("hc2"));
    expect((await del(s.session_id, s.agent_token, "hc2")).status).toBe(200);
    await app.next(isCancel("hc2"));
    const again = await del(s.session_id, s.agent_token, "hc2");
    expect(again.status).toBe(404);
    expect((await errorBody(again)).code).toBe("unknown_call");
    expect(await app.none(isCancel("hc2"))).toBe(true);

    // Answered but not yet fetched: DELETE does not take the result away; GET still hands it out once.
    await post(s.session_id, s.agent_token, { call_id: "hc3", name: "choice", arguments: ASK });
    await app.next(isCall("hc3"));
    app.send({ type: "tool.result", call_id: "hc3", result: { message: "b" } });
    await sync(app);
    const ended = await del(s.session_id, s.agent_token, "hc3");
    expect(ended.status).toBe(404);
    expect((await errorBody(ended)).code).toBe("unknown_call");
    const got = await poll(s.session_id, s.agent_token, "hc3");
    expect(got.status).toBe(200);
    expect(await got.json()).toMatchObject({ call_id: "hc3", result: { message: "b" } });
    closeAll(agent, app);
  });

  it("wakes a long-poll on the call: it answers 404 unknown_call", async () => {
    const { s, agent, app } = await pair();
    await post(s.session_id, s.agent_token, { call_id: "hc4", name: "choice", arguments: ASK });
    await app.next(isCall("hc4"));
    const waiting = poll(s.session_id, s.agent_token, "hc4", 30);
    await sync(app);
    expect((await del(s.session_id, s.agent_token, "hc4")).status).toBe(200);
    const res = await waiting;
    expect(res.status).toBe(404);
    expect((await errorBody(res)).code).toBe("unknown_call");
    closeAll(agent, app);
  });

  it("cancels only the HTTP caller's calls: a socket agent's open call stays, and the app token is forbidden", async () => {
    const { s, agent, app } = await pair();
    agent.send({ type: "tool.call", call_id: "sock1", name: "choice", arguments: ASK });
    await app.next(isCall("sock1"));
    const other = await del(s.session_id, s.agent_token, "sock1");
    expect(other.status).toBe(404);
    expect((await errorBody(other)).code).toBe("unknown_call");
    await post(s.session_id, s.agent_token, { call_id: "hc5", name: "choice", arguments: ASK });
    await app.next(isCall("hc5"));
    const byApp = await del(s.session_id, s.app_token, "hc5");
    expect(byApp.status).toBe(403);
    expect(await app.none(isCancel("sock1"))).toBe(true);
    expect((await getStatus(s)).pending_calls).toBe(2);
    // The socket call still completes normally.
    app.send({ type: "tool.result", call_id: "sock1", result: { message: "a" } });
    await agent.next(isResult("sock1"));
    closeAll(agent, app);
  });

  it("a deleted session answers 404 session_not_found", async () => {
    const { s, agent, app } = await pair();
    await post(s.session_id, s.agent_token, { call_id: "hc6", name: "choice", arguments: ASK });
    expect((await fetchWorker(`/api/sessions/${s.session_id}`, authed(s.agent_token, { method: "DELETE" }))).status).toBe(204);
    const res = await del(s.session_id, s.agent_token, "hc6");
    expect(res.status).toBe(404);
    expect((await errorBody(res)).code).toBe("session_not_found");
    closeAll(agent, app);
  });

  it("a sealed session takes no HTTP calls, so DELETE has nothing to cancel: 404 unknown_call", async () => {
    // An inbox with E2E on (docs/e2e.md), as e2e-relay.test.ts makes it: the machine publishes epoch 1.
    const json = { "content-type": "application/json" };
    const m = (await (
      await fetchWorker("/api/inboxes", authed(RELAY_KEY, { method: "POST", headers: json, body: JSON.stringify({ machine_name: "laptop" }) }))
    ).json()) as MachineCreated;
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
    const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
    const e2e = { base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster };
    expect((await fetchWorker("/api/inbox/e2e", authed(m.machine_credential, { method: "PUT", headers: json, body: JSON.stringify(e2e) }))).status).toBe(200);
    const made = await fetchWorker(
      "/api/inbox/sessions",
      authed(m.machine_credential, { method: "POST", headers: json, body: JSON.stringify({ project_dir: "/p", sealed: true }) }),
    );
    expect(made.status).toBe(201);
    const s = (await made.json()) as SessionCreated;
    expect((await post(s.session_id, s.agent_token, { call_id: "hs1", name: "input", arguments: { prompt: "PLAIN" } })).status).toBe(400);
    const res = await del(s.session_id, s.agent_token, "hs1");
    expect(res.status).toBe(404);
    expect((await errorBody(res)).code).toBe("unknown_call");
  });
});
