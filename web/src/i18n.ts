// English and Chinese UI strings. The language comes from navigator.language, can be switched in
// Settings, and is remembered on this device.
import { signal } from "@preact/signals";
import { preferredLang, writeJson } from "./storage.js";

export type Lang = "en" | "zh";

const en = {
  app: "LineUp",
  sessions: "Sessions",
  settings: "Settings",
  back: "Back",
  noSessions: "Nothing paired yet. On your computer, run `lineup pair` and open the link it prints on this device, or scan its QR code.",
  online: "online",
  offline: "offline",
  connecting: "connecting…",
  pending: "{n} waiting",
  forget: "Forget",
  forgetConfirm: "Forget this session on this device?",
  paired: "Paired: this device now answers this agent.",
  agent: "Agent",
  you: "You",
  apps: "{n} apps connected", // i28-e2e: shown only from 2 apps on, so always plural
  chat: "Chat",
  log: "Tool log",
  typeMessage: "Message the agent",
  send: "Send",
  attach: "Attach",
  record: "Record voice",
  stopRec: "Stop recording",
  recording: "Recording…",
  remove: "Remove",
  tooBig: "Attachments are too large (limit {n} KB in all)",
  answer: "Answer",
  decline: "Decline",
  yes: "Yes",
  no: "No",
  submit: "Submit",
  approve: "Approve",
  requestChanges: "Request changes",
  feedback: "What should change?",
  reply: "Your reply",
  project: "Project",
  queued: "Saved on this device — sent when the connection is back",
  answered: "Answered",
  answeredHere: "Answered on this device",
  auto: "Answered automatically",
  elsewhere: "Answered on another device",
  timeout: "Timed out",
  cancelled: "Cancelled by the agent",
  gone: "Closed while this device was away",
  lostRace: "Another device answered first; your answer was not used",
  // i28-cards: who won (a lost answer names the winner; another tab of this device says so).
  lostTo: "{who} answered first; your answer was not used",
  answeredTab: "Answered in another tab",
  declined: "Declined",
  error: "Error",
  waitingFor: "waiting for you",
  expires: "expires {t}",
  tool: "Tool",
  action: "Action",
  args: "Arguments",
  result: "Result",
  by: "Answered by",
  took: "Took",
  noCalls: "No tool calls yet.",
  canvas: "Canvas",
  closed: "closed",
  stopped4004: "This session has ended.",
  stopped4409: "This session is open in another tab or window of this device.",
  stoppedAuth: "The relay refused this device's token. Pair again from a fresh link.",
  stoppedGone: "This session has expired or was deleted.",
  stoppedOrigin: "The server does not allow this app's origin (ALLOWED_ORIGINS).",
  stoppedOther: "The connection was closed: {reason}",
  stoppedDowngrade:
    "Refused (e2e_downgrade): this session is end-to-end encrypted, but the relay now claims it is not. Nothing was sent. The relay may be misconfigured or compromised.",
  reconnect: "Reconnect",
  language: "Language",
  theme: "Theme",
  themeAuto: "Automatic",
  themeLight: "Light",
  themeDark: "Dark",
  lan: "Direct LAN agent",
  lanHelp:
    "Connect to an agent running “lineup serve” on your network. Opening http://<ip>:9527 in this browser works best; from an https page the browser may block a plain-http address.",
  lanUrl: "Agent address",
  lanToken: "Token",
  connect: "Connect",
  lanFailed: "Could not reach the agent: {e}",
  invalidLink: "This link is not a valid LineUp pairing link.",
  offlineBanner: "You are offline. Answers are kept and sent when the connection is back.",
  noMessages: "Nothing here yet. The agent's questions and messages will appear here.",
  voice: "Voice note",
  file: "File",
  image: "Image",
  workReport: "Work report",
  question: "Question",
  status: "Status",
  open: "Open",
  sessionsHint: "Pair more agents by opening their links.",
  install: "Install",
  version: "Protocol lineup/1",
  required: "required",
  invalidJson: "Not valid JSON",
  micDenied: "Microphone not available",
  seconds: "{n} s",
  t_choice: "Choice",
  t_confirm: "Confirm",
  t_input: "Input",
  t_permission: "Permission",
  blockFailed: "This block could not be shown",
  mdTooLong: "Too long to format: shown as plain text.",
  mdTooDeep: "Nested too deeply to format: shown as plain text.",
  waitingForYou: "Waiting for you",
  nothingWaiting: "Nothing is waiting for you.",
  guestLink: "guest link",
  unnamed: "Unnamed session",
  devices: "Devices",
  pairing: "Pairing this device…",
  pairedAs: "Paired as “{name}”. This device now sees every session of the inbox.",
  pairUsed: "This pairing link was already used or has expired — run `lineup pair` again.",
  pairFailed: "Pairing failed: {e}",
  removed:
    "This device was removed from the inbox. Its sessions are disconnected and its credential is forgotten. To use this device again, run `lineup pair` and open the new link.",
  stoppedRevoked: "This device was removed from the inbox.",
  dismiss: "Dismiss",
  rename: "Rename",
  save: "Save",
  cancel: "Cancel",
  deviceName: "Device name",
  thisDevice: "This device",
  otherDevices: "Other devices",
  machines: "Agent machines",
  noOtherDevices: "No other devices.",
  noMachines: "No agent machines.",
  revoke: "Revoke",
  revokeDeviceConfirm: "Revoke “{name}”? It loses access to every session of this inbox at once.",
  revokeMachineConfirm: "Revoke the agent machine “{name}”? Its credential stops working at once and every session it created ends.",
  lastSeen: "last seen {t}",
  never: "never",
  addDevice: "Add a device",
  addDeviceHelp: "Scan this code with the other device's camera, or open the link there. It works once, within 10 minutes.",
  addMachine: "Add an agent machine",
  addMachineHelp: "On the other computer, run:",
  createLink: "Create a pairing link",
  createJoin: "Create a join code",
  copy: "Copy",
  copied: "Copied",
  codeExpires: "Works once, until {t}.",
  codeExpired: "This code has expired. Create a new one.",
  qrFailed: "The QR code could not be drawn here; open or copy the link instead.",
  requestFailed: "That did not work: {e}",
  noInbox: "This device is not paired with an inbox yet. On your computer, run `lineup pair` and open the link it prints on this device (or scan its QR code).",
  inboxEmpty: "Paired. The sessions your agents start will appear here.",
  inboxOffline: "Not connected to the inbox: showing what this device saw last.",
  inboxOn: "Inbox on {host}",
  answeredOn: "Answered on {who}",
  devicesHelp: "This device, your other devices and your agent machines: rename, revoke, add.",
  manageDevices: "Manage devices",
  imMode: "IM mode (TangSengDaoDao)",
  imModeHelp: "Answer agents' cards inside your TangSengDaoDao conversations, as a WuKongIM client.",
  openIm: "Open IM mode",
  qrLabel: "QR code of the pairing link",
  // Connection state (ui/Status.tsx) and what it means for a card.
  connOnline: "Agent online",
  pathDirect: "direct",
  pathRelay: "via relay",
  directRefused: "Direct path refused: this machine's key changed. Answers go through the relay.",
  directForget: "Trust the new key",
  connAgentAway: "Agent offline — answers reach it when it returns",
  connReconnecting: "Reconnecting… answers wait on this device",
  connUnreachable: "Relay unreachable — answers wait on this device",
  connNoNetwork: "No network — answers wait on this device",
  connReplaced: "Open in another tab of this device",
  connRelayOnline: "Connected",
  // i28-home: the agent's own status (the wire's states; "waiting" only while a call waits).
  st_idle: "idle",
  st_working: "working",
  st_waiting: "waiting",
  st_error: "error",
  useHere: "Use here",
  cardReplaced: "This tab does not answer: another tab of this device took over.",
  cardStopped: "This device cannot answer here now (see the status at the top).",
  cardAgentAway: "The agent is offline. Your answer is kept and reaches it when it returns.",
  cardNotConnected: "Not connected. Your answer waits on this device and is sent when the connection is back.",
  // History rows and the thread.
  approved: "Approved",
  changesRequested: "Changes requested",
  attachmentsOnly: "{n} attachment(s)",
  emptyAnswer: "(empty answer)",
  timeLeft: "{t} left",
  fromDevice: "from {name}",
  fromOtherDevice: "from your other device",
  someoneElse: "Someone else",
  newBelow: "{n} new below",
  replyAbove: "Reply in the question above",
  reviewAbove: "Approve or ask for changes in the report above",
  lockSealed: "End-to-end encrypted",
  lockPlain: "Not end-to-end encrypted",
  e2eCannotSeal: "Not sent: this device holds no key of this end-to-end encrypted session.",
  e2eKeyFailed: "Paired, but the encryption key did not arrive: {e}",
  // i29-room: a home row's mark, the agent's last word with no call (docs/inbox.md "Needs you and finished")
  markNeedsYou: "Needs you",
  markFinished: "Finished",
};

export type Key = keyof typeof en;
export type Dict = typeof en;
/** English is built in; Chinese (web/src/i18n-zh.ts) is loaded when chosen — until it is there, English shows. */
const dicts: Partial<Record<Lang, Dict>> = { en };
const dictVersion = signal(0);
function loadDict(l: Lang): void {
  if (dicts[l]) return;
  void import("./i18n-zh.js").then((m) => {
    dicts.zh = m.zh;
    dictVersion.value++;
  });
}

/** Strings of a lazy chunk (the E2E layer, web/src/e2e/strings.ts), merged in when it loads, so they are not
 * in the initial bundle; every screen that shows one is reached only after that chunk loaded. */
type LazyKey = import("./e2e/strings.js").E2EKey;
export type AnyKey = Key | LazyKey;
const lazy: Record<Lang, Partial<Record<LazyKey, string>>> = { en: {}, zh: {} };
const lazyVersion = signal(0);
export function addStrings(d: Record<Lang, Record<LazyKey, string>>): void {
  Object.assign(lazy.en, d.en);
  Object.assign(lazy.zh, d.zh);
  lazyVersion.value++;
}

export const lang = signal<Lang>(preferredLang());
loadDict(lang.value);

export function setLang(l: Lang): void {
  loadDict(l);
  lang.value = l;
  writeJson("lang", l);
  document.documentElement.lang = l === "zh" ? "zh-CN" : "en";
}

/** Translates `key`, filling `{name}` placeholders. Reading `lang.value` subscribes the calling component. */
export function t(key: Key | LazyKey, vars: Record<string, string | number> = {}): string {
  const l = lang.value;
  const d = (dictVersion.value, dicts[l] ?? en);
  const text = key in d ? d[key as Key] : (lazyVersion.value, lazy[l][key as LazyKey] ?? "");
  return text.replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? ""));
}
