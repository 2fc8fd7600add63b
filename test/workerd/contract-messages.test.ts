// §4.12–4.13: messages reach every other client and are kept in history; presence and agent status.
import { describe, expect, it } from "vitest";
import { CHOICE, closeAll, EVICTIONS, evict, getStatus, isError, pair, reconnect, sync } from "./contract-fixtures.js";
import { connect, createSession, type Frame } from "./helpers.js";

const text = (t: string) => [{ type: "text", text: t }];
const isMsg = (t: string) => (f: Frame) => f.type === "message" && JSON.stringify(f.content) === JSON.stringify(text(t));

describe("messages", () => {
  it.each(EVICTIONS)("a message reaches every other connected client of both sides, not its sender (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    const agent2 = await connect(s.session_id, s.agent_token, { clientId: "ag2" });
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph2" });
    await evict(s.session_id, mode);
    const before = Date.now();
    app.send({ type: "message", content: text("hi"), id: "m-1" });
    for (const c of [agent, agent2, app2]) {
      const m = await c.next(isMsg("hi"));
      expect(m).toMatchObject({ type: "message", id: "m-1", from: { role: "app", client_id: "ph" }, content: text("hi") });
      expect(m.ts).toBeGreaterThanOrEqual(before);
      expect(Object.keys(m).sort()).toEqual(["content", "from", "id", "ts", "type"]);
    }
    await sync(app);
    expect(await app.none("message")).toBe(true);
    // Rich content passes through.
    const rich = [
      { type: "image", data: "aGk=", mimeType: "image/png" },
      { type: "resource", resource: { uri: "file:///a.txt", text: "a" } },
    ];
    agent.send({ type: "message", content: rich });
    const m = await app.next("message");
    expect(m.content).toEqual(rich);
    expect(typeof m.id).toBe("string");
    expect(m.from).toEqual({ role: "agent", client_id: "ag" });
    closeAll(agent, agent2, app, app2);
  });

  it.each(EVICTIONS)("history keeps the last 200 in order and is readable over GET by both roles (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    for (let i = 0; i < 205; i++) agent.send({ type: "message", content: text(`n${i}`) });
    await app.next(isMsg("n204"), 20_000);
    await evict(s.session_id, mode);
    for (const t of [s.agent_token, s.app_token]) {
      const msgs = (await getStatus(s, t)).messages as Frame[];
      expect(msgs.length).toBeGreaterThanOrEqual(200);
      expect(msgs.at(-1)!.content).toEqual(text("n204"));
      expect(Object.keys(msgs.at(-1)!).sort()).toEqual(["content", "from", "id", "ts", "type"]);
      const nums = msgs.map((m) => Number((m.content as { text: string }[])[0]!.text.slice(1)));
      expect(nums).toEqual([...nums].sort((a, b) => a - b));
      expect(nums[0]).toBeLessThanOrEqual(5);
    }
    closeAll(agent, app);
  });

  it.each([...EVICTIONS, "close"] as const)(
    "a known client gets the messages it missed right after hello; a new client reads history over GET (evict: %s)",
    async (mode) => {
      const { s, agent, app } = await pair([CHOICE]);
      app.close();
      await agent.next((f) => f.type === "presence" && f.apps === 0);
      agent.send({ type: "message", content: text("while away") });
      await sync(agent);
      await evict(s.session_id, mode);
      const back = await reconnect(s, "app", "ph");
      expect((await back.next(isMsg("while away"))).from).toEqual({ role: "agent", client_id: "ag" });
      back.close();
      // Once seen, it is not replayed again.
      const again = await reconnect(s, "app", "ph");
      await sync(again);
      expect(again.frames.some((f) => f.type === "message")).toBe(false);
      const fresh = await connect(s.session_id, s.app_token, { clientId: "new" });
      await sync(fresh);
      expect(fresh.frames.some((f) => f.type === "message")).toBe(false);
      expect(((await getStatus(s, s.app_token)).messages as Frame[]).some(isMsg("while away"))).toBe(true);
      closeAll(agent, again, fresh);
    },
  );

  it("a retried message (same id from the same client) is delivered and kept once", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    app.send({ type: "message", id: "dup", content: text("once") });
    app.send({ type: "message", id: "dup", content: text("once") });
    await agent.next(isMsg("once"));
    await sync(app);
    await sync(agent);
    expect(await agent.none("message")).toBe(true);
    expect(((await getStatus(s)).messages as Frame[]).filter((m) => m.id === "dup")).toHaveLength(1);
    closeAll(agent, app);
  });
});

describe("presence and status", () => {
  it.each(EVICTIONS)("apps see the agent come and go (evict: %s)", async (mode) => {
    const s = await createSession();
    const app = await connect(s.session_id, s.app_token, { clientId: "ph" });
    expect(app.hello?.peers).toEqual({ agent: { online: false }, apps: 1 });
    await evict(s.session_id, mode);
    const agent = await connect(s.session_id, s.agent_token, { clientId: "ag" });
    expect(await app.next("presence")).toEqual({ type: "presence", agent: { online: true }, apps: 1 });
    await evict(s.session_id, mode);
    agent.close();
    expect(await app.next("presence")).toEqual({ type: "presence", agent: { online: false }, apps: 1 });
    app.close();
  });

  it.each(EVICTIONS)("status reaches every app as presence, survives eviction and shows in hello and GET (evict: %s)", async (mode) => {
    const { s, agent, app } = await pair([CHOICE]);
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph2" });
    for (const state of ["working", "waiting", "error", "idle", "compiling the world"]) {
      agent.send({ type: "status", state, detail: `d-${state}` });
      for (const c of [app, app2]) {
        expect(await c.next((f) => f.type === "presence" && f.agent.status?.state === state)).toEqual({
          type: "presence",
          agent: { online: true, status: { state, detail: `d-${state}` } },
          apps: 2,
        });
      }
    }
    agent.send({ type: "status", state: "working" });
    await app.next((f) => f.type === "presence" && f.agent.status?.state === "working" && f.agent.status.detail === undefined);
    await evict(s.session_id, mode);
    const app3 = await connect(s.session_id, s.app_token, { clientId: "ph3" });
    expect(app3.hello?.peers).toEqual({ agent: { online: true, status: { state: "working" } }, apps: 3 });
    expect((await getStatus(s, s.app_token)).agent).toEqual({ online: true, status: { state: "working" } });
    closeAll(agent, app, app2, app3);
  });

  it("a status over 64 characters is a bad frame and changes nothing", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    agent.send({ type: "status", state: "x".repeat(65) });
    await agent.next(isError("bad_frame"));
    expect(await app.none((f) => f.type === "presence" && f.agent.status !== undefined)).toBe(true);
    expect((await getStatus(s)).agent).toEqual({ online: true });
    closeAll(agent, app);
  });

  it("everyone sees the app count change on connect and disconnect", async () => {
    const { s, agent, app } = await pair([CHOICE]);
    const app2 = await connect(s.session_id, s.app_token, { clientId: "ph2" });
    expect(await agent.next((f) => f.type === "presence" && f.apps === 2)).toBeTruthy();
    expect(await app.next((f) => f.type === "presence" && f.apps === 2)).toBeTruthy();
    app2.close();
    await agent.next((f) => f.type === "presence" && f.apps === 1);
    await app.next((f) => f.type === "presence" && f.apps === 1);
    expect((await getStatus(s)).apps).toBe(1);
    closeAll(agent, app);
  });
});
