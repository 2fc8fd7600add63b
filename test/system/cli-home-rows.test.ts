// Issue 28 items 2 and 3 on the agent's side, against the real relay (and the in-process LAN relay for the
// hook): switching E2E on ends the plaintext session its sealed one replaces, `lineup sessions` lists the rows
// the phone lists (same names), `lineup status` shows "waiting" only while a call waits, and a permission hook
// that exits puts the session's status back instead of leaving its "waiting" behind.
import { hostname } from "node:os";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { ensureSession, probeSession } from "../../adapter/client/ensure.js";
import { findInbox } from "../../adapter/client/state.js";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { PERMISSION } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { InboxState } from "../../shared/contract/inbox.js";
import type { SessionStatus } from "../../shared/contract/protocol.js";
import { appClient, newSession, runCli, tempDir } from "../helpers/adapter-helpers.js";
import { permissionRequest, project, runHook } from "../helpers/hooks-helpers.js";
import { freePort } from "../helpers/relay.js";

const relay = inject("relayUrl");
const host = hostname().slice(0, 64);

const envFor = (stateDir: string): Record<string, string> => ({
  LINEUP_RELAY_URL: relay,
  LINEUP_RELAY_KEY: DEV_RELAY_KEY,
  LINEUP_STATE_DIR: stateDir,
  LINEUP_SESSION: "",
  LINEUP_TOKEN: "",
  LINEUP_GUEST_LINK: "",
});

async function inboxState(stateDir: string): Promise<InboxState> {
  const r = await fetch(`${relay}/api/inbox`, { headers: { authorization: `Bearer ${findInbox(stateDir, relay)!.machineCredential}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as InboxState;
}

describe("one session per project across E2E, listed as the phone lists it", { timeout: 120_000 }, () => {
  it("lineup e2e on: the next session of the project is sealed and the plaintext one it replaces is ended on the relay; lineup sessions lists one row by the project's name", async () => {
    const stateDir = tempDir();
    const projB = join(stateDir, "projB");
    mkdirSync(projB);
    const plain = await ensureSession({ relayUrl: relay, stateDir, cwd: projB, log: () => {} });
    expect(plain.sealed).not.toBe(true);
    const on = await runCli(["e2e", "on", "--json"], envFor(stateDir), projB);
    expect(on.code, on.stderr).toBe(0);
    const lines: string[] = [];
    const sealed = await ensureSession({ relayUrl: relay, stateDir, cwd: projB, log: (l) => lines.push(l) });
    expect(sealed.sealed).toBe(true);
    expect(sealed.sessionId).not.toBe(plain.sessionId);
    expect(lines.join("\n")).toContain(`ended the plaintext session ${plain.sessionId}`);
    expect(await probeSession(relay, plain.sessionId, plain.agentToken)).toBe("gone");
    const st = await inboxState(stateDir);
    expect(st.sessions.map((s) => s.session_id)).toEqual([sealed.sessionId]);

    const list = await runCli(["sessions"], envFor(stateDir), projB);
    expect(list.code, list.stderr).toBe(0);
    const rows = list.stdout.split("\n").filter((l) => l.startsWith("  ") && l.includes(sealed.sessionId));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(`projB · ${host}`);
    expect(rows[0]).toContain("sealed");
    expect(list.stdout).not.toContain(`  projB · ${host}  agent offline  ${projB}  ${plain.sessionId}`);
  });

  it('lineup status says nothing of a left-over "waiting" while no call is open (a permission hook that was killed left it)', async () => {
    const stateDir = tempDir();
    const cwd = join(stateDir, "hooks-project");
    mkdirSync(cwd);
    const s = await ensureSession({ relayUrl: relay, stateDir, cwd, log: () => {} });
    const ws = new WebSocket(`${relay.replace(/^http/, "ws")}/api/sessions/${s.sessionId}/ws?client_id=hook-1`, {
      headers: { authorization: `Bearer ${s.agentToken}` },
    });
    await new Promise((r, j) => (ws.once("open", r), ws.once("error", j)));
    try {
      ws.send(JSON.stringify({ type: "status", state: "waiting", detail: "permission: Bash" }));
      for (;;) {
        const r = await fetch(`${relay}/api/sessions/${s.sessionId}`, { headers: { authorization: `Bearer ${s.agentToken}` } });
        if (((await r.json()) as SessionStatus).agent.status?.state === "waiting") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const st = await runCli(["status"], envFor(stateDir), cwd);
      expect(st.code, st.stderr).toBe(0);
      expect(st.stdout).toMatch(/^agent\s+online$/m);
      expect(st.stdout).not.toContain("waiting");
    } finally {
      ws.close();
    }
  });
});

describe("a permission hook's status", { timeout: 90_000 }, () => {
  const TOKEN = "home-rows-lan-token-0123456789";
  let lan: LanServer;
  beforeAll(async () => {
    lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
  });
  afterAll(async () => {
    await lan?.close();
  });

  it('is put back when the hook exits: the session does not say "waiting" after the human answered', async () => {
    const p = project({ ask: ["Bash(git push *)"] });
    const s = await newSession(lan.url, TOKEN);
    const app = await appClient(lan.url, s.session_id, s.app_token, [PERMISSION]);
    try {
      const env = { LINEUP_RELAY_URL: lan.url, LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token, LINEUP_STATE_DIR: p.stateDir };
      const run = runHook(["permission-request", "--wait", "30"], permissionRequest(p.dir, "Bash", { command: "git push origin main" }), env, p.dir);
      const call = await app.next((f) => f.type === "tool.call" && f.name === "permission", 20_000);
      app.send({ type: "tool.result", call_id: call.call_id, name: "permission", result: { message: "allow", behavior: "allow" } });
      expect((await run).code).toBe(0);
      const r = await fetch(`${lan.url}/api/sessions/${s.session_id}`, { headers: { authorization: `Bearer ${s.agent_token}` } });
      const st = (await r.json()) as SessionStatus;
      expect(st.pending_calls).toBe(0);
      expect(st.agent.status?.state).toBe("idle");
    } finally {
      await app.close();
    }
  });
});
