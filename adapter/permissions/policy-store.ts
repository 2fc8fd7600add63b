// Where the adapter keeps permission policy besides the project's file: the local policy file ("always
// allow" writes land here first, so the very next call sees them), the cached copy of the inbox policy
// (read by PreToolUse without any network: refreshed in the background, docs/permissions.md §8), and
// the machine credential that reads and writes the inbox policy. Node only; the engine is shared/policy/index.ts.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync, closeSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseCredential, type InboxPolicy } from "../../shared/contract/inbox.js";
import { validatePolicyFile, type Behavior, type PolicySource } from "../../shared/policy/index.js";
import { randomId } from "../../shared/edge/tokens.js";
import { defaultLocalPolicyFile, loadPolicySources } from "./policy-files.js";
import { holdsKeys, loadKeys, mergeUnauthenticated, readServed, sealedBody, syncer, type HeldKeys, type Reading } from "./policy-seal.js";
import { findInbox, normalizeUrl } from "../client/state.js";

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

export type AddRuleResult =
  | { added: true; file: string }
  | { added: false; file: string; reason: "present" | "invalid_rule" | "invalid_file"; message?: string };

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
 * the state file (adapter/client/state.ts). Undefined when the machine has joined no inbox on that relay: then
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
  /** The copy this machine trusts (docs/permissions.md §10; with E2E, docs/e2e.md "The inbox policy"). */
  permissions: Lists;
  /** When the relay last answered (epoch ms). */
  fetchedAt: number;
  /** How `permissions` was authenticated: opened under the current content key, fetched as plaintext, or
   * nothing trusted yet. Absent in copies written before issue 26. */
  auth?: "sealed" | "plaintext" | "none";
  /** plaintext: whether this machine held E2E keys of the inbox when it fetched it (false: trusted as before E2E). */
  keys?: boolean;
  /** sealed: the key epoch it opened under. */
  epoch?: number;
  /** The relay's latest answer when it did not authenticate while this machine holds keys: only its ask and
   * deny rules apply, and why it did not count. */
  untrusted?: { version: number; ask: string[]; deny: string[]; reason: string };
}

/** Whether a cached copy's allow rules may apply while this machine holds E2E keys of the inbox. */
export const trustedWithKeys = (c: InboxPolicyCache): boolean => c.auth === "sealed" || (c.auth === "plaintext" && c.keys === false);

export const inboxCacheFile = (stateDir: string) => join(stateDir, INBOX_POLICY_CACHE);

const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

export function readInboxPolicyCache(stateDir: string): InboxPolicyCache | undefined {
  try {
    const c = JSON.parse(readFileSync(inboxCacheFile(stateDir), "utf8")) as Partial<InboxPolicyCache>;
    const v = validatePolicyFile({ permissions: c.permissions });
    if (!v.ok || typeof c.relayUrl !== "string" || typeof c.inboxId !== "string" || typeof c.version !== "number" || typeof c.fetchedAt !== "number")
      return undefined;
    const out: InboxPolicyCache = { relayUrl: c.relayUrl, inboxId: c.inboxId, version: c.version, permissions: v.policy.permissions, fetchedAt: c.fetchedAt };
    if (c.auth === "sealed" || c.auth === "plaintext" || c.auth === "none") out.auth = c.auth;
    if (typeof c.keys === "boolean") out.keys = c.keys;
    if (typeof c.epoch === "number") out.epoch = c.epoch;
    const u = c.untrusted;
    if (u && typeof u === "object" && typeof u.version === "number" && typeof u.reason === "string")
      out.untrusted = { version: u.version, ask: strList(u.ask), deny: strList(u.deny), reason: u.reason };
    return out;
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

/** The cache entry of a copy read as `r` (the unauthenticated case keeps what this machine trusted). */
function cacheFor(access: InboxAccess, r: Reading, prev: InboxPolicyCache | undefined): InboxPolicyCache {
  const base = { relayUrl: access.relayUrl, inboxId: access.inboxId, fetchedAt: Date.now() };
  if (r.kind === "plain") return { ...base, version: r.version, permissions: r.lists, auth: "plaintext", keys: false };
  if (r.kind === "sealed") return { ...base, version: r.version, permissions: r.lists, auth: "sealed", epoch: r.epoch };
  const kept = prev && trustedWithKeys(prev) ? prev : undefined;
  const { untrusted: _old, ...trusted } = kept ?? { version: 0, permissions: { allow: [], ask: [], deny: [] }, auth: "none" as const };
  // A readable copy without a rule contributes nothing: no warning for it (a new inbox has version 0, empty).
  if (r.lists && !hasRules(r.lists)) return { ...trusted, ...base };
  return { ...trusted, ...base, untrusted: { version: r.version, ask: r.lists?.ask ?? [], deny: r.lists?.deny ?? [], reason: r.reason } };
}

const hasRules = (l: Lists): boolean => l.allow.length + l.ask.length + l.deny.length > 0;

/** This inbox's cached copy (for the same relay and inbox), if any. */
const cachedFor = (stateDir: string, access: InboxAccess): InboxPolicyCache | undefined => {
  const c = readInboxPolicyCache(stateDir);
  return c && c.relayUrl === access.relayUrl && c.inboxId === access.inboxId ? c : undefined;
};

/** Reads the relay's copy on this machine: a sealed copy older than the one it trusts is a rollback. */
async function readCopy(
  stateDir: string,
  access: InboxAccess,
  served: InboxPolicy,
  prev: InboxPolicyCache | undefined,
  keys: HeldKeys | undefined,
  left: () => number,
): Promise<Reading> {
  const r = await readServed(served, keys, access.inboxId, keys ? syncer(stateDir, access, left) : undefined);
  if (r.kind === "sealed" && prev?.auth === "sealed" && prev.version > r.version) {
    return { kind: "unauth", version: r.version, reason: `it is older (v${r.version}) than the sealed copy this machine trusts (v${prev.version})` };
  }
  return r;
}

/** The lists to write back sealed from a reading, or undefined when it cannot be read here (then nothing is written). */
function writable(r: Reading, prev: InboxPolicyCache | undefined): Lists | undefined {
  if (r.kind !== "unauth") return r.lists;
  return r.lists && mergeUnauthenticated(r.lists, prev && trustedWithKeys(prev) ? prev.permissions : undefined);
}

async function policyRequest(
  access: InboxAccess,
  init: { method: "GET" | "PUT"; body?: unknown },
  timeoutMs: number,
): Promise<{ status: number; policy?: InboxPolicy }> {
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

/**
 * GET /api/inbox/policy into the cache; undefined (cache untouched) when the relay cannot answer. With E2E
 * keys, a readable unauthenticated copy with rules (plaintext from before E2E, an older epoch) is sealed
 * again under the current key, merged as `mergeUnauthenticated` says (docs/e2e.md "The inbox policy").
 */
export async function refreshInboxPolicy(stateDir: string, access: InboxAccess, timeoutMs = FETCH_TIMEOUT_MS): Promise<InboxPolicyCache | undefined> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  try {
    const r = await policyRequest(access, { method: "GET" }, left());
    if (!r.policy || typeof r.policy.version !== "number") return undefined;
    const prev = cachedFor(stateDir, access);
    const keys = await loadKeys(stateDir, access);
    const reading = await readCopy(stateDir, access, r.policy, prev, keys, left);
    let c = cacheFor(access, reading, prev);
    // Only a copy that itself holds rules is sealed again: an empty one adds nothing to keep.
    const lists = reading.kind === "unauth" && reading.lists && hasRules(reading.lists) ? writable(reading, prev) : undefined;
    if (keys && lists) {
      const put = await policyRequest(access, { method: "PUT", body: await sealedBody(keys, access.inboxId, lists, reading.version) }, left());
      if (put.policy)
        c = {
          relayUrl: access.relayUrl,
          inboxId: access.inboxId,
          fetchedAt: Date.now(),
          version: put.policy.version,
          permissions: lists,
          auth: "sealed",
          epoch: keys.current.epoch,
        };
    }
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
export async function addInboxRule(
  stateDir: string,
  access: InboxAccess,
  rule: string,
  behavior: Behavior = "allow",
  timeoutMs = FETCH_TIMEOUT_MS,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  try {
    // With E2E keys the rule leaves this machine only sealed: never in plaintext, whatever the relay says.
    let keys = await loadKeys(stateDir, access);
    for (let attempt = 0; attempt < 2; attempt++) {
      const cur = await policyRequest(access, { method: "GET" }, left());
      if (!cur.policy) return false;
      const prev = cachedFor(stateDir, access);
      const reading = await readCopy(stateDir, access, cur.policy, prev, keys, left);
      const lists = writable(reading, prev);
      if (!lists) return false; // a copy this machine cannot read is not overwritten: the rule stays local
      if (lists[behavior].includes(rule) && reading.kind !== "unauth") {
        writeInboxPolicyCache(stateDir, cacheFor(access, reading, prev));
        return true;
      }
      if (!lists[behavior].includes(rule)) lists[behavior] = [...lists[behavior], rule];
      const body = keys ? await sealedBody(keys, access.inboxId, lists, cur.policy.version) : { permissions: lists, base_version: cur.policy.version };
      const put = await policyRequest(access, { method: "PUT", body }, left());
      if (put.policy) {
        const written: Reading = keys
          ? { kind: "sealed", version: put.policy.version, epoch: keys.current.epoch, lists }
          : { kind: "plain", version: put.policy.version, lists: put.policy.permissions };
        writeInboxPolicyCache(stateDir, cacheFor(access, written, prev));
        return true;
      }
      if (put.status !== 409) return false;
      // 409: somebody wrote meanwhile, or (sealed) the inbox moved to a key epoch this machine has yet to fetch.
      if (keys) keys = (await syncer(stateDir, access, left)()) ?? keys;
    }
  } catch {
    /* unreachable or too slow: the local file already has the rule */
  }
  return false;
}

/**
 * `lineup e2e on` made the inbox's first key: the plaintext policy the relay holds — trusted until now, as
 * E2E was off — is sealed whole under it (docs/e2e.md "The inbox policy"). A note for stderr, or undefined
 * when there was nothing to seal.
 */
export async function sealPolicyAtTurnOn(stateDir: string, access: InboxAccess, timeoutMs = FETCH_TIMEOUT_MS): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const later = "agents of this inbox apply only its ask and deny rules until a holder saves it sealed (the app's policy screen)";
  try {
    const keys = await loadKeys(stateDir, access);
    const cur = await policyRequest(access, { method: "GET" }, left());
    if (!keys || !cur.policy || cur.policy.sealed) return undefined;
    const lists: Lists = { allow: cur.policy.permissions.allow ?? [], ask: cur.policy.permissions.ask ?? [], deny: cur.policy.permissions.deny ?? [] };
    if (!hasRules(lists)) return undefined;
    const put = await policyRequest(access, { method: "PUT", body: await sealedBody(keys, access.inboxId, lists, cur.policy.version) }, left());
    if (!put.policy) return `could not seal the inbox policy now (HTTP ${put.status}): ${later}`;
    writeInboxPolicyCache(stateDir, {
      relayUrl: access.relayUrl,
      inboxId: access.inboxId,
      fetchedAt: Date.now(),
      version: put.policy.version,
      permissions: lists,
      auth: "sealed",
      epoch: keys.current.epoch,
    });
    return `sealed the inbox policy (v${put.policy.version}, ${lists.allow.length + lists.ask.length + lists.deny.length} rules) under key epoch ${keys.current.epoch}: the relay no longer holds it in plaintext`;
  } catch (e) {
    return `could not seal the inbox policy now (${e instanceof Error ? e.message : String(e)}): ${later}`;
  }
}

/**
 * `lineup join CODE#SECRET` brought this machine the keys of an inbox that had E2E on already: a plaintext copy
 * it cached before was fetched while the relay was not trusted with the policy, so its allow rules stop counting.
 */
export function distrustPlaintextCache(stateDir: string, inboxId: string): void {
  const c = readInboxPolicyCache(stateDir);
  if (c && c.inboxId === inboxId && c.auth !== "sealed") writeInboxPolicyCache(stateDir, { ...c, auth: "plaintext", keys: true });
}

/** Whether the cache should be refreshed: missing, for another inbox, older than the TTL, or behind a version somebody saw. */
export function cacheIsStale(c: InboxPolicyCache | undefined, access: InboxAccess, now = Date.now(), seenVersion?: number): boolean {
  if (!c || c.relayUrl !== access.relayUrl || c.inboxId !== access.inboxId) return true;
  if (seenVersion !== undefined && seenVersion !== c.version) return true;
  return now - c.fetchedAt > INBOX_POLICY_TTL_MS;
}

const BIN = fileURLToPath(new URL("../bin/lineup.mjs", import.meta.url));

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
  /** Why some of the inbox policy does not apply (E2E: an unauthenticated copy), for stderr. */
  notes?: string[];
}

/**
 * The sources a cached inbox policy contributes. With E2E keys (docs/e2e.md "The inbox policy") only an
 * authenticated copy's allow rules apply; an unauthenticated one adds its ask and deny rules, and a note says so.
 */
export function inboxSources(c: InboxPolicyCache, keysHeld: boolean, baseDir: string): { sources: PolicySource[]; notes: string[] } {
  if (!keysHeld) return { sources: [{ name: `inbox policy v${c.version}`, permissions: c.permissions, baseDir }], notes: [] };
  const sources: PolicySource[] = [];
  const notes: string[] = [];
  const denyAsk = (l: { ask: string[]; deny: string[] }) => ({ allow: [], ask: l.ask, deny: l.deny });
  if (trustedWithKeys(c)) sources.push({ name: `inbox policy v${c.version}${c.auth === "sealed" ? " (sealed)" : ""}`, permissions: c.permissions, baseDir });
  else {
    sources.push({ name: `inbox policy v${c.version} (not authenticated: deny/ask only)`, permissions: denyAsk(c.permissions), baseDir });
    if (c.permissions.allow.length > 0)
      notes.push(`the cached inbox policy v${c.version} is not sealed under this inbox's key: its ${c.permissions.allow.length} allow rule(s) are ignored`);
  }
  const u = c.untrusted;
  if (u) {
    sources.push({ name: `inbox policy v${u.version} (not authenticated: deny/ask only)`, permissions: denyAsk(u), baseDir });
    notes.push(`the relay's inbox policy v${u.version} does not count: ${u.reason}; only its ask and deny rules apply`);
  }
  return { sources, notes };
}

/** What `lineup permissions` says about the cached inbox policy (the same notes the hooks print). */
export function inboxPolicyNotes(stateDir: string): string[] {
  const c = readInboxPolicyCache(stateDir);
  return c ? inboxSources(c, holdsKeys(stateDir, { relayUrl: c.relayUrl, inboxId: c.inboxId, credential: "" }), "/").notes : [];
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
      const inbox = inboxSources(c, holdsKeys(cx.stateDir, access), cx.projectDir);
      out.sources.push(...inbox.sources);
      out.notes = inbox.notes;
    } else {
      // Dropping an invalid inbox policy would silently drop its deny rules: it is an error, so LineUp asks.
      const problem = inboxPolicyCacheProblem(cx.stateDir, access);
      if (problem) out.errors = [...out.errors, problem];
    }
  }
  return out;
}
