// WuKongIM v2.2.5 wire format (v3 differences noted), parsed once at the edge with zod.
// Source of truth: test/fixtures/wukongim/README.md (read from the WuKongIM/TSDD sources).
import { z } from "../../shared/contract/zod.js";
import type { Env } from "../env.js";

/** The LineUp payload type carried inside WuKongIM messages (no range is reserved upstream). */
export const LINEUP_TYPE = 10100;
export const TEXT_TYPE = 1;

/** Limits of the bridge (docs/wukongim.md lists them). */
export const WK_LIMITS = {
  /** Largest webhook body accepted (a msg.notify batch of several hundred messages). */
  maxWebhookBytes: 16 * 1024 * 1024,
  /** Largest messages in one msg.notify batch. */
  maxBatch: 5000,
  /** Decoded payloads above this are ignored (not chat, not answers). */
  maxPayloadBytes: 256 * 1024,
  /** Text sent to WuKongIM is cut to this many characters. */
  maxTextChars: 4000,
  /** Send attempts of one outbox item before it is given up. */
  maxAttempts: 8,
  /** First retry delay and the cap of the doubling backoff. */
  firstRetryMs: 2000,
  maxRetryMs: 60_000,
  /** Per-request timeout towards WuKongIM and towards TSDD. */
  sendTimeoutMs: 10_000,
  forwardTimeoutMs: 4500,
  /** Bounded tables in the session's SQLite. */
  maxSeen: 5000,
  maxCodes: 2000,
  maxOutbox: 2000,
  /** Outbox items sent per alarm run (the rest go in the next run, immediately). */
  pumpBatch: 50,
} as const;

export interface WkConfig {
  apiUrl: string;
  managerToken?: string;
  botUid: string;
}

/** The send side's configuration, or undefined when the bridge is not configured. */
export function wkConfig(env: Env): WkConfig | undefined {
  if (!env.WUKONGIM_API_URL || !env.WUKONGIM_BOT_UID) return undefined;
  const c: WkConfig = { apiUrl: env.WUKONGIM_API_URL.replace(/\/+$/, ""), botUid: env.WUKONGIM_BOT_UID };
  if (env.WUKONGIM_MANAGER_TOKEN) c.managerToken = env.WUKONGIM_MANAGER_TOKEN;
  return c;
}

// ---------------------------------------------------------------- webhook bodies

const Flag = z.number().int().min(0).max(1);
/** `MessageResp`. `message_id` is an int64 that JSON.parse rounds: never read; `message_idstr` is the id. */
export const WkMessage = z.looseObject({
  header: z.looseObject({ no_persist: Flag.optional(), red_dot: Flag.optional(), sync_once: Flag.optional() }).optional(),
  message_idstr: z.string().regex(/^[0-9]{1,20}$/, "a decimal int64 string"),
  client_msg_no: z.string().optional(),
  from_uid: z.string().max(256),
  channel_id: z.string().max(256),
  channel_type: z.number().int().min(0).max(255),
  timestamp: z.number().optional(),
  payload: z.string().max(WK_LIMITS.maxWebhookBytes),
});
export type WkMessage = z.infer<typeof WkMessage>;

export const MsgNotifyBody = z.array(WkMessage).max(WK_LIMITS.maxBatch);
export const MsgOfflineBody = WkMessage.extend({ to_uids: z.array(z.string()).optional() });
/** `uid-deviceFlag-online-connId-deviceOnlineCount-totalOnlineCount`; uids may contain `-`. */
export const OnlineStatusBody = z
  .array(z.string().regex(/^.+-\d+-[01]-\d+-\d+-\d+$/, "uid-deviceFlag-online-connId-deviceOnlineCount-totalOnlineCount"))
  .max(WK_LIMITS.maxBatch);

export type WebhookEvent =
  | { event: "msg.notify"; messages: WkMessage[] }
  | { event: "msg.offline"; message: z.infer<typeof MsgOfflineBody> }
  | { event: "user.onlinestatus"; statuses: OnlineStatus[] }
  | { event: "other"; name: string };

export interface OnlineStatus {
  uid: string;
  deviceFlag: number;
  online: boolean;
  totalOnline: number;
}

export function parseOnlineStatus(s: string): OnlineStatus {
  // Split from the right: the last five fields are numbers, the uid may contain "-".
  const parts = s.split("-");
  const [deviceFlag, online, , , total] = parts.slice(-5).map(Number) as [number, number, number, number, number];
  return { uid: parts.slice(0, -5).join("-"), deviceFlag, online: online === 1, totalOnline: total };
}

/** Parses a webhook body for its event. Unknown events are accepted (and ignored) as WuKongIM expects 200. */
export function parseWebhook(event: string, text: string): { ok: true; value: WebhookEvent } | { ok: false; message: string } {
  const known = event === "msg.notify" || event === "msg.offline" || event === "user.onlinestatus";
  if (!known) return { ok: true, value: { event: "other", name: event } };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, message: `${event}: the body is not valid JSON` };
  }
  if (event === "msg.notify") {
    const r = MsgNotifyBody.safeParse(json);
    return r.success ? { ok: true, value: { event, messages: r.data } } : { ok: false, message: `msg.notify: ${issues(r.error)}` };
  }
  if (event === "msg.offline") {
    const r = MsgOfflineBody.safeParse(json);
    return r.success ? { ok: true, value: { event, message: r.data } } : { ok: false, message: `msg.offline: ${issues(r.error)}` };
  }
  const r = OnlineStatusBody.safeParse(json);
  return r.success
    ? { ok: true, value: { event: "user.onlinestatus", statuses: r.data.map(parseOnlineStatus) } }
    : { ok: false, message: `user.onlinestatus: ${issues(r.error)}` };
}

function issues(e: z.ZodError): string {
  return e.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join(".") : "(body)"}: ${i.message}`)
    .join("; ");
}

// ---------------------------------------------------------------- payloads

const utf8 = new TextEncoder();
const utf8d = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Standard base64 with padding of the UTF-8 bytes (what WuKongIM's Go []byte JSON encoding expects). */
export function encodePayload(obj: object): string {
  const bytes = utf8.encode(JSON.stringify(obj));
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** base64 → bytes → UTF-8 → JSON object with an integer `type`; undefined for anything else. */
export function decodePayload(b64: string): Record<string, unknown> | undefined {
  if (b64.length > (WK_LIMITS.maxPayloadBytes * 4) / 3 + 4) return undefined;
  try {
    const bin = atob(b64);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const v: unknown = JSON.parse(utf8d.decode(bytes));
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    return Number.isInteger(o.type) ? o : undefined;
  } catch {
    return undefined;
  }
}

/** The uids a payload @-mentions (`mention.uids`), and whether it mentions everyone. */
export function mentions(p: Record<string, unknown>): { uids: string[]; all: boolean } {
  const m = p.mention;
  if (typeof m !== "object" || m === null) return { uids: [], all: false };
  const r = m as Record<string, unknown>;
  const uids = Array.isArray(r.uids) ? r.uids.filter((u): u is string => typeof u === "string") : [];
  return { uids, all: r.all === 1 || r.all === true };
}

// ---------------------------------------------------------------- sending

/** The `/message/send` body, keys in the order of WuKongIM's `MessageSendReq`. Persisted, red dot on. */
export interface SendBody {
  header: { no_persist: 0; red_dot: 1; sync_once: 0 };
  client_msg_no: string;
  from_uid: string;
  channel_id: string;
  channel_type: number;
  payload: string;
}

export function sendBody(cfg: WkConfig, channel: { channel_id: string; channel_type: number }, clientMsgNo: string, payload: object): SendBody {
  return {
    header: { no_persist: 0, red_dot: 1, sync_once: 0 },
    client_msg_no: clientMsgNo,
    from_uid: cfg.botUid,
    channel_id: channel.channel_id,
    channel_type: channel.channel_type,
    payload: encodePayload(payload),
  };
}

export type SendOutcome = { ok: true } | { ok: false; error: string };

/**
 * POSTs one message. Success is HTTP 200 with v2's `{"status":200,"data":{…}}` or v3's `{"message_id",…,"reason":1}`.
 * Failures: v2 `400 {"msg","status":400}`, v3 `{"error":"…"}` or a `reason` other than 1, 401 with an empty body
 * (wrong manager token), network errors. The response's int64 `message_id` is never used.
 */
export async function sendMessage(cfg: WkConfig, body: SendBody, fetcher: typeof fetch = fetch): Promise<SendOutcome> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (cfg.managerToken) headers.token = cfg.managerToken;
  let res: Response;
  try {
    res = await fetcher(`${cfg.apiUrl}/message/send`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(WK_LIMITS.sendTimeoutMs),
    });
  } catch (e) {
    return { ok: false, error: `network: ${(e as Error).message}`.slice(0, 200) };
  }
  const text = (await res.text().catch(() => "")).slice(0, 2000);
  let j: Record<string, unknown> = {};
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) j = v as Record<string, unknown>;
  } catch {
    /* empty or not JSON */
  }
  const detail = typeof j.msg === "string" ? j.msg : typeof j.error === "string" ? j.error : text || "(empty body)";
  if (res.status !== 200) return { ok: false, error: `HTTP ${res.status}: ${detail}`.slice(0, 200) };
  if (j.status !== undefined) return j.status === 200 ? { ok: true } : { ok: false, error: `status ${String(j.status)}: ${detail}`.slice(0, 200) };
  if (typeof j.error === "string") return { ok: false, error: `error: ${j.error}`.slice(0, 200) };
  if (j.reason !== undefined) return j.reason === 1 ? { ok: true } : { ok: false, error: `reason ${String(j.reason)}`.slice(0, 200) };
  if (j.message_id !== undefined) return { ok: true };
  return { ok: false, error: `unrecognised answer: ${text.slice(0, 120) || "(empty body)"}` };
}
