// The shell: header with back/settings, offline banner, and the three screens.
import { signal } from "@preact/signals";
import { t } from "./i18n.js";
import { navigate, path } from "./router.js";
import { connOf, sessions } from "./sessions.js";
import { Icon } from "./ui/Icon.js";
import { Home } from "./ui/Home.js";
import { SessionView } from "./ui/SessionView.js";
import { Settings } from "./ui/Settings.js";

export const online = signal(navigator.onLine);
export const flash = signal<string>("");

export function App() {
  const p = path.value;
  const m = /^\/s\/([A-Za-z0-9_-]+)\/?$/.exec(p);
  const sid = m?.[1];
  const conn = sid ? connOf(sid) : undefined;
  const screen = conn ? "session" : p === "/settings" ? "settings" : "home";
  const saved = sid ? sessions.value.find((s) => s.sid === sid) : undefined;
  const title = screen === "session" ? conn?.label.value || saved?.label || sid : screen === "settings" ? t("settings") : t("app");
  return (
    <div class={`shell ${screen}`}>
      <header class="top">
        {screen !== "home" ? (
          <button class="icon back" aria-label={t("back")} onClick={() => navigate("/")}>
            <Icon name="back" size={26} />
          </button>
        ) : (
          <img class="logo" src="/icon.svg" alt="" width={28} height={28} />
        )}
        <h1>{title}</h1>
        {screen !== "settings" && (
          <button class="icon" aria-label={t("settings")} onClick={() => navigate("/settings")}>
            <Icon name="gear" />
          </button>
        )}
      </header>
      {(!online.value || (conn && !conn.reachable.value)) && <div class="banner warn" role="status">{t("offlineBanner")}</div>}
      {flash.value && <div class="banner info" role="status">{flash.value}</div>}
      <main>{screen === "session" && conn ? <SessionView conn={conn} /> : screen === "settings" ? <Settings /> : <Home />}</main>
    </div>
  );
}
