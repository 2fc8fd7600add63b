// The relay's http hooks for Claude Code (issue 29 item 6, docs/permissions.md §7.12): `POST
// /api/hooks/claude/<event>?wait=<s>` with the machine credential as `Authorization: Bearer`, the hook's JSON
// input as the body (the same stdin a command hook reads: shared/policy/hooks.ts and ask-hooks.ts parse it),
// and the exact JSON a command hook prints as the answer — or an empty 200 for "no decision". Written by
// `lineup setup claude --http` (adapter/setup/http.ts), served by worker/hooks/routes.ts.

/** The events, by the path segment the relay serves them under (the same names as `lineup hook <event>`). */
export const HTTP_HOOK_EVENTS = ["pre-tool-use", "permission-request", "ask-user-question"] as const;
export type HttpHookEvent = (typeof HTTP_HOOK_EVENTS)[number];

export const isHttpHookEvent = (s: string): s is HttpHookEvent => (HTTP_HOOK_EVENTS as readonly string[]).includes(s);

export const HTTP_HOOK_LIMITS = {
  /** The hook input's size cap (bytes): a larger body is refused 413 (the terminal's dialog decides). */
  maxBodyBytes: 1024 * 1024,
  /** `?wait=`: how long the relay holds a request for the human's answer (s); without it, defaultWaitS. */
  minWaitS: 1,
  maxWaitS: 86_400,
  defaultWaitS: 50,
  /**
   * The longest wait `lineup setup claude --http` writes: Cloudflare closes a client connection idle for 400 s
   * (https://developers.cloudflare.com/fundamentals/reference/connection-limits/), and a held request sends nothing.
   */
  setupMaxWaitS: 380,
  /** The card's own deadline at the relay is this much later than the wait: our cancel is what closes it. */
  cardGraceS: 5,
} as const;

/** The environment variable the settings' header names (`Authorization: Bearer $LINEUP_MACHINE_CREDENTIAL`). */
export const HTTP_HOOK_CREDENTIAL_ENV = "LINEUP_MACHINE_CREDENTIAL";

/** The response header that says why there was no decision (an empty 200) or why the request was refused. */
export const HTTP_HOOK_OUTCOME_HEADER = "lineup-hook-outcome";

/** The URL of one event's hook on a relay. */
export function httpHookUrl(relayUrl: string, event: HttpHookEvent, waitS?: number): string {
  return `${relayUrl.replace(/\/+$/, "")}/api/hooks/claude/${event}${waitS !== undefined ? `?wait=${waitS}` : ""}`;
}
