// Strings of "Connect an app" (ui/ConnectApp.tsx), English and Chinese; the language is the app's.
import { lang } from "./i18n.js";

const en = {
  title: "Connect an app",
  entry: "Connect an app (claude.ai, ChatGPT, …)",
  intro:
    "An assistant such as claude.ai, ChatGPT or Claude Desktop shows a code when you add this relay as a connector. Enter it here to let that app ask you questions.",
  codeLabel: "Code shown on your computer",
  codePlaceholder: "BCDF-GHJK",
  next: "Continue",
  looking: "Looking up…",
  unknownCode: "No open request has this code. Check it, or start connecting again in the app (codes last 10 minutes).",
  wants: "{name} wants to reach you",
  what: "It will be able to ask you questions and see your answers, in a new session named “{name}” of this inbox.",
  verified: "The name comes from {host}, which published this app's details.",
  unverified: "The app chose this name itself: it is not verified.",
  redirect: "After you allow it, the answer goes to: {host}",
  loopback: "The answer goes to a program on the computer where the request started. Allow only if you just started connecting there yourself.",
  expires: "This request expires at {t}.",
  allow: "Allow",
  deny: "Deny",
  allowed: "{name} is connected. Go back to your computer: it continues there.",
  denied: "Denied. {name} was told no.",
  another: "Connect another app",
  which: "Inbox",
  noInbox: "Pair this device with an inbox first (a pairing link from `lineup pair`): connected apps reach the devices of an inbox.",
  noOAuth: "This relay has no app connectors: a direct LAN server (`lineup serve`) does not do OAuth. Connect apps through a relay deployed on Cloudflare.",
  apps: "Connected apps",
  noApps: "No apps connected yet.",
  connectedAt: "Connected {t}",
  lastUsed: "last used {t}",
  neverUsed: "not used yet",
  revoke: "Revoke",
  revokeConfirm: "Disconnect {name}? Its access ends at once and its session is closed.",
  failed: "That did not work: {e}",
};

const zh: typeof en = {
  title: "连接应用",
  entry: "连接应用（claude.ai、ChatGPT 等）",
  intro: "当你在 claude.ai、ChatGPT 或 Claude Desktop 等助手中把这个中继添加为连接器时，它会显示一个代码。在这里输入代码，即可让该应用向你提问。",
  codeLabel: "电脑上显示的代码",
  codePlaceholder: "BCDF-GHJK",
  next: "继续",
  looking: "正在查找…",
  unknownCode: "没有与此代码对应的请求。请检查代码，或在应用中重新开始连接（代码 10 分钟内有效）。",
  wants: "{name} 想要联系你",
  what: "它将可以向你提问并看到你的回答，使用此收件箱中名为“{name}”的新会话。",
  verified: "该名称来自 {host}，由其发布此应用的信息。",
  unverified: "该名称由应用自己填写，未经验证。",
  redirect: "允许后，结果将发送到：{host}",
  loopback: "结果会发送到发起请求的那台电脑上的程序。仅当你刚刚亲自在那里发起连接时才允许。",
  expires: "此请求在 {t} 过期。",
  allow: "允许",
  deny: "拒绝",
  allowed: "{name} 已连接。请回到电脑上继续。",
  denied: "已拒绝，{name} 已收到通知。",
  another: "连接其他应用",
  which: "收件箱",
  noInbox: "请先将此设备与收件箱配对（使用 `lineup pair` 生成的配对链接）：已连接的应用会联系收件箱中的设备。",
  noOAuth: "此中继不支持连接应用：局域网直连服务器（`lineup serve`）不提供 OAuth。请通过部署在 Cloudflare 上的中继连接应用。",
  apps: "已连接的应用",
  noApps: "还没有已连接的应用。",
  connectedAt: "连接于 {t}",
  lastUsed: "最近使用 {t}",
  neverUsed: "尚未使用",
  revoke: "撤销",
  revokeConfirm: "断开 {name}？其访问权限将立即失效，会话也会关闭。",
  failed: "操作失败：{e}",
};

export type CKey = keyof typeof en;
const dicts = { en, zh } as const;

/** Translates `key` in the app's language, filling `{name}` placeholders (reads `lang`, so components update). */
export function ct(key: CKey, vars: Record<string, string | number> = {}): string {
  return dicts[lang.value][key].replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? ""));
}
