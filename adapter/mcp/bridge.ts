// The MCP ↔ LineUp bridge of `lineup mcp` (stdio): tools/list from the built-ins plus the app's catalog,
// tools/call carried through the agent adapter to the human, with progress while waiting, a wait budget that
// answers "not yet, call await_answer" before the host's own cap, a bridge-side timeout and cancellation.
// Catalog, planning and result shaping are shared with the relay's `POST /mcp` (shared/mcp/).
import type { CallToolResult, Server, Tool } from "@modelcontextprotocol/server";
import type { ToolDef, ToolResultBody } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { capWait, waitBudget } from "../../shared/mcp/budget.js";
import { mcpCallId } from "../../shared/mcp/call-id.js";
import { AWAIT_ANSWER, buildCatalog, type PlannedCall } from "../../shared/mcp/catalog.js";
import { hold, isClientTimeout } from "../../shared/mcp/hold.js";
import { lineupToolsResult, prepareToolCall, waitingText, type CatalogContext } from "../../shared/mcp/prepare.js";
import { endToMcp, errorToMcp, pendingToMcp, type CallEnd, type McpCallResult } from "../../shared/mcp/results.js";
import { APPROVE, APPROVE_TOOL, approveCall, type ApproveConfig } from "./approve.js"; // issue 17: permissions
import { LineUpError } from "../../shared/client/errors.js";

/** What the bridge needs of the adapter's AgentClient (kept structural so the bridge can be read alone). */
export interface BridgeAgent {
  readonly presence: { apps: number };
  readonly appTools: ToolDef[];
  readonly connected: boolean;
  /** A sealed (E2E) session: each new question gets a fresh call id on the wire (see open()). */
  readonly sealed?: boolean;
  /** Set once the client stopped for good (e.g. the session was deleted): the bridge then connects anew. */
  readonly lastError?: { code: string; message: string } | undefined;
  call(
    name: string,
    action: string | undefined,
    args?: Record<string, unknown>,
    opts?: { timeoutS?: number; signal?: AbortSignal; callId?: string },
  ): Promise<ToolResultBody>;
  setStatus(state: string, detail?: string): void;
  on(event: "tools", cb: (tools: ToolDef[]) => void): () => void;
}

export interface BridgeOptions {
  /** Seconds a call waits when the model gives no `timeout` (seed 004: 600). */
  defaultTimeoutS: number;
  /** Ceiling on any call's wait, so a result comes back before the host's own limit. */
  maxTimeoutS: number;
  /** Progress notification period in ms (≤ 20 000: hosts drop a call that is silent longer). */
  progressMs: number;
  /** Grace after the relay's deadline before the bridge ends the call itself, in ms. */
  graceMs: number;
  /** How long one request without progressToken may wait before it answers with a pending handle (s). */
  waitBudgetS: number;
  log: (line: string) => void;
  /** Issue 17: offer `approve`, the headless permission prompt tool (adapter/mcp/approve.ts). */
  approve?: ApproveConfig;
}

export interface Connection {
  agent: BridgeAgent;
  /** The pairing link, when known. */
  appUrl?: string;
}

/** What a waiting tools/call needs of its MCP request (built from the SDK v2 handler context). */
type Extra = {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: {
    method: "notifications/progress";
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  }) => Promise<void>;
};

/** One LineUp call of this process, alive across the MCP requests that wait for it. */
interface OpenCall {
  callId: string;
  name: string;
  planned: PlannedCall;
  started: number;
  /** Resolves with how the call ended; never rejects. */
  end: Promise<CallEnd>;
  finished: boolean;
  /** How it ended, once it did. */
  outcome?: CallEnd;
  /** Ends the adapter call (sends tool.cancel). */
  cancel: AbortController;
}

/** Finished calls nobody has collected are kept this long, like the relay keeps unacked results. */
const KEEP_MS = 24 * 3600_000;
const MAX_KEPT = 1000;

/** Carries an error code the way the adapter's LineUpError does. */
function codeOf(e: unknown): { code: string; message: string } {
  if (e && typeof e === "object") {
    const o = e as { code?: unknown; message?: unknown };
    return { code: typeof o.code === "string" ? o.code : "internal", message: typeof o.message === "string" ? o.message : String(e) };
  }
  return { code: "internal", message: String(e) };
}

export class Bridge {
  private conn?: Connection;
  private connecting?: Promise<Connection>;
  private listedSig = "";
  /** Calls of this process by call_id: joins, await_answer and answers nobody collected yet. */
  private readonly calls = new Map<string, OpenCall>();
  /** Per process: identical questions from two servers are two cards, each server's own. */
  private readonly identity = randomId(12);

  constructor(
    private readonly server: Server,
    private readonly connect: () => Promise<Connection>,
    private readonly opts: BridgeOptions,
  ) {
    server.setRequestHandler("tools/list", () => {
      const { tools } = this.catalog();
      this.listedSig = JSON.stringify(tools);
      // shared/mcp builds the spec's shapes without SDK types; this is where they meet v2's.
      return { tools: tools as Tool[] };
    });
    server.setRequestHandler("tools/call", async (req, ctx) => {
      const extra: Extra = { signal: ctx.mcpReq.signal, _meta: req.params._meta, sendNotification: (n) => ctx.mcpReq.notify(n) };
      const r = await this.callTool(req.params.name, (req.params.arguments ?? {}) as Record<string, unknown>, extra);
      // The era's wire shape of a result (the SDK's codec; low-level handlers call it themselves), as the Worker does.
      return server.projectCallToolResult(r as CallToolResult, undefined);
    });
  }

  /** Connects now (for the pairing link on stderr); failures are retried by the next call. */
  start(): Promise<Connection> {
    return this.agent();
  }

  private cx(): CatalogContext {
    return { appTools: this.conn?.agent.appTools ?? [], defaultTimeoutS: this.opts.defaultTimeoutS, maxTimeoutS: this.opts.maxTimeoutS };
  }

  private catalog() {
    const c = buildCatalog(this.cx().appTools, this.opts.defaultTimeoutS, this.opts.maxTimeoutS);
    if (this.opts.approve) c.tools.push(APPROVE_TOOL); // issue 17
    return c;
  }

  private agent(): Promise<Connection> {
    if (this.conn?.agent.lastError) {
      this.opts.log(`the relay connection ended (${this.conn.agent.lastError.code}); connecting again`);
      this.conn = undefined;
      this.connecting = undefined;
    }
    if (this.conn) return Promise.resolve(this.conn);
    this.connecting ??= this.connect().then(
      (c) => {
        this.conn = c;
        c.agent.on("tools", () => this.catalogChanged());
        this.catalogChanged();
        return c;
      },
      (e: unknown) => {
        this.connecting = undefined;
        throw e;
      },
    );
    return this.connecting;
  }

  /** Tells the host to re-read tools/list when what it would get differs from what it last got. */
  private catalogChanged() {
    if (!this.listedSig) return; // the host has not listed yet; it will see the current catalog
    const sig = JSON.stringify(this.catalog().tools);
    if (sig === this.listedSig) return;
    this.listedSig = sig;
    this.server.sendToolListChanged().catch((e: unknown) => this.opts.log(`tools/list_changed not sent: ${codeOf(e).message}`));
  }

  private async callTool(name: string, input: Record<string, unknown>, extra: Extra): Promise<McpCallResult> {
    if (name === APPROVE && this.opts.approve) return approveCall(input, extra, () => this.agent(), this.opts.approve, this.opts.log); // issue 17
    const p = prepareToolCall(name, input, this.cx());
    switch (p.kind) {
      case "done":
        return p.result;
      case "list":
        return this.listTools(extra.signal);
      case "await": {
        const c = this.calls.get(p.callId);
        if (!c) return errorToMcp("unknown_call", `nothing is waiting under call_id ${p.callId}`, AWAIT_ANSWER);
        return this.wait(c, extra, "the request", p.waitS);
      }
      case "call": {
        const callId = await mcpCallId(this.identity, p.planned);
        // The same question while it is open, or answered but not yet collected, joins it: one card. A call
        // that ended without an answer (an error, the relay unreachable) is asked anew.
        const have = this.calls.get(callId);
        const c = have && (!have.finished || have.outcome?.kind === "result") ? have : this.open(callId, name, p.planned);
        return this.wait(c, extra, name);
      }
    }
  }

  /** Starts the LineUp call; it lives on after the MCP request that started it (await_answer). */
  private open(callId: string, name: string, p: PlannedCall): OpenCall {
    const started = Date.now();
    const cancel = new AbortController();
    const c: OpenCall = {
      callId,
      name,
      planned: p,
      started,
      finished: false,
      cancel,
      end: Promise.resolve({ kind: "error", code: "internal", message: "not started" }),
    };
    const run = async (): Promise<CallEnd> => {
      // The bridge's own deadline: the relay ends the call first, unless the relay cannot be reached.
      let timedOut = false;
      const deadline = setTimeout(
        () => {
          timedOut = true;
          cancel.abort();
        },
        p.timeoutS * 1000 + this.opts.graceMs,
      );
      const stopped = new Promise<never>((_, reject) =>
        cancel.signal.addEventListener("abort", () => reject(new LineUpError("cancelled", "cancelled")), { once: true }),
      );
      stopped.catch(() => {});
      try {
        const conn = await Promise.race([this.agent(), stopped]).catch((e: unknown) => {
          if (timedOut || cancel.signal.aborted) throw e;
          throw new LineUpError("not_connected", `cannot reach the LineUp relay: ${codeOf(e).message}`);
        });
        this.status(conn);
        // The wait counts from the host's call: time spent connecting comes off the relay's deadline.
        const remainingS = Math.max(1, Math.ceil(p.timeoutS - (Date.now() - started) / 1000));
        // Sealed sessions: the id on the wire is fresh per question. A deterministic id would let a relay
        // replay the human's sealed answer to an earlier, identical question (the envelope's AAD binds the
        // call id, nothing else of the question): issue 26. Joining by `callId` still works in this process.
        const wireId = conn.agent.sealed === true ? `${callId}_${randomId(9)}` : callId;
        const result = await conn.agent.call(p.tool, p.action, p.args, { timeoutS: remainingS, signal: cancel.signal, callId: wireId });
        return { kind: "result", result };
      } catch (e) {
        const { code, message } = codeOf(e);
        if (code === "timeout" || timedOut) return { kind: "error", code: "timeout", message };
        return { kind: "error", code: cancel.signal.aborted ? "cancelled" : code, message };
      } finally {
        clearTimeout(deadline);
      }
    };
    c.end = run().then((outcome) => {
      c.finished = true;
      c.outcome = outcome;
      if (this.conn) this.status(this.conn);
      // Collected or not, a finished call is forgotten after a day (the relay keeps results as long).
      setTimeout(() => this.forget(c), KEEP_MS).unref?.();
      return outcome;
    });
    this.calls.set(callId, c);
    this.trim();
    return c;
  }

  /** Holds one MCP request for `c`: its end, the wait budget, or the request's cancellation. */
  private async wait(c: OpenCall, extra: Extra, label: string, capS?: number): Promise<McpCallResult> {
    const token = extra._meta?.progressToken;
    const budget = capWait(
      waitBudget({
        progress: token !== undefined,
        timeoutS: c.planned.timeoutS,
        client: [this.server.getClientVersion()?.name],
        transport: "stdio",
        noProgressS: this.opts.waitBudgetS,
      }),
      capS,
    );
    const nobody = () => this.conn?.agent.presence.apps === 0;
    const held = await hold(c.end, {
      budgetMs: budget.seconds * 1000,
      signal: extra.signal,
      progressMs: this.opts.progressMs,
      progress:
        token === undefined
          ? undefined
          : (u) => void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...u } }).catch(() => {}),
      totalS: c.planned.timeoutS,
      text: () =>
        waitingText({ tool: c.name, waitedS: (Date.now() - c.started) / 1000, timeoutS: c.planned.timeoutS, state: this.state(), appUrl: this.conn?.appUrl }),
    });
    if (held.kind === "budget") return pendingToMcp(label, c.callId, (Date.now() - c.started) / 1000, nobody(), this.conn?.appUrl);
    if (held.kind === "aborted") {
      // The host's own timer is not the user: the card stays open for a retry or await_answer.
      if (!isClientTimeout(extra.signal.reason)) {
        c.cancel.abort();
        this.forget(c);
      }
      return errorToMcp("cancelled", "the host cancelled the call", c.name); // not delivered: the SDK drops answers to cancelled requests
    }
    this.forget(c); // handed to the host: an identical question from now on is a new card
    return endToMcp(held.value, c.name, c.planned.timeoutS, nobody(), this.conn?.appUrl);
  }

  private state(): "connecting" | "reconnecting" | "no_app" | "waiting" {
    const conn = this.conn;
    if (!conn) return "connecting";
    if (!conn.agent.connected) return "reconnecting";
    return conn.agent.presence.apps === 0 ? "no_app" : "waiting";
  }

  private forget(c: OpenCall): void {
    if (this.calls.get(c.callId) === c) this.calls.delete(c.callId);
  }

  /** Bounds memory: the oldest finished calls nobody collected go first. */
  private trim(): void {
    if (this.calls.size <= MAX_KEPT) return;
    for (const c of this.calls.values()) {
      if (this.calls.size <= MAX_KEPT) break;
      if (c.finished) this.calls.delete(c.callId);
    }
  }

  /** The agent's presence for the app: `waiting` while a request is open, else `working`. */
  private status(conn: Connection) {
    const open = [...this.calls.values()].filter((c) => !c.finished).length;
    try {
      conn.agent.setStatus(open > 0 ? "waiting" : "working", open > 0 ? `${open} request(s) for the human` : undefined);
    } catch {
      /* not connected right now; the next change sends it */
    }
  }

  private async listTools(signal: AbortSignal): Promise<McpCallResult> {
    let conn: Connection;
    try {
      conn = await this.agent();
    } catch (e) {
      return errorToMcp("not_connected", codeOf(e).message, "lineup_tools");
    }
    if (signal.aborted) return errorToMcp("cancelled", "the host cancelled the call", "lineup_tools");
    return lineupToolsResult(conn.agent.appTools, conn.agent.presence.apps, this.cx(), conn.appUrl);
  }
}
