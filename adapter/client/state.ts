// The adapter's small state file: saved sessions per (relay URL, project directory), the stable client
// ids that make a restarted agent process the same client (so the relay re-sends answers it missed), and
// this machine's inbox per relay (docs/inbox.md): every session it creates is attached to that inbox.
// Files are written atomically with mode 0600: they hold session tokens and the machine credential.
import { z } from "../../shared/contract/zod.js";
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { DEV_RELAY_KEY, DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import { randomId } from "../../shared/crypto/bytes.js";
import { LineUpError } from "../../shared/client/errors.js";

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
/** `http(s)://host[:port]` without a trailing slash; ws(s) URLs are accepted and mapped to http(s). Anything
 * else (`relay.example.com`, `localhost:8787`: no scheme) is a `bad_config` LineUpError, one line, no stack. */
export function normalizeUrl(u: string): string {
  const bad = () =>
    new LineUpError(
      "bad_config",
      `the relay URL ${JSON.stringify(u)} is not an http(s):// or ws(s):// URL (LINEUP_RELAY_URL / --relay): write it with its scheme, e.g. https://${u.replace(/^[a-z]+:\/*/i, "") || "relay.example.com"}`,
    );
  if (!/^(https?|wss?):\/\//i.test(u.trim())) throw bad();
  let url: URL;
  try {
    url = new URL(u.trim().replace(/^ws/i, "http"));
  } catch {
    throw bad();
  }
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
