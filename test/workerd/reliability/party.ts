// Reliability test helpers: a "party" is one logical client (fixed client id) that may reconnect many
// times. It logs every frame of every connection, so tests can check what the relay re-sent and when,
// and it models the caller's/provider's code the way the adapter does: de-duplicated by call_id.
import { evictDurableObject } from "cloudflare:test";
import type { SessionCreated } from "../../../shared/contract/protocol.js";
import { connect, createSession, stubOf, type Client, type Frame } from "../helpers.js";

export const CALC = {
  name: "calc",
  type: "action",
  description: "adds",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
} as const;

export type Mode = "hibernate" | "close";

let barriers = 0;

export class Party {
  /** Every frame of every connection, in arrival order (index = connection number). */
  readonly conns: Frame[][] = [];
  client!: Client;
  online = false;
  constructor(
    readonly s: SessionCreated,
    readonly role: "agent" | "app",
    readonly clientId: string,
  ) {}

  async connect(): Promise<Client> {
    const c = await connect(this.s.session_id, this.role === "agent" ? this.s.agent_token : this.s.app_token, { clientId: this.clientId });
    // Frames that arrived while `connect` awaited hello are already in c.frames; later ones come by event.
    const log: Frame[] = [c.hello!, ...c.frames];
    c.ws.addEventListener("message", (e) => {
      if (typeof e.data === "string" && e.data !== "pong") log.push(JSON.parse(e.data) as Frame);
    });
    c.ws.addEventListener("close", () => {
      if (this.client === c) this.online = false;
    });
    this.conns.push(log);
    this.client = c;
    this.online = true;
    return c;
  }

  send(frame: unknown): void {
    this.client.send(frame);
  }
  next(pred: string | ((f: Frame) => boolean), ms?: number): Promise<Frame> {
    return this.client.next(pred, ms);
  }

  /** Waits until the relay has handled everything this connection sent before (a cancel of an unknown call is answered in order). */
  async sync(timeoutMs = 15_000): Promise<void> {
    const id = `barrier-${++barriers}`;
    this.send({ type: "tool.cancel", call_id: id });
    await this.next((f) => f.type === "error" && f.code === "unknown_call" && f.call_id === id, timeoutMs);
  }

  /** Frames of one type for one call, per connection. */
  countPerConn(type: string, callId: string): number[] {
    return this.conns.map((log) => log.filter((f) => f.type === type && f.call_id === callId).length);
  }
  /** What the code above the socket sees: the first frame of `type` per call_id (later copies dropped). */
  handled(type: string): Map<string, Frame> {
    const out = new Map<string, Frame>();
    for (const log of this.conns) for (const f of log) if (f.type === type && typeof f.call_id === "string" && !out.has(f.call_id)) out.set(f.call_id, f);
    return out;
  }
  /** Every copy of `type` for `callId` across connections. */
  copies(type: string, callId: string): Frame[] {
    return this.conns.flatMap((log) => log.filter((f) => f.type === type && f.call_id === callId));
  }

  async leave(): Promise<void> {
    if (!this.online) return;
    const c = this.client;
    c.close();
    await c.closedWith();
    this.online = false;
  }
}

/** Evicts the session's object; after a "close" eviction every online party reconnects with its client id. */
export async function evictAndRecover(s: SessionCreated, mode: Mode, parties: readonly Party[]): Promise<void> {
  const online = parties.filter((p) => p.online);
  await evictDurableObject(stubOf(s.session_id), { webSockets: mode });
  if (mode !== "close") return;
  for (const p of online) {
    await p.client.closedWith();
    await p.connect();
  }
}

export async function session(): Promise<SessionCreated> {
  return createSession({ label: "reliability" });
}

export const isResult = (id: string) => (f: Frame) => f.type === "tool.result" && f.call_id === id;
export const isCall = (id: string) => (f: Frame) => f.type === "tool.call" && f.call_id === id;
export const isCancel = (id: string) => (f: Frame) => f.type === "tool.cancel" && f.call_id === id;
