// IM mode's words (en, zh), in its own chunk with the screen (the initial bundle carries only the Settings entry's).
import { lang } from "../i18n.js";

const EN = {
  loginTitle: "Log in to TangSengDaoDao",
  loginHelp: "Your TangSengDaoDao server's API address and your account. The token is kept on this device until you log out.",
  server: "Server API address",
  username: "Username",
  password: "Password",
  login: "Log in",
  logout: "Log out of IM mode",
  as: "{name} ({uid})",
  st_connecting: "connecting…",
  st_connected: "connected",
  st_offline: "offline — reconnecting",
  st_refused: "the IM server refused the login: log out and in again",
  st_kicked: "signed out by another login",
  conversations: "Conversations with LineUp cards",
  none: "No LineUp card has arrived yet. Cards an agent sends to your IM conversations show up here.",
  waiting: "{n} waiting",
  back: "← Conversations",
  decline: "Decline",
  declined: "declined",
  sending: "Sent: {a} — waiting for the relay",
  answeredHere: "Answered here: {a}",
  answeredElsewhere: "Answered elsewhere {by}: {a}",
  lost: "Answered elsewhere first; your answer was not used",
  timeout: "Timed out",
  cancelled: "Cancelled by the agent",
  gone: "Closed",
} as const;
type Key = keyof typeof EN;

const ZH: Record<Key, string> = {
  loginTitle: "登录唐僧叨叨",
  loginHelp: "唐僧叨叨服务器的 API 地址和你的账号。令牌保存在本设备上，直到你退出登录。",
  server: "服务器 API 地址",
  username: "用户名",
  password: "密码",
  login: "登录",
  logout: "退出 IM 模式",
  as: "{name}（{uid}）",
  st_connecting: "连接中…",
  st_connected: "已连接",
  st_offline: "离线，正在重连",
  st_refused: "IM 服务器拒绝了登录：请退出后重新登录",
  st_kicked: "已被另一处登录踢下线",
  conversations: "有 LineUp 卡片的会话",
  none: "还没有收到 LineUp 卡片。智能体发到你 IM 会话里的卡片会显示在这里。",
  waiting: "{n} 个待处理",
  back: "← 会话",
  decline: "拒绝",
  declined: "已拒绝",
  sending: "已发送：{a}，等待中继确认",
  answeredHere: "已在此回答：{a}",
  answeredElsewhere: "已在别处回答 {by}：{a}",
  lost: "别处先回答了，你的回答未被采用",
  timeout: "已超时",
  cancelled: "智能体已取消",
  gone: "已关闭",
};

export function imT(key: string, vars: Record<string, string> = {}): string {
  const k = key as Key;
  const s = (lang.value === "zh" ? ZH[k] : EN[k]) ?? key;
  return s.replace(/\{(\w+)\}/g, (_, v: string) => vars[v] ?? "");
}
