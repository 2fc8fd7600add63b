// The relay's own token secret, as a self-hoster runs it (no TOKEN_SECRET): generated on first use, kept
// across restarts, and never RELAY_KEY — holding the key creates sessions but cannot enter one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { signToken } from "../../shared/edge/tokens.js";
import { createSession, http } from "../helpers/raw-client.js";
import { startRelay, type RunningRelay } from "../helpers/relay.js";

const state = mkdtempSync(join(tmpdir(), "lineup-secret-"));
let relay: RunningRelay | undefined;
afterAll(async () => {
  await relay?.stop();
  rmSync(state, { recursive: true, force: true });
});

describe("the relay's generated token secret", () => {
  it("keeps tokens valid across a restart and refuses tokens signed with RELAY_KEY", async () => {
    relay = await startRelay({ persistTo: state });
    const s = await createSession(relay.url, DEV_RELAY_KEY);
    const epoch = parseInt(s.agent_token.split(".")[4]!, 36);
    const minted = await signToken(DEV_RELAY_KEY, s.session_id, "agent", s.expires_at, epoch);
    expect((await http(`${relay.url}/api/sessions/${s.session_id}`, { token: minted })).status).toBe(401);
    await relay.stop();
    relay = await startRelay({ persistTo: state });
    const st = await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.agent_token });
    expect(st.status).toBe(200);
    expect((await http(`${relay.url}/api/sessions/${s.session_id}`, { token: s.app_token })).status).toBe(200);
    expect((await http(`${relay.url}/api/sessions/${s.session_id}`, { token: minted })).status).toBe(401);
  }, 120_000);
});
