// Contract §7 from outside: tool calls over HTTP for agents that cannot hold a socket.
import { describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { ECHO, http, type Frame, type RawClient } from "../helpers/raw-client.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";

const callOf = (id: string) => (f: Frame) => f.type === "tool.call" && f.call_id === id;

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("HTTP calls (§7)", () => {
    const run = useTarget(tc);
    const pool = run.pool;

    async function withApp(): Promise<{ s: SessionCreated; app: RawClient }> {
      const s = await pool.session(run.T.key);
      const app = await pool.app(s, { clientId: "human" });
      app.send({ type: "tool.list", tools: [ECHO] });
      await app.sync();
      return { s, app };
    }
    const post = (s: SessionCreated, body: unknown, wait?: number) =>
      http(`${run.T.url}/api/sessions/${s.session_id}/calls${wait === undefined ? "" : `?wait=${wait}`}`, {
        method: "POST",
        token: s.agent_token,
        body: JSON.stringify(body),
      });
    const get = (s: SessionCreated, id: string, wait?: number) =>
      http(`${run.T.url}/api/sessions/${s.session_id}/calls/${encodeURIComponent(id)}${wait === undefined ? "" : `?wait=${wait}`}`, { token: s.agent_token });

    it("answers 200 with the tool.result when the result arrives within wait", async () => {
      const { s, app } = await withApp();
      const pending = post(s, { type: "tool.call", call_id: "h1", name: "echo", arguments: { text: "hi" } }, 20);
      const call = await app.next(callOf("h1"));
      expect(call).toMatchObject({ name: "echo", arguments: { text: "hi" }, from: "agent" });
      app.send({ type: "tool.result", call_id: "h1", result: { message: "hello" } });
      const r = await pending;
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ type: "tool.result", call_id: "h1", name: "echo", result: { message: "hello" }, answered_by: "human" });
      // A result fetched over HTTP counts as acked: it is gone now.
      expect((await get(s, "h1", 0)).status).toBe(404);
    });

    it("answers 202 {call_id, status:'pending'} when nothing arrives within wait; GET then answers 202, 200, 404", async () => {
      const { s, app } = await withApp();
      const r = await post(s, { call_id: "h2", name: "echo", arguments: { text: "x" } }, 0);
      expect(r.status).toBe(202);
      expect(r.json).toEqual({ call_id: "h2", status: "pending" });
      await app.next(callOf("h2"));
      const p = await get(s, "h2", 0);
      expect(p.status).toBe(202);
      expect(p.json).toEqual({ call_id: "h2", status: "pending" });
      app.send({ type: "tool.result", call_id: "h2", error: { code: "declined", message: "no" } });
      await app.sync();
      const done = await get(s, "h2", 5);
      expect(done.status).toBe(200);
      expect(done.json).toMatchObject({ type: "tool.result", call_id: "h2", error: { code: "declined", message: "no" } });
      expect((await get(s, "h2", 0)).status).toBe(404);
    });

    // i34-more: an extension beside v1 (docs/protocol.md §7), on both servers: DELETE withdraws an open HTTP call.
    it("DELETE withdraws an open HTTP call: the app gets tool.cancel cancelled; a second DELETE is 404 unknown_call", async () => {
      const { s, app } = await withApp();
      expect((await post(s, { call_id: "hd", name: "echo", arguments: { text: "x" } }, 0)).status).toBe(202);
      await app.next(callOf("hd"));
      const del = () => http(`${run.T.url}/api/sessions/${s.session_id}/calls/hd`, { method: "DELETE", token: s.agent_token });
      const r = await del();
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ call_id: "hd", status: "cancelled" });
      expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === "hd")).toMatchObject({ reason: "cancelled" });
      const again = await del();
      expect(again.status).toBe(404);
      expect(again.json).toMatchObject({ error: { code: "unknown_call" } });
      expect((await get(s, "hd", 0)).status).toBe(404);
    });

    it("GET ?wait= returns 200 as soon as the result arrives during the wait", async () => {
      const { s, app } = await withApp();
      expect((await post(s, { call_id: "h3", name: "echo", arguments: { text: "x" } }, 0)).status).toBe(202);
      await app.next(callOf("h3"));
      const waiting = get(s, "h3", 20);
      await app.sync();
      app.send({ type: "tool.result", call_id: "h3", result: { message: "late but within wait" } });
      const r = await waiting;
      expect(r.status).toBe(200);
      expect((r.json as { result: { message: string } }).result.message).toBe("late but within wait");
    });

    it("makes a call_id when the body has none (and type may be omitted)", async () => {
      const { s, app } = await withApp();
      const r = await post(s, { name: "echo", arguments: { text: "x" } }, 0);
      expect(r.status).toBe(202);
      const id = (r.json as { call_id: string }).call_id;
      expect(id).toEqual(expect.any(String));
      expect(id.length).toBeGreaterThan(0);
      await app.next(callOf(id));
    });

    it("answers 409 for a call_id that is already open, leaving the open call untouched", async () => {
      const { s, app } = await withApp();
      expect((await post(s, { call_id: "h4", name: "echo", arguments: { text: "a" } }, 0)).status).toBe(202);
      await app.next(callOf("h4"));
      const again = await post(s, { call_id: "h4", name: "echo", arguments: { text: "b" } }, 0);
      expect(again.status).toBe(409);
      expect((again.json as { error: { code: string } }).error.code).toEqual(expect.any(String));
      app.send({ type: "tool.result", call_id: "h4", result: { message: "a" } });
      expect((await get(s, "h4", 5)).json).toMatchObject({ result: { message: "a" } });
    });

    it("answers 409 for a call_id a socket caller holds open", async () => {
      const { s, app } = await withApp();
      const agent = await pool.agent(s);
      agent.send({ type: "tool.call", call_id: "sock1", name: "echo", arguments: { text: "a" } });
      await app.next(callOf("sock1"));
      expect((await post(s, { call_id: "sock1", name: "echo", arguments: { text: "a" } }, 0)).status).toBe(409);
    });

    it("answers 404 for an unknown call id", async () => {
      const { s } = await withApp();
      const r = await get(s, "no-such-call", 0);
      expect(r.status).toBe(404);
      expect((r.json as { error: { code: string } }).error.code).toEqual(expect.any(String));
    });

    it("HTTP calls belong to a reserved caller: no socket sees their results or can ack them", async () => {
      const { s, app } = await withApp();
      const agent = await pool.agent(s, { clientId: "sock-agent" });
      await agent.drain();
      expect((await post(s, { call_id: "h5", name: "echo", arguments: { text: "x" } }, 0)).status).toBe(202);
      await app.next(callOf("h5"));
      app.send({ type: "tool.result", call_id: "h5", result: { message: "for http" } });
      await app.sync();
      agent.send({ type: "tool.ack", call_id: "h5" });
      agent.send({ type: "tool.cancel", call_id: "h5" });
      expect((await agent.next("error")).code).toBe("unknown_call");
      expect(await agent.none((f) => f.type === "tool.result", 200)).toBe(true);
      expect((await get(s, "h5", 0)).status).toBe(200);
    });

    it("answers relay-detected failures as a 200 tool.result with error (unknown_tool, invalid_arguments)", async () => {
      const { s } = await withApp();
      const u = await post(s, { call_id: "h6", name: "nope" }, 5);
      expect(u.status).toBe(200);
      expect(u.json).toMatchObject({ type: "tool.result", call_id: "h6", error: { code: "unknown_tool" } });
      const v = await post(s, { call_id: "h7", name: "echo", arguments: { text: 3 } }, 5);
      expect(v.status).toBe(200);
      expect(v.json).toMatchObject({ error: { code: "invalid_arguments" } });
    });

    it("times out an HTTP call at its deadline", async () => {
      const { s, app } = await withApp();
      expect((await post(s, { call_id: "h8", name: "echo", arguments: { text: "x" }, timeout_s: 1 }, 0)).status).toBe(202);
      expect(await app.next((f) => f.type === "tool.cancel" && f.call_id === "h8", 15_000)).toMatchObject({ reason: "timeout" });
      const r = await get(s, "h8", 5);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ error: { code: "timeout" } });
    });

    it("answers 400 with a JSON error for a body that is not a call", async () => {
      const { s } = await withApp();
      for (const body of [{ arguments: {} }, { name: "echo", arguments: "x" }, { type: "tool.result", name: "echo" }]) {
        const r = await post(s, body, 0);
        expect(r.status).toBe(400);
        expect((r.json as { error: { code: string } }).error.code).toEqual(expect.any(String));
      }
      const raw = await http(`${run.T.url}/api/sessions/${s.session_id}/calls?wait=0`, { method: "POST", token: s.agent_token, body: "{oops" });
      expect(raw.status).toBe(400);
    });
  });
});
