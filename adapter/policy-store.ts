// Where the adapter keeps permission policy besides the project's file: the local policy file ("always
// allow" writes land here first, so the very next call sees them), the cached copy of the inbox policy
// (read by PreToolUse without any network: refreshed in the background, docs/permissions.md §8), and
// the machine credential that reads and writes the inbox policy. Node only; the engine is shared/policy.ts.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync, closeSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseCredential, type InboxPolicy } from "../shared/inbox-protocol.js";
import { validatePolicyFile, type Behavior, type PolicySource } from "../shared/policy.js";
import { randomId } from "../shared/tokens.js";
import { defaultLocalPolicyFile, loadPolicySources } from "./policy-files.js";
import { findInbox, normalizeUrl } from "./state.js";

export const INBOX_POLICY_CACHE = "inbox-policy.json";
/** A cached inbox policy older than this is refreshed (in the background by PreToolUse). */
export const INBOX_POLICY_TTL_MS = 30_000;
/** At most one background refresh is started per this long (PreToolUse runs for every tool call). */
const REFRESH_THROTTLE_MS = 10_000;
const FETCH_TIMEOUT_MS = 3_000;

type Env = Record<string, string | undefined>;
type Lists = { allow: string[]; ask: string[]; deny: string[] };

const atomicWrite = (file: string, text: string, mode = 0o600) => {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomId(4)}.tmp`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
};

// ---------------------------------------------------------------- local policy file

export type AddRuleResult = { added: true; file: string } | { added: false; file: string; reason: "present" | "invalid_rule" | "invalid_file"; message?: string };

/**
 * Adds `rule` to one list of a policy file (created if missing). A file that is not a valid policy is
 * never rewritten: the human's hand-edited file wins over an automatic write.
 */
export function addLocalRule(file: string, rule: string, behavior: Behavior = "allow"): AddRuleResult {
  const check = validatePolicyFile({ permissions: { [behavior]: [rule] } });
  if (!check.ok) return { added: false, file, reason: "invalid_rule", message: check.errors.join("; ") };
  let doc: { permissions: Lists } & Record<string, unknown> = { permissions: { allow: [], ask: [], deny: [] } };
  let text: string | undefined;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") return { added: false, file, reason: "invalid_file", message: (e as Error).message };
  }
  if (text !== undefined) {
    const v = validatePolicyFile(text);
    if (!v.ok) return { added: false, file, reason: "invalid_file", message: v.errors.join("; ") };
    // Keep the file's other keys ($schema, …) and the lists as written.
    const raw = JSON.parse(text) as { permissions: Partial<Lists> } & Record<string, unknown>;
    doc = { ...raw, permissions: { ...raw.permissions, allow: raw.permissions.allow ?? [], ask: raw.permissions.ask ?? [], deny: raw.permissions.deny ?? [] } };
  }
  const list = doc.permissions[behavior];
  if (list.includes(rule)) return { added: false, file, reason: "present" };
  list.push(rule);
  atomicWrite(file, `${JSON.stringify(doc, null, 2)}\n`);
  return { added: true, file };
}

// ---------------------------------------------------------------- the machine credential

export interface InboxAccess {
  relayUrl: string;
  /** `lum1.<inbox>.<machine>.<secret>` */
  credential: string;
  inboxId: string;
}

/**
 * The machine credential for `relayUrl`: `LINEUP_MACHINE_CREDENTIAL`, else this machine's inbox saved in
 * the state file (adapter/state.ts). Undefined when the machine has joined no inbox on that relay: then
 * only the project and local files apply.
 */
export function findInboxAccess(stateDir: string, relayUrl: string, env: Env = process.env): InboxAccess | undefined {
  const url = normalizeUrl(relayUrl);
  const fromEnv = env.LINEUP_MACHINE_CREDENTIAL;
  if (fromEnv) {
    const c = parseCredential(fromEnv);
    return c?.kind === "machine" ? { relayUrl: url, credential: fromEnv, inboxId: c.inbox } : undefined;
  }
  const saved = findInbox(stateDir, url);
  const c = saved ? parseCredential(saved.machineCredential) : undefined;
  return saved && c?.kind === "machine" ? { relayUrl: url, credential: saved.machineCredential, inboxId: c.inbox } : undefined;
}

// ---------------------------------------------------------------- the cached inbox policy

export interface InboxPolicyCache {
  relayUrl: string;
  inboxId: string;
  version: number;
  permissions: Lists;
  /** When the relay last confirmed this copy (epoch ms). */
  fetchedAt: number;
}

export const inboxCacheFile = (stateDir: string) => join(stateDir, INBOX_POLICY_CACHE);

export function readInboxPolicyCache(stateDir: string): InboxPolicyCache | undefined {
  try {
    const c = JSON.parse(readFileSync(inboxCacheFile(stateDir), "utf8")) as Partial<InboxPolicyCache>;
    const v = validatePolicyFile({ permissions: c.permissions });
    if (!v.ok || typeof c.relayUrl !== "string" || typeof c.inboxId !== "string" || typeof c.version !== "number" || typeof c.fetchedAt !== "number") return undefined;
    return { relayUrl: c.relayUrl, inboxId: c.inboxId, version: c.version, permissions: v.policy.permissions, fetchedAt: c.fetchedAt };
  } catch {
    return undefined;
  }
}

/** Why this inbox's cached policy cannot be used, when a cache for it exists but is invalid (a rule the
 * relay kept but this adapter cannot parse). Undefined when there is no cache for it, or it is fine. */
export function inboxPolicyCacheProblem(stateDir: string, access: InboxAccess): string | undefined {
  let raw: string;
  try {
    raw = readFileSync(inboxCacheFile(stateDir), "utf8");
  } catch {
    return undefined;
  }
  let c: Partial<InboxPolicyCache>;
  try {
    c = JSON.parse(raw) as Partial<InboxPolicyCache>;
  } catch {
    return `the cached inbox policy (${inboxCacheFile(stateDir)}) is not valid JSON`;
  }
  if (c.relayUrl !== access.relayUrl || c.inboxId !== access.inboxId) return undefined;
  const v = validatePolicyFile({ permissions: c.permissions });
  return v.ok ? undefined : `the inbox policy is invalid: ${v.errors.join("; ")}`;
}

export function writeInboxPolicyCache(stateDir: string, c: InboxPolicyCache): void {
  atomicWrite(inboxCacheFile(stateDir), `${JSON.stringify(c, null, 2)}\n`);
}

const cacheFor = (access: InboxAccess, p: InboxPolicy): InboxPolicyCache => ({
  relayUrl: access.relayUrl,
  inboxId: access.inboxId,
  version: p.version,
  permissions: { allow: p.permissions.allow ?? [], ask: p.permissions.ask ?? [], deny: p.permissions.deny ?? [] },
  fetchedAt: Date.now(),
});

async function policyRequest(access: InboxAccess, init: { method: "GET" | "PUT"; body?: unknown }, timeoutMs: number): Promise<{ status: number; policy?: InboxPolicy }> {
  const res = await fetch(`${access.relayUrl}/api/inbox/policy`, {
    method: init.method,
    headers: { authorization: `Bearer ${access.credential}`, ...(init.body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: AbortSignal.timeout(Math.max(1, Math.round(timeoutMs))),
  });
  if (!res.ok) {
    await res.body?.cancel();
    return { status: res.status };
  }
  const p = (await res.json()) as InboxPolicy;
  return { status: res.status, policy: p };
}

/** GET /api/inbox/policy into the cache; undefined (cache untouched) when the relay cannot answer. */
export async function refreshInboxPolicy(stateDir: string, access: InboxAccess, timeoutMs = FETCH_TIMEOUT_MS): Promise<InboxPolicyCache | undefined> {
  try {
    const r = await policyRequest(access, { method: "GET" }, timeoutMs);
    if (!r.policy || typeof r.policy.version !== "number") return undefined;
    const c = cacheFor(access, r.policy);
    writeInboxPolicyCache(stateDir, c);
    return c;
  } catch (e) {
    if (process.env.LINEUP_HOOK_DEBUG) process.stderr.write(`refresh: ${String(e)} ${String((e as Error).cause)}\n`);
    return undefined;
  }
}

/**
 * Adds a rule to the inbox policy (read, add, PUT with `base_version`; one retry on 409 when somebody
 * else wrote in between) and updates the cache. False when the relay could not be reached in time.
 */
export async function addInboxRule(stateDir: string, access: InboxAccess, rule: string, behavior: Behavior = "allow", timeoutMs = FETCH_TIMEOUT_MS): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      const cur = await policyRequest(access, { method: "GET" }, left());
      if (!cur.policy) return false;
      const lists = cacheFor(access, cur.policy).permissions;
      if (lists[behavior].includes(rule)) {
        writeInboxPolicyCache(stateDir, cacheFor(access, cur.policy));
        return true;
      }
      lists[behavior] = [...lists[behavior], rule];
      const put = await policyRequest(access, { method: "PUT", body: { permissions: lists, base_version: cur.policy.version } }, left());
      if (put.policy) {
        writeInboxPolicyCache(stateDir, cacheFor(access, put.policy));
        return true;
      }
      if (put.status !== 409) return false;
    }
  } catch {
    /* unreachable or too slow: the local file already has the rule */
  }
  return false;
}

/** Whether the cache should be refreshed: missing, for another inbox, older than the TTL, or behind a version somebody saw. */
export function cacheIsStale(c: InboxPolicyCache | undefined, access: InboxAccess, now = Date.now(), seenVersion?: number): boolean {
  if (!c || c.relayUrl !== access.relayUrl || c.inboxId !== access.inboxId) return true;
  if (seenVersion !== undefined && seenVersion !== c.version) return true;
  return now - c.fetchedAt > INBOX_POLICY_TTL_MS;
}

const BIN = fileURLToPath(new URL("./bin/lineup.mjs", import.meta.url));

/**
 * Starts `lineup hook refresh-policy` detached and returns at once: PreToolUse must never wait on the
 * network. A marker file throttles it to one start per REFRESH_THROTTLE_MS.
 */
export function refreshInBackground(stateDir: string, relayUrl: string, env: Env = process.env): boolean {
  const marker = join(stateDir, "inbox-policy.refresh");
  try {
    if (Date.now() - statSync(marker).mtimeMs < REFRESH_THROTTLE_MS) return false;
  } catch {
    /* no marker yet */
  }
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    closeSync(openSync(marker, "a", 0o600));
    const now = new Date();
    utimesSync(marker, now, now);
    const child = spawn(process.execPath, [BIN, "hook", "refresh-policy", "--state-dir", stateDir, "--relay", relayUrl], {
      detached: true,
      stdio: "ignore",
      env: { ...process.env, ...env },
    });
    child.unref();
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- all sources

export interface PolicyContext {
  projectDir: string;
  stateDir: string;
  relayUrl: string;
  env?: Env;
}

export interface GatheredPolicy {
  sources: PolicySource[];
  /** invalid files: the caller asks instead of deciding (docs/permissions.md §1) */
  errors: string[];
  warnings: string[];
  localFile: string;
  access?: InboxAccess;
  inbox?: InboxPolicyCache;
}

/** The project file, the local file and the cached inbox policy, read from disk only. */
export function gatherPolicy(cx: PolicyContext): GatheredPolicy {
  const env = cx.env ?? process.env;
  const localFile = defaultLocalPolicyFile({ ...env, LINEUP_STATE_DIR: cx.stateDir });
  const loaded = loadPolicySources({ projectDir: cx.projectDir, localPolicyFile: localFile, env });
  const access = findInboxAccess(cx.stateDir, cx.relayUrl, env);
  const out: GatheredPolicy = { sources: [...loaded.sources], errors: loaded.errors, warnings: loaded.warnings, localFile };
  if (access) {
    out.access = access;
    const c = readInboxPolicyCache(cx.stateDir);
    if (c && c.relayUrl === access.relayUrl && c.inboxId === access.inboxId) {
      out.inbox = c;
      out.sources.push({ name: `inbox policy v${c.version}`, permissions: c.permissions, baseDir: cx.projectDir });
    } else {
      // Dropping an invalid inbox policy would silently drop its deny rules: it is an error, so LineUp asks.
      const problem = inboxPolicyCacheProblem(cx.stateDir, access);
      if (problem) out.errors = [...out.errors, problem];
    }
  }
  return out;
}
