// Starts the real relay (the Worker in workerd, via `wrangler dev`) as a child process for node tests.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** The environment every \`wrangler dev\` a test starts runs with: no metrics, no colour, and wrangler's local trace
 * collector off (on by default, it writes every invocation's spans to a SQLite file with an fsync on the runtime's
 * thread; no test reads them: docs/benchmarks.md "Reproduce"). */
export const wranglerEnv = (): NodeJS.ProcessEnv => ({ ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", X_LOCAL_OBSERVABILITY: "false" });

export interface RunningRelay {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** `wrangler dev` on 127.0.0.1:<port>; resolves once /healthz answers. Uses the dev RELAY_KEY default. */
export async function startRelay(opts: { port?: number; vars?: Record<string, string>; timeoutMs?: number; persistTo?: string } = {}): Promise<RunningRelay> {
  const port = opts.port ?? (await freePort());
  const inspector = await freePort();
  // A fresh state dir per relay: Durable Object storage must not leak between runs (IM session ids are
  // derived from the channel, so a leftover session would be found again).
  // A state dir given by the caller is kept on stop (a test that restarts the relay on the same state).
  const persist = opts.persistTo ?? mkdtempSync(join(tmpdir(), "lineup-relay-"));
  const args = [
    "wrangler",
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspector),
    "--log-level",
    "warn",
    "--persist-to",
    persist,
  ];
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}:${v}`);
  // A PWA built elsewhere (`vite build --outDir DIR`), so a test run does not depend on dist/web, which
  // another build may be rewriting at the same time.
  if (process.env.LINEUP_TEST_WEB_DIR) args.push("--assets", process.env.LINEUP_TEST_WEB_DIR);
  const proc = spawn("npx", args, {
    env: wranglerEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`wrangler dev exited (${proc.exitCode}):\n${log.slice(-3000)}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      killTree(proc);
      throw new Error(`wrangler dev did not answer /healthz in time:\n${log.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    port,
    proc,
    async stop() {
      killTree(proc);
      await new Promise((r) => setTimeout(r, 100));
      if (!opts.persistTo) rmSync(persist, { recursive: true, force: true });
    },
  };
}

function killTree(p: ChildProcess) {
  if (p.pid === undefined || p.exitCode !== null) return;
  try {
    process.kill(-p.pid, "SIGTERM");
  } catch {
    p.kill("SIGTERM");
  }
}
