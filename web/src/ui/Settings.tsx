// Language, theme, the way to the devices screen, and pairing with a direct LAN agent (`lineup serve`, http://<ip>:9527 + token).
import { signal } from "@preact/signals";
import { useState } from "preact/hooks";
import { lang, setLang, t, type Lang } from "../i18n.js";
import { navigate } from "../router.js";
import { readJson, writeJson } from "../storage.js";
import { PolicyEntry } from "./PolicyLink.js";
import { PushEntry } from "../push-lazy.js";

export type Theme = "auto" | "light" | "dark";
export const theme = signal<Theme>(readJson<Theme>("theme", "auto"));

export function applyTheme(v: Theme): void {
  theme.value = v;
  writeJson("theme", v);
  if (v === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = v;
  const dark = v === "dark" || (v === "auto" && matchMedia("(prefers-color-scheme: dark)").matches);
  document.querySelector('meta[name="theme-color"]')?.setAttribute("content", dark ? "#11151c" : "#f6f7fb");
}

export function Settings() {
  const [addr, setAddr] = useState("");
  const [tok, setTok] = useState("");
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr("");
    try {
      // Loaded when used (initial JS budget); its LineUpError says whether the origin, plain http, the address or the token was refused.
      const { pairLan } = await import("../lan.js");
      navigate(`/s/${await pairLan(addr.trim(), tok.trim())}`);
    } catch (x) {
      setErr(x instanceof Error && x.name === "LineUpError" ? x.message : t("lanFailed", { e: x instanceof Error ? x.message : String(x) }));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="settings">
      <div class="card">
        <div class="field">
          <label for="lang">{t("language")}</label>
          <select id="lang" value={lang.value} onChange={(e) => setLang((e.target as HTMLSelectElement).value as Lang)}>
            <option value="en">English</option>
            <option value="zh">中文</option>
          </select>
        </div>
        <div class="field">
          <label for="theme">{t("theme")}</label>
          <select id="theme" value={theme.value} onChange={(e) => applyTheme((e.target as HTMLSelectElement).value as Theme)}>
            <option value="auto">{t("themeAuto")}</option>
            <option value="light">{t("themeLight")}</option>
            <option value="dark">{t("themeDark")}</option>
          </select>
        </div>
      </div>
      <div class="card">
        <h2>{t("devices")}</h2>
        <p class="hint">{t("devicesHelp")}</p>
        <button class="btn" type="button" onClick={() => navigate("/devices")}>
          {t("manageDevices")}
        </button>
      </div>
      <div class="card">
        <h2>{t("imMode")}</h2>
        <p class="hint">{t("imModeHelp")}</p>
        <button class="btn" type="button" onClick={() => navigate("/im")}>
          {t("openIm")}
        </button>
      </div>
      <PushEntry /> {/* issue 16: Web Push on this device and the inbox's reminders (push-settings.tsx) */}
      <PolicyEntry /> {/* issue 17: the inbox's permission policy (ui/Policy.tsx) */}
      <form class="card" onSubmit={(e) => void submit(e)}>
        <h2>{t("lan")}</h2>
        <p class="hint">{t("lanHelp")}</p>
        <div class="field">
          <label for="lan-url">{t("lanUrl")}</label>
          <input
            id="lan-url"
            type="url"
            inputMode="url"
            placeholder="http://192.168.1.20:9527"
            required
            value={addr}
            onInput={(e) => setAddr((e.target as HTMLInputElement).value)}
          />
        </div>
        <div class="field">
          <label for="lan-token">{t("lanToken")}</label>
          <input id="lan-token" type="password" autoComplete="off" value={tok} onInput={(e) => setTok((e.target as HTMLInputElement).value)} />
        </div>
        {err && (
          <p class="err" role="alert">
            {err}
          </p>
        )}
        <button class="btn primary" type="submit" disabled={busy}>
          {t("connect")}
        </button>
      </form>
      <p class="hint center">{t("version")}</p>
    </section>
  );
}
