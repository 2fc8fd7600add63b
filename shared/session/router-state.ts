// The router's shared state and rules (shared/session/router.ts is the entry): who a peer is, what goes out,
// the session's byte budget, the catalogs read once per frame, and the error frame. No sockets, clocks or timers.
import {
  canonicalJson,
  HTTP_CLIENT_ID,
  LIMITS,
  type ErrorCode,
  type KeptMessage,
  type MessageOut,
  type OutFrame,
  type RelayFrame,
  type Role,
  type ToolCallOut,
  type KeptToolDef,
  type ToolDef,
} from "../contract/protocol.js";
import type { CallRow, Registration, Store } from "./store.js";

/** One live connection. `key` = `role:client_id` is the identity that results and bindings belong to. */
export interface Peer {
  role: Role;
  clientId: string;
  /** Unique per connection (survives hibernation in the socket attachment). */
  conn: string;
  /** A bridge that is always reachable (e.g. the WuKongIM conversation); not counted as an app. */
  virtual?: boolean;
  /** The credential the connection was admitted with (its rate bucket across connections). */
  cred?: string;
  /** A paired device's name (shown to the other devices as who answered). */
  name?: string;
  /** Connected with `?register=first`: a provider only once it has registered (shared/session/calls.ts). */
  registerFirst?: boolean;
}
export const keyOf = (p: { role: Role; clientId: string }) => `${p.role}:${p.clientId}`;
/** The relay's own callers (remote MCP, `~` ids): not people or providers — no presence, no chat, no catalog. */
export const isInternal = (p: { clientId: string }) => p.clientId.startsWith("~");
export const HTTP_PEER: Peer = { role: "agent", clientId: HTTP_CLIENT_ID, conn: "http" };

/** A frame for every connection of one client key (or one connection when `conn` is set). */
export interface Out {
  to: string;
  conn?: string;
  frame: OutFrame;
}

export interface Ctx {
  now: number;
  /** Every live connection, including the one the frame came from. */
  peers: readonly Peer[];
}

export interface RouterOptions {
  /** Bytes a session keeps outside the store (the WuKongIM outbox), counted in its budget. */
  extraUsage?: () => number;
  /** A sealed session's current inbox epoch (docs/e2e.md); undefined for a plaintext session. */
  sealedEpoch?: () => number | undefined;
  /** An inbox session (docs/inbox.md): its other devices learn who answered, a guest link by client id. */
  inbox?: boolean;
}

export class RouterState {
  constructor(
    protected readonly store: Store,
    readonly sessionId: string,
    protected readonly newId: () => string,
    protected readonly opts: RouterOptions = {},
  ) {}

  /** Whether keeping `more` bytes (net) stays within the session's budget. */
  protected fits(more: number): boolean {
    if (more <= 0) return true;
    return this.store.usage() + (this.opts.extraUsage?.() ?? 0) + more <= LIMITS.sessionBudgetBytes;
  }
  protected overBudget(what: string): string {
    return `the session keeps ${LIMITS.sessionBudgetBytes} bytes at most and ${what} would pass that; ack results, end calls or delete old sessions`;
  }

  /** A flag test on the plaintext path: the getter is only consulted where sealed sessions differ. */
  protected get sealed(): boolean {
    return this.opts.sealedEpoch?.() !== undefined;
  }

  /** A side's registrations, read once per frame: a call asks for them to check, to find its providers and
   * to answer. Only within handle(): across frames SQLite stays the one truth. */
  protected regMemo: Map<Role, Registration[]> | undefined;
  protected regs(role: Role): Registration[] {
    if (!this.regMemo) return this.store.registrations(role);
    let r = this.regMemo.get(role);
    if (!r) this.regMemo.set(role, (r = this.store.registrations(role)));
    return r;
  }

  /** The side's catalog: the union of its clients' registrations (a later registration wins a name). */
  catalog(role: Role): KeptToolDef[] {
    const byName = new Map<string, KeptToolDef>();
    for (const r of this.regs(role)) for (const t of r.tools) byName.set(t.name, t);
    return [...byName.values()];
  }

  protected err(peer: Peer, code: ErrorCode, message: string, call_id?: string): Out {
    const frame: RelayFrame = call_id === undefined ? { type: "error", code, message } : { type: "error", code, message, call_id };
    return { to: keyOf(peer), conn: peer.conn, frame };
  }
}

/** Compared by content, not order: re-registering the same tools moves them in the union's order. */
export function sameTools(tools: KeptToolDef[]): string {
  return canonicalJson([...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
}

/** What a tool asks for: its type and schemas, not its wording. */
export function shapeOf(t: ToolDef): unknown {
  return t.type === "action"
    ? { type: t.type, inputSchema: t.inputSchema }
    : { type: t.type, actions: t.actions.map((a) => ({ name: a.name, inputSchema: a.inputSchema })) };
}

/** The contract's message frame: `seq` is the store's cursor position, not part of the wire format. */
export function wire(m: KeptMessage): KeptMessage {
  const { seq: _seq, ...frame } = m;
  return frame;
}

export function callFrame(c: CallRow): ToolCallOut {
  const f: ToolCallOut = {
    type: "tool.call",
    call_id: c.call_id,
    name: c.name,
    arguments: JSON.parse(c.args) as Record<string, unknown>,
    deadline: c.deadline,
    from: c.caller_role,
  };
  if (c.action !== null) f.action = c.action;
  if (c.timeout_s !== null) f.timeout_s = c.timeout_s;
  // The remote-MCP endpoint's own callers (worker/mcp/call-link.ts callerIdOf): the app does not read the
  // agent's absence as the caller's (issue 28).
  if (c.caller.startsWith(`${c.caller_role}:~mcp.`)) f.via = "mcp";
  return f;
}
