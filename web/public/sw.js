// LineUp service worker: keeps the app shell (index.html, its hashed assets, icons, manifest) so the app
// opens offline. Never touches /api/*, /healthz or /webhooks/* (live data and tokens stay on the network).
const CACHE = "lineup-shell-v1";
const STATIC = ["/", "/manifest.webmanifest", "/icon.svg", "/icon-192.png", "/icon-512.png", "/icon-maskable-512.png"];
const LIVE = /^\/(api|webhooks)\/|^\/healthz$/;

/** The shell plus every /assets/ file index.html references (hashed names: cache-first is safe). */
async function precache() {
  const cache = await caches.open(CACHE);
  const res = await fetch("/", { cache: "no-store" });
  if (!res.ok) throw new Error(`shell: HTTP ${res.status}`);
  const html = await res.clone().text();
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
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

self.addEventListener("fetch", (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== location.origin || LIVE.test(url.pathname)) return;
  if (req.mode === "navigate") {
    // Network first (a new deploy shows at once); offline, every path gets the cached shell (SPA).
    e.respondWith(
      (async () => {
        try {
          const res = await fetch(req);
          if (res.ok) {
            const copy = res.clone();
            caches.open(CACHE).then((c) => c.put("/", copy)).catch(() => {});
          }
          return res;
        } catch {
          return (await caches.match("/")) || Response.error();
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
        caches.open(CACHE).then((c) => c.put(req, copy)).catch(() => {});
      }
      return res;
    })(),
  );
});
