// A call's notification, named by its tag (the service worker web/src/sw.ts shows it under this tag, and a
// reminder or the outcome replaces it there). The app closes it the moment it answers the call (issue 28 §3),
// so the tray never keeps live Yes/No buttons of a call already answered, even if the app closes at once.

export const tagOf = (sid: string, call: string): string => `lineup:${sid}/${call}`;

/** Closes the notification of `call` (best effort: without a service worker or a notification nothing happens). */
export function closeNotification(sid: string, call: string): void {
  navigator.serviceWorker?.ready
    .then((r) => r.getNotifications({ tag: tagOf(sid, call) }))
    .then((ns) => ns.forEach((n) => n.close()))
    .catch(() => {});
}
