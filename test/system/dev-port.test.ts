// `npm run dev -- --port N` / `PORT=N npm run dev` (scripts/dev.mjs): the port reaches wrangler, the banner and
// nothing else of wrangler's arguments is lost; a bad port is refused before anything starts. `npx` is a fake
// on PATH that records each command line (vite's build exits at once, vite --watch and wrangler wait to be
// stopped), so the test checks dev.mjs's own wiring without building the PWA or starting workerd.
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir, waitFor } from "../helpers/adapter-helpers.js";

const DEV = resolve("scripts/dev.mjs");

/** Runs dev.mjs with a recording `npx`; resolves once the banner is out. */
function dev(args: string[], env: Record<string, string> = {}, slowBuild = false) {
  const dir = tempDir();
  const log = join(dir, "npx.log");
  const npx = join(dir, "npx");
  writeFileSync(
    npx,
    `#!/bin/sh\necho "$*" >> "${log}"\ncase "$*" in\n${slowBuild ? '  "vite build --logLevel warn") sleep 1 ;;\n' : ""}  *--watch*|wrangler*) trap 'exit 0' TERM; while :; do sleep 0.1; done ;;\nesac\nexit 0\n`,
  );
  chmodSync(npx, 0o755);
  const child = spawn(process.execPath, [DEV, ...args], {
    env: { ...process.env, PORT: "", ...env, PATH: `${dir}:${process.env.PATH ?? ""}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const lines = () => {
    try {
      return readFileSync(log, "utf8").trim().split("\n");
    } catch {
      return [];
    }
  };
  return { child, exit, lines, out: () => out, err: () => err };
}

describe("npm run dev's port", () => {
  it("--port N reaches wrangler and the banner; other arguments still go to wrangler; SIGTERM stops everything", async () => {
    const d = dev(["--port", "8790", "--log-level", "warn"], { PORT: "9999" });
    await waitFor(() => (d.out().includes("http://127.0.0.1:8790") ? true : undefined), "the banner", 15_000);
    await waitFor(() => (d.lines().some((l) => l.startsWith("wrangler")) ? true : undefined), "wrangler started", 15_000);
    expect(d.lines()).toContain("wrangler dev --ip 127.0.0.1 --port 8790 --log-level warn");
    expect(d.lines()[0]).toBe("vite build --logLevel warn");
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
  });

  it("regression: a SIGTERM that arrives before the banner (while the PWA builds) still ends in a clean exit 0 (the stop handlers are in place before anything starts)", async () => {
    const d = dev(["--port", "8793"], {}, true);
    await waitFor(() => (d.lines()[0] === "vite build --logLevel warn" ? true : undefined), "the build started", 15_000);
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
  });

  it("PORT=N is used when no --port is given, and --port=N works too", async () => {
    const a = dev([], { PORT: "8791" });
    await waitFor(() => (a.lines().some((l) => l.startsWith("wrangler")) ? true : undefined), "wrangler started", 15_000);
    expect(a.lines()).toContain("wrangler dev --ip 127.0.0.1 --port 8791");
    a.child.kill("SIGTERM");
    await a.exit;
    const b = dev(["--port=8792"]);
    await waitFor(() => (b.lines().some((l) => l.startsWith("wrangler")) ? true : undefined), "wrangler started", 15_000);
    expect(b.lines()).toContain("wrangler dev --ip 127.0.0.1 --port 8792");
    b.child.kill("SIGTERM");
    await b.exit;
  });

  it("a port that is not a number from 1 to 65535 is refused with exit 2 before anything is built", async () => {
    for (const args of [["--port", "http"], ["--port", "70000"], ["--port"]]) {
      const d = dev(args);
      expect(await d.exit).toBe(2);
      expect(d.err()).toContain("the port must be a number from 1 to 65535");
      expect(d.lines()).toEqual([]);
    }
  });
});
