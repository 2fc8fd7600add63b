// The contract's names, limits and identifiers (`lineup/1`): every default and limit in one table (docs/protocol.md).

export const PROTOCOL = "lineup/1";
export const SUBPROTOCOL = "lineup.v1";
export const TOKEN_SUBPROTOCOL_PREFIX = "lineup.token.";

/** Every default and limit of the contract (docs/protocol.md lists them). */
export const LIMITS = {
  maxFrameBytes: 1024 * 1024,
  maxOpenCalls: 1000,
  defaultTimeoutS: 600,
  minTimeoutS: 1,
  maxTimeoutS: 86_400,
  historySize: 200,
  resultRetentionMs: 24 * 60 * 60 * 1000,
  maxCallIdLength: 128,
  maxStatusState: 64,
  maxStatusDetail: 1024,
  maxToolsPerRegistration: 256,
  /** Per-connection token bucket: frames per second refilled, and the burst size (room for a client to
   * fill the session's 1000 open calls at once). */
  rateLimitPerS: 200,
  rateLimitBurst: 1500,
  defaultSessionTtlS: 30 * 24 * 3600,
  minSessionTtlS: 60,
  maxSessionTtlS: 365 * 24 * 3600,
  maxLabel: 120,
  maxHttpBodyBytes: 1024 * 1024,
  maxHttpWaitS: 55,
  defaultHttpWaitS: 25,
  /** Deepest nesting of arrays/objects in a frame: deeper JSON overflows the stack of recursive code. */
  maxJsonDepth: 100,
  // ---- budgets inside a session (issue 11): one token holder cannot fill, brick or slow it for others.
  /** Bytes (UTF-8 of the stored JSON) of everything a session keeps: call arguments, kept results, history,
   * registrations (and the WuKongIM outbox). A write past it is refused with `over_budget`. */
  sessionBudgetBytes: 32 * 1024 * 1024,
  /** Bytes of the kept message history; past it the oldest large bodies become placeholders (the last
   * 200 entries always stay, as entries). */
  historyBudgetBytes: 8 * 1024 * 1024,
  /** A message body at least this large is replaced by a placeholder first when the history is over budget. */
  historyLargeBodyBytes: 1024,
  /** Text (UTF-8) of one message, all its text blocks together. */
  maxMessageTextBytes: 64 * 1024,
  /** One client's registration (its `tools` as JSON). */
  maxRegistrationBytes: 256 * 1024,
  /** One tool's or action's description, in characters. */
  maxDescriptionChars: 4096,
  /** One tool's or action's `inputSchema` as JSON. */
  maxSchemaBytes: 64 * 1024,
  /** A registration of a client not connected for this long is dropped (v1 keeps them "connected or not"). */
  registrationIdleMs: 7 * 24 * 60 * 60 * 1000,
  /** Open WebSocket connections per session. */
  maxConnections: 64,
  /** Frames per second (and burst) for one token across all its connections, and for its HTTP calls:
   * this many times the per-connection rate. */
  tokenRateFactor: 2,
  /** Rows the alarm closes or forgets per run; more wait for the next run, right after. */
  maxRowsPerTick: 200,
  /** Messages per page of `GET /api/sessions/:sid/messages`. */
  maxHistoryPage: 100,
} as const;

/** Caller identity of calls made over HTTP (§7): `~` is outside the client id alphabet, so no socket can claim it. */
/** A call's timeout in seconds as the relay applies it: the default when absent, else clamped to the limits. */
export function clampTimeout(t: number | undefined): number {
  if (t === undefined || !Number.isFinite(t)) return LIMITS.defaultTimeoutS;
  return Math.min(LIMITS.maxTimeoutS, Math.max(LIMITS.minTimeoutS, t));
}

export const HTTP_CLIENT_ID = "~http";

export const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
export const CLIENT_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** Client ids of the relay's own callers (`~` is outside the client alphabet, so no socket can claim one). */
export const INTERNAL_CLIENT_RE = /^~[A-Za-z0-9_.-]{1,63}$/;
export const SESSION_ID_RE = /^[A-Za-z0-9_-]{8,64}$/;

export type Role = "agent" | "app";
export const otherRole = (r: Role): Role => (r === "agent" ? "app" : "agent");
