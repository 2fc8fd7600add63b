// The adapter's small state file: saved sessions per (relay URL, project directory), the stable client
// ids that make a restarted agent process the same client (so the relay re-sends answers it missed), and
// this machine's inbox per relay (docs/inbox.md): every session it creates is attached to that inbox.
// Files are written atomically with mode 0600: they hold session tokens and the machine credential.
import { z } from "zod";
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { DEV_RELAY_KEY, DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { INBOX_LIMITS, type MachineCreated } from "../../shared/contract/inbox.js";
import { InboxApi, InboxHttpError, machineNameOf, type InboxSessionCreated } from "./inbox.js";

export interface SavedSession {
  relayUrl: string;
  sessionId: string;
  agentToken: string;
  appToken?: string;
  appUrl?: string;
  /** Epoch ms. */
  expiresAt?: number;
  clientId: string;
  cwd: string;
  label?: string;
  /** The inbox the session is attached to (absent: a v1 session, reachable only by its app link). */
  inboxId?: string;
  /** Created sealed (docs/e2e.md): frames are sealed with the inbox's content key. Never changes. */
  sealed?: boolean;
}

/** A pairing this machine sponsors: the secret of a link it printed, until the device's hello is answered. */
export interface PendingPairing {
  code_id: string;
  secret: string;
  /** Epoch ms: the code's expiry; the secret is dropped after it. */
  expires_at: number;
}

/** This machine's end-to-end keys for its inbox (docs/e2e.md "Storage"). */
export interface SavedE2E {
  /** New sessions are sealed while on; `off` keeps the keys (sealed sessions stay sealed). */
  on: boolean;
  /** The machine's ECDH P-256 private key (JWK with x, y, d). */
  machineKey: JsonWebKey;
  /** epoch (decimal) → the 32 raw content key bytes, base64url. Every epoch held, for older envelopes. */
  keys: Record<string, string>;
  /** Holders this machine trusts: id → public key (base64url). */
  roster: { id: string; publicKey: string }[];
  pending: PendingPairing[];
}

const SavedE2EShape = z.object({
  on: z.boolean(),
  machineKey: z.looseObject({ kty: z.literal("EC"), crv: z.literal("P-256"), x: z.string(), y: z.string(), d: z.string() }),
  keys: z.record(z.string().regex(/^[1-9][0-9]{0,9}$/), z.string()),
  roster: z.array(z.object({ id: z.string(), publicKey: z.string() })),
  pending: z.array(z.object({ code_id: z.string(), secret: z.string(), expires_at: z.number() })),
});

/** The e2e section of a saved inbox, or undefined when it is missing or not the shape we write. */
export function parseSavedE2E(v: unknown): SavedE2E | undefined {
  const r = SavedE2EShape.safeParse(v);
  return r.success ? (r.data as SavedE2E) : undefined;
}

/** This machine in its inbox on one relay: created once with the relay key, or by `lineup join CODE`. */
export interface SavedInbox {
  relayUrl: string;
  inboxId: string;
  machineId: string;
  /** `lum1.<inbox>.<machine>.<secret>`: creates sessions of the inbox, pairs and revokes devices. */
  machineCredential: string;
  /** End-to-end keys, once `lineup e2e on` or `lineup join CODE#SECRET` made them. */
  e2e?: SavedE2E;
}

export interface StateFile {
  version: 1;
  sessions: SavedSession[];
  /** `<session id>/<client name>` → client id. */
  clients: Record<string, string>;
  /** One per relay URL. Files written before the inbox existed have none: the key is optional on disk. */
  inboxes: SavedInbox[];
}

export const STATE_FILE = "sessions.json";

export function defaultStateDir(): string {
  return process.env.LINEUP_STATE_DIR || join(homedir(), ".lineup");
}
export function defaultRelayUrl(): string {
  return normalizeUrl(process.env.LINEUP_RELAY_URL || DEV_RELAY_URL);
}
export function defaultRelayKey(): string {
  return process.env.LINEUP_RELAY_KEY || DEV_RELAY_KEY;
}
/** `http(s)://host[:port]` without a trailing slash; ws(s) URLs are accepted and mapped to http(s). */
export function normalizeUrl(u: string): string {
  const url = new URL(u.replace(/^ws/, "http"));
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

export function loadState(stateDir: string = defaultStateDir()): StateFile {
  try {
    const raw = JSON.parse(readFileSync(join(stateDir, STATE_FILE), "utf8")) as Partial<Record<keyof StateFile, unknown>>;
    return {
      version: 1,
      sessions: Array.isArray(raw.sessions) ? (raw.sessions as SavedSession[]) : [],
      clients: raw.clients && typeof raw.clients === "object" ? (raw.clients as Record<string, string>) : {},
      inboxes: Array.isArray(raw.inboxes) ? raw.inboxes.filter(isSavedInbox).map(withParsedE2E) : [],
    };
  } catch {
    // Missing or unreadable: start empty (a corrupt file is replaced on the next save).
    return { version: 1, sessions: [], clients: {}, inboxes: [] };
  }
}

function isSavedInbox(x: unknown): x is SavedInbox {
  if (!x || typeof x !== "object") return false;
  const o = x as Record<string, unknown>;
  return ["relayUrl", "inboxId", "machineId", "machineCredential"].every((k) => typeof o[k] === "string");
}

function withParsedE2E(x: SavedInbox): SavedInbox {
  if (x.e2e === undefined) return x;
  const e2e = parseSavedE2E(x.e2e);
  const { e2e: _dropped, ...rest } = x;
  return e2e ? { ...rest, e2e } : rest;
}

/**
 * Read-modify-write of the e2e section of the inbox saved for (relayUrl, inboxId); `fn` returns the new
 * section (undefined removes it). Returns it, or undefined when that inbox is no longer saved here.
 */
export function updateE2E(stateDir: string, relayUrl: string, inboxId: string, fn: (e: SavedE2E | undefined) => SavedE2E | undefined): SavedE2E | undefined {
  const url = normalizeUrl(relayUrl);
  return updateState(stateDir, (s) => {
    const inbox = s.inboxes.find((x) => x.relayUrl === url && x.inboxId === inboxId);
    if (!inbox) return undefined;
    const next = fn(inbox.e2e);
    if (next) inbox.e2e = next;
    else delete inbox.e2e;
    return next;
  });
}

export function saveState(stateDir: string, state: StateFile): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = join(stateDir, STATE_FILE);
  const tmp = `${file}.${process.pid}.${randomId(4)}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2) + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Read-modify-write of the state file (one small JSON file; the last writer wins). */
export function updateState<T>(stateDir: string, fn: (s: StateFile) => T): T {
  const s = loadState(stateDir);
  const r = fn(s);
  saveState(stateDir, s);
  return r;
}

/** The stable client id of `name` in a session, created and persisted on first use. */
export function clientIdFor(stateDir: string, sessionId: string, name = "agent"): string {
  const key = `${sessionId}/${name}`;
  const known = loadState(stateDir).clients[key];
  if (known) return known;
  return updateState(stateDir, (s) => (s.clients[key] ??= `ag_${randomId(9)}`));
}

export function findSaved(stateDir: string, relayUrl: string, cwd: string): SavedSession | undefined {
  const url = normalizeUrl(relayUrl);
  const dir = resolve(cwd);
  return loadState(stateDir).sessions.find((x) => x.relayUrl === url && x.cwd === dir);
}

/** Saves (or replaces) the session for its (relayUrl, cwd). */
export function saveSession(stateDir: string, saved: SavedSession): void {
  updateState(stateDir, (s) => {
    s.sessions = s.sessions.filter((x) => !(x.relayUrl === saved.relayUrl && x.cwd === saved.cwd));
    s.sessions.push(saved);
    s.clients[`${saved.sessionId}/agent`] = saved.clientId;
  });
}

/** Forgets saved sessions matching the filter; returns what was removed. */
export function forgetSessions(stateDir: string, match: (s: SavedSession) => boolean): SavedSession[] {
  return updateState(stateDir, (s) => {
    const gone = s.sessions.filter(match);
    s.sessions = s.sessions.filter((x) => !match(x));
    for (const g of gone) for (const k of Object.keys(s.clients)) if (k.startsWith(`${g.sessionId}/`)) delete s.clients[k];
    return gone;
  });
}

/** This machine's inbox on the relay, if it has one. */
export function findInbox(stateDir: string, relayUrl: string): SavedInbox | undefined {
  const url = normalizeUrl(relayUrl);
  return loadState(stateDir).inboxes.find((x) => x.relayUrl === url);
}

/** Saves the inbox of its relay, replacing the one saved before; returns the replaced one (another inbox). */
export function saveInbox(stateDir: string, inbox: SavedInbox): SavedInbox | undefined {
  return updateState(stateDir, (s) => {
    const before = s.inboxes.find((x) => x.relayUrl === inbox.relayUrl);
    s.inboxes = [...s.inboxes.filter((x) => x.relayUrl !== inbox.relayUrl), inbox];
    return before && before.inboxId !== inbox.inboxId ? before : undefined;
  });
}

/** Forgets the inbox of a relay — only while it still holds `credential` (another process may have replaced it). */
export function forgetInbox(stateDir: string, relayUrl: string, credential: string): void {
  const url = normalizeUrl(relayUrl);
  updateState(stateDir, (s) => {
    s.inboxes = s.inboxes.filter((x) => !(x.relayUrl === url && x.machineCredential === credential));
  });
}

export class StateError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "StateError";
  }
}

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
 * Throws StateError("insecure") unless the URL is https or loopback, or LINEUP_INSECURE_HTTP=1 says the
 * network is trusted (e.g. `lineup serve` on another machine of a home LAN).
 */
export function checkKeyTransport(relayUrl: string, what = "the relay key"): void {
  const u = new URL(normalizeUrl(relayUrl));
  if (u.protocol === "https:" || LOOPBACK.test(u.hostname) || process.env.LINEUP_INSECURE_HTTP === "1") return;
  throw new StateError("insecure", `refusing to send ${what} over plain http to ${u.host}: use https, or set LINEUP_INSECURE_HTTP=1 on a network you trust`);
}

/** POST /api/sessions with the relay key. Throws StateError("auth" | "connect" | "insecure" | "http_<status>"). */
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
    throw new StateError("connect", `cannot reach the relay at ${opts.relayUrl}: ${(e as Error).message}`);
  }
  if (res.status === 401 || res.status === 403) throw new StateError("auth", `the relay refused the relay key (${res.status}); set LINEUP_RELAY_KEY`);
  if (res.status !== 201) throw new StateError(`http_${res.status}`, `creating a session failed: ${res.status} ${await res.text().catch(() => "")}`.trim());
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

/** Maps the inbox client's failures to the StateError codes the CLI and library already know. */
function inboxStateError(e: unknown, what: string): StateError {
  if (!(e instanceof InboxHttpError)) return new StateError("connect", e instanceof Error ? e.message : String(e));
  if (e.status === 0) return new StateError(e.code === "connect" ? "connect" : "bad_answer", e.message);
  if (e.status === 401 || e.status === 403) return new StateError("auth", `${what}: the relay refused the credential (${e.status} ${e.code})`);
  return new StateError(`http_${e.status}`, `${what} failed: ${e.status} ${e.code}: ${e.message}`);
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
    if (e instanceof InboxHttpError && e.status === 404) return undefined;
    if (e instanceof InboxHttpError && (e.status === 401 || e.status === 403))
      throw new StateError(
        "auth",
        `the relay refused the relay key (${e.status}) creating this machine's inbox; set LINEUP_RELAY_KEY, or join an inbox with \`lineup join CODE\``,
      );
    throw inboxStateError(e, "creating the inbox");
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
      if (!(e instanceof InboxHttpError && e.status === 401) || attempt > 0) throw e;
      // With E2E on, a refusal (true, or a lying relay's) never drops the keys for a new, plaintext inbox.
      if (inbox.e2e?.on)
        throw new StateError(
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
    if (e instanceof InboxHttpError && e.status === 404 && findInbox(o.stateDir, o.relayUrl)?.e2e?.on)
      throw new StateError(
        "e2e_downgrade",
        `end-to-end encryption is on, but the relay at ${o.relayUrl} says it has no inbox sessions (404): refusing to make a plaintext session instead`,
      );
    if (e instanceof InboxHttpError && e.status === 404) return undefined;
    if (e instanceof StateError) throw e;
    throw inboxStateError(e, "creating a session in the inbox");
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
      if (p === "unreachable") throw new StateError("connect", `cannot reach the relay at ${relayUrl}`);
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
  return fresh;
}
