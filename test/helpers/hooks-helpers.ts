// Helpers for the permission tests (issue 17): run `lineup hook …` as an agent would (the real bin, the
// hook's JSON on stdin), a TCP listener that counts every connection (proof that a decision made no round
// trip), a stub of the inbox policy endpoints, and a project directory with a .lineup/policy.json.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { BIN } from "./adapter-helpers.js";

export interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Spawns `lineup hook <args>` with `stdin` written and closed, as Claude Code does. */
export function runHook(
  args: string[],
  stdin: string | undefined,
  env: Record<string, string>,
  cwd: string,
  timeoutMs = 60_000,
): Promise<HookRun> & { child: ReturnType<typeof spawn> } {
  const t0 = Date.now();
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(LINEUP_|CLAUDE_PROJECT_DIR|CODEX_HOME)/.test(k)));
  const child = spawn(process.execPath, [BIN, "hook", ...args], { cwd, env: { ...clean, NO_COLOR: "1", ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  if (stdin !== undefined) child.stdin.end(stdin);
  else child.stdin.end();
  const kill = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const p = new Promise<HookRun>((resolve) =>
    child.on("close", (code) => {
      clearTimeout(kill);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    }),
  );
  return Object.assign(p, { child });
}

/** A TCP listener that accepts and drops every connection, counting them: a relay nobody must reach. */
export async function countingListener(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server: Server = createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const a = server.address();
  const port = typeof a === "object" && a ? a.port : 0;
  return { url: `http://127.0.0.1:${port}`, connections: () => n, close: () => new Promise((r) => server.close(() => r())) };
}

/** GET/PUT /api/inbox/policy as docs/inbox.md describes them, for one machine credential. */
export async function inboxPolicyStub(credential: string, start: { allow?: string[]; ask?: string[]; deny?: string[] } = {}) {
  const state = { version: 1, permissions: { allow: start.allow ?? [], ask: start.ask ?? [], deny: start.deny ?? [] } };
  const requests: { method: string; body?: unknown }[] = [];
  const body = (req: IncomingMessage) =>
    new Promise<string>((r) => {
      let s = "";
      req.on("data", (d: Buffer) => (s += d.toString()));
      req.on("end", () => r(s));
    });
  const server = createHttpServer((req, res) => {
    void (async () => {
      // CORS, so the PWA on another origin (the browser test) can call it as it calls a relay.
      const cors = {
        "access-control-allow-origin": "*",
        "access-control-allow-headers": "authorization, content-type",
        "access-control-allow-methods": "GET, PUT",
      };
      const send = (status: number, v: unknown) => {
        res.writeHead(status, { "content-type": "application/json", ...cors });
        res.end(JSON.stringify(v));
      };
      if (req.method === "OPTIONS") {
        res.writeHead(204, cors);
        return res.end();
      }
      if (req.url !== "/api/inbox/policy") return send(404, { error: { code: "not_found", message: "no" } });
      if (req.headers.authorization !== `Bearer ${credential}`) return send(401, { error: { code: "unauthorized", message: "no" } });
      if (req.method === "GET") {
        requests.push({ method: "GET" });
        return send(200, state);
      }
      if (req.method === "PUT") {
        const b = JSON.parse(await body(req)) as { permissions: Partial<typeof state.permissions>; base_version?: number };
        requests.push({ method: "PUT", body: b });
        if (b.base_version !== undefined && b.base_version !== state.version) return send(409, { error: { code: "conflict", message: "changed" } });
        state.permissions = { ...state.permissions, ...b.permissions };
        state.version++;
        return send(200, state);
      }
      send(405, { error: { code: "method", message: "no" } });
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const a = server.address();
  const port = typeof a === "object" && a ? a.port : 0;
  return { url: `http://127.0.0.1:${port}`, state, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A project directory with `.lineup/policy.json` (when rules are given) and a fresh state dir. */
export function project(rules?: { allow?: string[]; ask?: string[]; deny?: string[] }): { dir: string; stateDir: string } {
  const root = mkdtempSync(join(tmpdir(), "lineup-perm-"));
  const dir = join(root, "app");
  mkdirSync(join(dir, ".lineup"), { recursive: true });
  if (rules) writeFileSync(join(dir, ".lineup", "policy.json"), JSON.stringify({ permissions: rules }));
  const stateDir = join(root, "state");
  mkdirSync(stateDir);
  return { dir, stateDir };
}

/** A machine credential of the documented shape (docs/inbox.md). */
export const MACHINE_CREDENTIAL = `lum1.inboxABCDEFG.mc_machine001.${"s".repeat(43)}`;

/** Claude Code's documented hook stdin (scripts/lib/claude-events.mjs, shared with the bench and the package check). */
export { askUserQuestion, elicitation, permissionRequest, preToolUse } from "../../scripts/lib/claude-events.mjs";

/** A two-question AskUserQuestion set: one single-select with descriptions, one multi-select without. */
export const TWO_QUESTIONS = [
  {
    question: "Which database?",
    header: "DB",
    multiSelect: false,
    options: [
      { label: "PostgreSQL", description: "A server" },
      { label: "SQLite", description: "One file" },
    ],
  },
  { question: "Which features?", header: "Features", multiSelect: true, options: [{ label: "Auth" }, { label: "Search" }, { label: "Billing" }] },
];

/** The environment of a hook or CLI run whose machine turns E2E on itself against `relay` (the dev relay key). */
export const e2eHookEnv = (relay: string, p: { stateDir: string }): Record<string, string> => ({
  LINEUP_RELAY_URL: relay,
  LINEUP_RELAY_KEY: DEV_RELAY_KEY,
  LINEUP_STATE_DIR: p.stateDir,
  LINEUP_E2E_POLL_MS: "300",
  HOME: p.stateDir,
});
