// `lineup hook notify` end to end with Web Push (issue 17 §5 "a push when that exists"): Claude Code's
// idle_prompt goes into the thread *and* reaches the inbox's phones as a push — through the real bin, the
// LAN server's shared push code and a fake push service on 127.0.0.1 that checks VAPID and decrypts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { PushAttentionMessage } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { FakePushService } from "../helpers/fake-push.js";
import { startFakePush } from "../helpers/fake-push-server.js";
import { freePort } from "../helpers/relay.js";
import { appClient } from "../helpers/adapter-helpers.js";
import { project, runHook } from "../helpers/hooks-helpers.js";

const TOKEN = "hooks-push-lan-token-0123456789";
let lan: LanServer;
let fakePush: Awaited<ReturnType<typeof startFakePush>> | undefined;
let fake: FakePushService;

beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, allowLocalPush: true });
  fakePush = await startFakePush();
  fake = fakePush.fake;
});
afterAll(async () => {
  await lan?.close();
  await fakePush?.close();
});

async function call<T>(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: T }> {
  const r = await fetch(`${lan.url}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

describe("lineup hook notify with Web Push", () => {
  it("idle_prompt: the thread gets the message, the inbox's phone a push saying the agent waits, with Claude's words", async () => {
    const m = (await call<MachineCreated>("POST", "/api/inboxes", TOKEN, {})).body;
    const s = (await call<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/hooks", host: "box" })).body;
    const code = (await call<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential)).body;
    const d = (await call<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "Phone" })).body;
    const key = (await call<{ public_key: string }>("GET", "/api/push/key")).body.public_key;
    const sub = fake.subscriber("hooks");
    expect((await call("PUT", "/api/inbox/push", d.device_credential, { subscription: sub, application_server_key: key, lang: "en" })).status).toBe(200);
    const app = await appClient(lan.url, s.session_id, d.device_credential, []);
    try {
      const p = project();
      const env = {
        LINEUP_RELAY_URL: lan.url,
        LINEUP_SESSION: s.session_id,
        LINEUP_TOKEN: s.agent_token,
        LINEUP_STATE_DIR: p.stateDir,
        LINEUP_MACHINE_CREDENTIAL: m.machine_credential,
      };
      const input = JSON.stringify({
        session_id: "abc",
        transcript_path: "/t",
        cwd: p.dir,
        hook_event_name: "Notification",
        message: "Claude is waiting for your input",
        notification_type: "idle_prompt",
      });
      const run = await runHook(["notify"], input, env, p.dir);
      expect([run.code, run.stdout]).toEqual([0, ""]);
      expect(run.stderr).toMatch(/pushed "waiting for you" to 1 device/);
      expect(((await app.next("message", 10_000)).content as { text: string }[])[0]!.text).toContain("Claude Code is waiting for you");
      await expect.poll(() => fake.for(sub.endpoint).length, { timeout: 10_000 }).toBe(1);
      expect(fake.problems).toEqual([]);
      const msg = fake.for(sub.endpoint)[0]!.msg as PushAttentionMessage;
      expect(msg).toMatchObject({ kind: "attention", sid: s.session_id, title: "hooks · box", body: "Claude Code: Claude is waiting for your input" });
      expect(msg).not.toHaveProperty("token");
      // A second idle within the minute: the thread still hears it, the phone is not buzzed again, exit 0.
      const again = await runHook(["notify"], input, env, p.dir);
      expect([again.code, again.stdout]).toEqual([0, ""]);
      expect(again.stderr).toMatch(/no push: .*one attention push per session a minute/);
      await app.next("message", 10_000);
      expect(fake.for(sub.endpoint)).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});
