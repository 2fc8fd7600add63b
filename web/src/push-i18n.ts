// Strings of Web Push in the app (Settings, tool log), English and Chinese; the language is the app's.
// The service worker has its own copy of what a notification says (web/src/sw.ts, `STRINGS`).
import { lang } from "./i18n.js";

const en = {
  notifications: "Notifications",
  notificationsHelp:
    "A notification on this device when an agent waits for you — except while you are looking at that session or the Waiting list. Yes/No questions and short choices can be answered right on the notification.",
  iosNote:
    "On iPhone and iPad, notifications work only from the app on the Home Screen: tap Share → Add to Home Screen, open LineUp from there, then turn this on.",
  unsupported: "This browser cannot show notifications from this page (it needs https, or localhost).",
  denied: "Notifications are blocked for this site in the browser's settings. Allow them there, then turn this on again.",
  noInboxPush: "Pair this device with an inbox first (`lineup pair`): notifications come from the inbox.",
  pushOn: "On: this device gets a notification when an agent waits.",
  pushFailed: "Could not turn notifications on: {e}",
  // i28-e2e: the browser's own errors ("Registration failed - permission denied") in a sentence.
  pushRefused:
    "This browser would not sign up for notifications: they are blocked for this site, or this browser has no push service (some Chromium builds have none). Allow notifications for this site, or use Chrome, Edge, Firefox or Safari.",
  pushUnavailable: "The browser's push service did not answer. Check the connection, then turn this on again.",
  reminders: "Remind me while a call waits",
  remindEvery: "Every",
  minutes: "{n} min",
  remindersHelp: "At most 3 reminders per call. This setting is shared by every device of the inbox.",
  pushLog: "Notifications",
  sent: "sent",
  suppressed: "not sent (on screen)",
  gone: "subscription gone",
  failed: "failed",
  retrying: "failed, retrying",
  call: "",
  reminder: "reminder",
  update: "update",
  attention: "agent waiting",
};

const zh: Record<keyof typeof en, string> = {
  notifications: "通知",
  notificationsHelp: "当 Agent 等待你时，在本设备上显示通知——但你正在查看该会话或“等你处理”列表时不会。是/否问题和简短的选择可以直接在通知上回答。",
  iosNote: "在 iPhone 和 iPad 上，只有从主屏幕打开的 App 才能收到通知：点按“共享”→“添加到主屏幕”，从那里打开 LineUp，再打开此开关。",
  unsupported: "此浏览器无法显示本页面的通知（需要 https 或 localhost）。",
  denied: "浏览器设置中已阻止本站的通知。请先在那里允许，再打开此开关。",
  noInboxPush: "请先将本设备与收件箱配对（`lineup pair`）：通知来自收件箱。",
  pushOn: "已开启：Agent 等待你时，本设备会收到通知。",
  pushFailed: "无法开启通知：{e}",
  pushRefused:
    "此浏览器无法订阅通知：本站的通知已被阻止，或此浏览器没有推送服务（部分 Chromium 版本没有）。请允许本站的通知，或改用 Chrome、Edge、Firefox 或 Safari。",
  pushUnavailable: "浏览器的推送服务没有响应。请检查网络连接，然后再次打开此开关。",
  reminders: "调用等待时提醒我",
  remindEvery: "每隔",
  minutes: "{n} 分钟",
  remindersHelp: "每个调用最多提醒 3 次。此设置由收件箱的所有设备共享。",
  pushLog: "通知",
  sent: "已发送",
  suppressed: "未发送（正在屏幕上）",
  gone: "订阅已失效",
  failed: "失败",
  retrying: "失败，将重试",
  call: "",
  reminder: "提醒",
  update: "更新",
  attention: "Agent 在等你",
};

export type PushKey = keyof typeof en;
const dicts = { en, zh };

export function pusht(key: PushKey, vars: Record<string, string | number> = {}): string {
  return dicts[lang.value][key].replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? ""));
}
