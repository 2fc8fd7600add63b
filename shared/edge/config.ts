// The relay's operator settings, parsed once and strictly: a typo in an override is an error that names
// the variable, never a silent fall-back to the default (the Worker answers 503 bad_config to every
// request until it is fixed, `npm run deploy` refuses it, the LAN server refuses to start).
import { LIMITS } from "../contract/protocol.js";
import { checkSubject } from "../crypto/webpush/index.js";

export interface RelayConfig {
  rate: { perS: number; burst: number };
  /** Browser origins allowed besides the relay's own. */
  allowedOrigins: string[];
  /** Base URL of links (`app_url`, `ws_url`) behind a proxy. */
  publicUrl: string | undefined;
  /** The VAPID JWT's `sub` (docs/push.md); undefined: the relay's https origin, else a placeholder. */
  vapidSubject: string | undefined;
}

export type ConfigResult = { ok: true; config: RelayConfig } | { ok: false; problems: string[] };

/** The vars the relay's configuration reads (docs: README "Deploy"); the Worker's Env has each of them. */
export interface ConfigVars {
  RATE_LIMIT_PER_S?: string | undefined;
  RATE_LIMIT_BURST?: string | undefined;
  ALLOWED_ORIGINS?: string | undefined;
  PUBLIC_URL?: string | undefined;
  VAPID_SUBJECT?: string | undefined;
  WUKONGIM_API_URL?: string | undefined;
  WUKONGIM_FORWARD_URL?: string | undefined;
}
type Vars = ConfigVars;

const blank = (v: string | undefined) => v === undefined || v.trim() === "";

function positive(vars: Vars, name: "RATE_LIMIT_PER_S" | "RATE_LIMIT_BURST", fallback: number, problems: string[]): number {
  const raw = vars[name];
  if (blank(raw)) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    problems.push(`${name}=${JSON.stringify(raw)} is not a positive number`);
    return fallback;
  }
  return n;
}

function origin(raw: string, name: string, problems: string[]): string | undefined {
  try {
    const u = new URL(raw);
    if ((u.protocol !== "https:" && u.protocol !== "http:") || (u.pathname !== "/" && u.pathname !== "") || u.search || u.hash)
      throw new Error("not an origin");
    return u.origin;
  } catch {
    problems.push(`${name}: ${JSON.stringify(raw)} is not an origin like https://app.example.com`);
    return undefined;
  }
}

export function parseConfig(vars: Vars): ConfigResult {
  const problems: string[] = [];
  const rate = {
    perS: positive(vars, "RATE_LIMIT_PER_S", LIMITS.rateLimitPerS, problems),
    burst: positive(vars, "RATE_LIMIT_BURST", LIMITS.rateLimitBurst, problems),
  };
  const allowedOrigins: string[] = [];
  for (const o of (vars.ALLOWED_ORIGINS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const ok = origin(o, "ALLOWED_ORIGINS", problems);
    if (ok) allowedOrigins.push(ok);
  }
  let publicUrl: string | undefined;
  if (!blank(vars.PUBLIC_URL)) publicUrl = origin(vars.PUBLIC_URL!.trim().replace(/\/+$/, ""), "PUBLIC_URL", problems);
  for (const name of ["WUKONGIM_API_URL", "WUKONGIM_FORWARD_URL"] as const) {
    const v = vars[name];
    if (blank(v)) continue;
    try {
      new URL(v!);
    } catch {
      problems.push(`${name}=${JSON.stringify(v)} is not a URL`);
    }
  }
  let vapidSubject: string | undefined;
  if (!blank(vars.VAPID_SUBJECT)) {
    const v = vars.VAPID_SUBJECT!.trim();
    try {
      checkSubject(v);
      // Apple's push service refuses a contact at localhost or .local (BadJwtToken): say so now, not at the first push.
      const host = v.startsWith("mailto:") ? v.slice(v.lastIndexOf("@") + 1) : new URL(v).hostname;
      if (/^(localhost|127\.0\.0\.1|\[::1\])$|\.local$/i.test(host))
        problems.push(`VAPID_SUBJECT=${JSON.stringify(v)}: Apple refuses a contact at localhost or .local; use a real mailto: address or https: URL`);
      else vapidSubject = v;
    } catch {
      problems.push(`VAPID_SUBJECT=${JSON.stringify(v)} is not a mailto: address or an https: URL`);
    }
  }
  return problems.length ? { ok: false, problems } : { ok: true, config: { rate, allowedOrigins, publicUrl, vapidSubject } };
}
