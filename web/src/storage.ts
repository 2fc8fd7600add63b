// Everything this device remembers lives in localStorage under "lineup.*": the inboxes it is paired with
// (their device credentials), the guest sessions of v1 links (their tokens stay here and in no request
// line), a stable client id, answers waiting to be sent, and each session's call log. localStorage can be
// full or disabled (private mode): every write is best-effort.

export interface SavedSession {
  sid: string;
  /** The v1 app token, or the device credential for a session of an inbox. */
  token: string;
  /** Origin of the relay or LAN agent that serves this session's API, e.g. "https://relay.example". */
  origin: string;
  label: string;
  addedAt: number;
  /** A session of an inbox: connect as the device id (the relay refuses any other client id). */
  clientId?: string;
  inbox?: string;
}

/** An inbox this device is paired with (docs/inbox.md): the credential works for all its sessions. */
export interface SavedInbox {
  origin: string;
  inbox_id: string;
  device_id: string;
  device_credential: string;
  /** This device's name in the inbox. */
  name: string;
  pairedAt: number;
}

const P = "lineup.";

export function readJson<T>(key: string, fallback: T): T {
  try {
    const raw = localStorage.getItem(P + key);
    return raw === null ? fallback : (JSON.parse(raw) as T);
  } catch {
    return fallback;
  }
}

export function writeJson(key: string, value: unknown): void {
  try {
    localStorage.setItem(P + key, JSON.stringify(value));
  } catch {
    /* quota or disabled storage: the app keeps working from memory */
  }
}

export function remove(key: string): void {
  try {
    localStorage.removeItem(P + key);
  } catch {
    /* ignore */
  }
}

export function randomId(prefix: string, n = 12): string {
  const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(n));
  let s = prefix;
  for (const b of bytes) s += abc[b % abc.length];
  return s;
}

/** One stable client id per device (per browser profile): results and registrations belong to it. */
export function deviceId(): string {
  let id = readJson<string | null>("device", null);
  if (!id || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    id = randomId("app-");
    writeJson("device", id);
  }
  return id;
}

export const loadSessions = (): SavedSession[] => readJson<SavedSession[]>("sessions", []);
export const storeSessions = (list: SavedSession[]): void => writeJson("sessions", list);

export const loadInboxes = (): SavedInbox[] =>
  readJson<SavedInbox[]>("inboxes", []).filter((x) => x && typeof x.device_credential === "string" && typeof x.origin === "string");
export const storeInboxes = (list: SavedInbox[]): void => writeJson("inboxes", list);

/**
 * The code of a `#pair=<code>` link, or undefined. Only its alphabet is checked here (the relay decides
 * whether it is valid), so a code format change on the server does not break old apps.
 */
export function parsePairCode(hash: string): string | undefined {
  const code = new URLSearchParams(hash.replace(/^#/, "")).get("pair");
  return code && /^[A-Za-z0-9._-]{1,64}$/.test(code) ? code : undefined;
}

/** Parses `#s=<sid>&t=<token>` (the relay's app_url fragment); undefined when it is not a pairing link. */
export function parsePairing(hash: string): { sid: string; token: string; label?: string } | undefined {
  const q = new URLSearchParams(hash.replace(/^#/, ""));
  const sid = q.get("s");
  const token = q.get("t");
  if (!sid || !token || !/^[A-Za-z0-9_-]{8,64}$/.test(sid) || !/^[A-Za-z0-9._~-]+$/.test(token)) return undefined;
  const label = q.get("l") ?? undefined;
  return label ? { sid, token, label } : { sid, token };
}

/** The app's language: the one chosen in Settings, else the browser's (web/src/i18n.ts; the early card reads it too). */
export function preferredLang(): "en" | "zh" {
  const saved = readJson<string | null>("lang", null);
  if (saved === "en" || saved === "zh") return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}
