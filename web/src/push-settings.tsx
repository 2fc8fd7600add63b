// The Settings card of Web Push (issue 16, docs/push.md): the "Notifications" switch (its permission prompt
// comes from the tap), the iOS note, and the inbox's reminder setting.
import { useEffect } from "preact/hooks";
import { disablePush, enablePush, loadPushInfo, ownInboxes, pushError, pushPhase, pushSettings, pushSupported, savePushSettings } from "./push.js";
import { pusht } from "./push-i18n.js";
import { Inline } from "./ui/Inline.js";

const EVERY = [1, 5, 10, 15, 30, 60];
const isIos = () => /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);

/** The browser's raw subscribe errors as a sentence; the relay's own messages (already sentences) as they are. */
function failureText(raw: string): string {
  if (/permission denied|NotAllowedError|not allowed/i.test(raw)) return pusht("pushRefused");
  if (/registration failed|push service|AbortError/i.test(raw)) return pusht("pushUnavailable");
  return pusht("pushFailed", { e: raw });
}

export function PushEntry() {
  useEffect(() => void loadPushInfo(), []);
  const supported = pushSupported();
  const paired = ownInboxes().length > 0;
  const phase = pushPhase.value;
  const on = phase === "on";
  const s = pushSettings.value;
  const status = !supported
    ? pusht("unsupported")
    : !paired
      ? pusht("noInboxPush")
      : phase === "denied"
        ? pusht("denied")
        : pushError.value
          ? failureText(pushError.value)
          : on
            ? pusht("pushOn")
            : "";
  return (
    <div class="card push-card">
      <h2>{pusht("notifications")}</h2>
      <p class="hint" id="push-help">
        {pusht("notificationsHelp")}
      </p>
      <div class="field check">
        <input
          id="push"
          type="checkbox"
          role="switch"
          checked={on}
          aria-checked={on}
          aria-describedby="push-help push-status"
          disabled={!supported || !paired || phase === "busy"}
          onChange={(e) => void ((e.target as HTMLInputElement).checked ? enablePush() : disablePush())}
        />
        <label for="push">{pusht("notifications")}</label>
      </div>
      <p class="hint" id="push-status" role="status">
        <Inline text={status} />
      </p>
      {(isIos() || !supported) && <p class="hint">{pusht("iosNote")}</p>}
      {paired && s && (
        <>
          <div class="field check">
            <input
              id="push-remind"
              type="checkbox"
              checked={s.reminders}
              onChange={(e) => void savePushSettings({ reminders: (e.target as HTMLInputElement).checked })}
            />
            <label for="push-remind">{pusht("reminders")}</label>
          </div>
          <div class="field">
            <label for="push-every">{pusht("remindEvery")}</label>
            <select
              id="push-every"
              value={String(s.reminder_every_min)}
              disabled={!s.reminders}
              onChange={(e) => void savePushSettings({ reminder_every_min: Number((e.target as HTMLSelectElement).value) })}
            >
              {[...new Set([...EVERY, s.reminder_every_min])]
                .sort((a, b) => a - b)
                .map((n) => (
                  <option key={n} value={String(n)}>
                    {pusht("minutes", { n })}
                  </option>
                ))}
            </select>
            <small>{pusht("remindersHelp")}</small>
          </div>
        </>
      )}
    </div>
  );
}
