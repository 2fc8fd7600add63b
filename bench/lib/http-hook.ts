// The http hook against the command hook (issue 29 item 6, docs/permissions.md §7.12): one tool call answered by
// the policy, either as Claude Code's `type: "http"` hook — one POST to the relay (the real Worker in workerd via
// `wrangler dev`), which reads the inbox policy — or as the command hook `lineup hook pre-tool-use` /
// `permission-request` of the installed agent package (a fresh `node`, answered from a project policy file on disk).
// Same rule (`Bash(ls *)`), same input, same answer; timed in interleaved rounds (the order rotates each round),
// every ratio per round. The http request opens a fresh TCP connection each time (`agent: false`): no reuse is
// assumed of Claude Code's client. `npm run bench -- --http-hook` runs only this (bench/http-hook.json, then
// docs/benchmarks.md is re-rendered); no timing is asserted anywhere.
import { execFileSync, spawnSync } from "node:child_process";
import { request } from "node:http";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { log } from "./harness.js";
import { snapshotRelay, startWrangler } from "./proc.js";
import { dist, roundRatio, type RoundRatio } from "./stats.js";

const RUNS = Number(process.env.HTTP_HOOK_RUNS ?? 25);

type Way = "floor" | "http_pre" | "http_perm" | "cmd_pre" | "cmd_perm";
export const HTTP_HOOK_LABEL: Record<Way, string> = {
  floor: '`node -e ""` (a bare Node start, for scale)',
  http_pre: "http hook PreToolUse → `POST /api/hooks/claude/pre-tool-use`",
  http_perm: "http hook PermissionRequest → `POST /api/hooks/claude/permission-request`",
  cmd_pre: "command hook `lineup hook pre-tool-use` (installed package)",
  cmd_perm: "command hook `lineup hook permission-request` (installed package)",
};

export interface HttpHookResults {
  generated_at: string;
  node: string;
  runs: number;
  load_avg_1m: number[];
  /** Per way: the distribution of wall times (ms). */
  ways: Record<Way, { p50: number; p95: number; min: number; max: number }>;
  /** Command hook ÷ http hook, per round (how many times slower the command hook is). */
  command_vs_http: { pre_tool_use: RoundRatio; permission_request: RoundRatio };
}

/** One POST on a fresh connection; resolves with the status and body. */
function post(url: string, token: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: "POST",
        agent: false,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      },
      (r) => {
        let text = "";
        r.setEncoding("utf8");
        r.on("data", (d: string) => (text += d));
        r.on("end", () => res({ status: r.statusCode ?? 0, text }));
      },
    );
    req.on("error", rej);
    req.end(body);
  });
}

async function json(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const r = await fetch(url, init);
  if (!r.ok) throw new Error(`http-hook: ${init.method ?? "GET"} ${url} answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as Record<string, unknown>;
}

export async function runHttpHook(): Promise<HttpHookResults> {
  const dir = resolve("bench/.tmp/http-hook");
  rmSync(dir, { recursive: true, force: true });
  const prefix = join(dir, "prefix");
  const project = join(dir, "project");
  mkdirSync(join(project, ".lineup"), { recursive: true });
  mkdirSync(join(dir, "home"), { recursive: true });
  log("http-hook: packing and installing packages/agent (its prepack builds it)");
  const tgz = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: "packages/agent", encoding: "utf8" }).trim().split("\n").pop()!;
  execFileSync("npm", ["install", "-g", "--prefix", prefix, join(dir, tgz), "--omit=dev", "--no-audit", "--no-fund"], { stdio: "ignore" });
  const bin = join(prefix, "lib", "node_modules", "lineup-agent", "dist", "bin", "lineup.mjs");
  const relay = await startWrangler({ config: snapshotRelay("bench/.tmp/http-hook-relay"), persistTo: "bench/.tmp/state-http-hook" });
  try {
    const RULE = "Bash(ls *)";
    writeFileSync(join(project, ".lineup", "policy.json"), JSON.stringify({ permissions: { allow: [RULE] } }));
    const inbox = await json(`${relay.url}/api/inboxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ machine_name: "bench" }),
    });
    const cred = inbox.machine_credential as string;
    await json(`${relay.url}/api/inbox/policy`, {
      method: "PUT",
      headers: { authorization: `Bearer ${cred}`, "content-type": "application/json" },
      body: JSON.stringify({ permissions: { allow: [RULE] } }),
    });
    const common = { session_id: "s", transcript_path: join(dir, "home", ".claude", "projects", "p", "t.jsonl"), cwd: project, permission_mode: "default" };
    const input = { tool_name: "Bash", tool_input: { command: "ls -la" } };
    const pre = JSON.stringify({ ...common, hook_event_name: "PreToolUse", ...input, tool_use_id: "toolu_01" });
    const perm = JSON.stringify({ ...common, hook_event_name: "PermissionRequest", ...input });
    const env = { ...process.env, HOME: join(dir, "home"), LINEUP_STATE_DIR: join(dir, "state"), CLAUDE_PROJECT_DIR: project, LINEUP_RELAY_URL: relay.url };
    const ALLOW_PRE = /"permissionDecision":"allow"/;
    const ALLOW_PERM = /"behavior":"allow"/;
    const spawnWay = (args: string[], stdin: string, expect?: RegExp) => () => {
      const s = performance.now();
      const r = spawnSync(process.execPath, args, { input: stdin, env, cwd: project, encoding: "utf8" });
      const ms = performance.now() - s;
      if (r.status !== 0 || (expect && !expect.test(r.stdout))) throw new Error(`http-hook: ${args.join(" ")} answered ${r.status}: ${r.stdout}${r.stderr}`);
      return Promise.resolve(ms);
    };
    const httpWay = (event: string, body: string, expect: RegExp) => async () => {
      const s = performance.now();
      const r = await post(`${relay.url}/api/hooks/claude/${event}`, cred, body);
      const ms = performance.now() - s;
      if (r.status !== 200 || !expect.test(r.text)) throw new Error(`http-hook: ${event} answered ${r.status}: ${r.text}`);
      return ms;
    };
    const ways: Record<Way, () => Promise<number>> = {
      floor: spawnWay(["-e", ""], ""),
      http_pre: httpWay("pre-tool-use", pre, ALLOW_PRE),
      http_perm: httpWay("permission-request", perm, ALLOW_PERM),
      cmd_pre: spawnWay([bin, "hook", "pre-tool-use"], pre, ALLOW_PRE),
      cmd_perm: spawnWay([bin, "hook", "permission-request"], perm, ALLOW_PERM),
    };
    const order = Object.keys(ways) as Way[];
    for (const w of order) await ways[w](); // warm up; also checks every way answers allow
    const times: Record<Way, number[]> = { floor: [], http_pre: [], http_perm: [], cmd_pre: [], cmd_perm: [] };
    const loads = [loadavg()[0]!];
    for (let r = 0; r < RUNS; r++)
      for (let k = 0; k < order.length; k++) times[order[(r + k) % order.length]!].push(await ways[order[(r + k) % order.length]!]());
    loads.push(loadavg()[0]!);
    const res: HttpHookResults = {
      generated_at: new Date().toISOString(),
      node: process.version,
      runs: RUNS,
      load_avg_1m: loads.map((l) => Math.round(l * 100) / 100),
      ways: Object.fromEntries(
        order.map((w) => {
          const d = dist(times[w]);
          return [w, { p50: d.p50, p95: d.p95, min: d.min, max: d.max }];
        }),
      ) as HttpHookResults["ways"],
      command_vs_http: { pre_tool_use: roundRatio(times.cmd_pre, times.http_pre), permission_request: roundRatio(times.cmd_perm, times.http_perm) },
    };
    writeFileSync("bench/http-hook.json", `${JSON.stringify(res, null, 2)}\n`);
    log(
      `http-hook: PreToolUse http ${res.ways.http_pre.p50} ms vs command ${res.ways.cmd_pre.p50} ms (${res.command_vs_http.pre_tool_use.median}×); PermissionRequest http ${res.ways.http_perm.p50} ms vs command ${res.ways.cmd_perm.p50} ms (${res.command_vs_http.permission_request.median}×)`,
    );
    return res;
  } finally {
    await relay.stop();
    for (const d of [dir, "bench/.tmp/http-hook-relay", "bench/.tmp/state-http-hook"]) rmSync(d, { recursive: true, force: true });
  }
}
