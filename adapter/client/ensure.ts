// Sessions and inboxes made sure of: find the saved ones (adapter/client/state.ts) or create them on the relay,
// under a lock of the state directory; the key-transport rule and LineUpError, the adapter's errors about its state.
import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { INBOX_LIMITS, type MachineCreated } from "../../shared/contract/inbox.js";
import { InboxApi, machineNameOf, type InboxSessionCreated } from "./inbox.js";
import {
  type SavedInbox,
  type SavedSession,
  clientIdFor,
  defaultRelayKey,
  defaultRelayUrl,
  defaultStateDir,
  findInbox,
  findSaved,
  forgetInbox,
  normalizeUrl,
  saveInbox,
  saveSession,
} from "./state.js";
import { LineUpError } from "../../shared/client/errors.js";

export interface EnsureOptions {
  relayUrl?: string;
  relayKey?: string;
  stateDir?: string;
  cwd?: string;
  label?: string;
  ttlS?: number;
  /** Skip the liveness check of a saved session (offline use, e.g. `lineup status`). */
  trustSaved?: boolean;
  /** Where to say that a refused machine credential is replaced by a new inbox (default stderr). */
  log?: (line: string) => void;
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The relay key creates sessions: over plain http to another machine anyone on the way could read it.
 * Throws LineUpError("insecure") unless the URL is https or loopback, or LINEUP_INSECURE_HTTP=1 says the
 * network is trusted (e.g. `lineup serve` on another machine of a home LAN).
 */
export function checkKeyTransport(relayUrl: string, what = "the relay key"): void {
  const u = new URL(normalizeUrl(relayUrl));
  if (u.protocol === "https:" || LOOPBACK.test(u.hostname) || process.env.LINEUP_INSECURE_HTTP === "1") return;
  throw new LineUpError("insecure", `refusing to send ${what} over plain http to ${u.host}: use https, or set LINEUP_INSECURE_HTTP=1 on a network you trust`);
}

/** POST /api/sessions with the relay key. Throws LineUpError("auth" | "connect" | "insecure" | "http_<status>"). */
export async function createSession(opts: { relayUrl: string; relayKey: string; label?: string; ttlS?: number }): Promise<SessionCreated> {
  checkKeyTransport(opts.relayUrl);
  const body: Record<string, unknown> = {};
  if (opts.label !== undefined) body.label = opts.label;
  if (opts.ttlS !== undefined) body.ttl_s = opts.ttlS;
  let res: Response;
  try {
    res = await fetch(`${normalizeUrl(opts.relayUrl)}/api/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${opts.relayKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (e) {
    throw new LineUpError("connect", `cannot reach the relay at ${opts.relayUrl}: ${(e as Error).message}`);
  }
  if (res.status === 401 || res.status === 403) throw new LineUpError("auth", `the relay refused the relay key (${res.status}); set LINEUP_RELAY_KEY`);
  if (res.status !== 201) throw new LineUpError(`http_${res.status}`, `creating a session failed: ${res.status} ${await res.text().catch(() => "")}`.trim());
  return (await res.json()) as SessionCreated;
}

/** `alive` (200), `gone` (404: expired or deleted), `denied` (401/403) or `unreachable`. */
export async function probeSession(relayUrl: string, sessionId: string, token: string): Promise<"alive" | "gone" | "denied" | "unreachable"> {
  try {
    const res = await fetch(`${normalizeUrl(relayUrl)}/api/sessions/${encodeURIComponent(sessionId)}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    await res.body?.cancel();
    if (res.ok) return "alive";
    if (res.status === 404) return "gone";
    if (res.status === 401 || res.status === 403) return "denied";
    return "unreachable";
  } catch {
    return "unreachable";
  }
}

/**
 * Ends a superseded session on the relay (`DELETE /api/sessions/:sid` with its agent token): its inbox drops
 * it, so the phone does not list a plaintext twin of the sealed session for the rest of its TTL (issue 28).
 * Best effort: a session already gone, or a relay out of reach, ends by itself at its expiry.
 */
export async function endSession(relayUrl: string, sessionId: string, token: string): Promise<boolean> {
  try {
    const res = await fetch(`${normalizeUrl(relayUrl)}/api/sessions/${encodeURIComponent(sessionId)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export function savedFromCreated(
  created: SessionCreated & { inbox_id?: string; sealed?: boolean },
  relayUrl: string,
  cwd: string,
  clientId: string,
  label?: string,
): SavedSession {
  const s: SavedSession = {
    relayUrl: normalizeUrl(relayUrl),
    sessionId: created.session_id,
    agentToken: created.agent_token,
    appToken: created.app_token,
    appUrl: created.app_url,
    expiresAt: created.expires_at,
    clientId,
    cwd: resolve(cwd),
  };
  if (label !== undefined) s.label = label;
  if (created.inbox_id !== undefined) s.inboxId = created.inbox_id;
  if (created.sealed === true) s.sealed = true;
  return s;
}

const LOCK_STALE_MS = 30_000;

/**
 * A lock file around "find or create the session", so that two processes starting at once in the same
 * directory (e.g. `lineup connect` and `lineup call`) end up in ONE session. A lock older than 30 s is
 * stale (its holder died); after 30 s of waiting we go on without it rather than hang.
 */
async function withStateLock<T>(stateDir: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const lock = join(stateDir, "sessions.lock");
  const deadline = Date.now() + LOCK_STALE_MS;
  let held = false;
  while (!held) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      held = true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) unlinkSync(lock);
      } catch {
        /* removed meanwhile */
      }
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  }
  try {
    return await fn();
  } finally {
    if (held) {
      try {
        unlinkSync(lock);
      } catch {
        /* already gone */
      }
    }
  }
}

const stderrLog = (line: string) => void process.stderr.write(`lineup: ${line}\n`);

/**
 * Maps the inbox client's failures to the codes the CLI and library already know: an HTTP answer (status > 0)
 * becomes `auth` or `http_<status>` with what was being done; errors without a status pass as they are.
 */
function inboxError(e: unknown, what: string): LineUpError {
  if (!(e instanceof LineUpError)) return new LineUpError("connect", e instanceof Error ? e.message : String(e));
  if (e.status === 0) return e;
  if (e.status === 401 || e.status === 403) return new LineUpError("auth", `${what}: the relay refused the credential (${e.status} ${e.code})`);
  return new LineUpError(`http_${e.status}`, `${what} failed: ${e.status} ${e.code}: ${e.message}`);
}

/**
 * This machine's inbox on the relay: the saved one, or a new one created with the relay key. `undefined`
 * when the relay has no inboxes (an older relay answers 404): sessions are then created as before.
 */
async function findOrCreateInbox(relayUrl: string, relayKey: string, stateDir: string): Promise<SavedInbox | undefined> {
  const known = findInbox(stateDir, relayUrl);
  if (known) return known;
  checkKeyTransport(relayUrl);
  let m: MachineCreated;
  try {
    m = await new InboxApi(relayUrl).createInbox(relayKey, machineNameOf(hostname()));
  } catch (e) {
    if (e instanceof LineUpError && e.status === 404) return undefined;
    if (e instanceof LineUpError && (e.status === 401 || e.status === 403))
      throw new LineUpError(
        "auth",
        `the relay refused the relay key (${e.status}) creating this machine's inbox; set LINEUP_RELAY_KEY, or join an inbox with \`lineup join CODE\``,
      );
    throw inboxError(e, "creating the inbox");
  }
  const inbox: SavedInbox = { relayUrl, inboxId: m.inbox_id, machineId: m.machine_id, machineCredential: m.machine_credential };
  saveInbox(stateDir, inbox);
  return inbox;
}

/** Like findOrCreateInbox, under the state lock: processes starting at once create ONE inbox. */
export async function ensureInbox(opts: { relayUrl?: string; relayKey?: string; stateDir?: string } = {}): Promise<SavedInbox | undefined> {
  const relayUrl = normalizeUrl(opts.relayUrl ?? defaultRelayUrl());
  const stateDir = opts.stateDir ?? defaultStateDir();
  return withStateLock(stateDir, () => findOrCreateInbox(relayUrl, opts.relayKey ?? defaultRelayKey(), stateDir));
}

/**
 * Runs `fn` with the machine credential; when the relay refuses it (401: revoked, or its storage was reset)
 * the credential is dropped and a new inbox is created for one more try. `undefined`: no inboxes here.
 */
export async function withInbox<T>(
  o: { relayUrl: string; relayKey: string; stateDir: string; log?: (line: string) => void },
  fn: (inbox: SavedInbox) => Promise<T>,
): Promise<{ inbox: SavedInbox; value: T } | undefined> {
  for (let attempt = 0; ; attempt++) {
    const inbox = await findOrCreateInbox(o.relayUrl, o.relayKey, o.stateDir);
    if (!inbox) return undefined;
    try {
      return { inbox, value: await fn(inbox) };
    } catch (e) {
      if (!(e instanceof LineUpError && e.status === 401) || attempt > 0) throw e;
      // With E2E on, a refusal (true, or a lying relay's) never drops the keys for a new, plaintext inbox.
      if (inbox.e2e?.on)
        throw new LineUpError(
          "auth",
          `the relay refused this machine's inbox credential (${inbox.machineId} in inbox ${inbox.inboxId}); end-to-end encryption is on, so no new (plaintext) inbox is made by itself: \`lineup e2e off\` first to start over`,
        );
      forgetInbox(o.stateDir, o.relayUrl, inbox.machineCredential);
      (o.log ?? stderrLog)(
        `the relay refused this machine's inbox credential (${inbox.machineId} in inbox ${inbox.inboxId}: revoked, or the relay's storage was reset); creating a new inbox`,
      );
    }
  }
}

/** POST /api/inbox/sessions, attached to this machine's inbox; `undefined` when the relay has no inboxes. */
async function createInboxSession(
  o: { relayUrl: string; relayKey: string; stateDir: string; log?: (line: string) => void },
  cwd: string,
  label: string | undefined,
  ttlS?: number,
): Promise<(InboxSessionCreated & { sealed?: true }) | undefined> {
  // Without a label the relay names the session "<directory> · <host>", which reads better in a list.
  const body = {
    ...(label !== undefined ? { label: label.slice(0, 120) } : {}),
    project_dir: cwd.slice(0, INBOX_LIMITS.maxProjectDir),
    host: hostname().slice(0, INBOX_LIMITS.maxName),
    ...(ttlS !== undefined ? { ttl_s: ttlS } : {}),
  };
  // The machine credential is worth the relay key: the same rule for plain http.
  checkKeyTransport(o.relayUrl, "the machine credential");
  try {
    // While `lineup e2e on`, the session is created sealed (docs/e2e.md): frames carry envelopes only.
    const r = await withInbox(o, async (inbox) => {
      const sealed = inbox.e2e?.on === true;
      const created = await new InboxApi(o.relayUrl).createSession(inbox.machineCredential, sealed ? { ...body, sealed: true } : body);
      return sealed ? { ...created, sealed: true as const } : created;
    });
    return r?.value;
  } catch (e) {
    // An inbox saved for a relay that no longer has the endpoint: sessions as before — never while E2E is on.
    if (e instanceof LineUpError && e.status === 404 && findInbox(o.stateDir, o.relayUrl)?.e2e?.on)
      throw new LineUpError(
        "e2e_downgrade",
        `end-to-end encryption is on, but the relay at ${o.relayUrl} says it has no inbox sessions (404): refusing to make a plaintext session instead`,
      );
    if (e instanceof LineUpError && e.status === 404) return undefined;
    throw inboxError(e, "creating a session in the inbox");
  }
}

/**
 * The session saved for (relayUrl, cwd), or a new one created with the relay key when none is saved or
 * the saved one expired or was deleted (404) or its token is refused (401: e.g. a new TOKEN_SECRET).
 */
export async function ensureSession(opts: EnsureOptions = {}): Promise<SavedSession> {
  const relayUrl = normalizeUrl(opts.relayUrl ?? defaultRelayUrl());
  const stateDir = opts.stateDir ?? defaultStateDir();
  const cwd = resolve(opts.cwd ?? process.cwd());
  return withStateLock(stateDir, () => findOrCreate(opts, relayUrl, stateDir, cwd));
}

async function findOrCreate(opts: EnsureOptions, relayUrl: string, stateDir: string, cwd: string): Promise<SavedSession> {
  const saved = findSaved(stateDir, relayUrl, cwd);
  if (saved && !(saved.expiresAt !== undefined && saved.expiresAt <= Date.now())) {
    if (opts.trustSaved) return saved;
    // A session of another inbox (before `lineup join`, or of a replaced credential) is replaced by one in
    // this machine's inbox, so its devices see it. v1 sessions (no inboxId, e.g. `lineup serve`'s) are kept.
    const current = saved.inboxId !== undefined ? findInbox(stateDir, relayUrl) : undefined;
    // With E2E on, a plaintext inbox session is replaced by a sealed one (sealed ones stay sealed when off).
    const wantsSealed = current !== undefined && current.inboxId === saved.inboxId && current.e2e?.on === true && saved.sealed !== true;
    if (wantsSealed) (opts.log ?? stderrLog)(`end-to-end encryption is on: replacing the plaintext session ${saved.sessionId} of ${cwd} by a sealed one`);
    else if (!current || current.inboxId === saved.inboxId) {
      const p = await probeSession(relayUrl, saved.sessionId, saved.agentToken);
      if (p === "alive") return saved;
      if (p === "unreachable") throw new LineUpError("connect", `cannot reach the relay at ${relayUrl}`);
      // Refused token, live session (e.g. the relay's token secret was replaced): the machine credential
      // gets a fresh agent token for the same session, so its devices keep their thread. The old app
      // link is dropped with it (it was signed with the same secret).
      if (p === "denied" && current) {
        const fresh = await new InboxApi(relayUrl).sessionToken(current.machineCredential, saved.sessionId).catch(() => undefined);
        if (fresh) {
          const { appToken: _t, appUrl: _u, ...rest } = saved;
          const renewed: SavedSession = { ...rest, agentToken: fresh.agent_token, expiresAt: fresh.expires_at };
          saveSession(stateDir, renewed);
          (opts.log ?? stderrLog)(`the relay refused the saved token of session ${saved.sessionId}; got a fresh one with this machine's inbox credential`);
          return renewed;
        }
      }
    }
  }
  const label = opts.label ?? `lineup ${cwd}`.slice(0, 120);
  const relayKey = opts.relayKey ?? defaultRelayKey();
  const ttl = opts.ttlS !== undefined ? { ttlS: opts.ttlS } : {};
  const created =
    (await createInboxSession({ relayUrl, relayKey, stateDir, ...(opts.log ? { log: opts.log } : {}) }, cwd, opts.label, opts.ttlS)) ??
    (await createSession({ relayUrl, relayKey, label, ...ttl }));
  const fresh = savedFromCreated(created, relayUrl, cwd, clientIdFor(stateDir, created.session_id), "inbox_id" in created ? opts.label : label);
  saveSession(stateDir, fresh);
  // The plaintext session this sealed one replaces is ended, not left beside it (issue 28).
  if (saved && fresh.sealed === true && saved.sealed !== true && saved.inboxId === fresh.inboxId && saved.sessionId !== fresh.sessionId) {
    if (await endSession(relayUrl, saved.sessionId, saved.agentToken)) (opts.log ?? stderrLog)(`ended the plaintext session ${saved.sessionId} of ${cwd}`);
  }
  return fresh;
}
