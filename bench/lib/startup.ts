// The agent package's start-up (issue 30): the packed package (packages/agent, `npm pack`) installed with
// `npm install -g --prefix bench/.tmp/startup/prefix <tarball> --omit=dev`, then `lineup --version` and
// `lineup hook pre-tool-use` (answering from the policy on disk: a project `.lineup/policy.json` rule, no network)
// timed as child processes against the floor `node -e ""`, in interleaved rounds (the order rotates each round),
// plus the repository's own bin (TypeScript through tsx) as the before. Every ratio is per round; the goal is
// hook p50 ≤ 2.5 × the floor's p50. Also the installed size and the number of packages installed, the optional
// dependencies' share (node-datachannel, where its binary installs) apart.
// `npm run bench -- --startup` runs only this (bench/startup.json, re-rendering docs/benchmarks.md); the full
// bench runs it first, while nothing else loads the machine.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { log } from "./harness.js";
import { dist, ratio, roundRatio, type RoundRatio } from "./stats.js";
import { preToolUse } from "../../scripts/lib/claude-events.mjs";

export const STARTUP_GOAL = 2.5;
const RUNS = Number(process.env.STARTUP_RUNS ?? 25);

type Cmd = "floor" | "version" | "hook" | "repo_version" | "repo_hook";
export const STARTUP_LABEL: Record<Cmd, string> = {
  floor: '`node -e ""` (the floor)',
  version: "`lineup --version` (installed package)",
  hook: "`lineup hook pre-tool-use` (installed package)",
  repo_version: "`lineup --version` (repository bin, tsx)",
  repo_hook: "`lineup hook pre-tool-use` (repository bin, tsx)",
};

export interface StartupResults {
  generated_at: string;
  node: string;
  runs: number;
  load_avg_1m: number[];
  package: {
    name: string;
    version: string;
    tarball_kib: number;
    /** The package and everything its required dependencies need (what every install gets). */
    installed_kib: number;
    packages: number;
    dependencies: string[];
    /** What the optional dependencies (node-datachannel, the direct path) add where their binary installs. */
    optional?: { dependencies: string[]; packages: number; installed_kib: number };
    install_s: number;
  };
  /** Per command: the distribution of wall times (ms) and its ratio to the floor, per round. */
  commands: Record<Cmd, { p50: number; p95: number; min: number; max: number; vs_floor: RoundRatio }>;
  goal: { what: string; goal: string; p50_ratio: number; met: boolean };
}

const du = (p: string): number => {
  const s = statSync(p);
  if (!s.isDirectory()) return s.size;
  return readdirSync(p).reduce((n, e) => n + du(join(p, e)), 0);
};
/**
 * The installed packages (name → directory, npm's hoisted layout) that only the optional dependencies need: every
 * package under node_modules that the required dependencies' own `dependencies`, followed transitively, never
 * reach. (`--omit=optional` cannot install without them: npm ignores it for a global tarball, npm/cli#8284.)
 */
export function optionalOnly(nm: string, required: string[]): string[] {
  const dirOf = (n: string) => join(nm, ...n.split("/"));
  const seen = new Set<string>();
  const walk = (n: string) => {
    if (seen.has(n)) return;
    seen.add(n);
    const deps = (JSON.parse(readFileSync(join(dirOf(n), "package.json"), "utf8")) as { dependencies?: Record<string, string> }).dependencies ?? {};
    for (const d of Object.keys(deps)) walk(d);
  };
  for (const r of required) walk(r);
  const all = readdirSync(nm)
    .filter((e) => !e.startsWith("."))
    .flatMap((e) => (e.startsWith("@") ? readdirSync(join(nm, e)).map((m) => `${e}/${m}`) : [e]));
  return all.filter((n) => !seen.has(n)).map(dirOf);
}

/** Installed packages: every directory with a package.json under node_modules, at any depth. */
const countPackages = (nm: string): number => {
  let n = 0;
  for (const e of readdirSync(nm, { withFileTypes: true })) {
    if (!e.isDirectory() || e.name.startsWith(".")) continue;
    const dirs = e.name.startsWith("@") ? readdirSync(join(nm, e.name)).map((m) => join(nm, e.name, m)) : [join(nm, e.name)];
    for (const d of dirs) {
      n++;
      try {
        n += countPackages(join(d, "node_modules"));
      } catch {
        /* no nested node_modules */
      }
    }
  }
  return n;
};

export async function runStartup(): Promise<StartupResults> {
  const dir = resolve("bench/.tmp/startup");
  rmSync(dir, { recursive: true, force: true });
  const prefix = join(dir, "prefix");
  const project = join(dir, "project");
  mkdirSync(join(project, ".lineup"), { recursive: true });
  mkdirSync(join(dir, "home"), { recursive: true });
  log("startup: packing packages/agent (its prepack builds it)");
  const tgz = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: "packages/agent", encoding: "utf8" }).trim().split("\n").pop()!;
  const t0 = performance.now();
  execFileSync("npm", ["install", "-g", "--prefix", prefix, join(dir, tgz), "--omit=dev", "--no-audit", "--no-fund"], { stdio: "ignore" });
  const installS = Math.round(performance.now() - t0) / 1000;
  const pkg = JSON.parse(readFileSync("packages/agent/package.json", "utf8")) as {
    name: string;
    version: string;
    dependencies: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  const installed = join(prefix, "lib", "node_modules", pkg.name);
  writeFileSync(join(project, ".lineup", "policy.json"), JSON.stringify({ permissions: { allow: ["Bash(ls *)"] } }));
  const event = preToolUse(project, "Bash", { command: "ls -la" });
  const env = { ...process.env, HOME: join(dir, "home"), LINEUP_STATE_DIR: join(dir, "state"), CLAUDE_PROJECT_DIR: project };
  const bin = join(installed, "dist", "bin", "lineup.mjs");
  const repoBin = resolve("adapter/bin/lineup.mjs");
  const argv: Record<Cmd, { args: string[]; input?: string; expect?: RegExp }> = {
    floor: { args: ["-e", ""] },
    version: { args: [bin, "--version"], expect: /^lineup / },
    hook: { args: [bin, "hook", "pre-tool-use"], input: event, expect: /"permissionDecision":"allow"/ },
    repo_version: { args: [repoBin, "--version"], expect: /^lineup / },
    repo_hook: { args: [repoBin, "hook", "pre-tool-use"], input: event, expect: /"permissionDecision":"allow"/ },
  };
  const cmds = Object.keys(argv) as Cmd[];
  const once = (c: Cmd): number => {
    const a = argv[c];
    const s = performance.now();
    const r = spawnSync(process.execPath, a.args, { input: a.input ?? "", env, cwd: project, encoding: "utf8" });
    const ms = performance.now() - s;
    if (r.status !== 0 || (a.expect && !a.expect.test(r.stdout))) throw new Error(`startup: ${c} answered ${r.status}: ${r.stdout}${r.stderr}`);
    return ms;
  };
  for (const c of cmds) once(c); // warm the file cache; also checks every command answers as expected
  const times: Record<Cmd, number[]> = { floor: [], version: [], hook: [], repo_version: [], repo_hook: [] };
  const loads = [loadavg()[0]!];
  for (let r = 0; r < RUNS; r++) for (let k = 0; k < cmds.length; k++) times[cmds[(r + k) % cmds.length]!].push(once(cmds[(r + k) % cmds.length]!));
  loads.push(loadavg()[0]!);
  const commands = Object.fromEntries(
    cmds.map((c) => {
      const d = dist(times[c]);
      return [c, { p50: d.p50, p95: d.p95, min: d.min, max: d.max, vs_floor: roundRatio(times[c], times.floor) }];
    }),
  ) as StartupResults["commands"];
  const deps = Object.keys(pkg.dependencies).sort();
  const nm = join(installed, "node_modules");
  const extra = optionalOnly(nm, deps);
  const extraKib = Math.round(extra.reduce((n, d) => n + du(d), 0) / 1024);
  const allKib = Math.round(du(installed) / 1024);
  const allPackages = 1 + countPackages(nm);
  const p50Ratio = ratio(commands.hook.p50, commands.floor.p50);
  const res: StartupResults = {
    generated_at: new Date().toISOString(),
    node: process.version,
    runs: RUNS,
    load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
    package: {
      name: pkg.name,
      version: pkg.version,
      tarball_kib: Math.round(statSync(join(dir, tgz)).size / 1024),
      installed_kib: allKib - extraKib,
      packages: allPackages - extra.length,
      dependencies: deps,
      optional: { dependencies: Object.keys(pkg.optionalDependencies ?? {}).sort(), packages: extra.length, installed_kib: extraKib },
      install_s: installS,
    },
    commands,
    goal: { what: "hook p50 ÷ floor p50", goal: `≤ ${STARTUP_GOAL}`, p50_ratio: p50Ratio, met: p50Ratio <= STARTUP_GOAL },
  };
  writeFileSync("bench/startup.json", `${JSON.stringify(res, null, 2)}\n`);
  log(
    `startup: floor p50 ${commands.floor.p50} ms; --version ${commands.version.p50} ms; hook ${commands.hook.p50} ms = ${p50Ratio}× the floor [goal ≤ ${STARTUP_GOAL}]; repository bin hook ${commands.repo_hook.p50} ms; ${res.package.packages} packages, ${res.package.installed_kib} KiB installed (+ optional ${extra.length}, ${extraKib} KiB)`,
  );
  rmSync(dir, { recursive: true, force: true });
  return res;
}
