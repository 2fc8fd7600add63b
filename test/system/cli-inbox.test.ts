// The adapter's half of the inbox (docs/inbox.md, docs/adapter.md "Pairing once"): the state file keeps the
// machine credential, every session the adapter creates is attached to the inbox, and `lineup pair / join /
// devices / machines` drive the real endpoints — against the relay (workerd) and the in-process LAN server
// when it has inboxes. An older relay (no inbox endpoints) is a forwarder that answers 404 for them.
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { InboxApi } from "../../adapter/client/inbox.js";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { findInbox, loadState, saveInbox, saveSession, type SavedInbox } from "../../adapter/client/state.js";
import { ensureSession, probeSession } from "../../adapter/client/ensure.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { InboxState } from "../../shared/contract/inbox.js";
import { freePort } from "../helpers/relay.js";
import { runCli, spawnCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";
import { startMcp } from "../helpers/mcp-helpers.js";

const LAN_TOKEN = "lan-inbox-test-token-0123456789";

interface Target {
  name: string;
  url: string;
  key: string;
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// The LAN server serves the same edge: it is a target once it mounts the inbox endpoints.
let lan: LanServer | undefined = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: LAN_TOKEN });
const lanHasInboxes = (await fetch(`${lan.url}/api/inboxes`, { method: "POST", headers: { authorization: `Bearer ${LAN_TOKEN}` }, body: "{}" })).status !== 404;
if (!lanHasInboxes) {
  await lan.close();
  lan = undefined;
}
afterAll(async () => {
  await lan?.close();
});

const targets: Target[] = [{ name: "relay (workerd)", url: inject("relayUrl"), key: DEV_RELAY_KEY }];
if (lan) targets.push({ name: "LAN server", url: lan.url, key: LAN_TOKEN });

function envFor(t: Target, stateDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    LINEUP_RELAY_URL: t.url,
    LINEUP_RELAY_KEY: t.key,
    LINEUP_STATE_DIR: stateDir,
    LINEUP_SESSION: "",
    LINEUP_TOKEN: "",
    LINEUP_GUEST_LINK: "",
    ...extra,
  };
}

async function inboxOf(t: Target, credential: string): Promise<{ status: number; state?: InboxState }> {
  const res = await fetch(`${t.url}/api/inbox`, { headers: { authorization: `Bearer ${credential}` } });
  return res.ok ? { status: res.status, state: (await res.json()) as InboxState } : (await res.body?.cancel(), { status: res.status });
}

/** `lineup pair --json` → the code of its link. */
async function pairCode(t: Target, stateDir: string): Promise<{ url: string; code: string }> {
  const r = await runCli(["pair", "--json"], envFor(t, stateDir), stateDir);
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout.split("\n").filter(Boolean);
  expect(lines).toHaveLength(1);
  const { url } = JSON.parse(lines[0]!) as { url: string };
  const code = new URLSearchParams(new URL(url).hash.slice(1)).get("pair") ?? undefined;
  expect(code).toBeTruthy();
  return { url, code: code! };
}

describe("the state file", () => {
  it("an old file without the inbox still loads, keeps its sessions when an inbox is saved, and stays 0600", () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const old = {
      version: 1,
      sessions: [
        {
          relayUrl: "http://127.0.0.1:8787",
          sessionId: "s1",
          agentToken: "a",
          appToken: "b",
          appUrl: "http://x/#s=s1&t=b",
          expiresAt: Date.now() + 60_000,
          clientId: "ag_1",
          cwd: "/p",
        },
      ],
      clients: { "s1/agent": "ag_1" },
    };
    writeFileSync(join(dir, "sessions.json"), JSON.stringify(old));
    chmodSync(join(dir, "sessions.json"), 0o600);
    const s = loadState(dir);
    expect(s.sessions).toEqual(old.sessions);
    expect(s.clients).toEqual(old.clients);
    expect(s.inboxes).toEqual([]);
    const inbox: SavedInbox = { relayUrl: "http://127.0.0.1:8787", inboxId: "abcdefghijkl", machineId: "mc_0123456789", machineCredential: "lum1.x" };
    expect(saveInbox(dir, inbox)).toBeUndefined();
    expect(loadState(dir).sessions).toEqual(old.sessions);
    expect(findInbox(dir, "http://127.0.0.1:8787/")).toEqual(inbox);
    // Replacing it returns the one replaced; a malformed entry on disk is ignored.
    expect(saveInbox(dir, { ...inbox, inboxId: "zzzzzzzzzzzz" })?.inboxId).toBe("abcdefghijkl");
    writeFileSync(join(dir, "sessions.json"), JSON.stringify({ ...old, inboxes: [{ relayUrl: 1 }, inbox] }));
    expect(loadState(dir).inboxes).toEqual([inbox]);
    expect(statSync(join(dir, "sessions.json")).mode & 0o777).toBe(0o600);
  });
});

describe.each(targets)("the inbox on the $name", { timeout: 120_000 }, (t) => {
  it("pair --json prints one JSON line with a #pair= link and saves the machine credential", async () => {
    const dir = tempDir();
    const { url } = await pairCode(t, dir);
    expect(url.startsWith(`${t.url}/#pair=`)).toBe(true);
    const inbox = findInbox(dir, t.url)!;
    expect(inbox.machineCredential).toMatch(/^lum1\./);
    expect(statSync(join(dir, "sessions.json")).mode & 0o777).toBe(0o600);
    // The text form: link and single-use/10-minute note on stderr, nothing on stdout.
    const text = await runCli(["pair", "--no-qr"], envFor(t, dir), dir);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe("");
    expect(text.stderr).toContain("#pair=");
    expect(text.stderr).toMatch(/single-use and valid 10 minutes/);
    expect(findInbox(dir, t.url)!.inboxId).toBe(inbox.inboxId); // the same inbox, not a new one
  });

  it("sessions of two project directories, created at once, are attached to one inbox", async () => {
    const state = tempDir();
    const [dirA, dirB] = [tempDir("lineup-proj-a-"), tempDir("lineup-proj-b-")];
    const [a, b, a2] = await Promise.all([dirA, dirB, dirA].map((cwd) => ensureSession({ relayUrl: t.url, relayKey: t.key, stateDir: state, cwd })));
    expect(a2!.sessionId).toBe(a!.sessionId);
    expect(b!.sessionId).not.toBe(a!.sessionId);
    const inbox = findInbox(state, t.url)!;
    expect(loadState(state).inboxes).toHaveLength(1);
    expect(a!.inboxId).toBe(inbox.inboxId);
    expect(b!.inboxId).toBe(inbox.inboxId);
    const st = (await inboxOf(t, inbox.machineCredential)).state!;
    expect(st.sessions.map((s) => s.session_id).sort()).toEqual([a!.sessionId, b!.sessionId].sort());
    const sa = st.sessions.find((s) => s.session_id === a!.sessionId)!;
    expect(sa.project_dir).toBe(a!.cwd);
    expect(sa.machine_id).toBe(inbox.machineId);
    // The saved session is reused on the next start, not created again.
    expect((await ensureSession({ relayUrl: t.url, relayKey: t.key, stateDir: state, cwd: a!.cwd })).sessionId).toBe(a!.sessionId);
  });

  it("a saved session whose token the relay refuses keeps its id: the machine credential gets a fresh agent token", async () => {
    const state = tempDir();
    const cwd = tempDir("lineup-proj-tok-");
    const first = await ensureSession({ relayUrl: t.url, relayKey: t.key, stateDir: state, cwd });
    // A token the relay refuses (as after a new token secret): its signature no longer matches.
    const bad = `${first.agentToken.slice(0, -4)}${first.agentToken.slice(-4) === "AAAA" ? "BBBB" : "AAAA"}`;
    saveSession(state, { ...first, agentToken: bad });
    expect(await probeSession(t.url, first.sessionId, bad)).toBe("denied");
    const said: string[] = [];
    const again = await ensureSession({ relayUrl: t.url, relayKey: t.key, stateDir: state, cwd, log: (l) => said.push(l) });
    expect(again.sessionId).toBe(first.sessionId);
    expect(again.agentToken).not.toBe(bad);
    expect(await probeSession(t.url, again.sessionId, again.agentToken)).toBe("alive");
    expect(said.join("\n")).toContain("fresh one");
    expect(loadState(state).sessions.find((x) => x.sessionId === first.sessionId)!.agentToken).toBe(again.agentToken);
  });

  it("devices lists a paired device, renames it, revokes it (its credential then gets 401); an unknown id exits 1", async () => {
    const dir = tempDir();
    const { code } = await pairCode(t, dir);
    const api = new InboxApi(t.url);
    const phone = await api.redeemPairing(code, "Test phone");
    expect((await inboxOf(t, phone.device_credential)).status).toBe(200);
    const env = envFor(t, dir);

    const list = await runCli(["devices", "--json"], env, dir);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trim().split("\n")).toHaveLength(1);
    const devices = JSON.parse(list.stdout) as { id: string; name: string; paired_at: number; last_seen: number }[];
    expect(devices).toEqual([
      expect.objectContaining({ id: phone.device_id, name: "Test phone", paired_at: expect.any(Number), last_seen: expect.any(Number) }),
    ]);
    const table = await runCli(["devices"], env, dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ID\s+NAME\s+PAIRED\s+LAST SEEN/);
    expect(table.stdout).toContain(phone.device_id);

    const ren = await runCli(["devices", "rename", phone.device_id, "Kitchen tablet"], env, dir);
    expect(ren.code, ren.stderr).toBe(0);
    expect((JSON.parse((await runCli(["devices", "--json"], env, dir)).stdout) as { name: string }[])[0]!.name).toBe("Kitchen tablet");

    const unknown = await runCli(["devices", "revoke", "dv_0000000000"], env, dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no device "dv_0000000000"/);

    const rev = await runCli(["devices", "revoke", phone.device_id], env, dir);
    expect(rev.code, rev.stderr).toBe(0);
    expect(rev.stdout).toContain(`revoked device ${phone.device_id}`);
    expect((await inboxOf(t, phone.device_credential)).status).toBe(401);
    expect(JSON.parse((await runCli(["devices", "--json"], env, dir)).stdout)).toEqual([]);
  });

  it("join CODE makes a second machine of the same inbox (no relay key needed); machines lists both; a revoked machine makes a new inbox", async () => {
    const first = tempDir();
    const { code } = await pairCode(t, first);
    const api = new InboxApi(t.url);
    const phone = await api.redeemPairing(code, "phone");
    const res = await fetch(`${t.url}/api/inbox/join-codes`, { method: "POST", headers: { authorization: `Bearer ${phone.device_credential}` } });
    expect(res.status).toBe(201);
    const joinCode = ((await res.json()) as { code: string }).code;

    // The second machine has an inbox of its own first: joining replaces it, and says so.
    const second = tempDir();
    await pairCode(t, second);
    const own = findInbox(second, t.url)!;
    const j = await runCli(["join", joinCode, "--name", "build box"], envFor(t, second, { LINEUP_RELAY_KEY: "not-the-key-but-not-needed" }), second);
    expect(j.code, j.stderr).toBe(0);
    expect(j.stderr).toContain(`replaced inbox ${own.inboxId}`);
    const joined = findInbox(second, t.url)!;
    const main = findInbox(first, t.url)!;
    expect(joined.inboxId).toBe(main.inboxId);
    expect(joined.machineId).not.toBe(main.machineId);
    // A used code is refused (exit 1).
    const again = await runCli(["join", joinCode], envFor(t, tempDir()), second);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/unknown, used or expired/);

    // Its sessions are created with the machine credential alone, in the shared inbox.
    const s = await ensureSession({ relayUrl: t.url, relayKey: "wrong-key-unused", stateDir: second, cwd: tempDir("lineup-proj-") });
    expect(s.inboxId).toBe(main.inboxId);
    const st = (await inboxOf(t, phone.device_credential)).state!;
    expect(st.sessions.find((x) => x.session_id === s.sessionId)?.machine_id).toBe(joined.machineId);

    const machines = await runCli(["machines", "--json"], envFor(t, first), first);
    expect(machines.code, machines.stderr).toBe(0);
    const list = JSON.parse(machines.stdout) as { id: string; name: string; this_machine: boolean }[];
    expect(list.map((m) => m.id).sort()).toEqual([main.machineId, joined.machineId].sort());
    expect(list.find((m) => m.id === joined.machineId)).toMatchObject({ name: "build box", this_machine: false });
    expect(list.find((m) => m.id === main.machineId)?.this_machine).toBe(true);

    // Revoked: its credential is refused, the adapter drops it and creates a new inbox (with the relay key).
    const rev = await runCli(["machines", "revoke", joined.machineId], envFor(t, first), first);
    expect(rev.code, rev.stderr).toBe(0);
    expect(rev.stdout).toContain("the sessions it created have ended");
    // Issue 26 §8: its session ended with it: the agent token gets 404, the phone's list drops it.
    expect((await fetch(`${t.url}/api/sessions/${s.sessionId}`, { headers: { authorization: `Bearer ${s.agentToken}` } })).status).toBe(404);
    expect((await inboxOf(t, phone.device_credential)).state!.sessions.map((x) => x.session_id)).not.toContain(s.sessionId);
    expect((await inboxOf(t, joined.machineCredential)).status).toBe(401);
    const said: string[] = [];
    const fresh = await ensureSession({ relayUrl: t.url, relayKey: t.key, stateDir: second, cwd: tempDir("lineup-proj-"), log: (l) => said.push(l) });
    expect(said.join("\n")).toMatch(/refused this machine's inbox credential/);
    const renewed = findInbox(second, t.url)!;
    expect(renewed.inboxId).not.toBe(main.inboxId);
    expect(fresh.inboxId).toBe(renewed.inboxId);
    expect((await runCli(["machines", "revoke", "mc_0000000000"], envFor(t, first), first)).code).toBe(1);
  });

  it("connect prints a pairing link while no device is paired, then the paired-device count (the app link only with --guest-link)", async () => {
    const dir = tempDir();
    const env = envFor(t, dir);
    const first = spawnCli(["connect", "--no-qr"], env, dir);
    cleanups.push(() => first.kill("SIGKILL"));
    const link = await waitFor(() => /(http:\/\/\S+#pair=([^&\s]+))/.exec(first.output().stderr) ?? undefined, "the pairing link", 60_000);
    expect(first.output().stderr).not.toContain("#s=");
    first.kill("SIGINT");
    await first.done;
    await new InboxApi(t.url).redeemPairing(decodeURIComponent(link[2]!), "phone");
    const second = spawnCli(["connect", "--no-qr", "--guest-link"], env, dir);
    cleanups.push(() => second.kill("SIGKILL"));
    await waitFor(() => second.output().stderr.includes("paired devices: 1") || undefined, "the paired-device line", 60_000);
    await waitFor(() => /guest link .*#s=/.test(second.output().stderr) || undefined, "the guest link");
    expect(second.output().stderr).not.toContain("#pair=");
    second.kill("SIGINT");
    expect((await second.done).code).toBe(0);
  });

  it("mcp prints the pairing link on stderr, nothing human-readable on stdout", async () => {
    const state = tempDir();
    const mcp = await startMcp({ LINEUP_RELAY_URL: t.url, LINEUP_RELAY_KEY: t.key, LINEUP_STATE_DIR: state }, { cwd: tempDir("lineup-proj-") });
    cleanups.push(() => mcp.close());
    await mcp.waitStderr(/#pair=/, 60_000);
    expect(mcp.stderr()).not.toMatch(/#s=/);
    // stdout is the protocol: the client would have failed on anything else.
    expect(mcp.errors).toEqual([]);
  });
});

describe("an older relay without inboxes", { timeout: 120_000 }, () => {
  it("sessions are created with POST /api/sessions as before, and pair says there are no inboxes", async () => {
    // Forwards everything to the relay but answers the inbox endpoints 404, as a relay from before them.
    const relay = inject("relayUrl");
    const server: Server = createServer((req, res) => {
      void (async () => {
        if (/^\/api\/inbox/.test(req.url ?? "")) {
          res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":"not_found","message":"no such endpoint"}}');
          return;
        }
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
        const up = await fetch(`${relay}${req.url}`, { method: req.method ?? "GET", headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) });
        res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await up.arrayBuffer()));
      })().catch(() => res.destroy());
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const addr = server.address();
    const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
    const dir = tempDir();
    const s = await ensureSession({ relayUrl: url, relayKey: DEV_RELAY_KEY, stateDir: dir, cwd: dir });
    expect(s.inboxId).toBeUndefined();
    expect(s.appUrl).toContain("#s=");
    expect(loadState(dir).inboxes).toEqual([]);
    const r = await runCli(["pair", "--json"], { LINEUP_RELAY_URL: url, LINEUP_STATE_DIR: dir }, dir);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/has no inboxes/);
  });
});

describe("help", () => {
  it("lists the inbox commands and documents each", async () => {
    const dir = tempDir();
    const main = await runCli(["--help"], {}, dir);
    for (const c of ["pair", "devices", "machines", "join"]) expect(main.stdout).toMatch(new RegExp(`^  ${c}\\b`, "m"));
    const pair = await runCli(["pair", "--help"], {}, dir);
    expect(pair.code).toBe(0);
    expect(pair.stdout).toMatch(/single-use and valid 10 minutes/);
    expect((await runCli(["devices", "--help"], {}, dir)).stdout).toMatch(/lineup devices revoke ID/);
    const bad = await runCli(["join", "not-a-code"], { LINEUP_STATE_DIR: dir }, dir);
    expect(bad.code).toBe(2);
  });

  it("without an inbox, devices --json is an empty array; the credential is not sent over plain http to another host", async () => {
    const dir = tempDir();
    const none = await runCli(["devices", "--json"], { LINEUP_STATE_DIR: dir, LINEUP_RELAY_URL: inject("relayUrl") }, dir);
    expect(none.code).toBe(0);
    expect(none.stdout.trim()).toBe("[]");
    expect(none.stderr).toMatch(/no inbox/);
    const insecure = await runCli(["pair", "--json"], { LINEUP_STATE_DIR: dir, LINEUP_RELAY_URL: "http://192.0.2.1:9", LINEUP_INSECURE_HTTP: "" }, dir);
    expect(insecure.code).toBe(2);
    expect(insecure.stdout).toBe("");
    expect(insecure.stderr).toMatch(/plain http/);
  });
});
