// The shell: a sticky header (back/settings, the title, the connection state), notice banners, the screens.
import { signal } from "@preact/signals";
import { useEffect, useState } from "preact/hooks";
import { t } from "./i18n.js";
import { navigate, path } from "./router.js";
import { connOf, entryOf, removed } from "./sessions.js";
import { Icon } from "./ui/Icon.js";
import { Inline } from "./ui/Inline.js";
import { Home } from "./ui/Home.js";
import { SessionView } from "./ui/SessionView.js";
import { Settings } from "./ui/Settings.js";
import { RelayStatusLine, SessionStatusLine } from "./ui/Status.js";
import { TailText } from "./ui/Tail.js";

import { flash, notice, online } from "./state.js";

export { flash, notice, online };

type DevicesModule = typeof import("./ui/Devices.js");
let devicesModule: DevicesModule | undefined;

/** The devices screen is loaded when first opened: it is not needed to answer agents (initial JS budget). */
function LazyDevices() {
  const [mod, setMod] = useState<DevicesModule | undefined>(devicesModule);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (mod) return;
    import("./ui/Devices.js")
      .then((m) => {
        devicesModule = m;
        setMod(m);
      })
      .catch(() => setFailed(true));
  }, [mod]);
  if (mod) return <mod.Devices />;
  return failed ? (
    <p class="err" role="alert">
      {t("offlineBanner")}
    </p>
  ) : null;
}

type ConnectModule = typeof import("./ui/ConnectApp.js");
/** "Connect an app" (OAuth connectors, ui/ConnectApp.tsx), loaded when opened like the devices screen; its
 * strings (and so the title) come with it, not in the initial bundle. */
const connectMod = signal<ConnectModule | undefined>(undefined);
function LazyConnect() {
  useEffect(
    () =>
      void import("./ui/ConnectApp.js").then(
        (m) => (connectMod.value = m),
        () => undefined,
      ),
    [],
  );
  const mod = connectMod.value;
  return mod ? <mod.ConnectApp /> : null;
}

type ImModule = typeof import("./im/ImScreen.js");
/** IM mode (issue 31, im/ImScreen.tsx): the WuKongIM SDK and its screen, loaded when opened (initial JS budget). */
const imMod = signal<ImModule | undefined>(undefined);
function LazyIm() {
  useEffect(
    () =>
      void import("./im/ImScreen.js").then(
        (m) => (imMod.value = m),
        () => undefined,
      ),
    [],
  );
  const mod = imMod.value;
  return mod ? <mod.ImScreen /> : null;
}

function Banners() {
  const n = notice.value;
  const r = removed.value;
  return (
    <>
      {r && (
        <div class="banner stop removed" role="alert">
          <span>{t("removed")}</span>
          <button class="btn" onClick={() => (removed.value = null)}>
            {t("dismiss")}
          </button>
        </div>
      )}
      {n && (
        <div class={`banner ${n.tone === "error" ? "stop" : "info"} notice`} role={n.tone === "error" ? "alert" : "status"}>
          <span>
            <Inline text={t(n.key, n.vars)} />
          </span>
          <span class="actions">
            {n.rename && (
              <button
                class="btn"
                onClick={() => {
                  notice.value = null;
                  navigate("/devices");
                }}
              >
                {t("rename")}
              </button>
            )}
            <button class="icon" aria-label={t("dismiss")} onClick={() => (notice.value = null)}>
              ×
            </button>
          </span>
        </div>
      )}
    </>
  );
}

export function App() {
  const p = path.value;
  const m = /^\/s\/([A-Za-z0-9_-]+)\/?$/.exec(p);
  const sid = m?.[1];
  const conn = sid ? connOf(sid) : undefined;
  const screen = conn ? "session" : p === "/settings" ? "settings" : p === "/devices" ? "devices" : p === "/connect" ? "connect" : p === "/im" ? "im" : "home";
  const entry = sid ? entryOf(sid) : undefined;
  const sessionTitle = entry && !entry.guest ? entry.label || t("unnamed") : conn?.label.value || entry?.saved.label || sid;
  const title =
    screen === "session"
      ? sessionTitle
      : screen === "settings"
        ? t("settings")
        : screen === "devices"
          ? t("devices")
          : screen === "connect"
            ? (connectMod.value?.connectTitle() ?? "")
            : screen === "im"
              ? t("imMode")
              : t("app");
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
        <h1>
          <TailText text={title ?? ""} />
        </h1>
        {screen !== "settings" && (
          <button class="icon" aria-label={t("settings")} onClick={() => navigate("/settings")}>
            <Icon name="gear" />
          </button>
        )}
        {/* In the sticky header, so it never scrolls away (docs/pwa.md "Connection state"). */}
        {screen === "session" && conn ? <SessionStatusLine conn={conn} /> : <RelayStatusLine />}
      </header>
      {flash.value && (
        <div class="banner info" role="status">
          {flash.value}
        </div>
      )}
      <Banners />
      <main>
        {screen === "session" && conn ? (
          <SessionView conn={conn} />
        ) : screen === "settings" ? (
          <Settings />
        ) : screen === "devices" ? (
          <LazyDevices />
        ) : screen === "connect" ? (
          <LazyConnect />
        ) : screen === "im" ? (
          <LazyIm />
        ) : (
          <Home />
        )}
      </main>
    </div>
  );
}
