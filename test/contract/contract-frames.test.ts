// Contract §3–§5 from outside: frames, validation, routing rules, over real sockets, for each server
// that speaks lineup/1. Every MUST of §4 has a test here named after it.
import { describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { CANVAS, ECHO, http, MATH, type Frame } from "../helpers/raw-client.js";
import type { SessionCreated, ToolDef } from "../../shared/contract/protocol.js";

const isErr = (code: string) => (f: Frame) => f.type === "error" && f.code === code;
const resultOf = (id: string) => (f: Frame) => f.type === "tool.result" && f.call_id === id;
const callOf = (id: string) => (f: Frame) => f.type === "tool.call" && f.call_id === id;
const cancelOf = (id: string) => (f: Frame) => f.type === "tool.cancel" && f.call_id === id;

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("frames and routing (§3–§5)", () => {
    const run = useTarget(tc);
    const pool = run.pool;

    /** A session with an agent and an app that provides `tools` (the agent has seen the catalog). */
    async function pair(tools: ToolDef[] = [ECHO, MATH], appId = "app1") {
      const s = await pool.session(run.T.key);
      const agent = await pool.agent(s, { clientId: "agent1" });
      const app = await pool.app(s, { clientId: appId });
      await pool.register(app, agent, tools);
      return { s, agent, app };
    }

    describe("hello, heartbeat, catalog", () => {
      it("sends hello first with protocol, session_id, role, client_id and peers, then the other side's tool.list", async () => {
        const s = await pool.session(run.T.key);
        const { c: agent, hello } = await pool.join(s, "agent", { clientId: "ag" });
        expect(hello).toMatchObject({
          type: "hello",
          protocol: "lineup/1",
          session_id: s.session_id,
          role: "agent",
          client_id: "ag",
          peers: { agent: { online: true }, apps: 0 },
        });
        expect(await agent.next(() => true)).toEqual({ type: "tool.list", tools: [] });
        const { hello: h2 } = await pool.join(s, "app", { clientId: "ph" });
        expect(h2).toMatchObject({ role: "app", client_id: "ph", peers: { agent: { online: true }, apps: 1 } });
      });

      it("answers the text frame ping with the text frame pong", async () => {
        const s = await pool.session(run.T.key);
        const app = await pool.app(s);
        app.send("ping");
        await app.next("pong");
        expect(app.log).toContain("pong");
      });

      it("tool.list with tools registers and reaches the other side; without tools answers the other side's catalog", async () => {
        const { agent, app } = await pair([ECHO]);
        await agent.drain();
        agent.send({ type: "tool.list" });
        const cat = await agent.next("tool.list");
        expect((cat.tools as ToolDef[]).map((t) => t.name)).toEqual(["echo"]);
        // The catalog is the union of registrations by client id, connected or not.
        const s2 = await pool.session(run.T.key);
        const a2 = await pool.agent(s2);
        const p1 = await pool.app(s2, { clientId: "p1" });
        await pool.register(p1, a2, [ECHO]);
        const p2 = await pool.app(s2, { clientId: "p2" });
        await pool.register(p2, a2, [MATH]);
        await p1.close();
        a2.send({ type: "tool.list" });
        const union = await a2.next((f) => f.type === "tool.list" && (f.tools as ToolDef[]).length === 2);
        expect((union.tools as ToolDef[]).map((t) => t.name).sort()).toEqual(["echo", "math"]);
        void app;
      });
    });

    describe("validation at the edge (§4.1)", () => {
      it("answers bad_json, bad_frame, forbidden and too_large with an error frame and stays usable", async () => {
        const { agent, app } = await pair([ECHO]);
        app.send("{not json");
        expect(await app.next("error")).toMatchObject({ code: "bad_json", message: expect.any(String) });
        app.send({ type: "no.such.type" });
        expect((await app.next("error")).code).toBe("bad_frame");
        app.send({ type: "tool.call", call_id: 5, name: "echo" });
        expect((await app.next("error")).code).toBe("bad_frame");
        app.send([1, 2]);
        expect((await app.next("error")).code).toBe("bad_frame");
        app.send({ no_type: true });
        expect((await app.next("error")).code).toBe("bad_frame");
        app.send({ type: "tool.result", call_id: "x", result: { message: "a" }, error: { code: "c", message: "m" } });
        expect((await app.next("error")).code).toBe("bad_frame");
        app.send({ type: "status", state: "working" });
        expect((await app.next("error")).code).toBe("forbidden");
        // Over 1 MiB: an error frame, or a 1009 close (the contract allows both).
        await app.drain();
        app.send(JSON.stringify({ type: "message", content: [{ type: "text", text: "x".repeat(1024 * 1024 + 10) }] }));
        const big = await app.next(() => true, 15_000).catch(() => undefined);
        if (big === undefined || app.closed) {
          expect(app.closed?.code).toBe(1009);
          return;
        }
        expect(big).toMatchObject({ type: "error", code: "too_large" });
        // Still usable, and nobody else was affected.
        app.send({ type: "tool.list" });
        expect((await app.next("tool.list")).type).toBe("tool.list");
        agent.send({ type: "tool.call", call_id: "after-errors", name: "echo", arguments: { text: "hi" } });
        await app.next(callOf("after-errors"));
        expect(await agent.none((f) => f.type === "message" || f.type === "error", 200)).toBe(true);
      });

      it("answers a binary frame with an error frame (it is not part of lineup/1) and stays usable", async () => {
        const { app } = await pair([ECHO]);
        app.sendBinary(new TextEncoder().encode(JSON.stringify({ type: "tool.list" })));
        expect((await app.next("error")).code).toMatch(/bad_frame|bad_json/);
        await app.sync();
      });
    });

    describe("calls (§4.2–§4.6)", () => {
      it("routes a call to the provider with deadline and from, and the result back with answered_by", async () => {
        const { agent, app } = await pair();
        const before = Date.now();
        agent.send({ type: "tool.call", call_id: "c1", name: "echo", arguments: { text: "hi" }, timeout_s: 30 });
        const call = await app.next(callOf("c1"));
        expect(call).toMatchObject({ name: "echo", arguments: { text: "hi" }, from: "agent", timeout_s: 30 });
        expect(call.deadline).toBeGreaterThanOrEqual(before + 29_000);
        app.send({ type: "tool.result", call_id: "c1", name: "echo", result: { message: "hi back" } });
        const r = await agent.next(resultOf("c1"));
        expect(r).toMatchObject({ type: "tool.result", call_id: "c1", name: "echo", result: { message: "hi back" }, answered_by: "app1" });
      });

      it("routes toolset actions and echoes any action of an action tool", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "m1", name: "math", action: "add", arguments: { a: 1, b: 2 } });
        expect(await app.next(callOf("m1"))).toMatchObject({ action: "add", arguments: { a: 1, b: 2 } });
        app.send({ type: "tool.result", call_id: "m1", result: { message: "3" } });
        expect(await agent.next(resultOf("m1"))).toMatchObject({ action: "add", result: { message: "3" } });
        agent.send({ type: "tool.call", call_id: "e1", name: "echo", action: "whatever", arguments: { text: "a" } });
        expect((await app.next(callOf("e1"))).action).toBe("whatever");
      });

      it("defaults arguments to {} (and validates that against the schema)", async () => {
        const { agent, app } = await pair([ECHO, { name: "noargs", type: "action", description: "", inputSchema: { type: "object" } }]);
        agent.send({ type: "tool.call", call_id: "na", name: "noargs" });
        expect((await app.next(callOf("na"))).arguments).toEqual({});
        agent.send({ type: "tool.call", call_id: "ea", name: "echo" });
        expect((await agent.next(resultOf("ea"))).error).toMatchObject({ code: "invalid_arguments" });
      });

      it("answers unknown_tool, unknown_action and invalid_arguments (naming the field) as tool.result errors", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "u1", name: "nope", arguments: {} });
        expect((await agent.next(resultOf("u1"))).error).toMatchObject({ code: "unknown_tool", message: expect.any(String) });
        agent.send({ type: "tool.call", call_id: "u2", name: "math", action: "divide", arguments: {} });
        expect((await agent.next(resultOf("u2"))).error).toMatchObject({ code: "unknown_action" });
        agent.send({ type: "tool.call", call_id: "u2b", name: "math", arguments: { a: 1, b: 2 } });
        expect((await agent.next(resultOf("u2b"))).error).toMatchObject({ code: "unknown_action" });
        agent.send({ type: "tool.call", call_id: "u3", name: "math", action: "add", arguments: { a: 1, b: "two" } });
        const bad = await agent.next(resultOf("u3"));
        expect(bad.error).toMatchObject({ code: "invalid_arguments" });
        expect((bad.error as { message: string }).message).toContain("b");
        // None of them reached the provider.
        expect(await app.none((f) => f.type === "tool.call", 200)).toBe(true);
      });

      it("duplicate_call for a reused open call_id with other content; an identical repeat is a no-op", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "d1", name: "echo", arguments: { text: "one" } });
        await app.next(callOf("d1"));
        agent.send({ type: "tool.call", call_id: "d1", name: "echo", arguments: { text: "two" } });
        expect(await agent.next(isErr("duplicate_call"))).toMatchObject({ call_id: "d1" });
        agent.send({ type: "tool.call", call_id: "d1", name: "echo", arguments: { text: "one" } });
        await agent.sync();
        expect(await agent.none((f) => f.type === "error" || f.type === "tool.result", 200)).toBe(true);
        // The open call is untouched: the original is still answerable.
        app.send({ type: "tool.result", call_id: "d1", result: { message: "one" } });
        expect((await agent.next(resultOf("d1"))).result).toEqual({ message: "one" });
        // Another client reusing an open call_id gets duplicate_call too.
        agent.send({ type: "tool.call", call_id: "d2", name: "echo", arguments: { text: "x" } });
        await app.next(callOf("d2"));
        app.send({ type: "tool.call", call_id: "d2", name: "echo", arguments: { text: "x" } });
        expect(await app.next(isErr("duplicate_call"))).toMatchObject({ call_id: "d2" });
      });

      it("an identical repeat of a call whose result is kept but not acked sends the result again", async () => {
        const { agent, app } = await pair();
        const call = { type: "tool.call", call_id: "k1", name: "echo", arguments: { text: "x" } };
        agent.send(call);
        await app.next(callOf("k1"));
        app.send({ type: "tool.result", call_id: "k1", result: { message: "done" } });
        await agent.next(resultOf("k1"));
        agent.send(call);
        expect((await agent.next(resultOf("k1"))).result).toEqual({ message: "done" });
        expect(await app.none(callOf("k1"), 200)).toBe(true);
      });

      it("queues a call while no provider is connected and delivers it when one connects", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        agent.send({ type: "tool.call", call_id: "q1", name: "echo", arguments: { text: "later" } });
        await agent.sync();
        expect(await agent.none((f) => f.type === "tool.result", 200)).toBe(true);
        const app = await pool.app(s, { clientId: "late" });
        app.send({ type: "tool.list", tools: [ECHO] });
        expect(await app.next(callOf("q1"))).toMatchObject({ arguments: { text: "later" } });
        app.send({ type: "tool.result", call_id: "q1", result: { message: "ok" } });
        expect((await agent.next(resultOf("q1"))).answered_by).toBe("late");
      });

      it("catches a reconnecting provider up on open calls right after hello", async () => {
        const { s, agent, app } = await pair([ECHO], "cu");
        await app.close();
        agent.send({ type: "tool.call", call_id: "cu1", name: "echo", arguments: { text: "x" } });
        await agent.sync();
        const back = await pool.app(s, { clientId: "cu" });
        expect(await back.next(callOf("cu1"))).toMatchObject({ name: "echo" });
      });

      it("catches a provider up after a registration that adds a tool an open call needs", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        const p1 = await pool.app(s, { clientId: "has-math" });
        await pool.register(p1, agent, [ECHO, MATH]);
        const p2 = await pool.app(s, { clientId: "echo-only" });
        p2.send({ type: "tool.list", tools: [ECHO] });
        await p2.sync();
        agent.send({ type: "tool.call", call_id: "cm", name: "math", action: "add", arguments: { a: 1, b: 1 } });
        await p1.next(callOf("cm"));
        expect(await p2.none(callOf("cm"), 200)).toBe(true);
        p2.send({ type: "tool.list", tools: [ECHO, MATH] });
        expect(await p2.next(callOf("cm"))).toMatchObject({ action: "add" });
        p2.send({ type: "tool.result", call_id: "cm", result: { message: "2" } });
        expect((await agent.next(resultOf("cm"))).answered_by).toBe("echo-only");
        expect(await p1.next(cancelOf("cm"))).toMatchObject({ reason: "answered" });
      });

      it("first answer wins: the others get tool.cancel{answered}, a late result gets unknown_call", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        const a1 = await pool.app(s, { clientId: "a1" });
        await pool.register(a1, agent, [ECHO]);
        const a2 = await pool.app(s, { clientId: "a2" });
        a2.send({ type: "tool.list", tools: [ECHO] });
        await a2.sync();
        agent.send({ type: "tool.call", call_id: "f1", name: "echo", arguments: { text: "x" } });
        await a1.next(callOf("f1"));
        await a2.next(callOf("f1"));
        a2.send({ type: "tool.result", call_id: "f1", result: { message: "from a2" } });
        expect(await agent.next(resultOf("f1"))).toMatchObject({ result: { message: "from a2" }, answered_by: "a2" });
        expect(await a1.next(cancelOf("f1"))).toMatchObject({ reason: "answered" });
        a1.send({ type: "tool.result", call_id: "f1", result: { message: "from a1" } });
        expect(await a1.next(isErr("unknown_call"))).toMatchObject({ call_id: "f1" });
        expect(await agent.none(resultOf("f1"), 200)).toBe(true);
        // An unknown call_id, too.
        a1.send({ type: "tool.result", call_id: "never", error: { code: "x", message: "y" } });
        expect((await a1.next(isErr("unknown_call"))).call_id).toBe("never");
      });

      it("binds app instances to the provider that opened them; close unbinds; unbound ids get instance_gone", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        const p1 = await pool.app(s, { clientId: "p1" });
        await pool.register(p1, agent, [CANVAS]);
        const p2 = await pool.app(s, { clientId: "p2" });
        p2.send({ type: "tool.list", tools: [CANVAS] });
        await p2.sync();
        agent.send({ type: "tool.call", call_id: "o1", name: "canvas", action: "open", arguments: {} });
        await p2.next(callOf("o1"));
        await p1.next(callOf("o1"));
        p1.send({ type: "tool.result", call_id: "o1", result: { message: "opened", instance_id: "cv1" } });
        await agent.next(resultOf("o1"));
        agent.send({ type: "tool.call", call_id: "up1", name: "canvas", action: "update", arguments: { instance_id: "cv1" } });
        await p1.next(callOf("up1"));
        expect(await p2.none(callOf("up1"), 300)).toBe(true);
        // The design's own form: "instance_id: <id>" inside result.message.
        agent.send({ type: "tool.call", call_id: "o2", name: "canvas", action: "open", arguments: {} });
        await p1.next(callOf("o2"));
        await p2.next(callOf("o2"));
        p2.send({ type: "tool.result", call_id: "o2", result: { message: "opened. instance_id: cv2" } });
        await agent.next(resultOf("o2"));
        agent.send({ type: "tool.call", call_id: "up2", name: "canvas", action: "update", arguments: { instance_id: "cv2" } });
        await p2.next(callOf("up2"));
        expect(await p1.none(callOf("up2"), 300)).toBe(true);
        // Close unbinds.
        p1.send({ type: "tool.result", call_id: "up1", result: { message: "updated" } });
        await agent.next(resultOf("up1"));
        agent.send({ type: "tool.call", call_id: "cl1", name: "canvas", action: "close", arguments: { instance_id: "cv1" } });
        await p1.next(callOf("cl1"));
        p1.send({ type: "tool.result", call_id: "cl1", result: { message: "closed" } });
        await agent.next(resultOf("cl1"));
        agent.send({ type: "tool.call", call_id: "up3", name: "canvas", action: "update", arguments: { instance_id: "cv1" } });
        expect((await agent.next(resultOf("up3"))).error).toMatchObject({ code: "instance_gone" });
        agent.send({ type: "tool.call", call_id: "up4", name: "canvas", action: "update", arguments: { instance_id: "never-opened" } });
        expect((await agent.next(resultOf("up4"))).error).toMatchObject({ code: "instance_gone" });
      });

      it("queues a call for a bound instance while its provider is away, and only that provider gets it", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        const p1 = await pool.app(s, { clientId: "owner" });
        await pool.register(p1, agent, [CANVAS]);
        const p2 = await pool.app(s, { clientId: "other" });
        p2.send({ type: "tool.list", tools: [CANVAS] });
        await p2.sync();
        agent.send({ type: "tool.call", call_id: "o", name: "canvas", action: "open", arguments: {} });
        await p1.next(callOf("o"));
        p1.send({ type: "tool.result", call_id: "o", result: { message: "ok", instance_id: "mine" } });
        await agent.next(resultOf("o"));
        await p1.close();
        agent.send({ type: "tool.call", call_id: "u", name: "canvas", action: "update", arguments: { instance_id: "mine" } });
        await agent.sync();
        expect(await p2.none(callOf("u"), 300)).toBe(true);
        const back = await pool.app(s, { clientId: "owner" });
        await back.next(callOf("u"));
      });
    });

    describe("deadlines, cancel, delivery (§4.7–§4.10)", () => {
      it("at the deadline the caller gets error timeout and providers get tool.cancel{timeout}", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "t1", name: "echo", arguments: { text: "x" }, timeout_s: 1 });
        await app.next(callOf("t1"));
        expect((await agent.next(resultOf("t1"), 15_000)).error).toMatchObject({ code: "timeout" });
        expect(await app.next(cancelOf("t1"), 5000)).toMatchObject({ reason: "timeout" });
        app.send({ type: "tool.result", call_id: "t1", result: { message: "too late" } });
        expect((await app.next(isErr("unknown_call"))).call_id).toBe("t1");
      });

      it("a queued call with no provider still expires at its deadline", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        agent.send({ type: "tool.call", call_id: "tq", name: "echo", arguments: {}, timeout_s: 1 });
        expect((await agent.next(resultOf("tq"), 15_000)).error).toMatchObject({ code: "timeout" });
      });

      it("clamps timeout_s below 1 to 1 second", async () => {
        const { agent, app } = await pair();
        const before = Date.now();
        agent.send({ type: "tool.call", call_id: "tz", name: "echo", arguments: { text: "x" }, timeout_s: 0.001 });
        const call = await app.next(callOf("tz"));
        expect(call.deadline).toBeGreaterThanOrEqual(before + 900);
        expect((await agent.next(resultOf("tz"), 15_000)).error).toMatchObject({ code: "timeout" });
      });

      it("a caller's tool.cancel closes the call; providers get tool.cancel{cancelled}", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "x1", name: "echo", arguments: { text: "x" } });
        await app.next(callOf("x1"));
        agent.send({ type: "tool.cancel", call_id: "x1", reason: "changed my mind" });
        expect(await app.next(cancelOf("x1"))).toMatchObject({ reason: "cancelled" });
        app.send({ type: "tool.result", call_id: "x1", result: { message: "late" } });
        expect((await app.next(isErr("unknown_call"))).call_id).toBe("x1");
        expect(await agent.none(resultOf("x1"), 200)).toBe(true);
        // Only the caller may cancel; an unknown cancel is an unknown_call.
        agent.send({ type: "tool.call", call_id: "x2", name: "echo", arguments: { text: "x" } });
        await app.next(callOf("x2"));
        app.send({ type: "tool.cancel", call_id: "x2" });
        expect((await app.next(isErr("unknown_call"))).call_id).toBe("x2");
        app.send({ type: "tool.result", call_id: "x2", result: { message: "still open" } });
        await agent.next(resultOf("x2"));
      });

      it("re-sends kept results after hello on every reconnect until tool.ack", async () => {
        const { s, agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "r1", name: "echo", arguments: { text: "x" } });
        await app.next(callOf("r1"));
        await agent.close();
        app.send({ type: "tool.result", call_id: "r1", result: { message: "while away" } });
        await app.sync();
        for (let i = 0; i < 2; i++) {
          const { c } = await pool.join(s, "agent", { clientId: "agent1" });
          expect(await c.next(resultOf("r1"))).toMatchObject({ result: { message: "while away" }, answered_by: "app1" });
          if (i === 1) c.send({ type: "tool.ack", call_id: "r1" });
          await c.sync();
          await c.close();
        }
        const { c } = await pool.join(s, "agent", { clientId: "agent1" });
        await c.sync();
        expect(await c.none(resultOf("r1"), 300)).toBe(true);
        // A result the caller acked is forgotten: the same call_id is free again.
        c.send({ type: "tool.call", call_id: "r1", name: "echo", arguments: { text: "again" } });
        expect((await app.next(callOf("r1"))).arguments).toEqual({ text: "again" });
      });

      it("keeps a result for its caller only: another client id does not receive it", async () => {
        const { s, agent, app } = await pair();
        agent.send({ type: "tool.call", call_id: "own", name: "echo", arguments: { text: "x" } });
        await app.next(callOf("own"));
        await agent.close();
        app.send({ type: "tool.result", call_id: "own", result: { message: "r" } });
        await app.sync();
        const other = await pool.agent(s, { clientId: "someone-else" });
        await other.sync();
        expect(await other.none(resultOf("own"), 300)).toBe(true);
      });
    });

    describe("messages and presence (§4.12–§4.13)", () => {
      it("delivers a message to every other client with id, from, content and ts, and keeps it in history", async () => {
        const { s, agent, app } = await pair();
        const app2 = await pool.app(s, { clientId: "app2" });
        const content = [{ type: "text", text: "hello human" }];
        agent.send({ type: "message", id: "m-1", content });
        for (const c of [app, app2]) {
          expect(await c.next("message")).toMatchObject({
            type: "message",
            id: "m-1",
            from: { role: "agent", client_id: "agent1" },
            content,
            ts: expect.any(Number),
          });
        }
        app.send({ type: "message", content: [{ type: "text", text: "hi agent" }] });
        const back = await agent.next("message");
        expect(back).toMatchObject({ from: { role: "app", client_id: "app1" }, id: expect.any(String) });
        expect(await app2.next("message")).toMatchObject({ id: back.id });
        await agent.sync();
        expect(await agent.none((f) => f.type === "message" && f.id === "m-1", 100)).toBe(true);
        const st = await http(`${run.T.url}/api/sessions/${s.session_id}`, { token: s.app_token });
        const msgs = (st.json as { messages: { id: string; content: unknown }[] }).messages;
        expect(msgs.map((m) => m.id)).toEqual(["m-1", back.id]);
        expect(msgs[0]!.content).toEqual(content);
      });

      it("a client that reconnects with its client_id receives the messages it missed, after hello", async () => {
        const { s, agent, app } = await pair();
        await app.close();
        agent.send({ type: "message", id: "while-away", content: [{ type: "text", text: "are you there?" }] });
        await agent.sync();
        const { c: back } = await pool.join(s, "app", { clientId: "app1" });
        expect(await back.next("message")).toMatchObject({ id: "while-away", from: { role: "agent", client_id: "agent1" } });
      });

      it("keeps at least the last 200 messages in the history", async () => {
        const { s, agent, app } = await pair();
        for (let i = 0; i < 205; i++) agent.send({ type: "message", id: `h-${i}`, content: [{ type: "text", text: `n${i}` }] });
        await app.next((f) => f.type === "message" && f.id === "h-204", 20_000);
        const st = await http(`${run.T.url}/api/sessions/${s.session_id}`, { token: s.app_token });
        const ids = (st.json as { messages: { id: string }[] }).messages.map((m) => m.id);
        expect(ids.length).toBeGreaterThanOrEqual(200);
        expect(ids.slice(-200)).toEqual(Array.from({ length: 200 }, (_, i) => `h-${i + 5}`));
      });

      it("rejects a message without content as bad_frame and delivers nothing", async () => {
        const { agent, app } = await pair();
        agent.send({ type: "message", content: [] });
        expect((await agent.next("error")).code).toBe("bad_frame");
        expect(await app.none("message", 200)).toBe(true);
      });

      it("sends presence to apps on agent connect, status and disconnect; hello carries the same facts", async () => {
        const s = await pool.session(run.T.key);
        const app = await pool.app(s);
        const agent = await pool.agent(s);
        expect(await app.next("presence")).toMatchObject({ agent: { online: true }, apps: 1 });
        agent.send({ type: "status", state: "working", detail: "compiling" });
        expect(await app.next("presence")).toMatchObject({ agent: { online: true, status: { state: "working", detail: "compiling" } }, apps: 1 });
        const { hello } = await pool.join(s, "app");
        expect(hello.peers).toMatchObject({ agent: { online: true, status: { state: "working" } }, apps: 2 });
        expect(await app.next("presence")).toMatchObject({ apps: 2 });
        await agent.close();
        expect(await app.next((f) => f.type === "presence" && (f.agent as { online: boolean }).online === false)).toMatchObject({ apps: 2 });
      });

      it("accepts free-text status up to 64 chars and rejects longer as bad_frame", async () => {
        const s = await pool.session(run.T.key);
        const agent = await pool.agent(s);
        const app = await pool.app(s);
        agent.send({ type: "status", state: "reviewing PR" });
        expect(await app.next((f) => f.type === "presence" && (f.agent as { status?: { state: string } }).status?.state === "reviewing PR")).toBeDefined();
        agent.send({ type: "status", state: "x".repeat(65) });
        expect((await agent.next("error")).code).toBe("bad_frame");
      });
    });

    it("answers too_many_calls once the session has 1000 open calls, and serves calls again after some close", async () => {
      const { s, agent, app } = await pair([ECHO]);
      await agent.drain();
      for (let i = 0; i < 1000; i++) agent.send({ type: "tool.call", call_id: `many-${i}`, name: "echo", arguments: { text: "x" } });
      await app.next(callOf("many-999"), 80_000);
      agent.send({ type: "tool.call", call_id: "one-too-many", name: "echo", arguments: { text: "x" } });
      expect((await agent.next(resultOf("one-too-many"), 10_000)).error).toMatchObject({ code: "too_many_calls" });
      expect(await app.none(callOf("one-too-many"), 200)).toBe(true);
      agent.send({ type: "tool.cancel", call_id: "many-0" });
      await app.next(cancelOf("many-0"));
      agent.send({ type: "tool.call", call_id: "fits-again", name: "echo", arguments: { text: "x" } });
      await app.next(callOf("fits-again"));
      const st = await http(`${run.T.url}/api/sessions/${s.session_id}`, { token: s.agent_token });
      expect((st.json as { pending_calls: number }).pending_calls).toBe(1000);
    }, 120_000);

    // Only the relay hibernates: workerd evicts an idle object's memory after ~10 s without events.
    it.runIf(tc.kind === "relay")(
      "a call, its deadline and its result survive the object hibernating (idle > 10 s)",
      async () => {
        const { agent, app } = await pair([ECHO]);
        agent.send({ type: "tool.call", call_id: "hib-1", name: "echo", arguments: { text: "x" } });
        agent.send({ type: "tool.call", call_id: "hib-2", name: "echo", arguments: { text: "y" }, timeout_s: 13 });
        await app.next(callOf("hib-1"));
        await app.next(callOf("hib-2"));
        await new Promise((r) => setTimeout(r, 12_000));
        app.send("ping");
        await app.next("pong");
        app.send({ type: "tool.result", call_id: "hib-1", result: { message: "after sleep" } });
        expect(await agent.next(resultOf("hib-1"), 10_000)).toMatchObject({ result: { message: "after sleep" }, answered_by: "app1" });
        expect((await agent.next(resultOf("hib-2"), 20_000)).error).toMatchObject({ code: "timeout" });
        expect(await app.next(cancelOf("hib-2"), 5000)).toMatchObject({ reason: "timeout" });
      },
      60_000,
    );

    it("ignores tool.ack for unknown calls silently", async () => {
      const s: SessionCreated = await pool.session(run.T.key);
      const agent = await pool.agent(s);
      agent.send({ type: "tool.ack", call_id: "nope" });
      await agent.sync();
      expect(await agent.none("error", 100)).toBe(true);
    });
  });
});
