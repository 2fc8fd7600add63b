// The inbox (docs/inbox.md) from outside, on both edges: creating it, pairing a device once for every
// session, device identity in sessions, the Waiting list, answered-by on the other devices, revocation.
import { describe, expect, it } from "vitest";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { connect, ECHO, http, refused, RawClient, tryConnect, wsUrl, type Frame } from "../helpers/raw-client.js";
import type { CodeIssued, DevicePaired, InboxState, MachineCreated } from "../../shared/contract/inbox.js";
import { ASK_QUESTION } from "../../shared/contract/builtin-tools.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { InboxView } from "../helpers/inbox-view.js";

const ASK = ASK_QUESTION;
const code = (r: { json: unknown }) => (r.json as { error: { code: string } }).error.code;

describe.each(TARGETS)("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("inbox: pair once, every session, revoke one device", () => {
    const run = useTarget(tc);
    const pool = run.pool;
    const api = (path: string, init: RequestInit & { token?: string } = {}) => http(`${run.T.url}${path}`, init);

    async function inbox(): Promise<MachineCreated> {
      const r = await api("/api/inboxes", { method: "POST", token: run.T.key, body: JSON.stringify({ machine_name: "laptop" }) });
      expect(r.status).toBe(201);
      return r.json as MachineCreated;
    }
    async function session(m: MachineCreated, dir: string): Promise<SessionCreated> {
      const r = await api("/api/inbox/sessions", { method: "POST", token: m.machine_credential, body: JSON.stringify({ project_dir: dir, host: "laptop" }) });
      expect(r.status).toBe(201);
      return r.json as SessionCreated;
    }
    async function pair(m: MachineCreated | DevicePaired, name: string): Promise<DevicePaired> {
      const token = "machine_credential" in m ? m.machine_credential : m.device_credential;
      const p = await api("/api/inbox/pairings", { method: "POST", token });
      expect(p.status).toBe(201);
      const issued = p.json as CodeIssued;
      expect(issued.url).toMatch(/\/#pair=/);
      const r = await api("/api/pair", { method: "POST", body: JSON.stringify({ code: issued.code, name }) });
      expect(r.status).toBe(201);
      return r.json as DevicePaired;
    }
    const deviceSocket = async (s: SessionCreated, d: DevicePaired, clientId?: string) =>
      pool.track(await connect(wsUrl(run.T.url, s.session_id), { token: d.device_credential, via: "subprotocol", ...(clientId ? { clientId } : {}) }));
    const inboxSocket = (d: DevicePaired) => connect(`${run.T.url.replace(/^http/, "ws")}/api/inbox/ws`, { token: d.device_credential, via: "subprotocol" });

    it("RELAY_KEY creates an inbox; a wrong key gets 401; the machine credential reads it, nothing else does", async () => {
      expect((await api("/api/inboxes", { method: "POST", token: "wrong-key-0123456789" })).status).toBe(401);
      const m = await inbox();
      expect(m.machine_credential).toMatch(/^lum1\./);
      const st = await api("/api/inbox", { token: m.machine_credential });
      expect(st.status).toBe(200);
      expect((st.json as InboxState).machines.map((x) => x.name)).toEqual(["laptop"]);
      expect((await api("/api/inbox", { token: m.machine_credential.slice(0, -1) + (m.machine_credential.endsWith("A") ? "B" : "A") })).status).toBe(401);
      expect((await api("/api/inbox")).status).toBe(401);
    });

    it("a pairing code is single-use: the second redeem gets 404 invalid_code, and a malformed one too", async () => {
      const m = await inbox();
      const issued = (await api("/api/inbox/pairings", { method: "POST", token: m.machine_credential })).json as CodeIssued;
      expect((await api("/api/pair", { method: "POST", body: JSON.stringify({ code: issued.code }) })).status).toBe(201);
      const again = await api("/api/pair", { method: "POST", body: JSON.stringify({ code: issued.code }) });
      expect(again.status).toBe(404);
      expect(code(again)).toBe("invalid_code");
      expect(code(await api("/api/pair", { method: "POST", body: JSON.stringify({ code: "nonsense" }) }))).toBe("invalid_code");
    });

    it("one paired device reaches every session of the inbox (made before or after pairing) and lists them by label", async () => {
      const m = await inbox();
      const a = await session(m, "/home/me/api-server");
      const d = await pair(m, "Pixel");
      const b = await session(m, "/home/me/web");
      const st = (await api("/api/inbox", { token: d.device_credential })).json as InboxState;
      expect(st.you).toEqual({ kind: "device", id: d.device_id });
      expect(st.sessions.map((s) => s.label).sort()).toEqual(["api-server · laptop", "web · laptop"]);
      for (const s of [a, b]) {
        const c = await deviceSocket(s, d);
        const hello = await c.next(() => true);
        expect(hello.type).toBe("hello");
        expect((hello as Frame & { client_id: string }).client_id).toBe(d.device_id);
        expect((await api(`/api/sessions/${s.session_id}`, { token: d.device_credential })).status).toBe(200);
      }
      // Not a session of its inbox: refused before any session object is touched.
      const other = await pool.session(run.T.key);
      expect((await api(`/api/sessions/${other.session_id}`, { token: d.device_credential })).status).toBe(401);
      // A device credential is an app's, never an agent's.
      expect(
        (await api(`/api/sessions/${a.session_id}/calls`, { method: "POST", token: d.device_credential, body: JSON.stringify({ name: "x" }) })).status,
      ).toBe(403);
    });

    it("nobody else can take a device's client id: another device gets 403 client_id_bound, a v1 app token 403 client_id_reserved", async () => {
      const m = await inbox();
      const s = await session(m, "/p");
      const d1 = await pair(m, "one");
      const d2 = await pair(m, "two");
      const c1 = await deviceSocket(s, d1);
      await c1.next("hello");
      const r1 = await refused(wsUrl(run.T.url, s.session_id), { token: d2.device_credential, via: "subprotocol", clientId: d1.device_id });
      expect(r1.status).toBe(403);
      expect(r1.body).toContain("client_id_bound");
      const r2 = await refused(wsUrl(run.T.url, s.session_id), { token: s.app_token, clientId: d1.device_id });
      expect(r2.status).toBe(403);
      expect(r2.body).toContain("client_id_reserved");
      // The first device is still connected and in charge.
      await c1.sync();
      expect(c1.closed).toBeUndefined();
    });

    it("the inbox socket shows a waiting call with its question live; the other device learns what was answered and by whom", async () => {
      const m = await inbox();
      const s = await session(m, "/home/me/api");
      const d1 = await pair(m, "Pixel 8");
      const d2 = await pair(m, "Laptop browser");
      const live = new InboxView(pool.track(await inboxSocket(d2)));
      const first = await live.next();
      expect(first.sessions).toHaveLength(1);
      const agent = await pool.agent(s);
      const c1 = await deviceSocket(s, d1);
      const c2 = await deviceSocket(s, d2);
      await c1.next("hello");
      await c2.next("hello");
      await pool.register(c1, agent, [ASK]);
      c2.send({ type: "tool.list", tools: [ASK] });
      await c2.sync();
      agent.send({ type: "tool.call", call_id: "q1", name: "ask_question", arguments: { question: "Deploy now?", project_directory: "/home/me/api" } });
      const waiting = await live.next((st) => (st.sessions[0]?.waiting.length ?? 0) > 0);
      expect(waiting.sessions[0]!.waiting[0]).toMatchObject({ call_id: "q1", name: "ask_question", text: "Deploy now?" });
      expect(waiting.sessions[0]!.pending).toBe(1);
      expect(waiting.sessions[0]!.agent_online).toBe(true);
      await c1.next("tool.call");
      c1.send({ type: "tool.result", call_id: "q1", result: { message: "yes" } });
      const cancel = await c2.next((f) => f.type === "tool.cancel");
      expect(cancel).toMatchObject({ call_id: "q1", reason: "answered", answered_by: "Pixel 8", answer: "yes" });
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "q1", result: { message: "yes" } });
      await live.next((st) => st.sessions[0]?.pending === 0);
    });

    it("an answer from a guest link (a v1 app token) is named by its client id on the devices", async () => {
      const m = await inbox();
      const s = await session(m, "/guest");
      const d = await pair(m, "phone");
      const agent = await pool.agent(s);
      const dev = await deviceSocket(s, d);
      await dev.next("hello");
      await pool.register(dev, agent, [ASK]);
      const guest = await pool.app(s, { clientId: "guest-laptop" });
      guest.send({ type: "tool.list", tools: [ASK] });
      await guest.sync();
      agent.send({ type: "tool.call", call_id: "g1", name: "ask_question", arguments: { question: "Merge?", project_directory: "/guest" } });
      await guest.next("tool.call");
      await dev.next("tool.call");
      guest.send({ type: "tool.result", call_id: "g1", result: { message: "merge it" } });
      expect(await dev.next("tool.cancel")).toMatchObject({ call_id: "g1", reason: "answered", answered_by: "guest-laptop", answer: "merge it" });
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "g1", result: { message: "merge it" } });
    });

    it("results come only from a client the call went to or that serves it: a v1 app that never had it gets unknown_call", async () => {
      const m = await inbox();
      const s = await session(m, "/p");
      const d = await pair(m, "phone");
      const agent = await pool.agent(s);
      const dev = await deviceSocket(s, d);
      await dev.next("hello");
      await pool.register(dev, agent, [ECHO]);
      const stranger = await pool.app(s); // registers nothing
      agent.send({ type: "tool.call", call_id: "e1", name: ECHO.name, arguments: { text: "hi" } });
      await dev.next("tool.call");
      stranger.send({ type: "tool.result", call_id: "e1", result: { message: "forged" } });
      expect(await stranger.next("error")).toMatchObject({ code: "unknown_call", call_id: "e1" });
      dev.send({ type: "tool.result", call_id: "e1", result: { message: "hi" } });
      expect(await agent.next("tool.result")).toMatchObject({ result: { message: "hi" } });
    });

    it("revoking a device closes its sockets everywhere with 4401 at once, refuses its credential with 401, and leaves the other device alone", async () => {
      const m = await inbox();
      const [a, b] = [await session(m, "/a"), await session(m, "/b")];
      const lost = await pair(m, "lost phone");
      const kept = await pair(m, "tablet");
      const ia = await deviceSocket(a, lost);
      const ib = await deviceSocket(b, lost);
      const ka = await deviceSocket(a, kept);
      for (const c of [ia, ib, ka]) await c.next("hello");
      const live = pool.track(await inboxSocket(lost));
      await live.next("inbox");
      const t0 = Date.now();
      const del = await api(`/api/inbox/devices/${lost.device_id}`, { method: "DELETE", token: m.machine_credential });
      expect(del.status).toBe(204);
      expect(await live.next("revoked")).toMatchObject({ type: "revoked" });
      for (const c of [ia, ib]) expect(await c.next((f) => f.type === "error" && f.code === "revoked")).toBeTruthy();
      expect(Date.now() - t0).toBeLessThan(5000);
      // Cut off at once: a call made now never reaches the revoked connection.
      const agent = await pool.agent(a);
      await pool.register(ka, agent, [ECHO]);
      agent.send({ type: "tool.call", call_id: "after", name: ECHO.name, arguments: { text: "x" } });
      await ka.next("tool.call");
      expect(await ia.none((f) => f.type === "tool.call", 300)).toBe(true);
      // The close frame (4401) went out with the revocation; workerd ends the TCP connection of a socket
      // closed from another request's context only at the object's next hibernation, and Node's ws waits
      // for that end before its close event (Chromium gives up after 2 s), so the event may come later.
      expect((await ia.waitClose(15_000)).code).toBe(4401);
      expect((await ib.waitClose(15_000)).code).toBe(4401);
      expect((await api("/api/inbox", { token: lost.device_credential })).status).toBe(401);
      expect((await api(`/api/sessions/${a.session_id}`, { token: lost.device_credential })).status).toBe(401);
      const again = await tryConnect(wsUrl(run.T.url, a.session_id), { token: lost.device_credential, via: "subprotocol" });
      expect(again instanceof RawClient ? 101 : again.status).toBe(401);
      await ka.sync();
      expect(ka.closed).toBeUndefined();
      const st = (await api("/api/inbox", { token: kept.device_credential })).json as InboxState;
      expect(st.devices.map((x) => x.name)).toEqual(["tablet"]);
      expect((await api(`/api/inbox/devices/${lost.device_id}`, { method: "DELETE", token: m.machine_credential })).status).toBe(404);
    });

    // Regression: revoking only closed the sockets, so the device's tools stayed in the agent's catalog for
    // 7 days, and the LAN server kept routing a revoked socket's frames until its TCP connection ended.
    it("a revoked device's tools leave the catalog at once, its open socket can no longer answer, and its call waits for another device", async () => {
      const m = await inbox();
      const a = await session(m, "/tools");
      const lost = await pair(m, "lost phone");
      const kept = await pair(m, "tablet");
      const agent = await pool.agent(a);
      const ia = await deviceSocket(a, lost);
      await ia.next("hello");
      await pool.register(ia, agent, [ECHO]);
      agent.send({ type: "tool.call", call_id: "held", name: ECHO.name, arguments: { text: "x" } });
      await ia.next((f) => f.type === "tool.call" && f.call_id === "held");
      // A client that ignores the close: it stops reading (so it never answers the close frame) and writes on.
      const tcp = (ia.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      tcp.pause();
      expect((await api(`/api/inbox/devices/${lost.device_id}`, { method: "DELETE", token: m.machine_credential })).status).toBe(204);
      const list = await agent.next("tool.list");
      expect((list.tools as { name: string }[]).map((t) => t.name)).not.toContain(ECHO.name);
      ia.ws.send(JSON.stringify({ type: "tool.result", call_id: "held", result: { message: "forged" } }));
      expect(await agent.none((f) => f.type === "tool.result", 800)).toBe(true);
      tcp.resume();
      // The call is still open: the other device registers the tool, gets the call, and its answer counts.
      const ka = await deviceSocket(a, kept);
      await ka.next("hello");
      await pool.register(ka, agent, [ECHO]);
      await ka.next((f) => f.type === "tool.call" && f.call_id === "held");
      ka.send({ type: "tool.result", call_id: "held", result: { message: "real" } });
      expect(await agent.next("tool.result")).toMatchObject({ call_id: "held", result: { message: "real" } });
    });

    it("a join code makes a second machine of the same inbox; its sessions appear to the devices; machines are revocable", async () => {
      const m = await inbox();
      const d = await pair(m, "phone");
      const j = await api("/api/inbox/join-codes", { method: "POST", token: d.device_credential });
      expect(j.status).toBe(201);
      expect((await api("/api/inbox/join-codes", { method: "POST", token: m.machine_credential })).status).toBe(403);
      const joined = await api("/api/join", { method: "POST", body: JSON.stringify({ code: (j.json as CodeIssued).code, machine_name: "desktop" }) });
      expect(joined.status).toBe(201);
      const m2 = joined.json as MachineCreated;
      expect(m2.inbox_id).toBe(m.inbox_id);
      await session(m2, "/srv/build");
      const st = (await api("/api/inbox", { token: d.device_credential })).json as InboxState;
      expect(st.machines.map((x) => x.name).sort()).toEqual(["desktop", "laptop"]);
      expect(st.sessions.map((s) => s.label)).toEqual(["build · laptop"]);
      expect((await api(`/api/inbox/machines/${m2.machine_id}`, { method: "DELETE", token: d.device_credential })).status).toBe(204);
      expect((await api("/api/inbox", { token: m2.machine_credential })).status).toBe(401);
    });

    it("a machine gets a fresh agent token for its own session; a session elsewhere gets 404", async () => {
      const m = await inbox();
      const s = await session(m, "/p");
      const t = await api(`/api/inbox/sessions/${s.session_id}/token`, { method: "POST", token: m.machine_credential });
      expect(t.status).toBe(200);
      const fresh = (t.json as { agent_token: string }).agent_token;
      expect((await api(`/api/sessions/${s.session_id}`, { token: fresh })).status).toBe(200);
      const other = await pool.session(run.T.key);
      expect((await api(`/api/inbox/sessions/${other.session_id}/token`, { method: "POST", token: m.machine_credential })).status).toBe(404);
    });

    it("renames a device and keeps the inbox policy with versions (409 on a stale base)", async () => {
      const m = await inbox();
      const d = await pair(m, "old");
      const r = await api(`/api/inbox/devices/${d.device_id}`, { method: "PATCH", token: d.device_credential, body: JSON.stringify({ name: "new" }) });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: d.device_id, name: "new" });
      expect(code(await api(`/api/inbox/devices/${d.device_id}`, { method: "PATCH", token: d.device_credential, body: JSON.stringify({ name: "" }) }))).toBe(
        "bad_request",
      );
      const p0 = (await api("/api/inbox/policy", { token: m.machine_credential })).json as { version: number };
      const put = await api("/api/inbox/policy", {
        method: "PUT",
        token: d.device_credential,
        body: JSON.stringify({ permissions: { allow: ["Bash(npm test:*)"] }, base_version: p0.version }),
      });
      expect(put.status).toBe(200);
      expect(put.json).toMatchObject({ permissions: { allow: ["Bash(npm test:*)"], ask: [], deny: [] }, version: p0.version + 1 });
      expect(
        (
          await api("/api/inbox/policy", {
            method: "PUT",
            token: d.device_credential,
            body: JSON.stringify({ permissions: { deny: ["Bash(rm:*)"] }, base_version: p0.version }),
          })
        ).status,
      ).toBe(409);
    });
  });
});
