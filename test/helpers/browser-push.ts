// The service-worker side of the Chromium push tests (docs/push.md): headless Chromium cannot subscribe
// without a real push service, so the test page — and only it — gets a PushManager whose subscription points
// at the fake push service (real p256dh/auth keys made with WebCrypto); the real service worker's
// notifications are read with getNotifications() and "tapped" with a synthetic notificationclick.
import type { BrowserContext, CDPSession, Worker } from "playwright-core";

/** Runs in the test page before the app: a PushManager whose subscription points at the fake push service. */
export function stubPushManager(base: string): void {
  const KEY = "test.push.subscription";
  const b64 = (b: ArrayBuffer | Uint8Array) =>
    btoa(String.fromCharCode(...new Uint8Array(b)))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
  const bytes = (s: string) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  interface Saved {
    endpoint: string;
    p256dh: string;
    auth: string;
    d: string;
    asKey: string;
  }
  const make = (s: Saved) => ({
    endpoint: s.endpoint,
    expirationTime: null,
    options: { applicationServerKey: bytes(s.asKey).buffer, userVisibleOnly: true },
    getKey: (n: string) => bytes(n === "p256dh" ? s.p256dh : s.auth).buffer,
    toJSON: () => ({ endpoint: s.endpoint, expirationTime: null, keys: { p256dh: s.p256dh, auth: s.auth } }),
    unsubscribe: async () => {
      localStorage.removeItem(KEY);
      return true;
    },
  });
  PushManager.prototype.getSubscription = async function () {
    const raw = localStorage.getItem(KEY);
    return raw ? (make(JSON.parse(raw) as Saved) as unknown as PushSubscription) : null;
  };
  PushManager.prototype.subscribe = async function (opts?: PushSubscriptionOptionsInit) {
    const kp = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
    const raw = await crypto.subtle.exportKey("raw", kp.publicKey);
    const jwk = await crypto.subtle.exportKey("jwk", kp.privateKey);
    const key = opts?.applicationServerKey;
    const saved: Saved = {
      endpoint: `${base}/push/${crypto.randomUUID()}`,
      p256dh: b64(raw),
      auth: b64(crypto.getRandomValues(new Uint8Array(16))),
      d: jwk.d!,
      asKey: typeof key === "string" ? key : b64(key instanceof ArrayBuffer ? key : new Uint8Array((key as ArrayBufferView).buffer)),
    };
    localStorage.setItem(KEY, JSON.stringify(saved));
    return make(saved) as unknown as PushSubscription;
  };
}

export interface Shown {
  title: string;
  body: string;
  tag: string;
  actions: string[];
}

/** The service worker of the app's origin (started again by a push when it was stopped). */
export async function worker(ctx: BrowserContext): Promise<Worker> {
  const sw = ctx.serviceWorkers()[0];
  return sw ?? (await ctx.waitForEvent("serviceworker", { timeout: 15_000 }));
}
export const shown = async (ctx: BrowserContext): Promise<Shown[]> =>
  (await worker(ctx)).evaluate(async () => {
    const reg = (self as unknown as { registration: ServiceWorkerRegistration }).registration;
    return (await reg.getNotifications()).map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      actions: ((n as unknown as { actions?: { action: string }[] }).actions ?? []).map((a) => a.action),
    }));
  });

export async function registrationId(cdp: CDPSession, origin: string): Promise<string> {
  const found = new Promise<string>((resolve) => {
    cdp.on("ServiceWorker.workerRegistrationUpdated", (e: { registrations: { registrationId: string; scopeURL: string; isDeleted: boolean }[] }) => {
      const r = e.registrations.find((x) => x.scopeURL.startsWith(origin) && !x.isDeleted);
      if (r) resolve(r.registrationId);
    });
  });
  await cdp.send("ServiceWorker.enable");
  return found;
}

/** A tap on the notification whose tag ends with `/<tagEnd>`: `action` is a button ("" for the body). */
export async function tap(ctx: BrowserContext, tagEnd: string, action: string): Promise<void> {
  await (await worker(ctx)).evaluate(
    async ([end, act]) => {
      const reg = (self as unknown as { registration: ServiceWorkerRegistration }).registration;
      const n = (await reg.getNotifications()).find((x) => x.tag.endsWith(`/${end}`));
      if (!n) throw new Error(`no notification tagged …/${end}`);
      const Ev = (self as unknown as { NotificationEvent: new (t: string, i: { notification: Notification; action: string }) => Event }).NotificationEvent;
      self.dispatchEvent(new Ev("notificationclick", { notification: n, action: act }));
    },
    [tagEnd, action] as const,
  );
}
