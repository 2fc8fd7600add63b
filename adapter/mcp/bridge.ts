// The MCP ↔ LineUp bridge: tools/list from the built-ins plus the app's catalog, tools/call carried through
// the agent adapter to the human, with progress while waiting, a bridge-side timeout and cancellation.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BUILTIN_TOOLS } from "../../shared/builtin-tools.js";
import type { ToolDef, ToolResultBody } from "../../shared/protocol.js";
import { checkArguments } from "../../shared/schema.js";
import { errorToMcp, resultToMcp, timeoutToMcp } from "./results.js";
import { buildCatalog, GENERIC_CALL, GENERIC_LIST, planCall, planGenericCall, schemaFor, type PlannedCall } from "./tools.js";

/** What the bridge needs of the adapter's AgentClient (kept structural so the bridge can be read alone). */
export interface BridgeAgent {
  readonly presence: { apps: number };
  readonly appTools: ToolDef[];
  readonly connected: boolean;
  /** Set once the client stopped for good (e.g. the session was deleted): the bridge then connects anew. */
  readonly lastError?: { code: string; message: string } | undefined;
  call(name: string, action: string | undefined, args?: Record<string, unknown>, opts?: { timeoutS?: number; signal?: AbortSignal }): Promise<ToolResultBody>;
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
  log: (line: string) => void;
}

export interface Connection {
  agent: BridgeAgent;
  /** The pairing link, when known. */
  appUrl?: string;
}

type Extra = {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: { method: "notifications/progress"; params: { progressToken: string | number; progress: number; total?: number; message?: string } }) => Promise<void>;
};

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
  private open = 0;

  constructor(
    private readonly server: Server,
    private readonly connect: () => Promise<Connection>,
    private readonly opts: BridgeOptions,
  ) {
    server.setRequestHandler(ListToolsRequestSchema, () => {
      const { tools } = this.catalog();
      this.listedSig = JSON.stringify(tools);
      return { tools };
    });
    server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
      this.callTool(req.params.name, (req.params.arguments ?? {}) as Record<string, unknown>, extra as unknown as Extra),
    );
  }

  /** Connects now (for the pairing link on stderr); failures are retried by the next call. */
  start(): Promise<Connection> {
    return this.agent();
  }

  private catalog() {
    return buildCatalog(this.conn?.agent.appTools ?? [], this.opts.defaultTimeoutS, this.opts.maxTimeoutS);
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

  private async callTool(name: string, input: Record<string, unknown>, extra: Extra): Promise<CallToolResult> {
    if (name === GENERIC_LIST) return this.listTools(extra.signal);
    let planned: PlannedCall | string;
    let def: ToolDef | undefined;
    if (name === GENERIC_CALL) {
      planned = planGenericCall(input, this.opts.defaultTimeoutS, this.opts.maxTimeoutS);
      if (typeof planned !== "string") {
        const tool = planned.tool;
        def = this.conn?.agent.appTools.find((t) => t.name === tool) ?? BUILTIN_TOOLS.find((t) => t.name === tool);
      }
    } else {
      const route = this.catalog().routes.get(name);
      if (!route) return errorToMcp("unknown_tool", `no tool named ${name}`, name);
      def = route.def;
      planned = planCall(route, input, this.opts.defaultTimeoutS, this.opts.maxTimeoutS);
    }
    if (typeof planned === "string") return errorToMcp("invalid_arguments", planned, name);
    // Check what we can here, so bad input is answered at once even while no app is open to check it.
    if (def) {
      const schema = schemaFor(def, planned.action);
      if (schema === "unknown_action") {
        const names = def.type === "action" ? [] : def.actions.map((a) => a.name);
        return errorToMcp("unknown_action", `${def.name} has no action ${JSON.stringify(planned.action)}; actions: ${names.join(", ")}`, name);
      }
      const bad = schema ? checkArguments(schema, planned.args) : null;
      if (bad) return errorToMcp("invalid_arguments", bad, name);
    }
    return this.run(name, planned, extra);
  }

  private async run(name: string, p: PlannedCall, extra: Extra): Promise<CallToolResult> {
    const started = Date.now();
    const token = extra._meta?.progressToken;
    let lastProgress = -1;
    const progress = (message: string) => {
      if (token === undefined || extra.signal.aborted) return;
      // progress must grow with every notification (MCP spec).
      const value = Math.max(lastProgress + 0.001, Math.round((Date.now() - started) / 100) / 10);
      lastProgress = value;
      extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: value, total: p.timeoutS, message } }).catch(() => {});
    };
    const waitingText = () => {
      const waited = Math.round((Date.now() - started) / 1000);
      const conn = this.conn;
      if (!conn) return `Connecting to the LineUp relay… (${waited} s of ${p.timeoutS} s)`;
      if (!conn.agent.connected) return `Reconnecting to the LineUp relay; the request stays queued there (${waited} s of ${p.timeoutS} s)`;
      if (conn.agent.presence.apps === 0)
        return `Nobody has the LineUp app open yet; the request is queued for the human${conn.appUrl ? `. Pairing link: ${conn.appUrl}` : ""} (${waited} s of ${p.timeoutS} s)`;
      return `Waiting for the human to answer ${name} (${waited} s of ${p.timeoutS} s)`;
    };

    // One controller ends the adapter call: MCP cancellation, or the bridge's own deadline.
    const ac = new AbortController();
    let timedOut = false;
    const onAbort = () => ac.abort();
    extra.signal.addEventListener("abort", onAbort, { once: true });
    const deadline = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, p.timeoutS * 1000 + this.opts.graceMs);
    progress(waitingText());
    const ticker = setInterval(() => progress(waitingText()), this.opts.progressMs);
    const stopped = new Promise<never>((_, reject) =>
      ac.signal.addEventListener("abort", () => reject(Object.assign(new Error("cancelled"), { code: "cancelled" })), { once: true }),
    );
    stopped.catch(() => {});

    this.open += 1;
    try {
      const conn = await Promise.race([this.agent(), stopped]).catch((e: unknown) => {
        if (timedOut || extra.signal.aborted) throw e;
        throw Object.assign(new Error(`cannot reach the LineUp relay: ${codeOf(e).message}`), { code: "not_connected" });
      });
      this.status(conn);
      // The wait counts from the host's call: time spent connecting comes off the relay's deadline.
      const remainingS = Math.max(1, Math.ceil(p.timeoutS - (Date.now() - started) / 1000));
      const result = await conn.agent.call(p.tool, p.action, p.args, { timeoutS: remainingS, signal: ac.signal });
      return resultToMcp(result);
    } catch (e) {
      const { code, message } = codeOf(e);
      const nobody = this.conn?.agent.presence.apps === 0;
      if (code === "timeout" || (timedOut && !extra.signal.aborted)) return timeoutToMcp(name, p.timeoutS, nobody, this.conn?.appUrl);
      if (extra.signal.aborted) return errorToMcp("cancelled", "the host cancelled the call", name); // not delivered: the SDK drops answers to cancelled requests
      return errorToMcp(code, message, name);
    } finally {
      this.open -= 1;
      clearTimeout(deadline);
      clearInterval(ticker);
      extra.signal.removeEventListener("abort", onAbort);
      if (this.conn) this.status(this.conn);
    }
  }

  /** The agent's presence for the app: `waiting` while a request is open, else `working`. */
  private status(conn: Connection) {
    try {
      conn.agent.setStatus(this.open > 0 ? "waiting" : "working", this.open > 0 ? `${this.open} request(s) for the human` : undefined);
    } catch {
      /* not connected right now; the next change sends it */
    }
  }

  private async listTools(signal: AbortSignal): Promise<CallToolResult> {
    let conn: Connection;
    try {
      conn = await this.agent();
    } catch (e) {
      return errorToMcp("not_connected", codeOf(e).message, GENERIC_LIST);
    }
    if (signal.aborted) return errorToMcp("cancelled", "the host cancelled the call", GENERIC_LIST);
    const appTools = conn.agent.appTools;
    const { routes } = this.catalog();
    const mcpNameOf = new Map([...routes.values()].map((r) => [r.tool, r.mcpName]));
    const tools = (appTools.length ? appTools : BUILTIN_TOOLS).map((t) => ({ ...t, mcp_tool: mcpNameOf.get(t.name) ?? null }));
    const head = [
      `apps open: ${conn.agent.presence.apps}${conn.agent.presence.apps === 0 && conn.appUrl ? ` (pairing link: ${conn.appUrl})` : ""}`,
      appTools.length
        ? `The app registers ${appTools.length} tool(s). Call them by their MCP tool name, or with lineup_call {tool, action, arguments}.`
        : "No app has registered tools yet; these are the built-in tools every LineUp app provides.",
    ];
    return { content: [{ type: "text", text: `${head.join("\n")}\n${JSON.stringify(tools, null, 2)}` }] };
  }
}
