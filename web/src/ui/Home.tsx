// The sessions paired on this device: label, agent online state, waiting calls; open or forget.
import { connOf, forgetSession, sessions } from "../sessions.js";
import { navigate } from "../router.js";
import { t } from "../i18n.js";
import { Presence } from "./SessionView.js";

export function Home() {
  const list = sessions.value;
  if (!list.length) {
    return (
      <section class="home empty-home">
        <img src="/icon.svg" alt="" width={96} height={96} />
        <p>{t("noSessions")}</p>
        <button class="btn" onClick={() => navigate("/settings")}>{t("lan")}</button>
      </section>
    );
  }
  return (
    <section class="home">
      <h2 class="sr-only">{t("sessions")}</h2>
      <ul class="sessions">
        {list.map((s) => {
          const c = connOf(s.sid);
          if (!c) return null;
          const live = c.phase.value === "online";
          const n = live ? c.pendingCount() : Math.max(c.pendingCount(), c.remotePending.value ?? 0);
          const label = c.label.value || s.label || s.sid;
          return (
            <li key={s.sid} class="session-row" data-sid={s.sid}>
              <a href={`/s/${s.sid}`} onClick={(e) => { e.preventDefault(); navigate(`/s/${s.sid}`); }}>
                <span class="avatar" aria-hidden="true">{label.slice(0, 1).toUpperCase()}</span>
                <span class="meta">
                  <b class="label">{label}</b>
                  <Presence conn={c} />
                  <small class="host">{new URL(s.origin).host}</small>
                </span>
                {n > 0 && <span class="badge" aria-label={t("pending", { n })}>{n}</span>}
              </a>
              <button class="btn link forget" aria-label={`${t("forget")} ${label}`} onClick={() => confirm(t("forgetConfirm")) && forgetSession(s.sid)}>{t("forget")}</button>
            </li>
          );
        })}
      </ul>
      <p class="hint">{t("sessionsHint")}</p>
    </section>
  );
}
