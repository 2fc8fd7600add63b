// Cutting human text to a length for lists, logs and notifications, and making a one-line name safe to show.

/** Cuts to `n` characters (code points, so no half surrogate pair), with an ellipsis. */
export function cut(s: string, n: number): string {
  const cps = [...s];
  return cps.length > n ? `${cps.slice(0, Math.max(0, n - 1)).join("")}…` : s;
}

/** Cuts to `n` characters keeping the end, with a leading ellipsis ("…/clients/api-server"): for paths. */
export function cutStart(s: string, n: number): string {
  const cps = [...s];
  return cps.length > n ? `…${cps.slice(cps.length - Math.max(0, n - 1)).join("")}` : s;
}

/** The first `n` characters (code points) of `s`, without an ellipsis: for a caller that adds its own marker. */
export function head(s: string, n: number): string {
  const cps = [...s];
  return cps.length > n ? cps.slice(0, Math.max(0, n)).join("") : s;
}

// C0 and C1 controls, DEL, the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the
// implicit marks (U+200E/F, U+061C) and the line/paragraph separators: a name shown to a person — an OAuth
// client's name on the consent screen, a session's label — could otherwise reorder what follows it on the
// screen ("evil\u202Eelgoog" reads "evilgoogle" backwards) or break the line it sits on.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const HAS_UNSAFE = new RegExp(UNSAFE.source);

/**
 * A one-line name without controls or bidi formatting characters: each becomes a space, runs of spaces one,
 * trimmed. A name without any is returned exactly as given (a label round-trips as the contract says).
 */
export function plainName(s: string): string {
  if (!HAS_UNSAFE.test(s)) return s;
  return s.replace(UNSAFE, " ").replace(/ {2,}/g, " ").trim();
}
