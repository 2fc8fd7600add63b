// Entry: pair from the URL fragment (then wipe it from the address bar), start the connections,
// register the service worker, render.
import { render } from "preact";
import { App, flash, online } from "./app.js";
import { lang, setLang, t } from "./i18n.js";
import { navigate } from "./router.js";
import { addSession, dropAll, pokeAll, startAll, sweepAll } from "./sessions.js";
import { parsePairing } from "./storage.js";
import { applyTheme, theme } from "./ui/Settings.js";
import "./styles.css";

setLang(lang.value);
applyTheme(theme.value);

const pairing = location.hash ? parsePairing(location.hash) : undefined;
if (pairing) {
  addSession({ sid: pairing.sid, token: pairing.token, origin: location.origin, label: pairing.label ?? "", addedAt: Date.now() });
  // The token must not stay in the address bar, the history or a bookmark.
  history.replaceState("root", "", "/");
  navigate(`/s/${pairing.sid}`);
  flash.value = t("paired");
  setTimeout(() => (flash.value = ""), 4000);
} else if (/[#&]t=/.test(location.hash)) {
  history.replaceState(null, "", location.pathname);
  flash.value = t("invalidLink");
}

startAll();
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
