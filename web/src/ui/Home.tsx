// Home: "Waiting for you" — every call waiting for a human across all sessions, with what it asks — then
// the sessions themselves (an inbox's, live from its socket, and guest links), with online state and
// pending count. A tap on a waiting call opens its session at that card.
import { AUTOMATIC, type SessionConn } from "../conn.js";
import { previewText, waitText } from "../calltext.js";
import { t } from "../i18n.js";
import { focusCall, navigate } from "../router.js";
import { homeRows, tail, twinKey } from "../labels.js";
import { connOf, entries, forgetSession, inboxes, type Entry } from "../sessions.js";
import { Presence } from "./SessionView.js";
import { TailText } from "./Tail.js";
import { Lock, ToolIcon } from "./Icon.js";
import { joining, needsPairing } from "../e2e-watch.js";
import { Inline } from "./Inline.js";
import { online } from "../state.js";

export interface WaitItem {
  sid: string;
  callId: string;
  name: string;
  text: string;
  at: number;
  label: string;
}

/** The calls of one session waiting for a human: the inbox's list (it has them even for sessions this
 * device has not caught up with), minus what this device already settled, plus what only this device holds. */
function waitingOf(e: Entry, c: SessionConn | undefined, label: string): WaitItem[] {
  const local = c?.calls.value ?? [];
  const byId = new Map(local.map((x) => [x.call_id, x]));
  const out: WaitItem[] = [];
  const listed = new Set<string>();
  for (const w of e.info?.waiting ?? []) {
    if (AUTOMATIC.has(w.name)) continue;
    const l = byId.get(w.call_id);
    listed.add(w.call_id);
    if (l && l.state !== "pending") continue; // answered or closed here; the inbox follows shortly
    // The relay's text is the agent's markdown on one line: shown without its markers. A sealed session's
    // is "" — one the relay puts there anyway is its own words, never shown as the agent's (issue 26).
    const relayText = c?.sealed.value || e.info?.sealed === true ? "" : previewText(w.text);
    out.push({ sid: e.sid, callId: w.call_id, name: w.name, text: relayText || (l ? waitText(l) : ""), at: w.created_at, label });
  }
  // For an inbox session only a connected session's own list is as fresh as the inbox's.
  const trustLocal = !e.info || c?.phase.value === "online";
  if (trustLocal) {
    for (const l of local) {
      if (l.state !== "pending" || AUTOMATIC.has(l.name) || listed.has(l.call_id)) continue;
      out.push({ sid: e.sid, callId: l.call_id, name: l.name, text: waitText(l), at: l.at, label });
    }
  }
  return out;
}

const labelOf = (e: Entry, c: SessionConn | undefined): string => (e.guest ? c?.label.value || e.saved.label : e.label) || t("unnamed");

function open(sid: string, callId?: string) {
  focusCall.value = callId ? { sid, callId } : null;
  navigate(`/s/${sid}`);
}

function Waiting({ items }: { items: WaitItem[] }) {
  return (
    <section class="waiting" aria-labelledby="h-waiting">
      <h2 id="h-waiting">
        {t("waitingForYou")} {items.length > 0 && <span class="badge">{items.length}</span>}
      </h2>
      {items.length === 0 ? (
        <p class="hint">{t("nothingWaiting")}</p>
      ) : (
        <ul class="wait-list">
          {items.map((w) => (
            <li key={`${w.sid}/${w.callId}`}>
              <a
                class="wait-row"
                href={`/s/${w.sid}`}
                data-sid={w.sid}
                data-call={w.callId}
                onClick={(ev) => {
                  ev.preventDefault();
                  open(w.sid, w.callId);
                }}
              >
                <ToolIcon name={w.name} />
                <span class="meta">
                  <b class="wait-text">{w.text || w.name}</b>
                  <small class="wait-session">
                    <TailText text={w.label} />
                  </small>
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Row({ e, c, n, twin }: { e: Entry; c: SessionConn; n: number; twin?: boolean }) {
  const label = labelOf(e, c);
  const info = e.info;
  // An inbox session's online state comes from the inbox while its own socket is not up yet.
  const agentOnline = c.phase.value === "online" ? undefined : e.inbox?.phase.value === "online" ? !!e.info?.agent_online : undefined;
  return (
    <li class={`session-row${e.guest ? " guest" : ""}`} data-sid={e.sid}>
      <a
        href={`/s/${e.sid}`}
        onClick={(ev) => {
          ev.preventDefault();
          open(e.sid);
        }}
      >
        <span class="avatar" aria-hidden="true">
          {/* The project's initial: the label starts with the project ("a/api-server · laptop" → A). */}
          {label.split(" · ")[0]!.split("/").pop()!.slice(0, 1).toUpperCase()}
        </span>
        <span class="meta">
          <b class="label">
            <TailText text={label} />
          </b>
          {/* i29-room: the agent said it needs you / finished, and nobody opened the session since (docs/inbox.md). */}
          {info?.attention && (
            <span class={`row-mark ${info.attention.reason === "completed" ? "done" : "needs"}`}>
              {t(info.attention.reason === "completed" ? "markFinished" : "markNeedsYou")}
            </span>
          )}
          <Presence conn={c} agentOnline={agentOnline} />
          <small class="host">
            {e.guest ? (
              <>
                <span class="tag">{t("guestLink")}</span> {new URL(e.saved.origin).host}
              </>
            ) : (
              tail(info?.project_dir ?? new URL(e.saved.origin).host, 44)
            )}
            {/* Two rows of one project and machine (the older one waits): told apart by when each started. */}
            {twin && ` · ${new Date(info!.created_at).toLocaleString([], { dateStyle: "short", timeStyle: "medium" })}`}
          </small>
        </span>
        <Lock sealed={c.sealed.value || e.info?.sealed === true} />
        {n > 0 && (
          <span class="badge" aria-label={t("pending", { n })}>
            {n}
          </span>
        )}
      </a>
      {/* A guest link, or an inbox session whose agent left with nothing waiting: removable from this device. */}
      {(e.guest || (info && !info.agent_online && !n)) && (
        <button class="btn link forget" aria-label={`${t("forget")} ${label}`} onClick={() => confirm(t("forgetConfirm")) && forgetSession(e.sid)}>
          {t("forget")}
        </button>
      )}
    </li>
  );
}

export function Home() {
  const list = entries.value;
  const paired = inboxes.value;
  if (!list.length && !paired.length) {
    return (
      <section class="home empty-home">
        <img src="/icon.svg" alt="" width={96} height={96} />
        <p>{t("noSessions")}</p>
        <button class="btn" onClick={() => navigate("/settings")}>
          {t("lan")}
        </button>
      </section>
    );
  }
  const rows = list.map((e) => {
    const c = connOf(e.sid);
    const label = c ? labelOf(e, c) : e.label;
    const waiting = waitingOf(e, c, label);
    // A guest session that is not connected knows its count only from the relay's last status.
    const n =
      e.guest && c && c.phase.value !== "online"
        ? Math.max(waiting.length, c.remotePending.value ?? 0)
        : Math.max(waiting.length, e.info && e.inbox?.phase.value === "online" ? e.info.pending : 0);
    return { e, c, waiting, n };
  });
  const items = rows.flatMap((r) => r.waiting).sort((a, b) => a.at - b.at);
  // One row per project and machine, waiting first, then the newest activity (shared/inbox/names.ts);
  // guest sessions (no inbox report) after the inbox's. A hidden older twin's calls still wait above.
  const byInfo = new Map(rows.map((r) => [r.e.info, r]));
  const sorted = [
    ...homeRows(
      rows.flatMap((r) => (r.e.info ? [r.e.info] : [])),
      (s) => byInfo.get(s)!.n > 0,
    ).map((s) => byInfo.get(s)!),
    ...rows.filter((r) => !r.e.info),
  ];
  const twins = sorted.flatMap((r) => (r.e.info ? [twinKey(r.e.info)] : []));
  const stale = online.value && paired.some((ib) => ib.phase.value === "offline" || ib.phase.value === "stopped");
  return (
    <section class="home">
      {stale && (
        <p class="hint" role="status">
          {t("inboxOffline")}
        </p>
      )}
      {/* Paired before E2E was turned on: the relay never hands the key over, so this device must pair again. */}
      {needsPairing.value.size > 0 && joining.value === 0 && (
        <p class="banner stop e2e-no-key" role="alert">
          <span>
            <Inline text={t("e2ePairAgain")} />
          </span>
        </p>
      )}
      <Waiting items={items} />
      <section class="list" aria-labelledby="h-sessions">
        <div class="list-head">
          <h2 id="h-sessions">{t("sessions")}</h2>
          <button class="btn" onClick={() => navigate("/devices")}>
            {t("devices")}
          </button>
        </div>
        {sorted.length === 0 ? (
          <p class="hint">{t("inboxEmpty")}</p>
        ) : (
          <ul class="sessions">
            {sorted.map((r) =>
              r.c ? <Row key={r.e.sid} e={r.e} c={r.c} n={r.n} twin={!!r.e.info && twins.filter((k) => k === twinKey(r.e.info!)).length > 1} /> : null,
            )}
          </ul>
        )}
      </section>
      {!paired.length && <p class="hint">{t("sessionsHint")}</p>}
    </section>
  );
}
