// Child processes of the bench: a second `wrangler dev` (the baseline Worker), the Node baseline, and
// the memory of a wrangler's workerd child read from /proc (Linux only; figures are null elsewhere).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { freePort } from "../../test/helpers/relay.js";

export interface Proc {
  url: string;
  port: number;
  /** The DevTools inspector port (`wrangler dev --inspector-port`): CPU profiles of the Worker. */
  inspector?: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export function killTree(p: ChildProcess): void {
  if (p.pid === undefined || p.exitCode !== null) return;
  try {
    process.kill(-p.pid, "SIGTERM");
  } catch {
    p.kill("SIGTERM");
  }
}

async function waitHealthy(url: string, p: ChildProcess, log: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.exitCode !== null) throw new Error(`process exited (${p.exitCode}):\n${log().slice(-2000)}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      killTree(p);
      throw new Error(`no /healthz answer from ${url} in time:\n${log().slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether wrangler's local trace collector runs in the `wrangler dev` the bench starts (recorded in each result's config). */
export const LOCAL_OBSERVABILITY = false;

export interface WranglerOpts {
  /** wrangler.toml to run (default: the relay's own). */
  config?: string;
  port?: number;
  vars?: Record<string, string>;
  /**
   * Private state directory. Every `wrangler dev` started in the same directory shares .wrangler/state —
   * including miniflare's observability SQLite database — and under concurrent runs that database answers
   * SQLITE_BUSY, the runtime throws, and sockets drop with 1006. A directory of its own avoids it.
   */
  persistTo: string;
  timeoutMs?: number;
}

/** `wrangler dev` on 127.0.0.1 (a free port unless given); resolves once /healthz answers. */
export async function startWrangler(o: WranglerOpts): Promise<Proc> {
  const port = o.port ?? (await freePort());
  const inspector = await freePort();
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
    o.persistTo,
  ];
  if (o.config) args.push("-c", o.config);
  for (const [k, v] of Object.entries(o.vars ?? {})) args.push("--var", `${k}:${v}`);
  const proc = spawn("npx", args, {
    // X_LOCAL_OBSERVABILITY: wrangler's local trace collector (on by default since 4.x, docs/benchmarks.md
    // "Conditions") tails every invocation and writes it to a SQLite file, fsync included, on the runtime's own
    // thread: a local dev tool with no part in a deployed relay's requests. Off for every system measured.
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", X_LOCAL_OBSERVABILITY: String(LOCAL_OBSERVABILITY) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, () => log, o.timeoutMs ?? 120_000);
  return {
    url,
    port,
    inspector,
    proc,
    stop: async () => {
      killTree(proc);
      await new Promise((r) => setTimeout(r, 200));
    },
  };
}

/** The Node baseline in its own process (so it does not share the bench client's event loop). */
export async function startNodeBaselineProc(): Promise<Proc> {
  const port = await freePort();
  const proc = spawn("npx", ["tsx", "bench/baseline-node.ts", String(port)], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let log = "";
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`node baseline did not start:\n${log}`)), 30_000);
    proc.stdout?.on("data", (d: Buffer) => {
      log += d.toString();
      if (log.includes("listening")) {
        clearTimeout(t);
        resolve();
      }
    });
    proc.stderr?.on("data", (d: Buffer) => (log += d.toString()));
    proc.on("exit", (c) => reject(new Error(`node baseline exited (${c}):\n${log}`)));
  });
  return { url: `http://127.0.0.1:${port}`, port, proc, stop: async () => killTree(proc) };
}

function ppidOf(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..." — comm may hold spaces, so split after the last ')'.
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}
function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

/** The pids of processes named `name` that descend from `root` (e.g. the workerds under wrangler). */
export function descendantsNamed(root: number, name: string): number[] {
  let pids: number[];
  try {
    pids = readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const pid of pids) {
    if (commOf(pid) !== name) continue;
    for (let p: number | undefined = pid, hops = 0; p && p > 1 && hops < 10; p = ppidOf(p), hops++) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

/**
 * `wrangler dev` runs two workerd processes: a small proxy on the public port, and the runtime that runs
 * the Worker and its Durable Objects (started with `--inspector-addr`). Returns both (either may be missing).
 */
export function workerdOf(wranglerPid: number): { runtime?: number; proxy?: number } {
  const r: { runtime?: number; proxy?: number } = {};
  for (const pid of descendantsNamed(wranglerPid, "workerd")) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmd.includes("--inspector-addr")) r.runtime = pid;
    else r.proxy = pid;
  }
  return r;
}

export interface Mem {
  rssKiB: number;
  hwmKiB: number;
}
export function memOf(pid: number | undefined): Mem | null {
  if (pid === undefined) return null;
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(s)?.[1] ?? NaN);
    return { rssKiB: kib("VmRSS"), hwmKiB: kib("VmHWM") };
  } catch {
    return null;
  }
}

/** Samples VmRSS every `everyMs` until stopped; returns the peak seen. */
export function sampleRss(pid: number | undefined, everyMs = 100): { stop(): number | null } {
  let peak: number | null = null;
  const take = () => {
    const m = memOf(pid);
    if (m && Number.isFinite(m.rssKiB)) peak = Math.max(peak ?? 0, m.rssKiB);
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(t);
      take();
      return peak;
    },
  };
}

/**
 * A frozen copy of the relay (worker/, shared/, web/src (the Worker imports a few of its modules), dist/web,
 * wrangler.toml) under bench/.tmp/, returned as the
 * config path to run. `wrangler dev` reloads the Worker — dropping every socket — whenever a watched source
 * or asset changes; in a shared work tree that happens every few seconds, so the bench and the soak run a
 * snapshot of the code as it was when they started. Modules still resolve from the repository's node_modules.
 */
export function snapshotRelay(dir: string): string {
  rmSync(dir, { recursive: true, force: true });
  for (const d of ["worker", "shared", "web/src", "dist/web"]) if (existsSync(d)) cpSync(d, `${dir}/${d}`, { recursive: true });
  cpSync("wrangler.toml", `${dir}/wrangler.toml`);
  // The edge and the MCP server import the relay's version from it (issue 30): without it the snapshot does not build.
  cpSync("package.json", `${dir}/package.json`);
  return `${dir}/wrangler.toml`;
}

let clkTck: number | undefined;
/** Process CPU time (user + system) in ms from /proc/<pid>/stat, or null off Linux. */
export function cpuMsOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    clkTck ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    clkTck = 100;
  }
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after "(comm)": state ppid … utime is the 14th field of the line, stime the 15th.
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / clkTck;
  } catch {
    return null;
  }
}
