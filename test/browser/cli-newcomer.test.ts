// What a newcomer meets first (issue 13): `lineup call --help` lists every built-in tool with its arguments
// and an example; `lineup connect` shows the session's calls as they come and go instead of a presence line
// per reconnect; and the Node version the README promises is the one `engines` and the bin enforce, with the
// packages that warn on Node 20 named.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, inject, it } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { appClient, CONFIRM, REPO, runCli, savedSessions, spawnCli, tempDir, waitFor } from "../helpers/adapter-helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("lineup call --help", () => {
  it("lists every built-in tool with its arguments and an example command", async () => {
    const dir = tempDir();
    const r = await runCli(["call", "--help"], { LINEUP_STATE_DIR: dir }, dir);
    expect(r.code).toBe(0);
    for (const d of BUILTIN_TOOLS) {
      expect(r.stdout, d.name).toMatch(new RegExp(`^  ${d.name} — `, "m"));
      expect(r.stdout, d.name).toMatch(new RegExp(`e\\.g\\. lineup call ${d.name}( \\w+)? --args '\\{`));
    }
    expect(r.stdout).toContain("args: question* (string), options* (string[]), multiple (boolean)");
    expect(r.stdout).toContain("open: width* (integer), height* (integer)");
    // Every example's --args is valid JSON.
    for (const m of r.stdout.matchAll(/e\.g\. lineup call \S+(?: \w+)? --args '([^']*)'/g)) expect(() => JSON.parse(m[1]!), m[1]).not.toThrow();
  });
});

describe("lineup connect's terminal", { timeout: 120_000 }, () => {
  it("shows a call waiting for the human and how it ended, with the answer and who gave it; presence only when it changes", async () => {
    const relayUrl = inject("relayUrl");
    const dir = tempDir();
    const env = { LINEUP_RELAY_URL: relayUrl, LINEUP_STATE_DIR: dir, LINEUP_SESSION: "", LINEUP_TOKEN: "" };
    const child = spawnCli(["connect", "--no-qr"], env, dir, "pipe");
    cleanups.push(() => child.kill("SIGKILL"));
    const s = await waitFor(() => savedSessions(dir)[0], "the session to be saved", 60_000);
    const err = () => child.output().stderr;
    await waitFor(() => err().includes("0 apps connected") || undefined, "the connection", 60_000);

    const app = await appClient(relayUrl, s.sessionId, s.appToken!, [CONFIRM], "app-kitchen");
    cleanups.push(() => app.close());
    await waitFor(() => err().includes("1 app connected") || undefined, "the app to be logged");
    // Another process asks the human; connect's terminal shows it, then that it settled.
    const run = runCli(["call", "confirm", "--args", '{"question":"Deploy the billing service?"}'], env, dir);
    const call = await app.next("tool.call", 30_000);
    await waitFor(() => err().includes('call waiting for the human: confirm "Deploy the billing service?"') || undefined, "the waiting call", 15_000);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "yes", confirmed: true } });
    expect((await run).code).toBe(0);
    await waitFor(
      () => err().includes('call answered on app-kitchen → "yes": confirm "Deploy the billing service?"') || undefined,
      "the answered call",
      15_000,
    );
    // A call nobody answers in time: its end is told too, once.
    const late = runCli(["call", "confirm", "--timeout", "2", "--args", '{"question":"Rotate the keys?"}'], env, dir);
    await app.next("tool.call", 30_000);
    expect((await late).code).not.toBe(0);
    await waitFor(() => err().includes('call timed out: confirm "Rotate the keys?"') || undefined, "the timed-out call", 15_000);
    expect(err().match(/call answered on app-kitchen/g)).toHaveLength(1);
    expect(err()).not.toContain("call settled:");
    // The `lineup call` client came and went (presence frames with the same app count): no line for it.
    expect(err().match(/1 app connected/g)).toHaveLength(1);
    expect(err()).not.toContain("presence:");
    child.kill("SIGINT");
    expect((await child.done).code).toBe(0);
  });
});

describe("the Node version a newcomer needs", () => {
  it("README, engines and the bin agree, and the README names every package that warns on Node 20", () => {
    const pkg = JSON.parse(readFileSync(`${REPO}/package.json`, "utf8")) as { engines: { node: string }; devDependencies: Record<string, string> };
    const readme = readFileSync(`${REPO}/README.md`, "utf8");
    const bin = readFileSync(`${REPO}/adapter/bin/lineup.mjs`, "utf8");
    expect(pkg.engines.node).toBe(">=20.6");
    expect(readme).toContain("Node 20.6 or newer is enough");
    expect(bin).toContain("major === 20 && minor < 6");
    expect(pkg.devDependencies.node).toMatch(/^\^22\./); // what runs the scripts on Node 22
    // Every locked package whose engines exclude Node 20 is named in the README's explanation: those wanting 22
    // by name, those wanting a later 20.x by their project (sharp's and rolldown's per-platform builds).
    const lock = JSON.parse(readFileSync(`${REPO}/package-lock.json`, "utf8")) as { packages: Record<string, { engines?: { node?: string } }> };
    const locked = Object.entries(lock.packages)
      .filter(([k]) => k)
      .map(([k, v]) => ({ name: k.replace(/^.*node_modules\//, ""), node: v.engines?.node ?? "" }));
    const want22 = locked.filter((p) => /^>=\s*2[2-9]/.test(p.node)).map((p) => p.name);
    const wantLater20 = locked
      .filter((p) => /(^|\s|\^|>=)20\.(9|1\d)\b/.test(p.node))
      .map((p) => (/sharp/.test(p.name) ? "sharp" : /rolldown/.test(p.name) ? "rolldown" : p.name));
    expect(want22.sort()).toEqual(["@axe-core/playwright", "@cloudflare/kv-asset-handler", "commander", "miniflare", "wrangler"]);
    for (const name of [...want22, ...new Set(wantLater20)]) expect(readme, name).toContain(name);
    expect(readme).toContain("EBADENGINE");
  });
});
