// `lineup setup claude --http` (issue 29 item 6, docs/permissions.md §7.12): PreToolUse, PermissionRequest and
// the AskUserQuestion hook become Claude Code `type: "http"` hooks that POST straight to the relay — one HTTPS
// round trip per tool call, no Node start. The machine credential never enters the settings file: the header
// is `Authorization: Bearer $LINEUP_MACHINE_CREDENTIAL`, which Claude Code fills from its environment because
// `allowedEnvVars` lists that one name (unlisted names become empty strings). Merged like the command hooks
// (claude.ts): LineUp's own entries are replaced in place, everything else is kept.
import { HTTP_HOOK_CREDENTIAL_ENV, HTTP_HOOK_LIMITS, httpHookUrl, type HttpHookEvent } from "../../shared/contract/http-hooks.js";
import { LineUpError } from "../../shared/client/errors.js";
import { isObj, type Json } from "./common.js";

/** The `lineup hook` events the relay answers over http (the others stay command hooks). */
export const HTTP_SUBS: readonly HttpHookEvent[] = ["pre-tool-use", "permission-request", "ask-user-question"];

interface HttpSpec {
  event: "PreToolUse" | "PermissionRequest";
  matcher: string;
  sub: HttpHookEvent;
  waitS?: number;
  timeout: number;
}

/** The http PreToolUse answers from the inbox policy alone and never waits (it does not defer: docs/permissions.md §7.12). */
const HTTP_PRE_TOOL_USE_TIMEOUT_S = 10;

/** The http hooks, with the same waits as their command twins (claude.ts `claudeSpecs`), the waits at most
 * HTTP_HOOK_LIMITS.setupMaxWaitS (a held request must end before Cloudflare drops the idle connection). */
export function claudeHttpSpecs(timeoutS: number, askWaitS: number, o: { waitMarginS: number }): HttpSpec[] {
  return [
    { event: "PreToolUse", matcher: "*", sub: "pre-tool-use", timeout: HTTP_PRE_TOOL_USE_TIMEOUT_S },
    {
      event: "PreToolUse",
      matcher: "AskUserQuestion",
      sub: "ask-user-question",
      waitS: Math.min(askWaitS, HTTP_HOOK_LIMITS.setupMaxWaitS),
      timeout: askWaitS + o.waitMarginS,
    },
    {
      event: "PermissionRequest",
      matcher: "*",
      sub: "permission-request",
      waitS: Math.min(Math.max(5, timeoutS - o.waitMarginS), HTTP_HOOK_LIMITS.setupMaxWaitS),
      timeout: timeoutS,
    },
  ];
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** The credential rides in a header on every tool call: https only, except to this machine (or LINEUP_INSECURE_HTTP=1). */
export function checkHttpHookUrl(relayUrl: string, env: Record<string, string | undefined>): string {
  let u: URL;
  try {
    u = new URL(relayUrl);
  } catch {
    throw new LineUpError("bad_url", `--http: the relay URL ${JSON.stringify(relayUrl)} is not a URL`);
  }
  if (u.protocol !== "https:" && !(u.protocol === "http:" && (LOOPBACK.test(u.hostname) || env.LINEUP_INSECURE_HTTP === "1")))
    throw new LineUpError(
      "insecure",
      `--http: refusing to send the machine credential to ${u.origin} over plain http; use https (or LINEUP_INSECURE_HTTP=1 on a network you trust)`,
    );
  return u.origin + u.pathname.replace(/\/+$/, "");
}

/** One http hook entry: the credential only as a reference to the environment. */
export function httpHookEntry(relayUrl: string, spec: HttpSpec): Json {
  return {
    type: "http",
    url: httpHookUrl(relayUrl, spec.sub, spec.waitS),
    headers: { Authorization: `Bearer $${HTTP_HOOK_CREDENTIAL_ENV}` },
    allowedEnvVars: [HTTP_HOOK_CREDENTIAL_ENV],
    timeout: spec.timeout,
  };
}

/** Whether a hook entry is LineUp's http hook for `sub` (on any relay). */
export const isOurHttp = (h: unknown, sub: string): boolean =>
  isObj(h) && h.type === "http" && typeof h.url === "string" && new RegExp(`/api/hooks/claude/${sub}(?:[?#]|$)`).test(h.url);

/** Removes LineUp's http hook entries (switching back to command hooks); the change lines. */
export function dropClaudeHttpHooks(doc: Json): string[] {
  const changes: string[] = [];
  if (!isObj(doc.hooks)) return changes;
  for (const [event, groups] of Object.entries(doc.hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups as unknown[]) {
      if (!isObj(g) || !Array.isArray(g.hooks)) continue;
      const kept = (g.hooks as unknown[]).filter((h) => !HTTP_SUBS.some((sub) => isOurHttp(h, sub)));
      if (kept.length !== g.hooks.length) changes.push(`removed LineUp's http ${event} hook (back to the command hook)`);
      g.hooks = kept;
    }
    (doc.hooks as Json)[event] = (groups as unknown[]).filter((g) => !isObj(g) || !Array.isArray(g.hooks) || g.hooks.length > 0);
  }
  return changes;
}

/**
 * Merges LineUp's http hooks into parsed settings: our command hook for the same event (`isCommand`) or an
 * earlier http entry is replaced in place; otherwise a group is added. Returns the change lines.
 */
export function mergeClaudeHttpHooks(doc: Json, relayUrl: string, specs: readonly HttpSpec[], isCommand: (command: unknown, sub: string) => boolean): string[] {
  const changes: string[] = [];
  if (doc.hooks !== undefined && !isObj(doc.hooks)) throw new LineUpError("bad_settings", `"hooks" is not an object`);
  const hooks = (doc.hooks ??= {}) as Json;
  for (const spec of specs) {
    const want = httpHookEntry(relayUrl, spec);
    const groups = (hooks[spec.event] ??= []) as unknown;
    if (!Array.isArray(groups)) throw new LineUpError("bad_settings", `hooks.${spec.event} is not a list`);
    let found = false;
    for (const g of groups as unknown[]) {
      if (!isObj(g) || !Array.isArray(g.hooks)) continue;
      const list = g.hooks as unknown[];
      for (let i = 0; i < list.length; i++) {
        const h = list[i];
        const command = isObj(h) && isCommand(h.command, spec.sub);
        if (!command && !isOurHttp(h, spec.sub)) continue;
        if (found) {
          list.splice(i--, 1); // one entry per event: a second one would ask twice
          continue;
        }
        found = true;
        if (JSON.stringify(h) !== JSON.stringify(want)) {
          list[i] = want;
          changes.push(
            `${command ? "replaced the command hook by an" : "updated"} http ${spec.event} hook: POST ${want.url as string} (timeout ${spec.timeout} s)`,
          );
        }
      }
    }
    if (!found) {
      (groups as unknown[]).push({ matcher: spec.matcher, hooks: [want] });
      changes.push(`added http ${spec.event} hook (matcher ${spec.matcher}): POST ${want.url as string} (timeout ${spec.timeout} s)`);
    }
  }
  return changes;
}

/** What to tell the user after `--http`: where Claude Code gets the credential from. */
export function httpNextSteps(relayUrl: string, env: Record<string, string | undefined>): string {
  const set = (env[HTTP_HOOK_CREDENTIAL_ENV] ?? "") !== "";
  return `The http hooks POST to ${relayUrl} with Authorization: Bearer $${HTTP_HOOK_CREDENTIAL_ENV}; the settings file holds
only that reference. ${
    set
      ? `${HTTP_HOOK_CREDENTIAL_ENV} is set in this shell: start claude from a shell that has it.`
      : `Set it in the shell that starts claude (your profile): this machine's inbox credential (lum1.…),
the machineCredential of this relay's inbox in ~/.lineup/state.json (\`lineup machines\` shows the inbox).`
  }
Without it Claude Code sends an empty credential, the relay answers 401, and Claude Code's own dialog decides.
With end-to-end encryption on (lineup e2e on) the relay refuses (409): use the command hooks then.`;
}
