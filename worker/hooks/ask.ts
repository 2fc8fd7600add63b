// The card of one http hook, held while the human answers (docs/permissions.md §7.12): the project's session
// of the machine is found in its inbox (or made, as `lineup` would make it), the card goes in through a
// hibernatable CallLink (worker/mcp/call-link.ts, the link the remote MCP holds its calls on), and the
// request waits for its end, its wait, or the client leaving — whichever comes first. No answer in time
// cancels the card: the terminal's own dialog then decides, never both.
import type { Context } from "hono";
import type { InboxSession } from "../../shared/contract/inbox.js";
import type { ToolResultBody } from "../../shared/contract/protocol.js";
import { formatCredential } from "../../shared/contract/inbox.js";
import { HTTP_HOOK_LIMITS } from "../../shared/contract/http-hooks.js";
import { checkCredential, type EdgeEnv, type Holder } from "../../shared/edge/app.js";
import { makeInboxSession } from "../../shared/edge/inbox.js";
import { randomId } from "../../shared/edge/tokens.js";
import { CallLink, type LinkEnd } from "../mcp/call-link.js";
import { edgeLink } from "../mcp/link.js";
import type { RequestScope } from "../mcp/scope.js";
import type { Env } from "../env.js";

/** A hook request, its machine credential checked (shared/edge/credential.ts `holder`). */
export type HookContext = Context<EdgeEnv<Env> & { Variables: { holder: Holder } }>;
type C = HookContext;

/** The session a hook's card goes to, or why there is none. */
export type HookSession = { sid: string; epoch: number; projectDir: string } | { refused: "e2e_sealed" | "revoked" | "failed"; message: string };

export const SEALED_HOOK_MESSAGE =
  "this project's LineUp session is sealed (end-to-end encryption is on): the relay can neither read the inbox policy nor make a sealed card, so it leaves the decision to Claude Code's own dialog. Use the command hooks (`lineup setup claude` without --http) while E2E is on";

const within = (dir: string, cwd: string) => cwd === dir || cwd.startsWith(dir.endsWith("/") ? dir : `${dir}/`);

/**
 * This machine's live session for `cwd`: the one whose project directory is `cwd` or its nearest ancestor
 * (newest first), as `lineup` picks its saved session (adapter/permissions/hook-context.ts).
 */
export function sessionFor(sessions: readonly InboxSession[], machineId: string, cwd: string, now = Date.now()): InboxSession | undefined {
  const mine = sessions.filter(
    (s) => s.machine_id === machineId && s.project_dir !== undefined && !s.ended && s.expires_at > now && within(s.project_dir, cwd),
  );
  mine.sort((a, b) => (b.project_dir?.length ?? 0) - (a.project_dir?.length ?? 0) || b.created_at - a.created_at);
  return mine[0];
}

/** Finds the project's session, or makes one (plaintext: a sealed inbox was refused before). */
export async function hookSession(c: C, who: Holder, found: InboxSession | undefined, cwd: string): Promise<HookSession> {
  if (found) {
    if (found.sealed) return { refused: "e2e_sealed", message: SEALED_HOOK_MESSAGE };
    const again = await checkCredential(c.var.host, formatCredential(who), found.session_id);
    if (again?.session) return { sid: found.session_id, epoch: again.session.epoch, projectDir: found.project_dir ?? cwd };
    // Ended between the inbox's answer and now: make a new one below.
  }
  const r = await makeInboxSession(c, who, { project_dir: cwd });
  if ("status" in r) return { refused: r.status === 401 ? "revoked" : "failed", message: r.message };
  return { sid: r.made.session_id, epoch: r.made.epoch, projectDir: cwd };
}

export type Asked = { kind: "result"; result: ToolResultBody } | { kind: "declined" } | { kind: "none"; why: string } | { kind: "sealed" };

/**
 * Puts card `name` with `args` in the session and holds the request until its end, `waitS`, or the client leaving.
 * An answer is acked once the response was read out (RequestScope); no answer cancels the card.
 */
export async function holdCard(
  c: C,
  s: { sid: string; epoch: number },
  name: string,
  args: Record<string, unknown>,
  waitS: number,
  scope: RequestScope,
): Promise<Asked> {
  const host = c.var.host;
  const callId = `mcp_${randomId(16)}`;
  const log = (line: string) => console.log(`hooks: ${line}`);
  const link = CallLink.start(
    edgeLink((sid) => host.session(sid), s.epoch),
    s.sid,
    callId,
    { type: "tool.call", call_id: callId, name, arguments: args, timeout_s: Math.ceil(waitS) + HTTP_HOOK_LIMITS.cardGraceS },
    log,
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const signal = c.req.raw.signal;
  const waited = await Promise.race<LinkEnd | "budget" | "left">([
    link.end,
    new Promise((r) => (timer = setTimeout(() => r("budget"), waitS * 1000))),
    new Promise((r) => (signal.aborted ? r("left") : signal.addEventListener("abort", () => r("left"), { once: true }))),
  ]);
  if (timer !== undefined) clearTimeout(timer);
  if (waited === "budget" || waited === "left") {
    // Nobody answered in time (or Claude Code gave up first): the card closes, the terminal decides.
    scope.keep(link.cancel());
    log(`${name} in ${s.sid}: no answer within ${waitS} s; card cancelled`);
    return { kind: "none", why: waited === "budget" ? "no_answer" : "client_left" };
  }
  if (waited.kind === "error" && waited.code === "e2e_sealed") return { kind: "sealed" };
  if (waited.kind === "result" || waited.kind === "error") {
    scope.onDelivered(() => scope.keep(link.ack()));
    scope.onEnd(() => link.close());
    if (waited.kind === "result") return { kind: "result", result: waited.result };
    if (waited.code === "declined") return { kind: "declined" };
    log(`${name} in ${s.sid}: ended with ${waited.code} (${waited.message})`);
    return { kind: "none", why: waited.code };
  }
  link.close();
  log(`${name} in ${s.sid}: the link ended (${waited.kind})`);
  return { kind: "none", why: waited.kind };
}
