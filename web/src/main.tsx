// Entry: pair from the URL fragment (then wipe it from the address bar), start the connections,
// register the service worker, render.
import { render } from "preact";
import { App, flash, notice, online } from "./app.js";
import { deviceName } from "./devname.js";
import { ApiError, redeemPairing } from "./inbox.js";
import { lang, setLang, t } from "./i18n.js";
import { navigate, path } from "./router.js";
import { startPush } from "./push.js";
import { addInbox, addSession, dropAll, pokeAll, startAll, sweepAll } from "./sessions.js";
import { parsePairCode, parsePairing } from "./storage.js";
import { applyTheme, theme } from "./ui/Settings.js";
import "./styles.css";

setLang(lang.value);
applyTheme(theme.value);

/** `#pair=<code>` (docs/inbox.md): pairs this device with the inbox at once, no tap needed. */
async function pairDevice(code: string): Promise<void> {
  notice.value = { key: "pairing", tone: "info" };
  try {
    const name = await deviceName();
    const p = await redeemPairing(location.origin, code, name);
    addInbox({ origin: location.origin, inbox_id: p.inbox_id, device_id: p.device_id, device_credential: p.device_credential, name: p.name || name, pairedAt: Date.now() });
    const done = { key: "pairedAs", vars: { name: p.name || name }, tone: "info", rename: true } as const;
    notice.value = done;
    setTimeout(() => notice.value === done && (notice.value = null), 30_000);
  } catch (e) {
    // Unknown, used and expired codes get one answer from the relay (404 invalid_code).
    notice.value =
      e instanceof ApiError && (e.status === 404 || e.code === "invalid_code")
        ? { key: "pairUsed", tone: "error" }
        : { key: "pairFailed", vars: { e: e instanceof Error ? e.message : String(e) }, tone: "error" };
  }
}

/** Pairing links: `#pair=<code>` (a device of an inbox) and v1 `#s=…&t=…` (a guest session). Also run when
 * only the fragment changes (a link opened in a tab that already shows the app does not reload it). */
function fromFragment(): void {
  const hash = location.hash;
  if (!hash) return;
  const pairCode = parsePairCode(hash);
  const pairing = pairCode ? undefined : parsePairing(hash);
  if (pairCode) {
    // The code must not stay in the address bar, the history or a bookmark, even for the request's time.
    history.replaceState(null, "", "/");
    path.value = "/";
    void pairDevice(pairCode);
  } else if (pairing) {
    addSession({ sid: pairing.sid, token: pairing.token, origin: location.origin, label: pairing.label ?? "", addedAt: Date.now() });
    // The token must not stay in the address bar, the history or a bookmark.
    history.replaceState("root", "", "/");
    navigate(`/s/${pairing.sid}`);
    flash.value = t("paired");
    setTimeout(() => (flash.value = ""), 4000);
  } else if (/[#&](?:t|pair)=/.test(hash)) {
    history.replaceState(null, "", location.pathname);
    flash.value = t("invalidLink");
  }
}

fromFragment();
addEventListener("hashchange", fromFragment);
startAll();
startPush(); // issue 16: Web Push re-syncs on every open, reports what this device shows (web/src/push.ts)
addEventListener("online", () => {
  online.value = true;
  pokeAll();
});
addEventListener("offline", () => {
  online.value = false;
  // The OS says the network is gone: treat sockets as dead now, so answers go to the outbox instead of
  // into a half-open socket.
  dropAll();
});
document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && pokeAll());
setInterval(sweepAll, 5_000);

render(<App />, document.getElementById("app")!);

if ("serviceWorker" in navigator && isSecureContext) {
  void navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);
}
