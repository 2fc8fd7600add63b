// A small typed HTTP client for the inbox endpoints (docs/inbox.md): what the agent adapter needs to create
// its inbox, attach sessions to it, pair devices and manage them. Bodies are checked against the shapes of
// shared/contract/inbox.ts before they are sent; answers are checked for the fields the adapter relies on.
import { z } from "../../shared/contract/zod.js";
import {
  CreateInboxBody,
  InboxSessionBody,
  RedeemJoinBody,
  RedeemPairingBody,
  RenameBody,
  type CodeIssued,
  type DeviceInfo,
  type DevicePaired,
  type InboxState,
  type MachineCreated,
} from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { AttentionReason } from "../../shared/contract/push.js";
import { LineUpError } from "../../shared/client/errors.js";

export type InboxSessionCreated = SessionCreated & { inbox_id: string };

// Loose objects: a newer relay may add fields; the adapter keeps what it knows.
const MachineCreatedShape = z.looseObject({ inbox_id: z.string(), machine_id: z.string(), machine_credential: z.string() });
const DevicePairedShape = z.looseObject({ inbox_id: z.string(), device_id: z.string(), device_credential: z.string(), name: z.string() });
const CodeIssuedShape = z.looseObject({ code: z.string(), url: z.string().optional(), expires_at: z.number() });
const DeviceShape = z.looseObject({ id: z.string(), name: z.string(), paired_at: z.number(), last_seen: z.number() });
const MachineShape = z.looseObject({ id: z.string(), name: z.string(), joined_at: z.number(), last_seen: z.number() });
const WaitingShape = z.looseObject({ call_id: z.string(), name: z.string(), text: z.string(), created_at: z.number(), deadline_at: z.number().optional() });
const InboxSessionShape = z.looseObject({
  session_id: z.string(),
  label: z.string(),
  project_dir: z.string().optional(),
  host: z.string().optional(),
  machine_id: z.string().optional(),
  created_at: z.number(),
  expires_at: z.number(),
  // What the session last reported; missing until it reports once.
  agent_online: z.boolean().default(false),
  pending: z.number().default(0),
  last_activity: z.number().default(0),
  waiting: z.array(WaitingShape).default([]),
});
const InboxStateShape = z.looseObject({
  type: z.literal("inbox"),
  inbox_id: z.string(),
  you: z.looseObject({ kind: z.enum(["device", "machine"]), id: z.string() }),
  devices: z.array(DeviceShape),
  machines: z.array(MachineShape),
  sessions: z.array(InboxSessionShape),
  policy_version: z.number().default(0),
});
const SessionCreatedShape = z.looseObject({
  session_id: z.string(),
  agent_token: z.string(),
  app_token: z.string(),
  ws_url: z.string(),
  app_url: z.string(),
  expires_at: z.number(),
  inbox_id: z.string(),
});

const SessionTokenShape = z.looseObject({ agent_token: z.string(), expires_at: z.number() });

// The inbox's key state (docs/e2e.md "The inbox's key state"). Envelopes, wraps, hellos and replies stay
// `unknown` here: shared/e2e parses and authenticates them (a relay cannot forge them anyway).
const E2EPairingShape = z.looseObject({ code_id: z.string(), joiner: z.string().nullable().optional(), state: z.string(), expires_at: z.number() });
const E2EStateShape = z.looseObject({
  epoch: z.number().int().min(0),
  rekey_needed: z.boolean().default(false),
  holders: z.array(z.string()).default([]),
  wrap: z.unknown().optional(),
  roster: z.unknown().optional(),
  hellos: z.array(z.unknown()).default([]),
  replies: z.array(z.unknown()).default([]),
  pairings: z.array(E2EPairingShape).default([]),
});
export type E2EState = z.infer<typeof E2EStateShape>;
const EpochShape = z.looseObject({ epoch: z.number().int() });

const TIMEOUT_MS = 15_000;

function errorOf(status: number, text: string): LineUpError {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
    if (e && typeof e.code === "string") return new LineUpError(e.code, typeof e.message === "string" ? e.message : e.code, status);
  } catch {
    /* not the API's error shape */
  }
  return new LineUpError(`http_${status}`, `the relay answered ${status}${text ? `: ${text.slice(0, 200)}` : ""}`, status);
}

async function request<T>(
  base: string,
  method: string,
  path: string,
  o: { bearer?: string; body?: unknown; expect: number; shape?: z.ZodType<T> },
): Promise<T> {
  const headers: Record<string, string> = {};
  if (o.bearer !== undefined) headers.authorization = `Bearer ${o.bearer}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    throw new LineUpError("connect", `cannot reach the relay at ${base}: ${(e as Error).message}`, 0);
  }
  const text = await res.text().catch(() => "");
  if (res.status !== o.expect) throw errorOf(res.status, text);
  if (!o.shape) return undefined as T;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new LineUpError("bad_answer", `${method} ${path}: the relay's answer is not JSON`, 0);
  }
  const r = o.shape.safeParse(json);
  if (!r.success) throw new LineUpError("bad_answer", `${method} ${path}: unexpected answer (${r.error.issues[0]?.message ?? "invalid"})`, 0);
  return r.data;
}

/** The relay's API for one base URL (`http(s)://host[:port]`, no trailing slash). */
export class InboxApi {
  constructor(readonly base: string) {}

  /** POST /api/inboxes with the relay key. */
  createInbox(relayKey: string, machineName?: string): Promise<MachineCreated> {
    const body = CreateInboxBody.parse(machineName !== undefined ? { machine_name: machineName } : {});
    return request(this.base, "POST", "/api/inboxes", { bearer: relayKey, body, expect: 201, shape: MachineCreatedShape });
  }

  state(credential: string): Promise<InboxState> {
    return request(this.base, "GET", "/api/inbox", { bearer: credential, expect: 200, shape: InboxStateShape });
  }

  createSession(credential: string, body: z.input<typeof InboxSessionBody>): Promise<InboxSessionCreated> {
    return request(this.base, "POST", "/api/inbox/sessions", {
      bearer: credential,
      body: InboxSessionBody.parse(body),
      expect: 201,
      shape: SessionCreatedShape,
    });
  }

  /** POST /api/inbox/sessions/:sid/token: a fresh agent token for a live session of this machine's inbox. */
  sessionToken(credential: string, sessionId: string): Promise<{ agent_token: string; expires_at: number }> {
    return request(this.base, "POST", `/api/inbox/sessions/${encodeURIComponent(sessionId)}/token`, {
      bearer: credential,
      expect: 200,
      shape: SessionTokenShape,
    });
  }

  /** POST /api/inbox/push/attention: "the agent is waiting for you" pushed to the inbox's devices (docs/push.md). */
  pushAttention(credential: string, sessionId: string, text?: string, reason?: AttentionReason): Promise<{ queued: number }> {
    return request(this.base, "POST", "/api/inbox/push/attention", {
      bearer: credential,
      body: { session_id: sessionId, ...(text ? { text } : {}), ...(reason !== undefined ? { reason } : {}) },
      expect: 202,
      shape: z.object({ queued: z.number() }),
    });
  }

  // ---- end-to-end keys (docs/e2e.md "The inbox's key state")

  e2eState(credential: string): Promise<E2EState> {
    return request(this.base, "GET", "/api/inbox/e2e", { bearer: credential, expect: 200, shape: E2EStateShape });
  }

  /** PUT /api/inbox/e2e: a new epoch with every holder's wrap and the sealed roster. */
  putE2E(credential: string, body: { base_epoch: number; epoch: number; wraps: Record<string, unknown>; roster: unknown }): Promise<{ epoch: number }> {
    return request(this.base, "PUT", "/api/inbox/e2e", { bearer: credential, body, expect: 200, shape: EpochShape });
  }

  postHello(credential: string, hello: unknown): Promise<void> {
    return request(this.base, "POST", "/api/inbox/e2e/hello", { bearer: credential, body: hello, expect: 201 });
  }

  postReply(credential: string, body: { reply: unknown; roster?: unknown }): Promise<void> {
    return request(this.base, "POST", "/api/inbox/e2e/reply", { bearer: credential, body, expect: 201 });
  }

  deletePairing(credential: string, codeId: string): Promise<void> {
    return request(this.base, "DELETE", `/api/inbox/e2e/pairings/${encodeURIComponent(codeId)}`, { bearer: credential, expect: 204 });
  }

  createPairing(credential: string): Promise<CodeIssued & { url: string }> {
    return request(this.base, "POST", "/api/inbox/pairings", { bearer: credential, body: {}, expect: 201, shape: CodeIssuedShape.extend({ url: z.string() }) });
  }

  /** POST /api/pair: what a phone does with the code of a pairing link (tests; a device of your own). */
  redeemPairing(code: string, name?: string): Promise<DevicePaired> {
    const body = RedeemPairingBody.parse(name !== undefined ? { code, name } : { code });
    return request(this.base, "POST", "/api/pair", { body, expect: 201, shape: DevicePairedShape });
  }

  redeemJoin(code: string, machineName?: string): Promise<MachineCreated> {
    const body = RedeemJoinBody.parse(machineName !== undefined ? { code, machine_name: machineName } : { code });
    return request(this.base, "POST", "/api/join", { body, expect: 201, shape: MachineCreatedShape });
  }

  renameDevice(credential: string, id: string, name: string): Promise<DeviceInfo> {
    return request(this.base, "PATCH", `/api/inbox/devices/${encodeURIComponent(id)}`, {
      bearer: credential,
      body: RenameBody.parse({ name }),
      expect: 200,
      shape: DeviceShape,
    });
  }

  revokeDevice(credential: string, id: string): Promise<void> {
    return request(this.base, "DELETE", `/api/inbox/devices/${encodeURIComponent(id)}`, { bearer: credential, expect: 204 });
  }

  revokeMachine(credential: string, id: string): Promise<void> {
    return request(this.base, "DELETE", `/api/inbox/machines/${encodeURIComponent(id)}`, { bearer: credential, expect: 204 });
  }
}

/** A machine name the relay accepts (1–64 characters): this host's name, or "machine". */
export function machineNameOf(host: string): string {
  const n = host.trim().slice(0, 64);
  return n || "machine";
}
