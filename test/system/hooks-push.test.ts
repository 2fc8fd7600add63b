// `lineup hook notify` end to end with Web Push (issue 17 §5 "a push when that exists"): Claude Code's
// idle_prompt goes into the thread *and* reaches the inbox's phones as a push — through the real bin, the
// LAN server's shared push code and a fake push service on 127.0.0.1 that checks VAPID and decrypts.
import { describe, expect, it } from "vitest";
import type { PushAttentionMessage } from "../../shared/contract/push.js";
import { appClient } from "../helpers/adapter-helpers.js";
import { project, runHook } from "../helpers/hooks-helpers.js";
import { lanWithPush } from "../helpers/lan-push.js";

const relay = lanWithPush("hooks-push-lan-token-0123456789");

describe("lineup hook notify with Web Push", () => {
  it("idle_prompt: the thread gets the message, the inbox's phone a push saying the agent waits, with Claude's words", async () => {
    const { m, s, devices } = await relay.world("/p/hooks", ["Phone"], "hooks");
    const { d, sub } = devices[0]!;
    const fake = relay.fake;
    const app = await appClient(relay.url, s.session_id, d.device_credential, []);
    try {
      const p = project();
      const env = {
        LINEUP_RELAY_URL: relay.url,
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
