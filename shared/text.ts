// Cutting human text to a length for lists, logs and notifications.

/** Cuts to `n` characters (code points, so no half surrogate pair), with an ellipsis. */
export function cut(s: string, n: number): string {
  const cps = [...s];
  return cps.length > n ? `${cps.slice(0, Math.max(0, n - 1)).join("")}…` : s;
}
