// `lineup connect`: create or reuse this directory's session, announce pairing, stay connected and log
// presence, the calls waiting for the human (from any caller) and how each ended; stdin lines are messages
// or /status, /call, /quit.
import { createInterface } from "node:readline";
import type { DeviceInfo, RecentCall } from "../../shared/contract/inbox.js";
import type { SessionStatus } from "../../shared/contract/protocol.js";
import { cut } from "../../shared/text/cut.js";
import { InboxApi } from "../client/inbox.js";
import { connectAgent, type Client, type LineUpError } from "../client/index.js";
import { defaultStateDir, findInbox, loadState, normalizeUrl } from "../client/state.js";
import { connectOptions, failConnect, out, parse, printLink, say, str } from "./common.js";
import { HELP } from "./help.js";
import { announceSession } from "./pairing.js";
import { loadNdc } from "../client/ndc.js";

export async function cmdConnect(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    label: { type: "string" },
    "no-qr": { type: "boolean" },
    "guest-link": { type: "boolean" },
    "no-resume": { type: "boolean" },
    "no-direct": { type: "boolean" },
  });
  if (values.help) return (out(HELP.connect!), 0);
  const opts = connectOptions(values, (s) => say(s));
  // Issue 32: answer a device's direct-path offer (node-datachannel, optional, loaded at the first offer).
  if (values["no-direct"] !== true && process.env.LINEUP_DIRECT !== "0") opts.direct = { ndc: () => loadNdc() };
  const label = str(values, "label");
  if (label) opts.label = label;
  let client: Client;
  try {
    client = await connectAgent(opts);
  } catch (e) {
    return failConnect(e);
  }
  // Ctrl-C / SIGTERM are taken from here on, before anything is printed: a signal that comes right after the
  // link (a supervisor, or a test that waited for it) while the rest still loads stops cleanly, exit 0.
  // regression: cli-inbox.test.ts saw exit code null when SIGINT beat the handlers under load.
  let stop: ((code: number) => void) | undefined;
  let stopAsked = false;
  const onSignal = () => (stop ? stop(0) : (stopAsked = true));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  say(`session ${client.sessionId} on ${client.relayUrl} (client ${client.clientId})`);
  const appUrl = client.appUrl;
  await announceSession({
    relayUrl: client.relayUrl,
    stateDir: opts.stateDir ?? defaultStateDir(),
    sessionId: client.sessionId,
    qr: !values["no-qr"],
    guestLink: values["guest-link"] === true,
    ...(appUrl ? { appUrl } : {}),
    log: say,
    v1: () =>
      appUrl
        ? printLink(appUrl, !values["no-qr"])
        : say("joined with LINEUP_SESSION/LINEUP_TOKEN: the app link is not known here (the session's creator has it)"),
  });
  const p = client.presence;
  const apps = (n: number) => `${n} app${n === 1 ? "" : "s"} connected`;
  say(apps(p.apps));
  // Presence only when it changes: a phone's reconnects are not news, the calls and answers below are.
  let shown = { apps: p.apps, status: JSON.stringify(p.agent.status ?? null) };
  client.on("presence", (pr) => {
    const now = { apps: pr.apps, status: JSON.stringify(pr.agent.status ?? null) };
    if (now.apps !== shown.apps) say(pr.apps ? apps(pr.apps) : `${apps(0)}: calls wait until the phone is back`);
    if (now.status !== shown.status && pr.agent.status)
      say(`agent status: ${pr.agent.status.state}${pr.agent.status.detail ? ` (${pr.agent.status.detail})` : ""}`);
    shown = now;
  });
  const unwatch = watchWaiting(client, opts.stateDir ?? defaultStateDir());
  // i29-defer: resume headless Claude Code runs whose deferred card was answered (docs/permissions.md §9.2).
  const stopResuming = values["no-resume"]
    ? undefined
    : (await import("../permissions/resume.js")).watchDeferred({ stateDir: opts.stateDir ?? defaultStateDir(), log: say });
  let tools = "";
  client.on("tools", (t) => {
    const now = t.map((x) => x.name).join(", ") || "(none)";
    if (now !== tools) say(`app tools: ${now}`); // again only when the catalog changed
    tools = now;
  });
  client.on("message", (m) =>
    say(`message from ${m.from.role} ${m.from.client_id}: ${m.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ")}`),
  );
  client.on("connection", (s) => s !== "open" && say(`connection ${s}`));
  client.on("result", (r) => say(`result for an earlier call ${r.call_id}: ${JSON.stringify(r.result ?? r.error)}`));

  return new Promise<number>((done) => {
    let finished = false;
    const finish = async (code: number) => {
      if (finished) return;
      finished = true;
      unwatch();
      await stopResuming?.();
      rl?.close();
      await client.close();
      done(code);
    };
    client.on("connection", (s) => {
      if (s === "closed" && client.lastError && client.lastError.code !== "closed") {
        say(`stopped: ${client.lastError.message}`);
        void finish(2);
      }
    });
    stop = (code) => void finish(code);
    if (stopAsked) void finish(0);
    const rl = process.stdin.isTTY || !process.stdin.readableEnded ? createInterface({ input: process.stdin }) : undefined;
    rl?.on("line", (line) => void onLine(client, line.trim(), () => void finish(0)));
    // stdin closing (e.g. `< /dev/null`) does not disconnect: the agent stays until a signal.
  });
}

/** How often `lineup connect` asks what waits for the human (one small GET; the relay has no push for it). */
const WATCH_MS = 3_000;

/**
 * The session's calls as they come and go, from any caller (`lineup call`, MCP, hooks): an inbox session's
 * waiting list says what each asks; a v1 session's status only how many wait. Returns the stop function.
 */
function watchWaiting(client: Client, stateDir: string): () => void {
  const relayUrl = normalizeUrl(client.relayUrl);
  const saved = loadState(stateDir).sessions.find((s) => s.sessionId === client.sessionId && s.relayUrl === relayUrl);
  const inbox = saved?.inboxId ? findInbox(stateDir, relayUrl) : undefined;
  let known = new Map<string, string>();
  let count: number | undefined;
  let busy = false;
  const since = Date.now();
  const told = new Set<string>();
  // A sealed call's text is not the relay's to know (""): it is logged by its tool's name, never as `choice ""`.
  const what = (name: string, text: string) => (text ? `${name} ${JSON.stringify(cut(text, 120))}` : `${name} (sealed: its text is end-to-end encrypted)`);
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      if (inbox && inbox.inboxId === saved?.inboxId) {
        const st = await new InboxApi(relayUrl).state(inbox.machineCredential);
        const mine = st.sessions.find((x) => x.session_id === client.sessionId);
        const now = new Map((mine?.waiting ?? []).map((w) => [w.call_id, what(w.name, w.text)]));
        for (const [id, w] of now) if (!known.has(id)) say(`call waiting for the human: ${w}`);
        // How each call ended, with the human's answer: also those answered between two polls.
        for (const r of mine?.recent ?? []) {
          if (told.has(r.call_id) || r.at < since) continue;
          told.add(r.call_id);
          if (!known.has(r.call_id)) say(`call waiting for the human: ${what(r.name, r.text)}`);
          say(`call ${ended(r, st.devices)}: ${what(r.name, r.text)}`);
        }
        for (const [id, w] of known) if (!now.has(id) && !told.has(id)) say(`call settled: ${w} (answered, timed out or cancelled)`);
        // A call the relay no longer lists as recent never comes back: forget it (connect may run for days).
        for (const id of told) if (!mine?.recent?.some((r) => r.call_id === id)) told.delete(id);
        known = now;
      } else if (saved?.agentToken) {
        const r = await fetch(`${relayUrl}/api/sessions/${encodeURIComponent(client.sessionId)}`, {
          headers: { authorization: `Bearer ${saved.agentToken}` },
          signal: AbortSignal.timeout(10_000),
        });
        if (!r.ok) return;
        const n = ((await r.json()) as SessionStatus).pending_calls;
        if (n !== count && (count !== undefined || n > 0)) say(`${n} call${n === 1 ? "" : "s"} waiting for the human`);
        count = n;
      }
    } catch {
      /* unreachable for now: the connection lines say so */
    } finally {
      busy = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), WATCH_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** "answered on Phone → yes", "timed out", … for `lineup connect`'s log (the answer is cut by the relay). */
function ended(r: RecentCall, devices: readonly DeviceInfo[]): string {
  if (r.outcome !== "answered")
    return ({ declined: "declined", timeout: "timed out", cancelled: "cancelled", ended: "ended with the session", error: "ended with an error" } as const)[
      r.outcome
    ];
  const by = r.by ? (devices.find((d) => d.id === r.by)?.name ?? r.by) : undefined;
  return `answered${by ? ` on ${by}` : ""}${r.answer !== undefined ? ` → ${JSON.stringify(r.answer)}` : ""}`;
}

async function onLine(client: Client, line: string, quit: () => void): Promise<void> {
  if (!line) return;
  if (line === "/quit" || line === "/exit") return quit();
  if (line.startsWith("/status ")) {
    const [, state, ...detail] = line.split(/\s+/);
    client.setStatus(state!, detail.length ? detail.join(" ") : undefined);
    say(`status set to ${state}`);
    return;
  }
  if (line.startsWith("/call ")) {
    const m = /^\/call\s+(\S+)(?:\s+([A-Za-z0-9_.-]+))?(?:\s+(\{.*\}))?\s*$/.exec(line);
    if (!m) {
      say("usage: /call <tool> [action] [json-args]");
      return;
    }
    let args: Record<string, unknown> = {};
    try {
      if (m[3]) args = JSON.parse(m[3]) as Record<string, unknown>;
    } catch {
      say("the arguments are not valid JSON");
      return;
    }
    say(`calling ${m[1]}${m[2] ? `.${m[2]}` : ""} …`);
    try {
      say(`result: ${JSON.stringify(await client.call(m[1]!, m[2], args))}`);
    } catch (e) {
      const le = e as LineUpError;
      say(`error ${le.code}: ${le.message}`);
    }
    return;
  }
  if (line.startsWith("/")) {
    say("commands: /status <state> [detail], /call <tool> [action] [json], /quit; anything else is sent as a message");
    return;
  }
  client.send(line);
}
