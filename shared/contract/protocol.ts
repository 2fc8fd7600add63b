// The LineUp relay wire contract (`lineup/1`), imported by the Worker, the Durable Object, the PWA, the agent
// adapter and the tests. Split by concern: limits.ts (names and limits), tools.ts (tool shapes), envelope.ts
// (the sealed envelope's shape), frames.ts (client → relay, and the one internal frame), relay-frames.ts
// (relay → client), decode.ts (parsing at the edge, once). This module re-exports them and holds the HTTP bodies.
import { z } from "./zod.js";
import { LIMITS } from "./limits.js";
import { CallId, JsonObject, ToolName, type ToolDef } from "./tools.js";
import type { AgentStatus, KeptMessage, KeptToolDef } from "./relay-frames.js";

export * from "./limits.js";
export * from "./tools.js";
export * from "./frames.js";
export * from "./relay-frames.js";
export * from "./decode.js";
export * from "./rtc.js";
export type { Envelope } from "./envelope.js";

// ---------------------------------------------------------------- HTTP bodies

export const CreateSessionBody = z.object({
  ttl_s: z.number().int().min(LIMITS.minSessionTtlS).max(LIMITS.maxSessionTtlS).optional(),
  label: z.string().max(LIMITS.maxLabel).optional(),
  im: z
    .object({
      channel_id: z.string().min(1).max(128),
      channel_type: z.number().int().min(1).max(255),
      /** A group's bound human (uid): the only member who may register tools in it. */
      owner_uid: z.string().min(1).max(128).optional(),
    })
    .optional(),
});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export interface SessionCreated {
  session_id: string;
  agent_token: string;
  app_token: string;
  ws_url: string;
  app_url: string;
  expires_at: number;
}

/** Body of `POST /api/sessions/:sid/calls`: a tool.call frame whose `type` and `call_id` may be omitted. */
export const HttpCallBody = z.object({
  type: z.literal("tool.call").optional(),
  call_id: CallId.optional(),
  name: ToolName,
  action: z.string().min(1).max(64).optional(),
  arguments: JsonObject.default({}),
  timeout_s: z.number().finite().optional(),
});

export interface SessionStatus {
  session_id: string;
  label?: string;
  expires_at: number;
  agent: { online: boolean; status?: AgentStatus };
  apps: number;
  app_clients: string[];
  agent_clients: string[];
  /** A sealed session's definitions are sealed (SealedToolDefOut). */
  tools: { agent: KeptToolDef[]; app: KeptToolDef[] };
  pending_calls: number;
  messages: KeptMessage[];
  im?: { channel_id: string; channel_type: number; online?: boolean };
  /** docs/e2e.md: true for a sealed session. */
  sealed: boolean;
}

export function httpError(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}
