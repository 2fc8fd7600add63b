// The state file: one saved session per (relay, directory), shared by processes starting at once,
// replaced when it expired or was deleted, and written with mode 0600 (it holds tokens).
import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { forgetSessions, loadState, saveSession } from "../../adapter/client/state.js";
import { ensureSession } from "../../adapter/client/ensure.js";
import { tempDir } from "../helpers/adapter-helpers.js";

describe("adapter state", () => {
  it("processes starting at once in one directory share one session", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const all = await Promise.all(Array.from({ length: 4 }, () => ensureSession({ relayUrl, stateDir: dir, cwd: dir })));
    expect(new Set(all.map((s) => s.sessionId)).size).toBe(1);
    expect(loadState(dir).sessions).toHaveLength(1);
    expect(statSync(join(dir, "sessions.json")).mode & 0o777).toBe(0o600);
    // Another directory gets its own session.
    const other = tempDir();
    expect((await ensureSession({ relayUrl, stateDir: dir, cwd: other })).sessionId).not.toBe(all[0]!.sessionId);
  });

  it("replaces a saved session that was deleted (404) or has expired", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const first = await ensureSession({ relayUrl, stateDir: dir, cwd: dir });
    const del = await fetch(`${relayUrl}/api/sessions/${first.sessionId}`, { method: "DELETE", headers: { authorization: `Bearer ${first.agentToken}` } });
    expect(del.status).toBe(204);
    const second = await ensureSession({ relayUrl, stateDir: dir, cwd: dir });
    expect(second.sessionId).not.toBe(first.sessionId);
    saveSession(dir, { ...second, expiresAt: Date.now() - 1 });
    const third = await ensureSession({ relayUrl, stateDir: dir, cwd: dir });
    expect(third.sessionId).not.toBe(second.sessionId);
    expect(loadState(dir).sessions.map((s) => s.sessionId)).toEqual([third.sessionId]);
    expect(forgetSessions(dir, () => true).map((s) => s.sessionId)).toEqual([third.sessionId]);
    expect(loadState(dir).sessions).toEqual([]);
  });
});
