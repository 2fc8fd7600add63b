// LineUp service worker: keeps the app shell (index.html, its hashed assets, icons, manifest) so the app
// opens offline. Never touches /api/*, /healthz or /webhooks/* (live data and tokens stay on the network).
// Built by vite.config.ts (esbuild, one classic script) into /sw.js, registered with scope "/" (web/src/main.tsx).
import { tapActions, type TapAction } from "../../shared/tools/meaning.js";
import { tagOf } from "./notif.js";
import type { Envelope } from "../../shared/crypto/e2e/envelope.js";
import type { Preview } from "../../shared/crypto/e2e/index.js";

/** What /sw-e2e.js (web/src/sw-e2e.ts) defines: opening a sealed preview and sealing an answer with this device's key. */
interface LineupE2E {
  open(s: SealedRef): Promise<Preview | null>;
  sealAnswer(s: SealedRef, action: string): Promise<Envelope | null>;
  pinned(sid: string): Promise<boolean>;
}

/** A sealed call as the notification's data keeps it (never its opened text). */
interface SealedRef {
  inbox: string;
  sid: string;
  call: string;
  name: string;
  from: string;
  epoch?: number;
  preview: Envelope;
}

declare const self: ServiceWorkerGlobalScope & { lineupE2E?: LineupE2E };

const CACHE = "lineup-shell-v1";
// Sealed sessions (issue 19): /sw-e2e.js (built from web/src/sw-e2e.ts) defines self.lineupE2E, which opens
// a sealed preview and seals an answer with this device's key from IndexedDB. Missing (the dev server),
// sealed pushes show the generic text and open the app: never anything they cannot read.
try {
  self.importScripts("/sw-e2e.js");
} catch {
  /* no E2E here */
}
const STATIC = ["/", "/manifest.webmanifest", "/icon.svg", "/icon-192.png", "/icon-512.png", "/icon-maskable-512.png"];
// OAuth (/oauth/*, /.well-known/*, /mcp): the authorization page is the Worker's, never the shell to cache.
const LIVE = /^\/(api|webhooks|oauth|\.well-known)\/|^\/(healthz|mcp)$/;

/** The shell plus every /assets/ file index.html references (hashed names: cache-first is safe). */
async function precache(): Promise<Set<string>> {
  const cache = await caches.open(CACHE);
  const res = await fetch("/", { cache: "no-store" });
  if (!res.ok) throw new Error(`shell: HTTP ${res.status}`);
  const html = await res.clone().text();
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  await cache.put("/", res);
  await cache.addAll([...STATIC.slice(1), ...assets]);
  return new Set(["/", ...STATIC, ...assets]);
}

self.addEventListener("install", (e) => {
  e.waitUntil(precache().then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => {
  e.waitUntil(
    (async () => {
      for (const k of await caches.keys()) if (k !== CACHE) await caches.delete(k);
      await self.clients.claim();
    })(),
  );
});

const noop = () => {};

self.addEventListener("fetch", (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin || LIVE.test(url.pathname)) return;
  if (req.mode === "navigate") {
    // The cached shell at once, every path (SPA), and the network's copy kept for the next open: a phone's
    // round trip is not waited for on opening (issue 33, docs/benchmarks.md), so a new deploy shows from the
    // open after it. No shell cached yet: the network's.
    const fresh = fetch(req).then(async (res) => {
      if (res.ok) await (await caches.open(CACHE)).put("/", res.clone());
      return res;
    });
    e.waitUntil(fresh.then(noop, noop));
    e.respondWith(
      (async () => {
        const hit = await caches.match("/");
        if (hit) return hit;
        try {
          return await fresh;
        } catch {
          return Response.error();
        }
      })(),
    );
    return;
  }
  e.respondWith(
    (async () => {
      const hit = await caches.match(req, { ignoreSearch: true });
      if (hit) return hit;
      const res = await fetch(req);
      if (res.ok && url.pathname.startsWith("/assets/")) {
        const copy = res.clone();
        caches
          .open(CACHE)
          .then((c) => c.put(req, copy))
          .catch(() => {});
      }
      return res;
    })(),
  );
});

// ---------------------------------------------------------------- Web Push (issue 16, docs/push.md)
// The relay decides who is notified (a device showing the call is spared there, never here: iOS drops a
// subscription whose pushes show nothing), so every push shows a notification. Title = the session, body =
// the question, tag = the call (a reminder or the outcome replaces it). A confirm, and a single choice with
// at most Notification.maxActions options, get actions that answer from here with the payload's
// single-use token; anything else opens the app at that card (shared/tools/meaning.ts: which taps, what
// they answer). Handlers compute their work first and guard waitUntil, so synthetic events (tests) run the same code.

/** What a notification says, in the app's language (the app's own strings are in web/src/push-i18n.ts). */
const STRINGS = {
  en: {
    yes: "Yes",
    no: "No",
    reminder: "Reminder: {body}",
    answered: "Answered on {who}: {answer}",
    answeredBy: "Answered on {who}",
    answeredElsewhere: "Answered elsewhere",
    declined: "Declined on {who}",
    timeout: "Timed out",
    cancelled: "Cancelled by the agent",
    ended: "The session ended",
    closed: "No longer waiting",
    lost: "Another device answered first: {who}",
    notSent: "Your answer could not be sent. Tap to open LineUp.",
    fallback: "An agent is waiting for you",
    attention: "The agent is waiting for you",
    // i29-agents: an attention push's reason, for a sealed session's push (no text)
    needsInput: "The agent needs you",
    completed: "The agent finished",
    allow: "Allow",
    deny: "Deny",
    session: "Allow this session",
    always: "Always allow",
  },
  zh: {
    yes: "是",
    no: "否",
    reminder: "提醒：{body}",
    answered: "已在 {who} 上回答：{answer}",
    answeredBy: "已在 {who} 上回答",
    answeredElsewhere: "已在其他设备上回答",
    declined: "已在 {who} 上拒绝",
    timeout: "已超时",
    cancelled: "Agent 已取消",
    ended: "会话已结束",
    closed: "已不再等待",
    lost: "另一台设备先回答了：{who}",
    notSent: "你的回答未能发送。点按打开 LineUp。",
    fallback: "有 Agent 在等你",
    attention: "Agent 在等你回复",
    needsInput: "Agent 需要你",
    completed: "Agent 已完成",
    allow: "允许",
    deny: "拒绝",
    session: "本会话内允许",
    always: "始终允许",
  },
};
type Strings = (typeof STRINGS)["en"];

const fmt = (s: string, v: Record<string, unknown>) => s.replace(/\{(\w+)\}/g, (_, k: string) => (v[k] === undefined ? "" : String(v[k])));
const stringsOf = (lang?: unknown): Strings => (lang === "zh" ? STRINGS.zh : STRINGS.en);

/**
 * A push message as it arrives (shared/contract/push.ts PushMessage), read loosely: it is checked field by
 * field where it is used, and anything unexpected shows the generic notification.
 */
interface Msg {
  v?: unknown;
  kind?: string;
  inbox?: string;
  sid: string;
  call: string;
  title?: string;
  lang?: string;
  tool?: string;
  body?: string;
  /** attention: "needs_input" | "completed" (i29-agents) */
  reason?: string;
  token?: string;
  created_at?: number;
  reminder?: unknown;
  options?: unknown;
  confirm?: { yes?: string; no?: string } | undefined;
  outcome?: string;
  by?: string;
  answer?: string | undefined;
  sealed?: unknown;
}

/** What a notification keeps to act on a tap. */
interface Data {
  kind?: string;
  inbox?: string;
  sid: string;
  call: string;
  lang?: string;
  url?: string;
  tool?: string | undefined;
  token?: string | undefined;
  title?: string;
  sealed?: SealedRef | undefined;
}

interface Shown {
  title: string;
  options: NotificationOptions & { actions: TapAction[]; data: Data; renotify?: boolean; timestamp?: number | undefined };
}

function guard(e: ExtendableEvent, work: Promise<unknown>): void {
  work.catch((err: unknown) => console.warn("sw:", err instanceof Error ? err.message : err));
  try {
    e.waitUntil(work);
  } catch {
    /* a synthetic event is not extendable: the work runs anyway */
  }
}

function outcomeText(L: Strings, m: { outcome?: string | undefined; by?: string | undefined; answer?: string | undefined; sealed?: unknown }): string {
  const who = m.by;
  switch (m.outcome) {
    case "answered":
      // A sealed session's update names the device only, never the answer (the relay cannot read it).
      return who ? (m.answer && !m.sealed ? fmt(L.answered, { who, answer: m.answer }) : fmt(L.answeredBy, { who })) : L.answeredElsewhere;
    case "declined":
      return who ? fmt(L.declined, { who }) : L.closed;
    case "timeout":
      return L.timeout;
    case "cancelled":
      return L.cancelled;
    case "ended":
      return L.ended;
    default:
      return L.closed;
  }
}

function maxActions(): number {
  const N = (self as { Notification?: { maxActions?: unknown } }).Notification;
  return N && typeof N.maxActions === "number" ? N.maxActions : 0;
}

/** The notification of one push message (shared/contract/push.ts, PushMessage). */
function notificationOf(m: Msg): Shown {
  const L = stringsOf(m.lang);
  const data: Data = { kind: m.kind, inbox: m.inbox, sid: m.sid, call: m.call, lang: m.lang, url: `/s/${m.sid}?call=${encodeURIComponent(m.call)}` };
  const base = { tag: tagOf(m.sid, m.call), icon: "/icon-192.png", data, actions: [] };
  const title = m.title ?? "";
  if (m.kind === "update") return { title, options: { ...base, body: outcomeText(L, m), silent: true, renotify: false } };
  // An agent waiting with no call (lineup hook notify): no actions, a tap opens the session.
  if (m.kind === "attention") {
    data.url = `/s/${m.sid}`;
    const own = m.reason === "completed" ? L.completed : m.reason === "needs_input" ? L.needsInput : L.attention;
    return { title, options: { ...base, body: typeof m.body === "string" && m.body ? m.body : own, renotify: true } };
  }
  const actions = tapActions(m.tool ?? "", { confirm: m.confirm, options: m.options }, L, maxActions());
  data.tool = m.tool;
  data.token = m.token;
  data.title = m.title;
  return {
    title,
    options: {
      ...base,
      body: m.reminder ? fmt(L.reminder, { body: m.body }) : m.body,
      actions,
      renotify: true,
      requireInteraction: true,
      timestamp: m.created_at,
    },
  };
}

/** A sealed call's push (the v1 fields, `body` "", and `sealed: {session_id, call_id, name, from, epoch,
 * preview?}`): its preview opened here with the device key — or the generic text when it does not open
 * (no key, another call, a preview too big to push). Only the sealed preview goes into the notification's
 * data; the answer is sealed again from it when an action is tapped. */
async function sealedCall(m: Msg & { sealed: Record<string, unknown> }): Promise<Shown> {
  const x = m.sealed;
  const s = {
    inbox: m.inbox ?? "",
    sid: m.sid,
    call: m.call,
    name: (typeof x.name === "string" && x.name) || m.tool || "",
    from: x.from,
    epoch: typeof x.epoch === "number" ? x.epoch : undefined,
    preview: x.preview as Envelope,
  };
  // The preview's AAD is the envelope's own call: a preview of another session or call does not open.
  const ref: SealedRef | undefined = typeof s.from === "string" ? { ...s, from: s.from } : undefined;
  const opened = self.lineupE2E && x.preview && ref && x.session_id === m.sid && x.call_id === m.call ? await self.lineupE2E.open(ref) : null;
  // The tool name beside the envelope is the relay's: a preview naming another tool (a relabelled card, whose
  // buttons would mean something else) is not shown and answers nothing (issue 26 audit).
  const p = opened && (opened.tool === undefined || opened.tool === s.name) ? opened : null;
  const L = stringsOf(m.lang);
  const plain: Msg = {
    ...m,
    sid: s.sid,
    call: s.call,
    tool: s.name,
    body: p ? p.text : L.fallback,
    options: p && (s.name === "choice" || s.name === "permission") ? p.options : undefined,
    confirm: p && s.name === "confirm" ? { yes: p.yes_label, no: p.no_label } : undefined,
  };
  const n = notificationOf(plain);
  if (!p) n.options.actions = [];
  n.options.data.sealed = { inbox: s.inbox, sid: s.sid, call: s.call, name: s.name, from: s.from as string, epoch: s.epoch, preview: s.preview };
  return n;
}

/** A plaintext push for a session the app pinned sealed (issue 26): the relay's words only. Nothing of it is
 * shown as the agent's, no action answers from here (an answer would go out in plaintext): the generic
 * text, and a tap opens the app, which reads the sealed call itself. */
function pinnedPlain(m: Msg): Shown {
  const L = stringsOf(m.lang);
  if (m.kind === "update") return notificationOf({ ...m, answer: undefined, sealed: true });
  const n = notificationOf({
    ...m,
    kind: m.kind === "attention" ? "attention" : "call",
    body: m.kind === "attention" ? "" : L.fallback,
    reminder: false,
    options: undefined,
    confirm: undefined,
  });
  n.options.actions = [];
  n.options.data = { ...n.options.data, token: undefined, tool: undefined };
  return n;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
const strOf = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The fields of a checked message (sid and call are strings), each kept only when it has its type. */
function toMsg(m: Record<string, unknown>, sid: string, call: string): Msg {
  const c = isObject(m.confirm) ? { yes: strOf(m.confirm.yes), no: strOf(m.confirm.no) } : undefined;
  return {
    v: m.v,
    kind: strOf(m.kind),
    inbox: strOf(m.inbox),
    sid,
    call,
    title: strOf(m.title),
    lang: strOf(m.lang),
    tool: strOf(m.tool),
    body: strOf(m.body),
    token: strOf(m.token),
    created_at: typeof m.created_at === "number" ? m.created_at : undefined,
    reminder: m.reminder,
    options: m.options,
    confirm: c,
    outcome: strOf(m.outcome),
    by: strOf(m.by),
    answer: strOf(m.answer),
    reason: strOf(m.reason),
    sealed: m.sealed,
  };
}

async function onPush(raw: unknown): Promise<void> {
  const m = isObject(raw) ? raw : null;
  if (m && m.v === 1 && isObject(m.sealed) && m.kind !== "update" && typeof m.sid === "string" && typeof m.call === "string") {
    const n = await sealedCall({ ...toMsg(m, m.sid, m.call), sealed: m.sealed });
    return self.registration.showNotification(n.title, n.options);
  }
  if (!m || m.v !== 1 || typeof m.sid !== "string" || typeof m.call !== "string") {
    return self.registration.showNotification("LineUp", { body: stringsOf().fallback, tag: "lineup:other" });
  }
  const msg = toMsg(m, m.sid, m.call);
  const pinned = self.lineupE2E ? await self.lineupE2E.pinned(msg.sid) : false;
  const n = pinned ? pinnedPlain(msg) : notificationOf(msg);
  return self.registration.showNotification(n.title, n.options);
}

self.addEventListener("push", (e) => {
  let m: unknown = null;
  try {
    m = e.data ? e.data.json() : null;
  } catch {
    m = null;
  }
  guard(e, onPush(m));
});

/** An action tapped: the answer goes to the relay from here; on success the notification just closes. */
async function answer(d: Data, action: string): Promise<unknown> {
  const L = stringsOf(d.lang);
  const replace = (body: string) =>
    self.registration.showNotification(d.title || "LineUp", {
      tag: tagOf(d.sid, d.call),
      icon: "/icon-192.png",
      body,
      data: { ...d, token: undefined, sealed: undefined, kind: "update" },
      silent: true,
    });
  let body: Record<string, unknown> = { token: d.token, action };
  if (d.sealed) {
    // Sealed here: the relay gets an envelope instead of the action (docs/e2e.md rule 8).
    const sealed = self.lineupE2E ? await self.lineupE2E.sealAnswer(d.sealed, action) : null;
    if (!sealed) return openApp(d);
    body = { token: d.token, sealed };
  }
  let r: Response;
  try {
    r = await fetch("/api/push/answer", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  } catch {
    return replace(L.notSent);
  }
  if (r.ok) return undefined;
  const b: unknown = await r.json().catch(() => null);
  const err: { code?: string; answered_by?: string; outcome?: string } = isObject(b) && isObject(b.error) ? b.error : {};
  if (err.code === "already_answered") return replace(err.answered_by ? fmt(L.lost, { who: err.answered_by }) : L.answeredElsewhere);
  if (err.code === "call_closed" && d.sealed) return replace(outcomeText(L, { outcome: err.outcome, by: err.answered_by, sealed: true }));
  if (err.code === "call_closed") return replace(outcomeText(L, { outcome: err.outcome }));
  return replace(L.notSent);
}

/** A plain tap (or a browser without actions): the app at that call's card. */
async function openApp(d: Partial<Data>): Promise<unknown> {
  const url = d.url || "/";
  const wins = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const c of wins) {
    if (new URL(c.url).origin !== self.location.origin) continue;
    c.postMessage({ type: "lineup.open", sid: d.sid, call: d.kind === "attention" ? undefined : d.call });
    return "focus" in c ? c.focus() : undefined;
  }
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (e) => {
  const n = e.notification;
  const d: Partial<Data> = (n && (n.data as Partial<Data> | null)) || {};
  const action = e.action || "";
  if (n) n.close();
  guard(e, action && d.token && d.kind !== "update" ? answer(d as Data, action) : openApp(d));
});
