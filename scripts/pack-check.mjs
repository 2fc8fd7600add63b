#!/usr/bin/env node
// The agent package, installed like a user would (issue 30; CI runs it after the tests, which build the PWA):
// `npm pack` of packages/agent (its prepack builds it), `npm install -g --prefix <tmp> <tarball> --omit=dev` in a
// fresh temporary directory (it installs node-datachannel, the direct path's optional dependency, issue 32; the
// check then REMOVES it, as a platform without its binary would be, because `--omit=optional` is ignored by
// `npm install -g <tarball>`: npm/cli#8284), then with nothing but that prefix and Node on PATH and a temporary HOME:
//   lineup --version · npx ./<tarball> --version · lineup serve (the PWA from the package, /healthz and its
//   version header) · lineup connect --relay <its URL> (LINEUP_RELAY_KEY its token), as a user starts it: it creates the
//   machine's inbox and a session and prints a pairing link; a "phone" redeems it (POST /api/pair), opens the
//   session with its device credential (a raw app socket), gets a direct-path offer answered `bye` ("relay
//   only" said once) and the first question, and answers it · lineup mcp (the MCP SDK's own client over stdio:
//   initialize, tools/list) · lineup setup claude (the hook commands name the global `lineup`) and the written
//   PreToolUse command run through a shell · the library's entry, its declarations importing only the package's
//   dependencies, and a TypeScript file using it type-checked against them (a wrong type must be refused).
// Exit 0 when every check passes, else 1 with what failed. Prints its wall time. Usage: node scripts/pack-check.mjs
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { declarationPackages } from "../packages/agent/build.mjs";
import { preToolUse } from "./lib/claude-events.mjs";

const started = Date.now();
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const agentDir = join(root, "packages", "agent");
const pkg = JSON.parse(readFileSync(join(agentDir, "package.json"), "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "lineup-pack-"));
const prefix = join(tmp, "prefix");
const home = join(tmp, "home");
const project = join(tmp, "project");
for (const d of [prefix, home, project]) mkdirSync(d, { recursive: true });
const npmCache = execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim();
const children = new Set();
let failed = false;

const log = (s) => process.stdout.write(`${s}\n`);
const check = (ok, what, detail = "") => {
  log(`${ok ? "ok  " : "FAIL"} ${what}${ok || !detail ? "" : `\n     ${String(detail).slice(0, 2000).replace(/\n/g, "\n     ")}`}`);
  if (!ok) failed = true;
  return ok;
};

/** What the installed `lineup` sees: the prefix's bin and this Node only, a temporary HOME, no LINEUP_* of ours. */
const userEnv = (extra = {}) => {
  const env = { PATH: [join(prefix, "bin"), dirname(process.execPath), "/usr/bin", "/bin"].join(":"), HOME: home, LANG: "C.UTF-8", npm_config_cache: npmCache };
  return { ...env, ...extra };
};

/** Starts a command; resolves with {code, out, err} when it exits or after timeoutMs (then killed). */
function run(cmd, args, { env = userEnv(), input, timeoutMs = 30_000, cwd = project } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const t = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("error", (e) => (err += String(e)));
    p.on("close", (code) => (clearTimeout(t), resolve({ code, out, err })));
    p.stdin.end(input ?? "");
  });
}

/** A long-running command: its output so far, and a wait for a pattern in it. */
function start(cmd, args, { env = userEnv(), cwd = project } = {}) {
  const p = spawn(cmd, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  children.add(p);
  const h = { p, out: "", err: "", exited: undefined };
  const waiters = [];
  const poke = () => {
    for (const w of [...waiters]) if (w.re.test(h.out + h.err) || h.exited !== undefined) waiters.splice(waiters.indexOf(w), 1), w.done();
  };
  p.stdout.on("data", (d) => ((h.out += d), poke()));
  p.stderr.on("data", (d) => ((h.err += d), poke()));
  p.on("close", (code) => ((h.exited = code), children.delete(p), poke()));
  h.waitFor = (re, ms = 20_000) =>
    new Promise((resolve) => {
      const w = { re, done: () => (clearTimeout(t), resolve(re.test(h.out + h.err))) };
      const t = setTimeout(() => (waiters.splice(waiters.indexOf(w), 1), resolve(false)), ms);
      waiters.push(w);
      poke();
    });
  h.exit = (ms = 10_000) =>
    new Promise((resolve) => {
      if (h.exited !== undefined) return resolve(h.exited);
      const t = setTimeout(() => (p.kill("SIGKILL"), resolve("killed")), ms);
      p.on("close", (code) => (clearTimeout(t), resolve(code)));
    });
  return h;
}

async function main() {
  // 1. The tarball (prepack builds dist/), installed globally into an empty prefix, runtime dependencies only.
  const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", tmp], { cwd: agentDir, encoding: "utf8" }).trim().split("\n").pop();
  const tarball = join(tmp, packed);
  if (!check(existsSync(tarball), `npm pack → ${packed}`)) return;
  const inst = await run("npm", ["install", "-g", "--prefix", prefix, tarball, "--omit=dev", "--no-audit", "--no-fund"], {
    env: { ...process.env, npm_config_cache: npmCache },
    timeoutMs: 120_000,
    cwd: tmp,
  });
  if (!check(inst.code === 0, "npm install -g --prefix <tmp> <tarball> --omit=dev", inst.err)) return;
  const installed = join(prefix, "lib", "node_modules", pkg.name);
  const deps = readdirSync(join(installed, "node_modules")).flatMap((n) =>
    n.startsWith("@") ? readdirSync(join(installed, "node_modules", n)).map((m) => `${n}/${m}`) : [n],
  );
  log(`     installed ${pkg.name}@${pkg.version} with ${deps.filter((d) => !d.startsWith(".")).length} packages`);
  check(
    !deps.some((d) => /^(tsx|preact|vite|wrangler|vitest|typescript|esbuild)$/.test(d)),
    "no tsx, preact, vite, wrangler or test tooling installed",
    deps.join(", "),
  );
  check(deps.includes("node-datachannel"), "with its optional node-datachannel", deps.join(", "));
  // From here on without it (a platform with no prebuilt binary): the adapter must run relay-only.
  rmSync(join(installed, "node_modules", "node-datachannel"), { recursive: true, force: true });

  // 2. lineup --version, and the same through npx <tarball>: the path relative (`./x.tgz`), since npm runs an
  // absolute path to an existing file as the command itself (libnpmexec's localFileExists; docs/adapter.md).
  const v = await run("lineup", ["--version"]);
  check(v.code === 0 && v.out.trim() === `lineup ${pkg.version} (protocol lineup/1)`, "lineup --version prints the package version", v.out + v.err);
  const nv = await run("npx", ["--yes", `./${packed}`, "--version"], { timeoutMs: 60_000, cwd: tmp });
  check(nv.code === 0 && nv.out.trim() === `lineup ${pkg.version} (protocol lineup/1)`, "npx ./<tarball> --version", nv.out + nv.err);

  // 3. lineup serve: the relay contract and the PWA from the package.
  const lanToken = "pack-check-lan-token-0123456789";
  const serve = start("lineup", ["serve", "--port", "0", "--host", "127.0.0.1", "--no-qr"], { env: userEnv({ LINEUP_LAN_TOKEN: lanToken }) });
  if (!check(await serve.waitFor(/"agent_token"/), "lineup serve starts", serve.err)) return;
  const s = JSON.parse(serve.out.split("\n").find((l) => l.includes('"agent_token"')));
  const health = await fetch(`${s.local_url}/healthz`);
  check(
    JSON.stringify(await health.json()) === '{"ok":true,"protocol":"lineup/1"}' && health.headers.get("x-lineup-version") === pkg.version,
    "lineup serve answers /healthz with the contract's body and x-lineup-version",
  );
  const page = await fetch(`${s.local_url}/`);
  check(page.ok && (await page.text()).includes("<html"), "lineup serve serves the PWA from the package");

  // 4. lineup connect --relay URL, as a user starts it on a machine with nothing saved: the machine's
  // inbox, a session and a pairing link; the "phone" pairs with it, then answers the first question.
  const WebSocket = createRequire(join(installed, "package.json"))("ws");
  // In a directory of its own: in `project` it would reuse the session `lineup serve` saved there (a guest link).
  const agentProject = join(tmp, "agent-project");
  mkdirSync(agentProject);
  const connect = start("lineup", ["connect", "--relay", s.local_url, "--no-qr"], { env: userEnv({ LINEUP_RELAY_KEY: lanToken }), cwd: agentProject });
  const linked = await connect.waitFor(/#pair=\S+/);
  if (!check(linked, "lineup connect --relay <url> prints a pairing link", connect.err)) return;
  const link = new URL(/(http\S+#pair=\S+)/.exec(connect.err)?.[1] ?? "");
  const code = new URLSearchParams(link.hash.slice(1)).get("pair");
  const paired = await fetch(`${s.local_url}/api/pair`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code, name: "pack-check phone" }),
  });
  const device = paired.status === 201 ? await paired.json() : undefined;
  if (!check(!!device?.device_credential, "a phone pairs with the link (POST /api/pair)", `${paired.status}`)) return;
  const inbox = await (await fetch(`${s.local_url}/api/inbox`, { headers: { authorization: `Bearer ${device.device_credential}` } })).json();
  const sessionId = /session (\S+) on /.exec(connect.err)?.[1];
  check(
    !!sessionId && inbox.sessions?.some((x) => x.session_id === sessionId),
    "the paired phone's inbox lists the session lineup connect made",
    `${sessionId} ${JSON.stringify(inbox.sessions)}`,
  );
  const phone = new WebSocket(`${s.local_url.replace(/^http/, "ws")}/api/sessions/${sessionId}/ws`, ["lineup.v1", `lineup.token.${device.device_credential}`]);
  let asked = "";
  const byes = [];
  phone.on("message", (data) => {
    const f = JSON.parse(String(data));
    if (f.type === "rtc.signal" && f.signal?.kind === "bye") byes.push(f.id);
    if (f.type === "hello") phone.send(JSON.stringify({ type: "tool.list", tools: [{ name: "confirm", type: "action", description: "yes/no" }] }));
    if (f.type === "tool.call" && f.name === "confirm") {
      asked = f.arguments?.question ?? "";
      phone.send(JSON.stringify({ type: "tool.result", call_id: f.call_id, name: "confirm", result: { message: "yes", confirmed: true } }));
    }
  });
  await new Promise((r, j) => (phone.once("open", r), phone.once("error", j)));
  if (check(await connect.waitFor(/1 app connected/), "lineup connect sees the paired phone", connect.err)) {
    // Issue 32: without node-datachannel a device's direct-path offer gets `bye`, and "relay only" is said once.
    const agentId = /\(client ([^)\s]+)\)/.exec(connect.err)?.[1];
    const sdp = `v=0\r\na=fingerprint:sha-256 ${Array(32).fill("AB").join(":")}\r\n`;
    for (const id of ["pack.1", "pack.2"]) phone.send(JSON.stringify({ type: "rtc.signal", id, to: agentId, signal: { kind: "offer", sdp } }));
    for (let i = 0; i < 100 && byes.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    check(
      byes.join() === "pack.1,pack.2" && connect.err.split("direct path off, relay only").length === 2,
      "without node-datachannel, lineup connect answers a direct-path offer with bye and says relay only once",
      `${byes.join()} ${connect.err}`,
    );
    connect.p.stdin.write('/call confirm {"question":"Deploy to staging?"}\n');
    check(
      (await connect.waitFor(/result: .*"confirmed":true/)) && asked === "Deploy to staging?",
      "lineup connect puts a first question on the paired phone and gets its answer",
      connect.err,
    );
    connect.p.stdin.write("/quit\n");
    check((await connect.exit()) === 0, "lineup connect quits with exit 0", connect.err);
  }
  phone.close();

  // 5. lineup mcp, started by the MCP SDK's own client as a host starts it: initialize, then tools/list.
  const mcp = new Client({ name: "pack-check", version: "1" });
  const transport = new StdioClientTransport({
    command: "lineup",
    args: ["mcp"],
    env: userEnv({ LINEUP_RELAY_URL: s.local_url, LINEUP_RELAY_KEY: lanToken }),
    cwd: project,
    stderr: "pipe",
  });
  let mcpErr = "";
  transport.stderr?.on("data", (d) => (mcpErr += d));
  try {
    await mcp.connect(transport);
    const info = mcp.getServerVersion();
    check(info?.name === "lineup" && info.version === pkg.version, "lineup mcp answers the SDK client's initialize with its version", JSON.stringify(info));
    const { tools } = await mcp.listTools();
    check(
      ["ask_question", "work_report"].every((n) => tools.some((t) => t.name === n)),
      "lineup mcp lists ask_question and work_report",
      tools.map((t) => t.name).join(),
    );
  } catch (e) {
    check(false, "lineup mcp with the SDK client", `${e instanceof Error ? e.message : String(e)}\n${mcpErr}`);
  } finally {
    await mcp.close().catch(() => undefined);
  }
  serve.p.kill("SIGTERM");
  check((await serve.exit()) === 0, "lineup serve stops on SIGTERM", serve.err);

  // 6. lineup setup claude: hook commands naming the global `lineup`, and the written PreToolUse run by a shell.
  writeFileSync(join(project, ".lineup", "policy.json"), JSON.stringify({ permissions: { allow: ["Bash(ls *)"], deny: ["Bash(rm -rf *)"] } }), { flag: "w" });
  const setup = await run("lineup", ["setup", "claude", "--project", project]);
  check(setup.code === 0, "lineup setup claude", setup.out + setup.err);
  const settings = JSON.parse(readFileSync(join(project, ".claude", "settings.json"), "utf8"));
  const commands = Object.values(settings.hooks).flatMap((list) => list.flatMap((m) => m.hooks.map((h) => h.command)));
  check(commands.length >= 4 && commands.every((c) => /^lineup hook /.test(c)), "every hook command written names the global lineup", commands.join("\n"));
  const pre = settings.hooks.PreToolUse?.[0]?.hooks?.[0]?.command;
  const event = (command) => preToolUse(project, "Bash", { command });
  const allow = await run("sh", ["-c", pre], { input: event("ls -la"), env: userEnv({ CLAUDE_PROJECT_DIR: project }) });
  check(
    allow.code === 0 && /"permissionDecision":"allow"/.test(allow.out),
    `the written PreToolUse hook allows ls by the project policy (${pre})`,
    allow.out + allow.err,
  );
  const deny = await run("sh", ["-c", pre], { input: event("rm -rf build"), env: userEnv({ CLAUDE_PROJECT_DIR: project }) });
  check(deny.code === 0 && /"permissionDecision":"deny"/.test(deny.out), "… and denies rm -rf", deny.out + deny.err);

  // 7. The library: its entry loads with Node alone and its declarations ship.
  const lib = await import(pathToFileURL(join(installed, "dist", "lib", "index.js")).href);
  check(typeof lib.connectAgent === "function" && typeof lib.LineUpError === "function", "the library entry exports connectAgent and LineUpError");
  check(existsSync(join(installed, pkg.types)), `its declarations ship (${pkg.types})`);
  // Regression (zod bundled, not a dependency): the declarations named zod, found only where npm happened to
  // hoist the MCP SDK's copy; elsewhere every contract type silently became `any`.
  const typed = declarationPackages(join(installed, "dist", "types"));
  const declared = Object.keys(pkg.dependencies);
  check(
    typed.length > 0 && typed.every((n) => declared.includes(n)),
    `its declarations import only its dependencies (${typed.join(", ")})`,
    declared.join(", "),
  );
  // A TypeScript user of the library: `import … from "lineup-agent"` type-checks against the shipped declarations.
  const consumer = join(tmp, "consumer");
  mkdirSync(join(consumer, "node_modules"), { recursive: true });
  symlinkSync(installed, join(consumer, "node_modules", pkg.name));
  writeFileSync(join(consumer, "package.json"), '{"type":"module"}');
  writeFileSync(
    join(consumer, "use.ts"),
    [
      `import { connectAgent, LineUpError, type AgentClient, type ToolDef } from "${pkg.name}";`,
      'export const open = (): Promise<AgentClient> => connectAgent({ relayUrl: "http://127.0.0.1:1" });',
      "export const isIt = (e: unknown): boolean => e instanceof LineUpError;",
      "// @ts-expect-error a ToolDef is an object (an `any` from an unresolved import would take the number)",
      "export const wrong: ToolDef = 42;",
      "",
    ].join("\n"),
  );
  const tsc = await run(
    process.execPath,
    [
      join(root, "node_modules", "typescript", "bin", "tsc"),
      "--noEmit",
      "--strict",
      "--skipLibCheck",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "use.ts",
    ],
    { cwd: consumer, env: process.env },
  );
  check(tsc.code === 0, "a TypeScript file importing the package type-checks against its declarations", tsc.out + tsc.err);
}

try {
  mkdirSync(join(project, ".lineup"), { recursive: true });
  await main();
} catch (e) {
  check(false, "pack check crashed", e instanceof Error ? e.stack : String(e));
} finally {
  for (const p of children) p.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
  log(`pack check: ${failed ? "FAILED" : "ok"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(failed ? 1 : 0);
}
