// What every `lineup hook` event shares: its options and environment, the hook JSON on stdin (capped, parsed
// with the documented schemas), the project directory, the deadline counted from the agent's spawn, and a
// fresh agent connection to the project's session.
import type { z } from "zod";
import { resolve, sep } from "node:path";
import { randomId } from "../../shared/edge/tokens.js";
import { DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import { defaultStateDir, loadState, normalizeUrl } from "../client/state.js";
import { LineUpError } from "../../shared/client/errors.js";

const STDIN_LIMIT = 8 * 1024 * 1024;

export type Env = Record<string, string | undefined>;

export interface HookOptions {
  waitS?: number;
  relayUrl: string;
  stateDir: string;
  project?: string;
  agent?: string;
  /** i29-defer: in a headless Claude Code run, an unanswered card ends with PreToolUse "defer" (defer.ts) */
  defer: boolean;
  /** --defer-for: how long a deferred card stays open on the phone (seconds, 10–86400; default 86400 = 24 h) */
  deferForS?: number;
  /** codex-notify: the previous notify program, run with the same payload */
  then: string[];
  positionals: string[];
}

export interface HookIo {
  stdin?: () => Promise<string>;
  stdout?: (s: string) => void;
  stderr?: (s: string) => void;
  env?: Env;
  /** when the agent started this hook (epoch ms; default: this process's start) */
  startedAt?: number;
}

export class HookUsage extends Error {}

export function parseHookArgs(argv: string[], env: Env): HookOptions {
  const o: HookOptions = {
    relayUrl: normalizeUrl(env.LINEUP_RELAY_URL || DEV_RELAY_URL),
    stateDir: env.LINEUP_STATE_DIR || defaultStateDir(),
    defer: false,
    then: [],
    positionals: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--then") {
      // Everything up to the payload (the last argument) is the other program's argv.
      o.then = argv.slice(i + 1, argv.length - 1);
      o.positionals.push(argv[argv.length - 1]!);
      break;
    }
    if (a === "--defer") {
      o.defer = true;
      continue;
    }
    const m = /^--(wait|defer-for|relay|state-dir|project|agent)(?:=(.*))?$/.exec(a);
    if (!m) {
      if (a.startsWith("--") && o.positionals.length === 0) throw new HookUsage(`unknown option ${a}`);
      o.positionals.push(a);
      continue;
    }
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new HookUsage(`--${m[1]} needs a value`);
    if (m[1] === "wait") {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 2 || n > 86_400) throw new HookUsage("--wait must be a number of seconds from 2 to 86400");
      o.waitS = n;
    } else if (m[1] === "defer-for") {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 10 || n > 86_400) throw new HookUsage("--defer-for must be a whole number of seconds from 10 to 86400");
      o.deferForS = n;
    } else if (m[1] === "relay") o.relayUrl = normalizeUrl(v);
    else if (m[1] === "state-dir") o.stateDir = resolve(v);
    else if (m[1] === "project") o.project = resolve(v);
    else o.agent = v;
  }
  return o;
}

export function readStdin(): Promise<string> {
  return new Promise((resolveText, reject) => {
    if (process.stdin.isTTY) return reject(new HookUsage("expects the hook's JSON on stdin"));
    let size = 0;
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new HookUsage("no JSON on stdin within 10 s")), 10_000);
    process.stdin.on("data", (d: Buffer) => {
      size += d.length;
      if (size > STDIN_LIMIT) {
        clearTimeout(timer);
        reject(new HookUsage(`the hook input is over ${STDIN_LIMIT} bytes`));
        process.stdin.destroy();
        return;
      }
      chunks.push(d);
    });
    process.stdin.on("end", () => {
      clearTimeout(timer);
      resolveText(Buffer.concat(chunks).toString("utf8"));
    });
    process.stdin.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

export function parseJson<T>(text: string, schema: z.ZodType<T>, what: string): T {
  let v: unknown;
  try {
    v = JSON.parse(text) as unknown;
  } catch {
    throw new HookUsage(`the ${what} input is not JSON`);
  }
  const r = schema.safeParse(v);
  if (!r.success)
    throw new HookUsage(`not a ${what} input: ${r.error.issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ")}`);
  return r.data;
}

/** The project directory of a hook call: the flag, LINEUP_PROJECT_DIR, CLAUDE_PROJECT_DIR, else its cwd. */
export function projectDirFor(cwd: string, o: { project?: string }, env: Env): string {
  return resolve(o.project ?? (env.LINEUP_PROJECT_DIR || env.CLAUDE_PROJECT_DIR || cwd));
}

/** The directory whose saved session serves `dir`: itself, or the nearest ancestor with a saved session. */
function sessionDirFor(stateDir: string, relayUrl: string, dir: string): string {
  const saved = loadState(stateDir).sessions.filter(
    (s) => s.relayUrl === relayUrl && (dir === s.cwd || dir.startsWith(s.cwd.endsWith(sep) ? s.cwd : s.cwd + sep)),
  );
  saved.sort((a, b) => b.cwd.length - a.cwd.length);
  return saved[0]?.cwd ?? dir;
}

export interface Ctx {
  o: HookOptions;
  env: Env;
  out: (s: string) => void;
  say: (s: string) => void;
  /** epoch ms at which the hook must be done (its --wait, counted from process start) */
  deadline: number;
}

export const leftMs = (cx: Ctx) => cx.deadline - Date.now();

/** The project's session and its agent token: LINEUP_SESSION + LINEUP_TOKEN, else the saved one (created if needed). */
export async function sessionFor(cx: Ctx, projectDir: string): Promise<{ sessionId: string; token: string }> {
  const sessionId = cx.env.LINEUP_SESSION || undefined;
  const token = cx.env.LINEUP_TOKEN || undefined;
  if (sessionId && token) return { sessionId, token };
  const { ensureSession } = await import("../client/index.js");
  const saved = await ensureSession({
    relayUrl: cx.o.relayUrl,
    stateDir: cx.o.stateDir,
    cwd: sessionDirFor(cx.o.stateDir, cx.o.relayUrl, projectDir),
    ...(cx.env.LINEUP_RELAY_KEY ? { relayKey: cx.env.LINEUP_RELAY_KEY } : {}),
  });
  return { sessionId: saved.sessionId, token: saved.agentToken };
}

/** Connects as a fresh agent client of the project's session (its own client id: hooks run side by side). */
export async function connectSession(cx: Ctx, projectDir: string, s?: { sessionId: string; token: string; clientId: string }) {
  const { connectAgent } = await import("../client/index.js");
  const log = cx.env.LINEUP_HOOK_DEBUG ? cx.say : () => {};
  const { sessionId, token } = s ?? (await sessionFor(cx, projectDir));
  return connectAgent({
    relayUrl: cx.o.relayUrl,
    sessionId,
    token,
    stateDir: cx.o.stateDir,
    cwd: projectDir,
    clientId: s?.clientId ?? `hook_${randomId(6)}`,
    connectTimeoutMs: Math.max(1000, Math.min(10_000, leftMs(cx))),
    log,
  });
}

/** Rejects when the deadline passes first (the caller then gives up without output). */
export function beforeDeadline<T>(cx: Ctx, p: Promise<T>): Promise<T> {
  return new Promise<T>((res, rej) => {
    const t = setTimeout(() => rej(new LineUpError("timeout", "the hook's wait limit is near")), Math.max(0, leftMs(cx)));
    p.then(
      (v) => {
        clearTimeout(t);
        res(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        rej(e);
      },
    );
  });
}
