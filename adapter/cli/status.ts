// `lineup status` (the saved session and the relay's view of it) and `lineup sessions` (list or forget
// the sessions saved in the state directory).
import { resolve } from "node:path";
import type { SessionStatus } from "../../shared/contract/protocol.js";
import { homeRows, labelsFor } from "../../shared/inbox/names.js";
import { InboxApi } from "../client/inbox.js";
import { defaultRelayUrl, defaultStateDir, findInbox, findSaved, forgetSessions, loadState, normalizeUrl, type SavedSession } from "../client/state.js";
import { err, out, parse, str, UsageError } from "./common.js";
import { HELP } from "./help.js";

export async function cmdStatus(argv: string[]): Promise<number> {
  const { values } = parse(argv, { json: { type: "boolean" } });
  if (values.help) return (out(HELP.status!), 0);
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  const relayUrl = normalizeUrl(str(values, "relay") ?? defaultRelayUrl());
  const sid = str(values, "session") ?? process.env.LINEUP_SESSION;
  const token = str(values, "token") ?? process.env.LINEUP_TOKEN;
  let target: { sessionId: string; token: string; saved?: SavedSession };
  if (sid && token) target = { sessionId: sid, token };
  else {
    const saved = findSaved(stateDir, relayUrl, process.cwd());
    if (!saved) {
      err(`no session saved for ${process.cwd()} on ${relayUrl} (run \`lineup connect\`)`);
      return 2;
    }
    target = { sessionId: saved.sessionId, token: saved.agentToken, saved };
  }
  let res: Response;
  try {
    res = await fetch(`${relayUrl}/api/sessions/${encodeURIComponent(target.sessionId)}`, {
      headers: { authorization: `Bearer ${target.token}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    err(`cannot reach the relay at ${relayUrl}: ${(e as Error).message}`);
    return 2;
  }
  if (!res.ok) {
    err(`the relay answered ${res.status}: ${await res.text()}`);
    return 2;
  }
  const s = (await res.json()) as SessionStatus;
  if (values.json) {
    out(JSON.stringify({ relay_url: relayUrl, ...(target.saved?.appUrl ? { app_url: target.saved.appUrl } : {}), ...s }));
    return 0;
  }
  // "waiting" only while a call waits (issue 28): a permission hook that was killed leaves its status behind.
  const status = s.agent.status?.state === "waiting" && s.pending_calls === 0 ? undefined : s.agent.status;
  const st = status ? ` — ${status.state}${status.detail ? ` (${status.detail})` : ""}` : "";
  out(`session    ${s.session_id}${s.label ? `  "${s.label}"` : ""}
relay      ${relayUrl}
expires    ${new Date(s.expires_at).toISOString()}
agent      ${s.agent.online ? "online" : "offline"}${st}
apps       ${s.apps} connected
app tools  ${s.tools.app.map((t) => t.name).join(", ") || "(none)"}
agent tools ${s.tools.agent.map((t) => t.name).join(", ") || "(none)"}
open calls ${s.pending_calls}${target.saved?.appUrl ? `\napp link   ${target.saved.appUrl}` : ""}`);
  return 0;
}

export async function cmdSessions(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, all: { type: "boolean" } });
  if (values.help) return (out(HELP.sessions!), 0);
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  const [sub = "list", arg, ...rest] = positionals;
  if (rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  if (sub === "list") {
    const list = loadState(stateDir).sessions;
    if (values.json) return (out(JSON.stringify(list.map(({ agentToken: _a, appToken: _b, ...s }) => s))), 0);
    await listInbox(normalizeUrl(str(values, "relay") ?? defaultRelayUrl()), stateDir);
    if (!list.length) return (out(`no saved sessions in ${stateDir}`), 0);
    for (const s of list) {
      const exp = s.expiresAt ? (s.expiresAt <= Date.now() ? "expired" : `expires ${new Date(s.expiresAt).toISOString().slice(0, 16)}Z`) : "";
      out(`${s.sessionId}  ${s.relayUrl}  ${s.cwd}  ${exp}`);
    }
    return 0;
  }
  if (sub === "forget") {
    const relayUrl = normalizeUrl(str(values, "relay") ?? defaultRelayUrl());
    const cwd = resolve(process.cwd());
    const gone = forgetSessions(stateDir, (s) => (values.all ? true : arg ? s.sessionId === arg : s.relayUrl === relayUrl && s.cwd === cwd));
    out(gone.length ? `forgot ${gone.map((g) => g.sessionId).join(", ")}` : "nothing to forget");
    return 0;
  }
  throw new UsageError(`unknown sessions command ${JSON.stringify(sub)} (list | forget)`);
}

/**
 * The rows the phone's home lists for this machine's inbox (issue 28): the same sessions, names and order
 * (shared/inbox/names.ts), before the sessions saved here. Nothing when no inbox is saved for the relay; a
 * relay out of reach is said in one line (the saved list still follows).
 */
async function listInbox(relayUrl: string, stateDir: string): Promise<void> {
  const inbox = findInbox(stateDir, relayUrl);
  if (!inbox) return;
  let sessions;
  try {
    sessions = (await new InboxApi(relayUrl).state(inbox.machineCredential)).sessions;
  } catch (e) {
    err(`the inbox on ${relayUrl} could not be read: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  const names = labelsFor(sessions);
  out(`inbox ${inbox.inboxId} on ${relayUrl} — what its devices list:`);
  if (!sessions.length) out("  (no sessions)");
  for (const s of homeRows(sessions, (x) => x.waiting.length > 0)) {
    const state = [s.agent_online ? "agent online" : "agent offline", s.waiting.length ? `${s.waiting.length} waiting` : "", s.sealed ? "sealed" : ""];
    out(`  ${names.get(s.session_id) || "(unnamed)"}  ${state.filter(Boolean).join(", ")}  ${s.project_dir ?? ""}  ${s.session_id}`);
  }
  out("saved in this state directory:");
}
