// The connection state, compact and always in view (it lives in the sticky header, not in a banner that
// scrolls away): no network vs relay unreachable vs agent offline vs online are told apart, and a tab that
// another tab of this device replaced (close 4409) says so and takes over again in one tap.
import type { AgentStatus } from "../../../shared/contract/relay-frames.js";
import type { SessionConn } from "../conn.js";
import { t, type Key } from "../i18n.js";
import { connOf, entries, inboxes } from "../sessions.js";
import { online } from "../state.js";

export type ConnKind = "online" | "agent-away" | "connecting" | "reconnecting" | "unreachable" | "no-network" | "replaced" | "stopped";

/** One session's state as the human should read it, worst first. */
export function kindOf(conn: SessionConn): ConnKind {
  if (conn.phase.value === "stopped") return conn.stopReason.value?.key === "stopped4409" ? "replaced" : "stopped";
  if (!online.value) return "no-network";
  if (!conn.reachable.value) return "unreachable";
  if (conn.phase.value === "connecting") return "connecting";
  if (conn.phase.value !== "online") return "reconnecting";
  return conn.presence.value?.agent.online ? "online" : "agent-away";
}

const TEXT: Record<Exclude<ConnKind, "stopped">, Key> = {
  online: "connOnline",
  "agent-away": "connAgentAway",
  connecting: "connecting",
  reconnecting: "connReconnecting",
  unreachable: "connUnreachable",
  "no-network": "connNoNetwork",
  replaced: "connReplaced",
};

/** The dot's colour: green online, amber on the way or waiting, grey/red when answers cannot go out now. */
const TONE: Record<ConnKind, "on" | "wait" | "off" | "bad"> = {
  online: "on",
  "agent-away": "off",
  connecting: "wait",
  reconnecting: "wait",
  unreachable: "bad",
  "no-network": "bad",
  replaced: "bad",
  stopped: "bad",
};

/** The agent's own status as the human should read it (issue 28), or undefined: "waiting" only while a call
 * of this session waits here — a permission hook that exited leaves its "waiting" behind on the relay — and
 * the states of the wire contract (idle, working, waiting, error) in the app's language. */
export function agentState(conn: SessionConn, s: AgentStatus | undefined): string | undefined {
  if (!s || (s.state === "waiting" && !conn.pendingCount())) return undefined;
  // t() is "" for a key it does not know: a free-text state shows as the agent sent it.
  return `${t(`st_${s.state}` as Key) || s.state}${s.detail ? ` — ${s.detail}` : ""}`;
}

/** Stops a reconnect cannot cure: the session ended or is gone. */
const FINAL = new Set<Key>(["stoppedGone", "stopped4004", "stoppedRevoked"]);

export function SessionStatusLine({ conn }: { conn: SessionConn }) {
  const k = kindOf(conn);
  const stop = conn.stopReason.value;
  const p = conn.presence.value;
  const status = k === "online" ? agentState(conn, p?.agent.status) : undefined;
  const text = k === "stopped" ? t(stop?.key ?? "stoppedOther", { reason: stop?.reason ?? "" }) : t(TEXT[k]);
  const apps = k === "online" || k === "agent-away" ? (p?.apps ?? 0) : 0;
  return (
    // The session's status line keeps the `presence` classes: on/off tell whether the agent is online.
    <div class={`conn-line presence ${TONE[k]}`} data-conn={k} role="status">
      <span class="dot" aria-hidden="true" />
      <span class="conn-text">{text}</span>
      {status && <span class="status">· {status}</span>}
      {apps > 1 && <small class="apps">· {t("apps", { n: apps })}</small>}
      <PathMark conn={conn} kind={k} />
      {k === "replaced" && (
        <button class="btn small" type="button" onClick={() => conn.takeOver()}>
          {t("useHere")}
        </button>
      )}
      {k === "stopped" && stop && !FINAL.has(stop.key) && (
        <button class="btn small" type="button" onClick={() => conn.poke()}>
          {t("reconnect")}
        </button>
      )}
    </div>
  );
}

/** Issue 32: how answers reach the agent — "direct" while the data channel on this network is open (even with the
 * relay down), "via relay" while only the relay carries them; nothing when neither does. */
function PathMark({ conn, kind }: { conn: SessionConn; kind: ConnKind }) {
  const direct = conn.path.value === "direct";
  if (!direct && kind !== "online") return null;
  return (
    <small class={`path ${direct ? "direct" : "relay"}`} data-path={direct ? "direct" : "relay"}>
      · {t(direct ? "pathDirect" : "pathRelay")}
    </small>
  );
}

/** Every other screen: is this device in touch with its relay(s)? Nothing when nothing is paired. */
export function RelayStatusLine() {
  const ibs = inboxes.value;
  const list = entries.value;
  if (!ibs.length && !list.length) return null;
  const conns = list.map((e) => connOf(e.sid)).filter((c): c is SessionConn => !!c);
  let k: "online" | "connecting" | "unreachable" | "no-network";
  if (!online.value) k = "no-network";
  else if (ibs.some((ib) => ib.phase.value === "offline" || ib.phase.value === "stopped") || conns.some((c) => !c.reachable.value)) k = "unreachable";
  else if (ibs.some((ib) => ib.phase.value === "connecting") || conns.some((c) => c.phase.value === "connecting")) k = "connecting";
  else k = "online";
  const text = k === "online" ? t("connRelayOnline") : k === "connecting" ? t("connecting") : k === "unreachable" ? t("connUnreachable") : t("connNoNetwork");
  return (
    <div class={`conn-line ${k === "online" ? "on" : k === "connecting" ? "wait" : "bad"}`} data-conn={k} role="status">
      <span class="dot" aria-hidden="true" />
      <span class="conn-text">{text}</span>
    </div>
  );
}
