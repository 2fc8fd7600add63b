// i29-agents (issue 29 item 3): Claude Code's Notification kinds `agent_needs_input` and `agent_completed`
// through the real bin — the thread says the agent needs you / finished, and the inbox's phones get a push
// "Claude needs you in <project>" / "Claude finished in <project>" that opens the session; the device showing
// that session is spared; one push per session a minute, shared with idle_prompt; a sealed session's push
// carries no words of Claude's message. The LAN server's shared push code, a fake push service on 127.0.0.1.
// Stdin as documented at https://code.claude.com/docs/en/hooks#notification (docs/permissions.md §7.3).
import { createServer, type IncomingMessage } from "node:http";
import { connect as tcp } from "node:net";
import { basename } from "node:path";
import { describe, expect, it } from "vitest";
import type { InboxState } from "../../shared/contract/inbox.js";
import type { PushAttentionMessage } from "../../shared/contract/push.js";
import { appClient, runCli, waitFor } from "../helpers/adapter-helpers.js";
import { SimDevice } from "../helpers/e2e-device.js";
import { project, runHook } from "../helpers/hooks-helpers.js";
import { lanWithPush } from "../helpers/lan-push.js";
import { connect } from "../helpers/raw-client.js";

const TOKEN = "hooks-notify-lan-token-0123456789";
const relay = lanWithPush(TOKEN);
const { call, subscribe } = relay;
const world = (names: string[]) => relay.world("/p/notify", names, "notify");

/**
 * A relay from before `reason`: the LAN server behind a proxy that answers a push/attention body carrying
 * `reason` with 400, as a strict zod body did (everything else, WebSocket upgrades included, passes through).
 */
async function olderRelay(target: string) {
  const t = new URL(target);
  const seen: unknown[] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((r) => {
      let b = "";
      req.on("data", (d: Buffer) => (b += d.toString()));
      req.on("end", () => r(b));
    });
  const server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      if (req.url === "/api/inbox/push/attention") {
        seen.push(JSON.parse(body));
        if ("reason" in (JSON.parse(body) as object)) {
          res.writeHead(400, { "content-type": "application/json" });
          return res.end(JSON.stringify({ error: { code: "bad_request", message: "Unrecognized key: reason" } }));
        }
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length")) as Record<string, string>;
      const r = await fetch(`${target}${req.url}`, { method: req.method!, headers, ...(body ? { body } : {}) });
      const back: Record<string, string> = {};
      r.headers.forEach((v, k) => {
        if (k !== "content-encoding" && k !== "transfer-encoding" && k !== "content-length") back[k] = v;
      });
      res.writeHead(r.status, back);
      res.end(Buffer.from(await r.arrayBuffer()));
    })();
  });
  server.on("upgrade", (req, socket, head) => {
    const up = tcp(Number(t.port), t.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i]!.toLowerCase() === "host" ? t.host : req.rawHeaders[i + 1]}`);
      up.write(`${lines.join("\r\n")}\r\n\r\n`);
      up.write(head);
      socket.pipe(up).pipe(socket);
    });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const a = server.address();
  return { url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** i29-room: the session's row in the inbox state (its `attention` is the home row's "needs you" / "finished"). */
const rowOf = async (credential: string, sid: string) =>
  (await call<InboxState>("GET", "/api/inbox", credential)).body.sessions.find((x) => x.session_id === sid);

const notification = (cwd: string, type: string, message: string) =>
  JSON.stringify({ session_id: "abc123", transcript_path: "/tmp/t.jsonl", cwd, hook_event_name: "Notification", message, notification_type: type });

describe("lineup hook notify: needs input and finished", () => {
  it("agent_needs_input: the thread says Claude needs you, the phone gets 'Claude needs you in <project>' with Claude's words; a completion within the minute shares the limit", async () => {
    const { m, s, devices } = await world(["Phone"]);
    const sub = devices[0]!.sub;
    const app = await appClient(relay.url, s.session_id, devices[0]!.d.device_credential, []);
    try {
      const p = project();
      const env = {
        LINEUP_RELAY_URL: relay.url,
        LINEUP_SESSION: s.session_id,
        LINEUP_TOKEN: s.agent_token,
        LINEUP_STATE_DIR: p.stateDir,
        LINEUP_MACHINE_CREDENTIAL: m.machine_credential,
      };
      const run = await runHook(["notify"], notification(p.dir, "agent_needs_input", "Claude needs your input to continue"), env, p.dir);
      expect([run.code, run.stdout]).toEqual([0, ""]);
      const text = ((await app.next("message", 10_000)).content as { text: string }[])[0]!.text;
      expect(text).toBe(`⏳ **Claude Code needs you** in \`${p.dir}\`.\n\n> Claude needs your input to continue`);
      await expect.poll(() => relay.fake.for(sub.endpoint).length, { timeout: 10_000 }).toBe(1);
      expect(relay.fake.problems).toEqual([]);
      expect((await rowOf(devices[0]!.d.device_credential, s.session_id))?.attention?.reason).toBe("needs_input");
      const msg = relay.fake.for(sub.endpoint)[0]!.msg as PushAttentionMessage;
      // The tag names the session: a tap opens it (docs/push.md).
      expect(msg).toMatchObject({
        kind: "attention",
        sid: s.session_id,
        call: "attention",
        title: "notify · box",
        body: `Claude needs you in ${basename(p.dir)}: Claude needs your input to continue`,
      });
      // Finished within the minute: the thread hears it, the phone is not buzzed again (one limit per session).
      const done = await runHook(["notify"], notification(p.dir, "agent_completed", "Done: 3 files changed"), env, p.dir);
      expect([done.code, done.stdout]).toEqual([0, ""]);
      expect(done.stderr).toMatch(/no push: .*one attention push per session a minute/);
      expect(((await app.next("message", 10_000)).content as { text: string }[])[0]!.text).toBe(
        `✅ **Claude Code finished** in \`${p.dir}\`.\n\n> Done: 3 files changed`,
      );
      expect(relay.fake.for(sub.endpoint)).toHaveLength(1);
      // Other kinds stay local: no thread message, no push.
      const auth = await runHook(["notify"], notification(p.dir, "auth_success", "Signed in"), env, p.dir);
      expect([auth.code, auth.stdout, auth.stderr]).toEqual([0, "", ""]);
      // i29-room: the home row follows the latest word even though its push was throttled; the phone opening the
      // session (its visibility frame on the LAN server's inbox socket) clears it.
      expect((await rowOf(devices[0]!.d.device_credential, s.session_id))?.attention?.reason).toBe("completed");
      const live = await connect(`${relay.url.replace(/^http/, "ws")}/api/inbox/ws`, { token: devices[0]!.d.device_credential, via: "subprotocol" });
      try {
        await live.next("inbox");
        live.send({ type: "visible", view: "session", session_id: s.session_id });
        await expect.poll(async () => (await rowOf(devices[0]!.d.device_credential, s.session_id))?.attention, { timeout: 10_000 }).toBeUndefined();
      } finally {
        await live.close();
      }
    } finally {
      await app.close();
    }
  }, 60_000);

  it("agent_completed: the device looking at that session is spared (logged as suppressed); another device gets 'Claude finished in <project>'", async () => {
    const { m, s, devices } = await world(["Pixel", "iPad"]);
    const [pixel, ipad] = devices as [(typeof devices)[0], (typeof devices)[0]];
    const live = await connect(`${relay.url.replace(/^http/, "ws")}/api/inbox/ws`, { token: ipad.d.device_credential, via: "subprotocol" });
    try {
      await live.next("inbox");
      live.send({ type: "visible", view: "session", session_id: s.session_id });
      await live.sync();
      const p = project();
      const env = {
        LINEUP_RELAY_URL: relay.url,
        LINEUP_SESSION: s.session_id,
        LINEUP_TOKEN: s.agent_token,
        LINEUP_STATE_DIR: p.stateDir,
        LINEUP_MACHINE_CREDENTIAL: m.machine_credential,
      };
      const run = await runHook(["notify", "--agent", "Claude"], notification(p.dir, "agent_completed", "All tests pass"), env, p.dir);
      expect([run.code, run.stdout]).toEqual([0, ""]);
      await expect.poll(() => relay.fake.for(pixel.sub.endpoint).length, { timeout: 10_000 }).toBe(1);
      expect((relay.fake.for(pixel.sub.endpoint)[0]!.msg as PushAttentionMessage).body).toBe(`Claude finished in ${basename(p.dir)}: All tests pass`);
      const log = async () =>
        (await call<{ log: { kind: string; outcome: string; device_id?: string }[] }>("GET", "/api/inbox/push", ipad.d.device_credential)).body.log;
      await expect.poll(async () => (await log()).filter((e) => e.kind === "attention").map((e) => e.outcome), { timeout: 10_000 }).toContain("suppressed");
      expect(relay.fake.for(ipad.sub.endpoint)).toHaveLength(0);
      // i29-room: the person is looking at that session, so its home row is not marked "finished".
      expect((await rowOf(pixel.d.device_credential, s.session_id))?.attention).toBeUndefined();
    } finally {
      await live.close();
    }
  }, 60_000);

  it("a sealed session: the push carries no text, only the reason (the service worker's own words), never Claude's message", async () => {
    const p = project();
    const env = { LINEUP_RELAY_URL: relay.url, LINEUP_RELAY_KEY: TOKEN, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir, LINEUP_E2E_POLL_MS: "300" };
    const cli = async (a: string[]) => {
      const r = await runCli(a, env, p.dir);
      expect(r.code, r.stderr).toBe(0);
      return r;
    };
    await cli(["e2e", "on", "--json"]);
    const { url } = JSON.parse((await cli(["pair", "--json"])).stdout.trim().split("\n").pop()!) as { url: string };
    const dev = await SimDevice.redeem(relay.url, url);
    expect(await dev.hello()).toBe(201);
    const sub = await subscribe(dev.p.credential, "notify-sealed");
    const run = await runHook(["notify"], notification(p.dir, "agent_needs_input", "The secret plan needs a decision"), env, p.dir);
    expect([run.code, run.stdout]).toEqual([0, ""]);
    const s = await waitFor(async () => (await dev.sessions()).find((x) => x.sealed === true), "the sealed session", 20_000);
    await expect.poll(() => relay.fake.for(sub.endpoint).length, { timeout: 10_000 }).toBe(1);
    const msg = relay.fake.for(sub.endpoint)[0]!.msg as PushAttentionMessage;
    expect(msg).toMatchObject({ kind: "attention", sid: s.session_id, body: "", reason: "needs_input" });
    expect(JSON.stringify(relay.fake.for(sub.endpoint)[0]!.msg)).not.toContain("secret plan");
  }, 90_000);

  it("Codex's Stop and Cursor's stop (their only 'done' signal) push '<agent> finished in <project>' with reason completed, like Claude's agent_completed", async () => {
    // Device names of their own: the fake service's endpoints are named after them, and other tests' pushes stay theirs.
    const codex = await world(["CodexPhone"]);
    const cursor = await world(["CursorTablet"]);
    const p = project();
    const envOf = (w: typeof codex) => ({
      LINEUP_RELAY_URL: relay.url,
      LINEUP_SESSION: w.s.session_id,
      LINEUP_TOKEN: w.s.agent_token,
      LINEUP_STATE_DIR: p.stateDir,
      LINEUP_MACHINE_CREDENTIAL: w.m.machine_credential,
    });
    // Codex Stop input: codex-rs/hooks/schema/generated/stop.command.input.schema.json (openai/codex).
    const codexStop = JSON.stringify({
      session_id: "019a-codex-session",
      turn_id: "turn-9",
      transcript_path: null,
      cwd: p.dir,
      model: "gpt-5",
      permission_mode: "default",
      hook_event_name: "Stop",
      stop_hook_active: false,
      last_assistant_message: "All 12 tests pass",
    });
    const a = await runHook(["codex-stop"], codexStop, envOf(codex), p.dir);
    expect([a.code, a.stdout]).toEqual([0, ""]);
    expect(a.stderr).toMatch(/pushed "waiting for you" to 1 device/);
    await expect.poll(() => relay.fake.for(codex.devices[0]!.sub.endpoint).length, { timeout: 10_000 }).toBe(1);
    expect(relay.fake.for(codex.devices[0]!.sub.endpoint)[0]!.msg).toMatchObject({
      kind: "attention",
      sid: codex.s.session_id,
      body: `Codex finished in ${basename(p.dir)}: All 12 tests pass`,
      reason: "completed",
    });
    // Cursor's stop input (cursor.com/docs/agent/hooks, "stop"): status completed | aborted | error.
    const cursorStop = JSON.stringify({
      conversation_id: "c1",
      generation_id: "g1",
      workspace_roots: [p.dir],
      hook_event_name: "stop",
      status: "aborted",
      loop_count: 0,
    });
    const b = await runHook(["cursor-stop"], cursorStop, envOf(cursor), p.dir);
    expect([b.code, b.stdout]).toEqual([0, ""]);
    await expect.poll(() => relay.fake.for(cursor.devices[0]!.sub.endpoint).length, { timeout: 10_000 }).toBe(1);
    expect((relay.fake.for(cursor.devices[0]!.sub.endpoint)[0]!.msg as PushAttentionMessage).body).toBe(`Cursor finished in ${basename(p.dir)}: aborted`);
    expect(relay.fake.problems).toEqual([]);
  }, 60_000);

  it("a relay from before `reason` refuses the field: the same push goes again without it", async () => {
    const { m, s, devices } = await world(["Tablet"]);
    const old = await olderRelay(relay.url);
    try {
      const p = project();
      const env = {
        LINEUP_RELAY_URL: old.url,
        LINEUP_SESSION: s.session_id,
        LINEUP_TOKEN: s.agent_token,
        LINEUP_STATE_DIR: p.stateDir,
        LINEUP_MACHINE_CREDENTIAL: m.machine_credential,
      };
      const run = await runHook(["notify"], notification(p.dir, "agent_completed", "Shipped"), env, p.dir);
      expect([run.code, run.stdout]).toEqual([0, ""]);
      expect(run.stderr).toMatch(/pushed "waiting for you" to 1 device/);
      await expect.poll(() => relay.fake.for(devices[0]!.sub.endpoint).length, { timeout: 10_000 }).toBe(1);
      expect((relay.fake.for(devices[0]!.sub.endpoint)[0]!.msg as PushAttentionMessage).body).toBe(`Claude finished in ${basename(p.dir)}: Shipped`);
      expect(old.seen).toEqual([
        { session_id: s.session_id, text: `Claude finished in ${basename(p.dir)}: Shipped`, reason: "completed" },
        { session_id: s.session_id, text: `Claude finished in ${basename(p.dir)}: Shipped` },
      ]);
    } finally {
      await old.close();
    }
  }, 60_000);
});
