// Waiting for one LineUp call from the Worker, over a hibernatable socket into the session object: the object
// sleeps while nothing happens, and wakes only to hand over the answer. The socket is the call's own caller
// connection (client id derived from the call_id), so the relay's kept results, identical-repeat rule and
// acks work exactly as for any agent. A dropped socket (eviction with close, deploy) is reconnected and the
// call resumed: kept results come again after hello, and a probe tells an open call from a forgotten one.
import type { RelayFrame, ToolResultOut } from "../../shared/contract/protocol.js";
import { isRelayFrame, ReconnectingSocket } from "../../shared/client/socket.js";
import type { CallEnd } from "../../shared/mcp/results.js";
import { CLOSE } from "../../shared/contract/close.js";
import { LineupSocket, MCP_SOCKET, linkDial, peersApps } from "./lineup-socket.js";
import { LinkError, type SessionLink } from "./port.js";

/** How the wait for a call ended, beyond the call's own result or error. */
export type LinkEnd =
  | CallEnd
  /** Nothing is open or kept under this call_id (answered and acked elsewhere, cancelled, never made). */
  | { kind: "gone" }
  /** The interim link only: a newer connection of the same call (a joined retry) took over. */
  | { kind: "replaced" }
  | { kind: "session_gone" }
  | { kind: "failed"; message: string };

/** A LineUp tool.call frame as the caller sends it. */
export interface CallFrame {
  type: "tool.call";
  call_id: string;
  name: string;
  action?: string;
  arguments: Record<string, unknown>;
  timeout_s: number;
}

/**
 * The probe's tool name. A `tool.call` with the same call_id but other content answers `duplicate_call` when
 * the call still exists; when it does not, the probe itself becomes a call, which no app provides (so it is
 * rejected at once, or queued and cancelled by us right away) — it never reaches a human.
 */
export const PROBE_TOOL = "lineup.mcp.probe";

/** The error of a `POST /mcp` call in a sealed session (docs/mcp.md "Sealed sessions"). */
export const SEALED_MESSAGE =
  "this token's session is sealed (end-to-end encryption is on) and the relay cannot seal a call on the agent's behalf; nothing was sent to the human. Use `lineup mcp` on the agent's machine, or a plaintext session's token (POST /api/sessions)";

/** The caller's client id of a call: legal in the contract's client id alphabet, one per call_id. */
/** The reserved internal caller of one question (`~` ids: no socket of a client can claim them). */
export const callerIdOf = (callId: string) => `~mcp.${callId.slice(4)}`;

/** Reconnects (shared/client/socket.ts) without jitter: 250 ms doubling up to 5 s, from 250 ms again after each drop. */
export const CALL_LINK_BACKOFF = { baseMs: 250, capMs: 5000, minUptimeMs: 0, jitter: false } as const;

let barriers = 0;

export class CallLink {
  readonly end: Promise<LinkEnd>;
  state: "connecting" | "reconnecting" | "waiting" = "connecting";
  private settle: (e: LinkEnd) => void = () => {};
  private readonly sock: ReconnectingSocket;
  private settled = false;
  private apps_ = 0;
  private pendingStatus: object | undefined;
  /** What the next connection does after hello: send the call, or (resuming) probe for it. */
  private mode: CallFrame | "probe";
  /** Per connection: the barrier id of its probe, and whether the call was seen to exist there. */
  private barrier = "";
  private exists = false;

  private constructor(
    private readonly link: SessionLink,
    private readonly sid: string,
    readonly callId: string,
    first: CallFrame | "probe",
    private readonly log: (line: string) => void,
  ) {
    this.end = new Promise((r) => (this.settle = r));
    this.mode = first;
    this.sock = new ReconnectingSocket({
      dial: linkDial(link, sid, callerIdOf(callId)),
      backoff: CALL_LINK_BACKOFF,
      ...MCP_SOCKET,
      terminalOf: (c) => (c.cause instanceof LinkError && c.cause.code === "session_not_found" ? "session_gone" : undefined),
    });
    this.sock.on("frame", (f) => (isRelayFrame(f) ? this.onFrame(f) : undefined));
    this.sock.on("close", (c) => {
      if (!c.helloed) return this.log(`mcp: link to the session failed (${c.error ?? (c.reason || `closed ${c.code}`)}); retrying`);
      this.state = "reconnecting";
      // Resuming never re-sends the call: if it is gone meanwhile (answered and acked by a joined request,
      // or cancelled), sending it again would put a second card in front of the human.
      this.mode = "probe";
    });
    this.sock.on("terminal", (t) => {
      if (t.name === "stopped") return this.finish({ kind: "failed", message: "closed" });
      if (t.code === CLOSE.replaced) return this.finish({ kind: "replaced" });
      if (t.code === CLOSE.sessionEnded || t.name === "session_gone") return this.finish({ kind: "session_gone" });
      this.finish({ kind: "failed", message: `the session closed the link (${t.code} ${t.reason})` });
    });
  }

  /** Starts (or joins) `first`, or — for "probe" — picks up an earlier call by its id. */
  static start(link: SessionLink, sid: string, callId: string, first: CallFrame | "probe", log: (line: string) => void): CallLink {
    const c = new CallLink(link, sid, callId, first, log);
    c.sock.start();
    return c;
  }

  /** Apps connected, as this connection last heard. */
  get apps(): number {
    return this.apps_;
  }

  /** The call's result has reached the MCP client: the relay may forget it. Ends the link. */
  ack(): Promise<void> {
    return this.last({ type: "tool.ack", call_id: this.callId });
  }

  /** An explicit MCP cancellation: the human's card closes. Ends the link. */
  cancel(): Promise<void> {
    return this.last({ type: "tool.cancel", call_id: this.callId, reason: "cancelled" });
  }

  /** Sends a last frame and stops; while the link is down (a reconnect under way) a one-shot connection carries it. */
  private async last(frame: object): Promise<void> {
    const sent = this.sock.send(frame);
    void this.sock.stop(CLOSE.normal, "done", 0);
    if (sent) return;
    const once = await LineupSocket.open(this.link, this.sid, callerIdOf(this.callId)).catch(() => undefined);
    once?.send(frame);
    once?.close();
  }

  /** The agent's presence status for the app; sent now, or as soon as the link is up. */
  status(state: string, detail?: string): void {
    this.pendingStatus = detail === undefined ? { type: "status", state } : { type: "status", state, detail };
    if (this.sock.send(this.pendingStatus)) this.pendingStatus = undefined;
  }

  /** Stops waiting; the call stays open in the session (a later await_answer or identical retry finds it). */
  close(): void {
    void this.sock.stop(CLOSE.normal, "done", 0);
    this.finish({ kind: "failed", message: "closed" });
  }

  private finish(e: LinkEnd): void {
    if (this.settled) return;
    this.settled = true;
    void this.sock.stop(CLOSE.normal, "done", 0);
    this.settle(e);
  }

  /** One frame of the current connection: after hello the call (or the probe) goes out; then we wait for its end. */
  private onFrame(f: RelayFrame): void {
    if (f.type === "hello") {
      // A sealed session takes only envelopes, sealed with a key the relay never holds: it cannot seal this
      // call for the agent, so the call fails now instead of waiting for a card nobody is shown.
      if (f.sealed) return this.finish({ kind: "error", code: "e2e_sealed", message: SEALED_MESSAGE });
      this.apps_ = peersApps(f.peers);
      this.state = "waiting";
      if (this.pendingStatus && this.sock.send(this.pendingStatus)) this.pendingStatus = undefined;
      this.barrier = `mcp-barrier-${++barriers}`;
      this.exists = this.mode !== "probe";
      if (this.mode === "probe") {
        this.sock.send({ type: "tool.call", call_id: this.callId, name: PROBE_TOOL, arguments: {}, timeout_s: 1 });
        // A result for a call that does not exist is answered with an error naming our unique id: after it,
        // every answer to the probe has arrived.
        this.sock.send({ type: "tool.result", call_id: this.barrier, result: { message: "barrier" } });
      } else this.sock.send(this.mode);
      return;
    }
    if (f.type === "presence") this.apps_ = f.apps;
    if (f.type === "tool.result" && f.call_id === this.callId) {
      if (f.name === PROBE_TOOL) {
        // Our own probe, rejected (no app provides it): the real call is gone.
        this.sock.send({ type: "tool.ack", call_id: this.callId });
        return this.finish({ kind: "gone" });
      }
      return this.finish(endOf(f));
    }
    if (f.type === "error" && f.call_id === this.callId && f.code === "duplicate_call") this.exists = true;
    if (f.type === "error" && f.call_id === this.barrier && f.code === "unknown_call" && !this.exists) {
      // The probe was queued as a new call (no app connected): take it back; the real call is gone.
      this.sock.send({ type: "tool.cancel", call_id: this.callId, reason: "probe" });
      this.finish({ kind: "gone" });
    }
  }
}

function endOf(f: ToolResultOut): CallEnd {
  if (f.result) return { kind: "result", result: f.result };
  return { kind: "error", code: f.error?.code ?? "internal", message: f.error?.message ?? "no result" };
}
