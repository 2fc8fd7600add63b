// Issue 26 §8 from outside, on both edges (the relay under wrangler dev, and adapter/lan/server.ts):
// revoking an agent machine ends every session it created within 5 s — its sockets close with the terminal
// 4004, a caller waiting on HTTP gets 404, its tokens are refused for new sockets and HTTP, the phone's list
// drops it — while another machine's session of the same inbox keeps working.
import { describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { connect, ECHO, http, refused, wsUrl } from "../helpers/raw-client.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { InboxView } from "../helpers/inbox-view.js";

const code = (r: { json: unknown }) => (r.json as { error: { code: string } }).error.code;

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("revoking an agent machine ends its sessions", () => {
    const run = useTarget(tc);
    const pool = run.pool;
    const api = (path: string, init: RequestInit & { token?: string } = {}) => http(`${run.T.url}${path}`, init);

    async function setup(): Promise<{ m: MachineCreated; other: MachineCreated; phone: DevicePaired; s: SessionCreated; kept: SessionCreated }> {
      const made = await api("/api/inboxes", { method: "POST", token: run.T.key, body: JSON.stringify({ machine_name: "laptop" }) });
      expect(made.status).toBe(201);
      const m = made.json as MachineCreated;
      const pc = (await api("/api/inbox/pairings", { method: "POST", token: m.machine_credential })).json as CodeIssued;
      const phone = (await api("/api/pair", { method: "POST", body: JSON.stringify({ code: pc.code, name: "phone" }) })).json as DevicePaired;
      const jc = (await api("/api/inbox/join-codes", { method: "POST", token: phone.device_credential })).json as CodeIssued;
      const other = (await api("/api/join", { method: "POST", body: JSON.stringify({ code: jc.code, machine_name: "build box" }) })).json as MachineCreated;
      const session = async (mc: MachineCreated, dir: string) => {
        const r = await api("/api/inbox/sessions", { method: "POST", token: mc.machine_credential, body: JSON.stringify({ project_dir: dir }) });
        expect(r.status).toBe(201);
        return r.json as SessionCreated;
      };
      return { m, other, phone, s: await session(m, "/srv/api"), kept: await session(other, "/srv/web") };
    }
    const device = async (s: SessionCreated, d: DevicePaired) => {
      const c = pool.track(await connect(wsUrl(run.T.url, s.session_id), { token: d.device_credential, via: "subprotocol" }));
      await c.next("hello");
      return c;
    };

    it("its session ends within 5 s: sockets close with 4004, the HTTP caller gets 404, its tokens are refused, the list drops it; the other machine's session answers on", async () => {
      const { m, phone, s, kept } = await setup();
      const agent = await pool.agent(s);
      const app = await device(s, phone);
      await pool.register(app, agent, [ECHO]);
      const live = new InboxView(
        pool.track(await connect(`${run.T.url.replace(/^http/, "ws")}/api/inbox/ws`, { token: phone.device_credential, via: "subprotocol" })),
      );
      await live.next();
      // One call over the socket and one held on HTTP, both waiting for the phone when the session ends.
      agent.send({ type: "tool.call", call_id: "ws1", name: ECHO.name, arguments: { text: "socket" } });
      await app.next((f) => f.type === "tool.call" && f.call_id === "ws1");
      const held = api(`/api/sessions/${s.session_id}/calls?wait=20`, {
        method: "POST",
        token: s.agent_token,
        body: JSON.stringify({ call_id: "h1", name: ECHO.name, arguments: { text: "http" } }),
      });
      await app.next((f) => f.type === "tool.call" && f.call_id === "h1");

      expect((await api(`/api/inbox/machines/${m.machine_id}`, { method: "DELETE", token: phone.device_credential })).status).toBe(204);
      expect(await agent.waitClose(5000)).toMatchObject({ code: 4004, reason: "machine revoked" });
      expect((await app.waitClose(5000)).code).toBe(4004);
      const h = await held;
      expect(h.status).toBe(404);
      expect(code(h)).toBe("session_not_found");
      await live.next((st) => !JSON.stringify(st.sessions).includes(s.session_id));

      // Nothing of it works any more: new sockets and HTTP, with either token, or the phone's credential.
      expect((await refused(wsUrl(run.T.url, s.session_id), { token: s.agent_token })).status).toBe(404);
      expect((await refused(wsUrl(run.T.url, s.session_id), { token: phone.device_credential, via: "subprotocol" })).status).toBe(401);
      for (const token of [s.agent_token, s.app_token]) expect((await api(`/api/sessions/${s.session_id}`, { token })).status).toBe(404);
      const late = await api(`/api/sessions/${s.session_id}/calls?wait=0`, {
        method: "POST",
        token: s.agent_token,
        body: JSON.stringify({ call_id: "late", name: ECHO.name, arguments: { text: "x" } }),
      });
      expect(late.status).toBe(404);
      expect((await api(`/api/inbox/sessions/${s.session_id}/token`, { method: "POST", token: m.machine_credential })).status).toBe(401);
      const st = (await api("/api/inbox", { token: phone.device_credential })).json as InboxState;
      expect(st.sessions.map((x) => x.session_id)).toEqual([kept.session_id]);
      expect(st.machines.map((x) => x.name)).toEqual(["build box"]);

      // The other machine's session is untouched: a call still goes to the phone and back.
      const keptAgent = await pool.agent(kept);
      const keptApp = await device(kept, phone);
      await pool.register(keptApp, keptAgent, [ECHO]);
      keptAgent.send({ type: "tool.call", call_id: "k1", name: ECHO.name, arguments: { text: "still here" } });
      await keptApp.next((f) => f.type === "tool.call" && f.call_id === "k1");
      keptApp.send({ type: "tool.result", call_id: "k1", result: { message: "still here" } });
      expect(await keptAgent.next("tool.result")).toMatchObject({ call_id: "k1", result: { message: "still here" } });
    });

    it("a machine revoked from the CLI side (another machine's credential) ends its sessions too, and its credential can no longer make one", async () => {
      const { m, other, phone, s } = await setup();
      const agent = await pool.agent(s);
      expect((await api(`/api/inbox/machines/${m.machine_id}`, { method: "DELETE", token: other.machine_credential })).status).toBe(204);
      expect((await agent.waitClose(5000)).code).toBe(4004);
      expect((await api(`/api/sessions/${s.session_id}`, { token: s.agent_token })).status).toBe(404);
      expect((await api("/api/inbox/sessions", { method: "POST", token: m.machine_credential, body: "{}" })).status).toBe(401);
      expect(((await api("/api/inbox", { token: phone.device_credential })).json as InboxState).sessions).toHaveLength(1);
    });
  });
});
