// Security (issue 4 §3, contract §2): the Origin of browser connections. Same origin and the operator's
// ALLOWED_ORIGINS are accepted; any other origin gets 403 on the socket and on every API route, before
// anything happens; requests without Origin (agents, CLIs) are not affected.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { TARGETS, useTarget } from "../helpers/contract-targets.js";
import { connect, ECHO, http, Pool, refused, wsUrl } from "../helpers/raw-client.js";
import { startRelay, type RunningRelay } from "../helpers/relay.js";

const ALLOWED = "https://ok.example";
const FOREIGN = ["https://evil.example", "null", "https://ok.example.evil.example", "http://ok.example", "https://ok.example:8443"];

/** Every API route with a browser Origin: the statuses. */
async function apiStatuses(base: string, s: SessionCreated, key: string, origin: string): Promise<Record<string, number>> {
  const h = { origin };
  const sid = s.session_id;
  return {
    create: (await http(`${base}/api/sessions`, { method: "POST", token: key, headers: h })).status,
    status: (await http(`${base}/api/sessions/${sid}`, { token: s.app_token, headers: h })).status,
    call: (
      await http(`${base}/api/sessions/${sid}/calls?wait=0`, {
        method: "POST",
        token: s.agent_token,
        headers: h,
        body: JSON.stringify({ name: "echo", call_id: `o-${origin.length}-${Math.random()}` }),
      })
    ).status,
    result: (await http(`${base}/api/sessions/${sid}/calls/none?wait=0`, { token: s.agent_token, headers: h })).status,
    ws_app: (await refused(wsUrl(base, sid), { token: s.app_token, origin }).catch(() => ({ status: 101 }))).status,
    ws_agent: (await refused(wsUrl(base, sid), { token: s.agent_token, origin }).catch(() => ({ status: 101 }))).status,
    delete: (await http(`${base}/api/sessions/${sid}`, { method: "DELETE", token: s.agent_token, headers: h })).status,
  };
}

describe("relay with ALLOWED_ORIGINS=https://ok.example", () => {
  let relay: RunningRelay;
  const pool = new Pool(() => relay.url);
  beforeAll(async () => {
    relay = await startRelay({ vars: { ALLOWED_ORIGINS: ` ${ALLOWED} , https://second.example` } });
  });
  afterAll(async () => relay?.stop());
  afterEach(() => pool.closeAll());

  it.each(FOREIGN)("refuses the origin %s with 403 on every API route and the socket, changing nothing", async (origin) => {
    const s = await pool.session(DEV_RELAY_KEY);
    const got = await apiStatuses(relay.url, s, DEV_RELAY_KEY, origin);
    expect(got).toEqual({ create: 403, status: 403, call: 403, result: 403, ws_app: 403, ws_agent: 403, delete: 403 });
    const st = await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.agent_token });
    expect(st.status).toBe(200);
    expect((st.json as { pending_calls: number }).pending_calls).toBe(0);
  });

  it("answers the 403 with a JSON error body that names no token", async () => {
    const s = await pool.session(DEV_RELAY_KEY);
    const r = await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.app_token, headers: { origin: "https://evil.example" } });
    expect(r.status).toBe(403);
    expect((r.json as { error: { code: string; message: string } }).error.code).toEqual(expect.any(String));
    expect(r.text).not.toContain(s.app_token);
    const w = await refused(wsUrl(relay.url, s.session_id), { token: s.app_token, via: "query", origin: "https://evil.example" });
    expect(w.status).toBe(403);
    expect(w.body).not.toContain(s.app_token);
  });

  it("accepts the relay's own origin on the socket and the API", async () => {
    const own = new URL(relay.url).origin;
    const s = await pool.session(DEV_RELAY_KEY);
    const app = pool.track(await connect(wsUrl(relay.url, s.session_id), { token: s.app_token, via: "subprotocol", origin: own }));
    expect((await app.next(() => true)).type).toBe("hello");
    expect((await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.app_token, headers: { origin: own } })).status).toBe(200);
  });

  it.each([ALLOWED, "https://second.example"])("accepts the configured origin %s (with CORS headers for it)", async (origin) => {
    const s = await pool.session(DEV_RELAY_KEY);
    const app = pool.track(await connect(wsUrl(relay.url, s.session_id), { token: s.app_token, via: "subprotocol", origin }));
    expect((await app.next(() => true)).type).toBe("hello");
    app.send({ type: "tool.list", tools: [ECHO] });
    await app.sync();
    const st = await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.app_token, headers: { origin } });
    expect(st.status).toBe(200);
    expect(st.headers.get("access-control-allow-origin")).toBe(origin);
    const pre = await fetch(`${relay.url}/api/sessions/${s.session_id}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });
    expect(pre.status).toBeLessThan(300);
    expect(pre.headers.get("access-control-allow-origin")).toBe(origin);
    expect(pre.headers.get("access-control-allow-headers") ?? "").toMatch(/authorization/i);
    const created = await http(`${relay.url}/api/sessions`, { method: "POST", token: DEV_RELAY_KEY, headers: { origin } });
    expect(created.status).toBe(201);
  });

  it("does not hand CORS headers to a foreign origin's preflight", async () => {
    const pre = await fetch(`${relay.url}/api/sessions`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    await pre.body?.cancel();
  });

  it("does not affect requests without Origin (agents, CLIs)", async () => {
    const s = await pool.session(DEV_RELAY_KEY);
    const agent = await pool.agent(s);
    expect(agent.closed).toBeUndefined();
    expect((await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.agent_token })).status).toBe(200);
  });
});

// The direct LAN mode has no ALLOWED_ORIGINS: only its own origin (and no Origin) may connect.
describe.each(TARGETS.filter((t) => t.kind === "lan"))("$name", (tc) => {
  describe.skipIf(tc.skip !== undefined)("Origin", () => {
    const run = useTarget(tc);
    const pool = run.pool;

    it("refuses a foreign origin with 403 on the socket and the API; accepts its own origin", async () => {
      const s = await pool.session(run.T.key);
      for (const origin of ["https://evil.example", "null"]) {
        expect((await refused(wsUrl(run.T.url, s.session_id), { token: s.app_token, origin })).status).toBe(403);
        expect((await http(`${run.T.url}/api/sessions/${s.session_id}`, { token: s.app_token, headers: { origin } })).status).toBe(403);
        expect((await http(`${run.T.url}/api/sessions/${s.session_id}`, { method: "DELETE", token: s.agent_token, headers: { origin } })).status).toBe(403);
      }
      const own = new URL(run.T.url).origin;
      const app = pool.track(await connect(wsUrl(run.T.url, s.session_id), { token: s.app_token, origin: own }));
      expect((await app.next(() => true)).type).toBe("hello");
    });
  });
});
