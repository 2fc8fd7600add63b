// Every tool call this device saw (seed 003: a visible log of tool calls): tool, action, arguments,
// result, who answered and how long it took.
import type { CallEntry, SessionConn } from "../conn.js";
import { t } from "../i18n.js";
import { STATE_KEY } from "./Settled.js";
import { PushRow } from "../push-lazy.js";
import { logText as short } from "../calltext.js";

function duration(c: CallEntry): string {
  if (!c.doneAt) return "—";
  const ms = Math.max(0, c.doneAt - c.at);
  return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

function who(c: CallEntry, conn: SessionConn): string {
  if (c.by === "auto") return t("auto");
  if (c.by === "me") return t("you");
  if (c.state === "elsewhere" || c.state === "lost") {
    const name = conn.whoAnswered(c);
    return name ? t("answeredOn", { who: name }) : t("elsewhere");
  }
  return "—";
}

export function ToolLog({ conn }: { conn: SessionConn }) {
  const calls = [...conn.calls.value].reverse();
  if (!calls.length) return <p class="empty">{t("noCalls")}</p>;
  return (
    <ol class="log" aria-label={t("log")}>
      {calls.map((c) => (
        <li key={c.call_id} class={`log-row s-${c.state}`} data-call={c.call_id}>
          <div class="log-head">
            <b>{c.name}</b>
            {c.action && <span class="act">{c.action}</span>}
            <span class={`pill s-${c.state}`}>{t(STATE_KEY[c.state])}</span>
            <time dateTime={new Date(c.at).toISOString()}>{new Date(c.at).toLocaleTimeString()}</time>
          </div>
          <dl>
            <dt>{t("args")}</dt>
            <dd>
              <code>{short(c.args)}</code>
            </dd>
            <dt>{t("result")}</dt>
            <dd>
              <code>
                {c.error
                  ? `${c.error.code}: ${c.error.message}`
                  : c.result
                    ? short(c.result.message) +
                      (typeof c.result.rule === "string" ? ` (${c.result.rule})` : "") +
                      (c.result.content ? ` (+${c.result.content.length})` : "")
                    : c.answerText !== undefined
                      ? short(c.answerText)
                      : "—"}
              </code>
            </dd>
            <dt>{t("by")}</dt>
            <dd>{who(c, conn)}</dd>
            <dt>{t("took")}</dt>
            <dd>{duration(c)}</dd>
            <PushRow sid={conn.sid} callId={c.call_id} calls={calls.length} /> {/* issue 16: push attempts */}
          </dl>
        </li>
      ))}
    </ol>
  );
}
