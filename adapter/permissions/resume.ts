// The resuming side of deferral (issue 29 item 4, docs/permissions.md §9.2; branch i29-defer), run inside
// `lineup connect` and `lineup daemon`: watches <state dir>/deferred/, holds each waiting card's own agent client
// (the relay re-sends the card's result to that client id, however late), stores the answer in the record BEFORE
// acking it, then runs `claude -p --resume <session>` in the run's directory exactly once and says in the
// session's thread whether it resumed. One process per record (its lock); a restarted one takes over.
import { spawn } from "node:child_process";
import { z } from "../../shared/contract/zod.js";
import { Client } from "../client/agent.js";
import { openKeyring, resolveSession } from "../client/session.js";
import type { ToolResultOut } from "../../shared/contract/protocol.js";
import { DEFER_DEFAULTS, listRecords, lockRecord, readRecord, unlockRecord, writeRecord, type DeferOutcome, type DeferredRecord } from "./defer.js";

export interface WatchOptions {
  stateDir: string;
  env?: Record<string, string | undefined>;
  log: (line: string) => void;
  pollMs?: number;
}

/** How long a record whose watch failed rests before the next try. */
const RETRY_MS = 30_000;

/** Most of a resumed run's output kept for the report (its JSON result is small). */
const OUTPUT_CAP = 256 * 1024;

/** Starts watching; returns stop(). */
export function watchDeferred(o: WatchOptions): () => Promise<void> {
  const env = o.env ?? process.env;
  const held = new Map<string, { client?: Client; busy?: Promise<void> }>();
  /** A record whose watch failed (relay unreachable, session ended, token revoked) is tried again after this. */
  const retryAt = new Map<string, number>();
  let stopped = false;

  const scan = () => {
    if (stopped) return;
    for (const name of listRecords(o.stateDir)) {
      if (held.has(name) || (retryAt.get(name) ?? 0) > Date.now()) continue;
      const rec = readRecord(o.stateDir, name);
      if (!rec || rec.state === "failed" || rec.state === "expired") continue;
      if (!lockRecord(o.stateDir, name)) continue;
      const h: { client?: Client; busy?: Promise<void> } = {};
      held.set(name, h);
      if (rec.state === "resuming") {
        // A process that held it stopped mid-resume: whether claude started is unknown, so it is not run twice.
        const note = "lineup stopped while this run was being resumed; it was not started again";
        writeRecord(o.stateDir, { ...rec, state: "failed", note });
        o.log(`deferred ${name}: ${note} (resume it by hand: claude -p --resume ${rec.claude.session_id})`);
        release(name);
        continue;
      }
      h.busy = watch(name, rec, h).catch((e: unknown) => {
        o.log(`deferred ${name}: ${e instanceof Error ? e.message : String(e)}; trying again in ${RETRY_MS / 1000} s`);
        retryAt.set(name, Date.now() + RETRY_MS);
        release(name);
      });
    }
  };

  const release = (name: string) => {
    const h = held.get(name);
    held.delete(name);
    unlockRecord(o.stateDir, name);
    void h?.client?.close();
  };

  async function connect(name: string, rec: DeferredRecord, onResult?: (f: ToolResultOut) => void): Promise<Client> {
    const r = await resolveSession({ relayUrl: rec.relayUrl, stateDir: o.stateDir, sessionId: rec.sessionId, token: rec.token, clientId: rec.clientId });
    const keyring = await openKeyring(r, undefined);
    const client = new Client({
      ...(keyring ? { keyring } : {}),
      ...(r.sealed ? { expectSealed: true } : {}),
      relayUrl: r.relayUrl,
      sessionId: r.sessionId,
      token: r.token,
      clientId: r.clientId,
      log: (l) => env.LINEUP_HOOK_DEBUG && o.log(`deferred ${name}: ${l}`),
    });
    // Registered before the first hello: the relay re-sends the unacked result right after it.
    if (onResult) client.on("result", onResult);
    await client.start();
    return client;
  }

  async function watch(name: string, rec: DeferredRecord, h: { client?: Client }): Promise<void> {
    if (rec.state === "answered") {
      h.client = await connect(name, rec);
      return resume(name, rec, h.client);
    }
    o.log(`deferred ${name}: waiting for the answer to "${rec.what}" (${rec.projectDir})`);
    await new Promise<void>((done, fail) => {
      void connect(name, rec, (f) => {
        if (f.call_id !== rec.callId) return;
        // Written before the listener returns, i.e. before the client acks it: an answer is never lost.
        const outcome: DeferOutcome = f.error ? { error: { code: f.error.code, message: f.error.message } } : { result: f.result ?? {} };
        const expired = f.error !== undefined && f.error.code !== "declined";
        const next: DeferredRecord = { ...rec, state: expired ? "expired" : "answered", outcome };
        writeRecord(o.stateDir, next);
        rec = next;
        done();
      }).then((c) => {
        h.client = c;
        // A connection that ends for good (session ended, token revoked) fails the watch; it is tried again later.
        c.on("connection", (st) => st === "closed" && !stopped && fail(new Error(`connection closed: ${c.lastError?.message ?? "closed"}`)));
      }, fail);
    });
    if (rec.state === "expired") {
      const why = rec.outcome && "error" in rec.outcome ? rec.outcome.error.message : "no answer";
      say(
        h.client,
        `**Not resumed**: ${rec.what} (${rec.projectDir}) ended without an answer (${why}). Resume by hand: \`claude -p --resume ${rec.claude.session_id}\`.`,
      );
      o.log(`deferred ${name}: the card ended without an answer (${why}); not resumed`);
      return release(name);
    }
    return resume(name, rec, h.client);
  }

  async function resume(name: string, rec: DeferredRecord, client: Client | undefined): Promise<void> {
    writeRecord(o.stateDir, { ...rec, state: "resuming" });
    const bin = env.LINEUP_CLAUDE_BIN || "claude";
    // No prompt: Claude Code re-runs the deferred tool call itself (hooks reference, "Defer a tool call for later").
    const args = ["-p", "--resume", rec.claude.session_id, "--output-format", "json"];
    o.log(`deferred ${name}: answered; resuming: ${bin} ${args.join(" ")} (in ${rec.claude.cwd})`);
    const run = await runClaude(bin, args, rec.claude.cwd, { ...env, LINEUP_STATE_DIR: o.stateDir });
    const consumed = readRecord(o.stateDir, name) === undefined;
    const summary = summarize(run.stdout);
    if (consumed) {
      const text = `**Resumed** the Claude Code run in ${rec.projectDir} with your answer to ${rec.what}${summary ? ` — ${summary}` : ""}.`;
      say(client, text);
      o.log(`deferred ${name}: resumed (exit ${run.code})${summary ? `: ${summary}` : ""}`);
    } else {
      const tail = (run.error ?? run.stderr).trim().split("\n").slice(-3).join(" / ").slice(0, 400);
      const note = `could not resume: ${run.error ? run.error : `\`${bin}\` exited ${run.code} without re-running the deferred tool call`}${tail && !run.error ? ` (${tail})` : ""}`;
      writeRecord(o.stateDir, { ...rec, state: "failed", note });
      say(
        client,
        `**Could not resume** the Claude Code run in ${rec.projectDir} (${rec.what}): ${note}. Resume by hand: \`claude -p --resume ${rec.claude.session_id}\`.`,
      );
      o.log(`deferred ${name}: ${note}`);
    }
    // Let the message go out before the client closes.
    await new Promise((r) => setTimeout(r, 300));
    release(name);
  }

  const say = (client: Client | undefined, text: string) => {
    try {
      client?.send(text);
    } catch (e) {
      o.log(`could not post to the thread: ${String(e)}`);
    }
  };

  scan();
  const timer = setInterval(scan, o.pollMs ?? DEFER_DEFAULTS.pollMs);
  return async () => {
    stopped = true;
    clearInterval(timer);
    const busy = [...held.values()].map((h) => h.busy);
    for (const name of [...held.keys()]) if (!held.get(name)?.busy) release(name);
    for (const [name, h] of held) {
      void h.client?.close();
      unlockRecord(o.stateDir, name);
    }
    await Promise.race([Promise.allSettled(busy), new Promise((r) => setTimeout(r, 1000))]);
  };
}

function runClaude(
  bin: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string; error?: string }> {
  return new Promise((done) => {
    let stdout = "";
    let stderr = "";
    const child = spawn(bin, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => (stdout = (stdout + d.toString()).slice(-OUTPUT_CAP)));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-OUTPUT_CAP)));
    child.on("error", (e) => done({ code: null, stdout, stderr, error: `cannot run ${bin}: ${e.message}` }));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** The fields LineUp reads of `claude -p --output-format json`'s result (hooks reference, "Defer a tool call for later"). */
const ClaudeResult = z.looseObject({ stop_reason: z.unknown().optional(), is_error: z.unknown().optional(), result: z.unknown().optional() });

/** What the resumed run's JSON result says (claude -p --output-format json), in a few words. */
function summarize(stdout: string): string {
  try {
    const p = ClaudeResult.safeParse(JSON.parse(stdout.trim().split("\n").pop() ?? ""));
    if (!p.success) return "";
    const r = p.data;
    if (r.stop_reason === "tool_deferred") return "it stopped again at another question (on your phone now)";
    if (r.is_error === true) return `it ended with an error${typeof r.result === "string" ? `: ${r.result.slice(0, 200)}` : ""}`;
    return "the run finished";
  } catch {
    return "";
  }
}
