// The relay as a remote MCP server: one SDK v2 `Server` per HTTP request (stateless), the same catalog and
// result shaping as `lineup mcp` (shared/mcp/), and calls carried to the human over a LineUp socket into the
// session object (call-link.ts) so the object hibernates while the Worker holds the client's stream.
import { Server, type CallToolResult, type Tool } from "@modelcontextprotocol/server";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/server/validators/cf-worker";
import { LIMITS, type ToolDef } from "../../shared/contract/protocol.js";
import { capWait, NO_PROGRESS_BUDGET_S, waitBudget } from "../../shared/mcp/budget.js";
import { mcpCallId } from "../../shared/mcp/call-id.js";
import { AWAIT_ANSWER, buildCatalog, GENERIC_LIST, SERVER_INSTRUCTIONS, type PlannedCall } from "../../shared/mcp/catalog.js";
import { hold } from "../../shared/mcp/hold.js";
import { lineupToolsResult, needsAppCatalog, prepareToolCall, waitingText, type CatalogContext } from "../../shared/mcp/prepare.js";
import { endToMcp, errorToMcp, pendingToMcp, type McpCallResult } from "../../shared/mcp/results.js";
import { CallLink, type CallFrame, type LinkEnd } from "./call-link.js";
import { CancelWatch, rendezvousIdOf } from "./cancel.js";
import { LineupSocket } from "./lineup-socket.js";
import { LinkError, type SessionLink } from "./port.js";
import type { RequestScope } from "./scope.js";
import { version } from "../../package.json";

export const SERVER_INFO = { name: "lineup-relay", version } as const;

/** Tunables of `POST /mcp`; tests shorten the periods. */
export interface RemoteOptions {
  /** Wait when the model gives no `timeout` (seed 004: 600 s). */
  defaultTimeoutS: number;
  maxTimeoutS: number;
  /** Between progress notifications (MCP hosts drop a call silent for longer than ~20 s). */
  progressMs: number;
  /** The wait budget of a request without progressToken. */
  noProgressBudgetS: number;
}

export const REMOTE_DEFAULTS: RemoteOptions = {
  defaultTimeoutS: LIMITS.defaultTimeoutS,
  maxTimeoutS: LIMITS.maxTimeoutS,
  progressMs: 15_000,
  noProgressBudgetS: NO_PROGRESS_BUDGET_S,
};

/** Who is calling, as the route authenticated it. */
export interface Caller {
  sid: string;
  /** Hash of the bearer token: the caller identity inside call ids. */
  tokenId: string;
  userAgent: string;
  /** `Lineup-Wait-Budget`, seconds. */
  budgetOverrideS?: number | undefined;
}

/** The catalog's LineUp connection: a fixed client id, closed right after hello and the catalog. */
const LIST_CLIENT = "~mcp.list";

/** One MCP request that waits: its JSON-RPC id, its abort, who the client says it is, its progress sink. */
interface Waiter {
  requestId: string | number;
  signal: AbortSignal;
  clientName: string | undefined;
  progress: ((u: { progress: number; total?: number; message: string }) => void) | undefined;
}

type Snapshot = { ok: true; appTools: ToolDef[]; apps: number } | { ok: false; result: McpCallResult };

async function snapshot(link: SessionLink, sid: string, tool: string): Promise<Snapshot> {
  try {
    const s = await LineupSocket.open(link, sid, LIST_CLIENT);
    const out = { ok: true as const, appTools: s.appTools, apps: s.apps };
    s.close();
    return out;
  } catch (e) {
    if (e instanceof LinkError && e.code === "session_not_found") return { ok: false, result: errorToMcp("session_gone", e.message, tool) };
    return { ok: false, result: errorToMcp("not_connected", e instanceof Error ? e.message : String(e), tool) };
  }
}

export function createRemoteServer(deps: {
  link: SessionLink;
  caller: Caller;
  scope: RequestScope;
  era: "legacy" | "modern";
  opts: RemoteOptions;
  log: (line: string) => void;
}): Server {
  const { link, caller, scope, opts, log } = deps;
  const server = new Server(SERVER_INFO, {
    // Stateless: there is no stream to announce list changes on; hosts that list once still have the
    // built-ins, await_answer and lineup_call (which reaches any app tool by name).
    capabilities: { tools: {} },
    instructions: SERVER_INSTRUCTIONS,
    jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
  });
  const cx = (appTools: ToolDef[]): CatalogContext => ({ appTools, defaultTimeoutS: opts.defaultTimeoutS, maxTimeoutS: opts.maxTimeoutS });

  server.setRequestHandler("tools/list", async () => {
    const s = await snapshot(link, caller.sid, "tools/list");
    // An unreachable session still lists the built-ins: a host that lists once keeps working tools.
    const { tools } = buildCatalog(s.ok ? s.appTools : [], opts.defaultTimeoutS, opts.maxTimeoutS);
    // shared/mcp builds the spec's shapes without SDK types; this is the one place they meet v2's.
    return { tools: tools as Tool[] };
  });

  /** The era's wire shape of a result (the SDK's codec; low-level handlers call it themselves). */
  const project = (r: McpCallResult) => server.projectCallToolResult(r as CallToolResult, undefined);

  server.setRequestHandler("tools/call", async (req, ctx) => {
    const name = req.params.name;
    const input = (req.params.arguments ?? {}) as Record<string, unknown>;
    let appTools: ToolDef[] = [];
    let apps = 0;
    if (needsAppCatalog(name) || name === GENERIC_LIST) {
      const s = await snapshot(link, caller.sid, name);
      if (!s.ok) return project(s.result);
      appTools = s.appTools;
      apps = s.apps;
    }
    const p = prepareToolCall(name, input, cx(appTools));
    switch (p.kind) {
      case "done":
        return project(p.result);
      case "list":
        return project(lineupToolsResult(appTools, apps, cx(appTools)));
      case "call":
      case "await": {
        const token = req.params._meta?.progressToken;
        const waiter: Waiter = {
          requestId: ctx.mcpReq.id,
          signal: ctx.mcpReq.signal,
          clientName: server.getClientVersion()?.name,
          progress:
            token === undefined
              ? undefined
              : (u) => void ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, ...u } }).catch(() => {}),
        };
        const r = p.kind === "call" ? await runCall(name, p.planned, waiter) : await runAwait(p.callId, waiter, p.waitS);
        return project(r);
      }
    }
  });

  async function runCall(name: string, planned: PlannedCall, w: Waiter): Promise<McpCallResult> {
    const callId = await mcpCallId(caller.tokenId, planned);
    const frame: CallFrame = { type: "tool.call", call_id: callId, name: planned.tool, arguments: planned.args, timeout_s: planned.timeoutS };
    if (planned.action !== undefined) frame.action = planned.action;
    return wait(name, callId, planned.timeoutS, frame, w);
  }

  async function runAwait(callId: string, w: Waiter, waitS: number | undefined): Promise<McpCallResult> {
    return wait(AWAIT_ANSWER, callId, undefined, "probe", w, waitS);
  }

  /** Holds the request until the call ends, the budget runs out, or the request goes away. */
  async function wait(
    name: string,
    callId: string,
    timeoutS: number | undefined,
    first: CallFrame | "probe",
    w: Waiter,
    capS?: number,
  ): Promise<McpCallResult> {
    const budget = capWait(
      waitBudget({
        progress: w.progress !== undefined,
        timeoutS: timeoutS ?? LIMITS.maxTimeoutS,
        client: [caller.userAgent, w.clientName],
        transport: "http",
        overrideS: caller.budgetOverrideS,
        noProgressS: opts.noProgressBudgetS,
      }),
      capS,
    );
    const cl = CallLink.start(link, caller.sid, callId, first, log);
    // Only 2025-era clients cancel with a notification; 2026-07-28 clients close the stream (see docs/mcp.md).
    const cw = deps.era === "legacy" ? CancelWatch.start(link, caller.sid, await rendezvousIdOf(caller.tokenId, caller.userAgent, w.requestId)) : undefined;
    const stop = new AbortController();
    let cancelled = false;
    const onAbort = () => stop.abort();
    w.signal.addEventListener("abort", onAbort, { once: true });
    void cw?.cancelled.then(() => {
      cancelled = true;
      stop.abort();
    });
    if (first !== "probe") cl.status("waiting", `${name}: waiting for the human`);
    const tool = first === "probe" ? "the request" : name;
    const held = await hold(cl.end, {
      budgetMs: budget.seconds * 1000,
      signal: stop.signal,
      progressMs: opts.progressMs,
      progress: w.progress,
      totalS: timeoutS,
      text: (waitedS) => waitingText({ tool, waitedS, timeoutS, state: cl.state === "waiting" ? (cl.apps === 0 ? "no_app" : "waiting") : cl.state }),
    });
    w.signal.removeEventListener("abort", onAbort);
    cw?.close();
    if (held.kind === "budget") {
      cl.close(); // no cancel: the card stays open for await_answer
      return pendingToMcp(tool, callId, held.waitedS, cl.apps === 0);
    }
    if (held.kind === "aborted") {
      if (cancelled) scope.keep(cl.cancel());
      else cl.close();
      // The client is gone or cancelled: nobody reads this (the SDK drops it), but it must be a result.
      return cancelled ? errorToMcp("cancelled", "the client cancelled the request", name) : pendingToMcp(tool, callId, 0, cl.apps === 0);
    }
    return shape(held.value, name, callId, timeoutS, cl);
  }

  function shape(end: LinkEnd, name: string, callId: string, timeoutS: number | undefined, cl: CallLink): McpCallResult {
    switch (end.kind) {
      case "result":
      case "error": {
        // Nothing was sent in a sealed session: nothing to acknowledge.
        if (end.kind === "error" && end.code === "e2e_sealed") return errorToMcp(end.code, end.message, name);
        // Acked only once the answer is on its way to the client: if the stream is gone first, the kept
        // result waits for await_answer or an identical retry.
        scope.onDelivered(() => {
          cl.status("working");
          scope.keep(cl.ack());
        });
        scope.onEnd(() => cl.close());
        const label = name === AWAIT_ANSWER && end.kind === "error" && end.code === "timeout" ? "the request" : name;
        return endToMcp(end, label, timeoutS, cl.apps === 0);
      }
      case "gone":
        cl.close();
        return errorToMcp("unknown_call", `nothing is waiting under call_id ${callId}`, name);
      case "replaced":
        cl.close();
        return pendingToMcp(name === AWAIT_ANSWER ? "the request" : name, callId, 0, cl.apps === 0);
      case "session_gone":
        cl.close();
        return errorToMcp("session_gone", "this token's LineUp session has expired or was deleted", name);
      case "failed":
        cl.close();
        return errorToMcp("not_connected", end.message, name);
    }
  }

  return server;
}
