// The agent adapter library (docs/adapter.md, ADAPTER_API.md): connectAgent() and what it returns. The client
// is agent.ts, a thin shell over the client core (shared/client/); the session and keys come from session.ts.
import { terminalCodeName } from "../../shared/contract/close.js";
import { LineUpError } from "../../shared/client/errors.js";
import { Client } from "./agent.js";
import { openKeyring, resolveSession } from "./session.js";
import { loadDirectKey } from "./direct-key.js";
import type { ConnectOptions } from "./types.js";
import { protocolMemory } from "./version.js";

export type { ToolDef, ToolResultBody, ToolCallOut, MessageOut, ContentBlock, ToolResultOut } from "../../shared/contract/protocol.js";
export type { AgentClient, CallOptions, ConnectionState, ConnectOptions, Presence, ToolCall, ToolHandler } from "./types.js";
export { loadState } from "./state.js";
export { ensureSession } from "./ensure.js";
export type { SavedSession } from "./state.js";
export { createSession, resolveSession, type ResolvedSession } from "./session.js";
export { Client, LineUpError, terminalCodeName };

/**
 * Connects as the session's agent; resolves after the first `hello`. Joins `sessionId`+`token` when given
 * (or LINEUP_SESSION + LINEUP_TOKEN), else the session saved for (relayUrl, cwd), creating one if needed.
 */
export async function connectAgent(opts: ConnectOptions = {}): Promise<Client> {
  const r = await resolveSession(opts);
  const keyring = await openKeyring(r, opts.log);
  const client = new Client({
    ...(keyring ? { keyring } : {}),
    ...(r.sealed ? { expectSealed: true } : {}),
    relayUrl: r.relayUrl,
    sessionId: r.sessionId,
    token: r.token,
    clientId: r.clientId,
    ...(r.appUrl ? { appUrl: r.appUrl } : {}),
    ...(opts.tools ? { tools: opts.tools } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(opts.heartbeatMs !== undefined ? { heartbeatMs: opts.heartbeatMs } : {}),
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    ...(opts.localGraceS !== undefined ? { localGraceS: opts.localGraceS } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.direct ? { direct: { key: () => loadDirectKey(r.stateDir), ...opts.direct } } : {}),
    protocolMemory: protocolMemory(r.stateDir),
  });
  try {
    await client.start();
  } catch (e) {
    keyring?.close();
    throw e;
  }
  return client;
}
