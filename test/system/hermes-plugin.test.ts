// Issue 34: the Hermes plugin's own suite (integrations/hermes/tests, `python3 -m unittest`, stdlib only) run
// against this project's relay (`wrangler dev` of the node project), so `npm test` stays the one command. The
// Python tests load the plugin the way Hermes does, drive it through a fake Hermes context and host with the
// real signatures and rules, and answer from a raw app client paired to a fresh inbox.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";

const DIR = join(process.cwd(), "integrations/hermes");

describe("the Hermes plugin (Python, stdlib) against the relay", () => {
  it("passes its unittest suite: session, deny, unanswered (withdrawn), interrupted (cancelled), clarify on the phone, six choices, revoked, relay down, sealed refused", () => {
    const r = spawnSync("python3", ["-m", "unittest", "discover", "-s", "tests", "-v"], {
      cwd: DIR,
      env: { ...process.env, LINEUP_TEST_RELAY: inject("relayUrl"), PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
      timeout: 120_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(out, out).toMatch(/\nOK\s*$/);
    expect(out).not.toMatch(/skipped/);
    expect(r.status, out).toBe(0);
  }, 130_000);
});
