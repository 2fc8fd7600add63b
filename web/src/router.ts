// Path routes: "/" (sessions), "/s/<sid>" (one session), "/settings". The Worker and the service worker
// answer every path with the app shell (SPA fallback).
import { signal } from "@preact/signals";

export const path = signal(location.pathname);

export function navigate(to: string, replace = false): void {
  if (to === location.pathname && !location.hash) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  path.value = to;
  window.scrollTo(0, 0);
}

addEventListener("popstate", () => (path.value = location.pathname));
