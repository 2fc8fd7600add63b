// Path routes: "/" (home: waiting calls and sessions), "/s/<sid>" (one session), "/devices", "/settings",
// "/connect" (Connect an app: OAuth connectors, `#code=` from the authorize page's QR code).
// The Worker and the service worker answer every path with the app shell (SPA fallback).
import { signal } from "@preact/signals";

export const path = signal(location.pathname);
/** The call to bring into view when a session opens (a tap in "Waiting for you"). */
export const focusCall = signal<{ sid: string; callId: string } | null>(null);

export function navigate(to: string, replace = false): void {
  if (to === location.pathname && !location.hash) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  path.value = to;
  window.scrollTo(0, 0);
}

addEventListener("popstate", () => (path.value = location.pathname));
