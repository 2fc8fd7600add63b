// The adapter library's public types (docs/adapter.md), apart from the client itself (index.ts).
import type { ContentBlock, MessageOut, ToolCallOut, ToolDef, ToolResultBody, ToolResultOut } from "../../shared/contract/protocol.js";
import type { BackoffOptions } from "../../shared/client/backoff.js";
import type { LineUpError } from "../../shared/client/errors.js";
import type { Keyring } from "../e2e/keyring.js";
import type { DirectSideOptions } from "./direct.js";
import type { DirectKey } from "../../shared/client/direct-bind.js";
import type { ProtocolMemory } from "./version.js";

export interface ConnectOptions {
  relayUrl?: string;
  sessionId?: string;
  token?: string;
  relayKey?: string;
  stateDir?: string;
  cwd?: string;
  label?: string;
  clientId?: string;
  /** Names a second stable client of the same session (e.g. "mcp"), so two processes do not replace each other. Default "agent". */
  clientName?: string;
  tools?: ToolDef[];
  connectTimeoutMs?: number;
  heartbeatMs?: number;
  /** Reconnect backoff (defaults: base 500 ms, cap 30 s, counter reset after 10 s of uptime). */
  backoff?: BackoffOptions;
  /** Extra seconds a call waits past its timeout for the relay's own timeout result before failing locally. */
  localGraceS?: number;
  log?: (line: string) => void;
  /** Issue 32: the direct path's WebRTC library and limits (docs/direct.md); without it, relay only. */
  direct?: DirectConfig;
}

export type Presence = { agent: { online: boolean; status?: { state: string; detail?: string } }; apps: number };
export type ConnectionState = "open" | "closed" | "reconnecting";
export type ToolCall = ToolCallOut & { signal: AbortSignal };
export type ToolHandler = (args: Record<string, unknown>, call: ToolCall) => Promise<ToolResultBody> | ToolResultBody;
export interface CallOptions {
  timeoutS?: number;
  signal?: AbortSignal;
  callId?: string;
}

export interface Events {
  presence: Presence;
  tools: ToolDef[];
  message: MessageOut;
  connection: ConnectionState;
  /** A result for a call this process did not make (e.g. made by a previous run); see docs. */
  result: ToolResultOut;
}

export interface AgentClient {
  readonly sessionId: string;
  readonly clientId: string;
  readonly relayUrl: string;
  readonly appUrl?: string;
  readonly presence: Presence;
  readonly appTools: ToolDef[];
  readonly connected: boolean;
  /** Set once the client stopped for good (terminal close code, auth failure, or close()). */
  readonly lastError: LineUpError | undefined;
  call(name: string, action: string | undefined, args?: Record<string, unknown>, opts?: CallOptions): Promise<ToolResultBody>;
  provide(def: ToolDef, handler: ToolHandler): void;
  send(content: string | ContentBlock[]): void;
  setStatus(state: string, detail?: string): void;
  on<E extends keyof Events>(event: E, cb: (v: Events[E]) => void): () => void;
  close(): Promise<void>;
}

/** What the Client (agent.ts) is made from; connectAgent (index.ts) fills it from ConnectOptions and the state file. */
export interface ClientOptions {
  relayUrl: string;
  sessionId: string;
  token: string;
  clientId: string;
  appUrl?: string;
  tools?: ToolDef[];
  connectTimeoutMs?: number;
  heartbeatMs?: number;
  backoff?: BackoffOptions;
  localGraceS?: number;
  log?: (line: string) => void;
  /** The inbox's E2E keys: needed to join a sealed session (adapter/e2e/keyring.ts). */
  keyring?: Keyring;
  /** The state file says this session was created sealed: a `hello` without `sealed` is refused (e2e_downgrade). */
  expectSealed?: boolean;
  /** Issue 32: answer a device's direct-path offer with this WebRTC library (docs/direct.md), each answer
   * signed with this machine's direct key (`key`; connectAgent loads it from the state dir). */
  direct?: DirectConfig & { key?: () => Promise<DirectKey> };
  /** Where the newer-protocol warning is remembered across processes (connectAgent: the state directory's). */
  protocolMemory?: ProtocolMemory;
}

/** The direct path's library and its network limits (adapter/client/direct.ts). */
export type DirectConfig = Pick<DirectSideOptions, "ndc" | "bindAddress" | "iceServers" | "allowCandidate">;
