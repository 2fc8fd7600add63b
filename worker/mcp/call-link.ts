// Waiting for one LineUp call from the Worker, over a hibernatable socket into the session object: the object
// sleeps while nothing happens, and wakes only to hand over the answer. The socket is the call's own caller
// connection (client id derived from the call_id), so the relay's kept results, identical-repeat rule and
// acks work exactly as for any agent. A dropped socket (eviction with close, deploy) is reconnected and the
// call resumed: kept results come again after hello, and a probe tells an open call from a forgotten one.
import type { ToolResultOut } from "../../shared/contract/protocol.js";
import type { CallEnd } from "../../shared/mcp/results.js";
import { CLOSE, isTerminalClose } from "../../shared/contract/close.js";
import { LineupSocket } from "./lineup-socket.js";
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

/** The caller's client id of a call: legal in the contract's client id alphabet, one per call_id. */
/** The reserved internal caller of one question (`~` ids: no socket of a client can claim them). */
export const callerIdOf = (callId: string) => `~mcp.${callId.slice(4)}`;

const BACKOFF_MS = [250, 500, 1000, 2000, 5000];

let barriers = 0;

export class CallLink {
  readonly end: Promise<LinkEnd>;
  state: "connecting" | "reconnecting" | "waiting" = "connecting";
  private settle: (e: LinkEnd) => void = () => {};
  private sock: LineupSocket | undefined;
  private stopped = false;
  private settled = false;
  private lastApps = 0;
  private pendingStatus: object | undefined;

  private constructor(
    private readonly link: SessionLink,
    private readonly sid: string,
    readonly callId: string,
    private readonly log: (line: string) => void,
  ) {
    this.end = new Promise((r) => (this.settle = r));
  }

  /** Starts (or joins) `first`, or — for "probe" — picks up an earlier call by its id. */
  static start(link: SessionLink, sid: string, callId: string, first: CallFrame | "probe", log: (line: string) => void): CallLink {
    const c = new CallLink(link, sid, callId, log);
    void c.run(first);
    return c;
  }

  /** Apps connected, as this connection last heard. */
  get apps(): number {
    return this.sock?.apps ?? this.lastApps;
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
    this.stopped = true;
    const sock = this.sock;
    if (sock?.send(frame)) return sock.close();
    sock?.close();
    const once = await LineupSocket.open(this.link, this.sid, callerIdOf(this.callId)).catch(() => undefined);
    once?.send(frame);
    once?.close();
  }

  /** The agent's presence status for the app; sent now, or as soon as the link is up. */
  status(state: string, detail?: string): void {
    this.pendingStatus = detail === undefined ? { type: "status", state } : { type: "status", state, detail };
    if (this.sock?.send(this.pendingStatus)) this.pendingStatus = undefined;
  }

  /** Stops waiting; the call stays open in the session (a later await_answer or identical retry finds it). */
  close(): void {
    this.stopped = true;
    this.sock?.close();
    this.finish({ kind: "failed", message: "closed" });
  }

  private finish(e: LinkEnd): void {
    if (this.settled) return;
    this.settled = true;
    this.settle(e);
  }

  private async run(first: CallFrame | "probe"): Promise<void> {
    let mode = first;
    for (let attempt = 0; !this.stopped; attempt++) {
      let sock: LineupSocket;
      try {
        sock = await LineupSocket.open(this.link, this.sid, callerIdOf(this.callId));
      } catch (e) {
        if (e instanceof LinkError && e.code === "session_not_found") return this.finish({ kind: "session_gone" });
        this.log(`mcp: link to the session failed (${e instanceof Error ? e.message : String(e)}); retrying`);
        await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!);
        continue;
      }
      if (this.stopped) return sock.close();
      this.sock = sock;
      this.state = "waiting";
      if (this.pendingStatus && sock.send(this.pendingStatus)) this.pendingStatus = undefined;
      const outcome = await this.watch(sock, mode);
      if (outcome !== "dropped") return this.finish(outcome);
      this.lastApps = sock.apps;
      this.sock = undefined;
      this.state = "reconnecting";
      // Resuming never re-sends the call: if it is gone meanwhile (answered and acked by a joined request,
      // or cancelled), sending it again would put a second card in front of the human.
      mode = "probe";
      attempt = -1;
      await sleep(BACKOFF_MS[0]!);
    }
  }

  /** Reads one connection until the call ends there, or the socket drops ("dropped": reconnect). */
  private watch(sock: LineupSocket, mode: CallFrame | "probe"): Promise<LinkEnd | "dropped"> {
    return new Promise((resolve) => {
      const barrier = `mcp-barrier-${++barriers}`;
      let exists = mode !== "probe";
      let done = false;
      let off: () => void = () => {};
      const finish = (e: LinkEnd | "dropped") => {
        if (done) return;
        done = true;
        off();
        resolve(e);
      };
      // Replayed: a kept result is sent right after hello, before this listener could have been added.
      off = sock.on((f) => {
        if (f.type === "tool.result" && f.call_id === this.callId) {
          if (f.name === PROBE_TOOL) {
            // Our own probe, rejected (no app provides it): the real call is gone.
            sock.send({ type: "tool.ack", call_id: this.callId });
            return finish({ kind: "gone" });
          }
          return finish(endOf(f));
        }
        if (f.type === "error" && f.call_id === this.callId && f.code === "duplicate_call") exists = true;
        if (f.type === "error" && f.call_id === barrier && f.code === "unknown_call" && !exists) {
          // The probe was queued as a new call (no app connected): take it back; the real call is gone.
          sock.send({ type: "tool.cancel", call_id: this.callId, reason: "probe" });
          finish({ kind: "gone" });
        }
      }, true);
      if (done) off(); // finished during the replay, before `off` was assigned
      void sock.closed.then((c) => {
        if (c.code === CLOSE.replaced) finish({ kind: "replaced" });
        else if (c.code === CLOSE.sessionEnded) finish({ kind: "session_gone" });
        else if (isTerminalClose(c.code)) finish({ kind: "failed", message: `the session closed the link (${c.code} ${c.reason})` });
        else finish(this.stopped ? { kind: "failed", message: "closed" } : "dropped");
      });
      if (done) return;
      if (mode === "probe") {
        sock.send({ type: "tool.call", call_id: this.callId, name: PROBE_TOOL, arguments: {}, timeout_s: 1 });
        // A result for a call that does not exist is answered with an error naming our unique id: after it,
        // every answer to the probe has arrived.
        sock.send({ type: "tool.result", call_id: barrier, result: { message: "barrier" } });
      } else {
        sock.send(mode);
      }
    });
  }
}

function endOf(f: ToolResultOut): CallEnd {
  if (f.result) return { kind: "result", result: f.result };
  return { kind: "error", code: f.error?.code ?? "internal", message: f.error?.message ?? "no result" };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
