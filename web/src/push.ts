// Web Push on this device (docs/push.md): the subscription (asked for only from the switch's tap, re-synced
// on every app open because subscriptions expire silently, re-made when the relay's key was rotated), what
// this device shows right now (reported over each inbox socket: the relay spares a device that is looking
// at the session or the Waiting list), closing notifications of calls that are no longer waiting, and
// opening the app at a call's card when a notification is tapped. Only inboxes of this page's origin: a
// service worker receives pushes for its own origin only.
import { effect, signal } from "@preact/signals";
import type { PushInfo, PushLogEntry, PushSettings } from "../../shared/contract/push.js";
import { lang } from "./i18n.js";
import type { InboxConn } from "./inbox.js";
import { focusCall, navigate, path } from "./router.js";
import { inboxes } from "./sessions.js";
import { readJson, writeJson } from "./storage.js";
import { LineUpError } from "../../shared/client/errors.js";

/** PUSH_LIMITS.visibleEveryMs of shared/contract/push.ts (importing its values would pull zod into the bundle). */
const VISIBLE_EVERY_MS = 30_000;

export type PushPhase = "unsupported" | "off" | "on" | "denied" | "busy";
/** The person turned notifications on on this device (kept: the app re-syncs at every open). */
const wanted = signal<boolean>(readJson<boolean>("push", false));
export const pushPhase = signal<PushPhase>(wanted.value ? "on" : "off");
export const pushError = signal<string>("");
export const pushSettings = signal<PushSettings | null>(null);
export type PushLogRow = PushLogEntry & { device_name?: string };
/** Outcomes per session, for the tool log. */
export const pushLogs = signal<Record<string, PushLogRow[]>>({});

export function pushSupported(): boolean {
  return isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** The inboxes this page's service worker can be pushed for. */
export const ownInboxes = (): InboxConn[] => inboxes.value.filter((ib) => ib.saved.origin === location.origin);

const fromB64url = (s: string): Uint8Array<ArrayBuffer> => {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

async function serverKey(): Promise<string> {
  const r = await fetch("/api/push/key", { cache: "no-store" });
  if (!r.ok) throw new LineUpError(`http_${r.status}`, `GET /api/push/key: HTTP ${r.status}`, r.status);
  return ((await r.json()) as { public_key: string }).public_key;
}

function madeWith(sub: PushSubscription, key: string): boolean {
  const have = sub.options.applicationServerKey;
  if (!have) return false;
  const a = new Uint8Array(have);
  const b = fromB64url(key);
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function registration(): Promise<ServiceWorkerRegistration> {
  // `ready` never settles without a service worker: give up after a while instead of hanging the switch.
  const timeout = new Promise<never>((_, no) => setTimeout(() => no(new LineUpError("timeout", "no service worker")), 10_000));
  return Promise.race([navigator.serviceWorker.ready, timeout]);
}

/** The subscription made with the relay's current key (a rotated key's one is dropped and made again). */
async function subscribe(): Promise<{ sub: PushSubscription; key: string }> {
  const reg = await registration();
  const key = await serverKey();
  let sub = await reg.pushManager.getSubscription();
  if (sub && !madeWith(sub, key)) {
    await sub.unsubscribe().catch(() => false);
    sub = null;
  }
  sub ??= await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromB64url(key) });
  return { sub, key };
}

async function register(sub: PushSubscription, key: string): Promise<void> {
  const j = sub.toJSON();
  const body = {
    subscription: {
      endpoint: j.endpoint ?? sub.endpoint,
      expirationTime: j.expirationTime ?? null,
      keys: { p256dh: j.keys?.p256dh ?? "", auth: j.keys?.auth ?? "" },
    },
    application_server_key: key,
    lang: lang.value,
  };
  await Promise.all(ownInboxes().map((ib) => ib.request<PushInfo>("PUT", "/api/inbox/push", body).then((i) => (pushSettings.value = i.settings))));
}

function setWanted(v: boolean): void {
  wanted.value = v;
  writeJson("push", v);
}

/** The switch turned on: the permission prompt comes from this tap, never from a page load. */
export async function enablePush(): Promise<void> {
  pushError.value = "";
  if (!pushSupported()) return void (pushPhase.value = "unsupported");
  pushPhase.value = "busy";
  try {
    const p = await Notification.requestPermission();
    if (p !== "granted") {
      setWanted(false);
      pushPhase.value = p === "denied" ? "denied" : "off";
      return;
    }
    const { sub, key } = await subscribe();
    await register(sub, key);
    setWanted(true);
    pushPhase.value = "on";
  } catch (e) {
    pushError.value = e instanceof Error ? e.message : String(e);
    pushPhase.value = "off";
  }
}

export async function disablePush(): Promise<void> {
  pushError.value = "";
  setWanted(false);
  pushPhase.value = "busy";
  await Promise.all(ownInboxes().map((ib) => ib.request("DELETE", "/api/inbox/push").catch(() => undefined)));
  try {
    await (await (await registration()).pushManager.getSubscription())?.unsubscribe();
  } catch {
    /* no service worker: nothing to unsubscribe */
  }
  pushPhase.value = "off";
}

/** At every app open (and after a language switch): register the live subscription again, or notice it is gone. */
export async function syncPush(): Promise<void> {
  if (!pushSupported()) return void (pushPhase.value = "unsupported");
  if (!wanted.value) return void (pushPhase.value = Notification.permission === "denied" ? "denied" : "off");
  if (Notification.permission !== "granted") {
    // Revoked in the browser's settings: the relay must stop pushing to a subscription that cannot show.
    await disablePush();
    pushPhase.value = Notification.permission === "denied" ? "denied" : "off";
    return;
  }
  if (!ownInboxes().length) return;
  try {
    const { sub, key } = await subscribe();
    await register(sub, key);
    pushPhase.value = "on";
  } catch (e) {
    pushError.value = e instanceof Error ? e.message : String(e);
  }
}

// ---------------------------------------------------------------- settings and the log

export async function loadPushInfo(sid?: string): Promise<void> {
  const ib = sid ? inboxes.value.find((x) => x.state.value?.sessions.some((s) => s.session_id === sid)) : ownInboxes()[0];
  if (!ib) return;
  try {
    const i = await ib.request<PushInfo>("GET", `/api/inbox/push${sid ? `?session_id=${encodeURIComponent(sid)}` : ""}`);
    pushSettings.value = i.settings;
    if (sid) pushLogs.value = { ...pushLogs.value, [sid]: i.log };
  } catch {
    /* offline: the log stays as it was */
  }
}

export async function savePushSettings(p: Partial<PushSettings>): Promise<void> {
  const all = await Promise.all(ownInboxes().map((ib) => ib.request<PushSettings>("PUT", "/api/inbox/push/settings", p)));
  if (all[0]) pushSettings.value = all[0];
}

// ---------------------------------------------------------------- what this device shows

function currentView(p: string): string {
  if (document.visibilityState !== "visible") return JSON.stringify({ type: "visible", view: "hidden" });
  const m = /^\/s\/([A-Za-z0-9_-]{8,64})\/?$/.exec(p);
  if (m) return JSON.stringify({ type: "visible", view: "session", session_id: m[1] });
  return JSON.stringify({ type: "visible", view: p === "/" ? "home" : "other" });
}

function report(): void {
  const v = currentView(path.value);
  for (const ib of inboxes.value) ib.setView(v);
}

/** Closes this origin's notifications of calls no longer waiting (answered here or elsewhere), and of the
 * session on screen (its cards show the same). Only inboxes whose state is live are trusted for that. */
async function tidy(): Promise<void> {
  if (!("serviceWorker" in navigator)) return;
  const reg = await navigator.serviceWorker.getRegistration().catch(() => undefined);
  if (!reg?.getNotifications) return;
  const live = inboxes.value.filter((ib) => ib.phase.value === "online" && ib.state.value);
  const waiting = new Set(live.flatMap((ib) => ib.state.value!.sessions.flatMap((s) => s.waiting.map((w) => `${s.session_id}/${w.call_id}`))));
  const known = new Set(live.map((ib) => ib.saved.inbox_id));
  const shown = document.visibilityState === "visible" ? /^\/s\/([A-Za-z0-9_-]+)/.exec(path.value)?.[1] : undefined;
  for (const n of await reg.getNotifications().catch(() => [] as Notification[])) {
    const d = n.data as { kind?: string; inbox?: string; sid?: string; call?: string } | null;
    if (!d?.sid || !d.call) continue;
    // An agent's "waiting for you" (no call, so never in the waiting list) stays until tapped or its session is on screen.
    const settled = d.kind !== "attention" && d.inbox && known.has(d.inbox) && !waiting.has(`${d.sid}/${d.call}`);
    if (d.sid === shown || settled) n.close();
  }
}

/** `?call=<id>` on /s/<sid> (a tapped notification opened the app there): bring that card into view. */
function openFromUrl(): void {
  const m = /^\/s\/([A-Za-z0-9_-]+)\/?$/.exec(location.pathname);
  const call = new URLSearchParams(location.search).get("call");
  if (!m || !call) return;
  focusCall.value = { sid: m[1]!, callId: call };
  history.replaceState(history.state, "", location.pathname);
}

let started = false;
/** Called once at start (main.tsx). */
export function startPush(): void {
  if (started) return;
  started = true;
  openFromUrl();
  let own = "";
  effect(() => {
    void path.value;
    const ids = ownInboxes()
      .map((ib) => ib.saved.device_id)
      .join(",");
    report();
    // A newly paired inbox of this origin gets the subscription too.
    if (ids !== own) {
      if (own !== "" && wanted.value) void syncPush();
      own = ids;
    }
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  effect(() => {
    for (const ib of inboxes.value) void [ib.state.value, ib.phase.value];
    void path.value;
    clearTimeout(timer);
    timer = setTimeout(() => void tidy(), 300);
  });
  document.addEventListener("visibilitychange", () => {
    report();
    if (document.visibilityState === "visible") {
      void tidy();
      void syncPush();
    }
  });
  addEventListener("pagehide", () => {
    for (const ib of inboxes.value) ib.setView(JSON.stringify({ type: "visible", view: "hidden" }));
  });
  // A report counts 70 s on the relay: repeat it while visible, so a frozen tab stops sparing the device.
  setInterval(() => document.visibilityState === "visible" && report(), VISIBLE_EVERY_MS);
  navigator.serviceWorker?.addEventListener("message", (e: MessageEvent) => {
    const d = e.data as { type?: string; sid?: string; call?: string } | null;
    if (d?.type !== "lineup.open" || typeof d.sid !== "string") return;
    if (typeof d.call === "string") focusCall.value = { sid: d.sid, callId: d.call };
    navigate(`/s/${d.sid}`);
  });
  let lastLang = lang.value;
  effect(() => {
    if (lang.value === lastLang) return;
    lastLang = lang.value;
    void syncPush(); // the notification's Yes/No follow the app's language
  });
  void syncPush();
}
