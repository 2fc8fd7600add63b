// `lineup mcp`: a stdio MCP server that carries an MCP host's tool calls through the relay to the human.
// stdout IS the protocol: everything human-readable (pairing link, QR code, logs) goes to stderr.
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { Server } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import qrcode from "qrcode-terminal";
import { connectAgent, type AgentClient } from "../client/index.js";
import { announceSession } from "../cli/inbox.js";
import { defaultStateDir, normalizeUrl } from "../client/state.js";
import { ensureSession } from "../client/ensure.js";
import { LIMITS } from "../../shared/contract/protocol.js";
import { DEV_RELAY_URL } from "../../shared/contract/defaults.js";
import { SERVER_INSTRUCTIONS } from "../../shared/mcp/catalog.js";
import { Bridge, type Connection } from "./bridge.js";
import { approveConfig } from "./approve.js"; // issue 17: the headless permission prompt tool
import { AGENT_VERSION } from "../client/version.js";

export const MCP_DEFAULTS = {
  timeoutS: LIMITS.defaultTimeoutS,
  maxTimeoutS: LIMITS.maxTimeoutS,
  /** Hosts such as Claude Code reset their request timer on progress; MCP asks for ≤ 20 s gaps here. */
  progressS: 15,
  maxProgressS: 20,
  graceS: 2,
  /** A request without progressToken answers "not yet, call await_answer" after this long: Claude Desktop
   * ends stdio tool calls at 60 s whatever happens. */
  waitBudgetS: 50,
} as const;

export interface McpConfig {
  relayUrl: string;
  stateDir: string;
  projectDir: string;
  label?: string;
  /** Join this session instead of the saved one (LINEUP_SESSION + LINEUP_TOKEN). */
  sessionId?: string;
  token?: string;
  relayKey?: string;
  defaultTimeoutS: number;
  maxTimeoutS: number;
  progressMs: number;
  /** Wait budget of a request without progressToken (s). */
  waitBudgetS: number;
  qr: boolean;
  /** Also print the session's app link when it is in the inbox (--guest-link, LINEUP_GUEST_LINK=1). */
  guestLink: boolean;
}

export const MCP_USAGE = `usage: lineup mcp [options]
  --relay <url>          relay URL (LINEUP_RELAY_URL; default ${DEV_RELAY_URL})
  --project <dir>        project directory whose saved session to use (LINEUP_PROJECT_DIR; default: cwd)
  --state-dir <dir>      where sessions are saved (LINEUP_STATE_DIR; default ~/.lineup)
  --label <text>         label of a newly created session
  --timeout <s>          default wait for the human (LINEUP_MCP_TIMEOUT; default ${MCP_DEFAULTS.timeoutS})
  --max-timeout <s>      ceiling on any wait, below your host's tool timeout (LINEUP_MCP_MAX_TIMEOUT; default ${MCP_DEFAULTS.maxTimeoutS})
  --wait-budget <s>      a call without progress answers "not yet, call await_answer" after this long (LINEUP_WAIT_BUDGET_S; default ${MCP_DEFAULTS.waitBudgetS})
  --no-qr                print the pairing link without the QR code (LINEUP_MCP_QR=0)
  --guest-link           also print the session's app link, a shared credential (LINEUP_GUEST_LINK=1)
Also read: LINEUP_RELAY_KEY, LINEUP_SESSION + LINEUP_TOKEN, LINEUP_MCP_PROGRESS_S (default ${MCP_DEFAULTS.progressS}, max ${MCP_DEFAULTS.maxProgressS}).`;

class UsageError extends Error {}

function num(name: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`${name} must be a number from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return n;
}

/** Flags override LINEUP_* variables, which override the defaults. */
export function parseMcpArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): McpConfig {
  const flags = new Map<string, string>();
  let qr = env.LINEUP_MCP_QR !== "0";
  let guestLink = env.LINEUP_GUEST_LINK === "1";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--no-qr" || a === "--guest-link") {
      if (a === "--no-qr") qr = false;
      else guestLink = true;
      continue;
    }
    const m = /^--(relay|project|state-dir|label|timeout|max-timeout|wait-budget)(?:=(.*))?$/.exec(a);
    if (!m) throw new UsageError(`unknown argument ${JSON.stringify(a)}`);
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new UsageError(`--${m[1]} needs a value`);
    flags.set(m[1]!, v);
  }
  const timeoutS = num("--timeout", flags.get("timeout") ?? env.LINEUP_MCP_TIMEOUT, LIMITS.minTimeoutS, LIMITS.maxTimeoutS) ?? MCP_DEFAULTS.timeoutS;
  const maxTimeoutS =
    num("--max-timeout", flags.get("max-timeout") ?? env.LINEUP_MCP_MAX_TIMEOUT, LIMITS.minTimeoutS, LIMITS.maxTimeoutS) ?? MCP_DEFAULTS.maxTimeoutS;
  const progressS = num("LINEUP_MCP_PROGRESS_S", env.LINEUP_MCP_PROGRESS_S, 0.2, MCP_DEFAULTS.maxProgressS) ?? MCP_DEFAULTS.progressS;
  const waitBudgetS = num("--wait-budget", flags.get("wait-budget") ?? env.LINEUP_WAIT_BUDGET_S, 1, LIMITS.maxTimeoutS) ?? MCP_DEFAULTS.waitBudgetS;
  const cfg: McpConfig = {
    relayUrl: normalizeUrl(flags.get("relay") ?? (env.LINEUP_RELAY_URL || DEV_RELAY_URL)),
    stateDir: resolve(flags.get("state-dir") ?? (env.LINEUP_STATE_DIR || defaultStateDir())),
    projectDir: resolve(flags.get("project") ?? (env.LINEUP_PROJECT_DIR || process.cwd())),
    defaultTimeoutS: Math.min(timeoutS, maxTimeoutS),
    maxTimeoutS,
    progressMs: progressS * 1000,
    waitBudgetS,
    qr,
    guestLink,
  };
  const label = flags.get("label");
  if (label !== undefined) cfg.label = label;
  if (!env.LINEUP_SESSION !== !env.LINEUP_TOKEN) throw new UsageError("joining a session needs both LINEUP_SESSION and LINEUP_TOKEN");
  if (env.LINEUP_SESSION && env.LINEUP_TOKEN) {
    cfg.sessionId = env.LINEUP_SESSION;
    cfg.token = env.LINEUP_TOKEN;
  }
  if (env.LINEUP_RELAY_KEY) cfg.relayKey = env.LINEUP_RELAY_KEY;
  return cfg;
}

const log = (line: string) => process.stderr.write(`[lineup mcp] ${line}\n`);

/** Nothing but JSON-RPC may reach stdout: console output from any module goes to stderr. */
function guardStdout() {
  const toErr = (...a: unknown[]) => process.stderr.write(`${a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ")}\n`);
  console.log = toErr;
  console.info = toErr;
  console.debug = toErr;
}

function printPairing(url: string | undefined, sessionId: string, qr: boolean) {
  if (!url) {
    log(`joined session ${sessionId} (pairing link unknown: it was given by LINEUP_SESSION/LINEUP_TOKEN)`);
    return;
  }
  log(`session ${sessionId}: open this link on your phone to answer the agent:\n  ${url}`);
  if (qr) qrcode.generate(url, { small: true }, (code: string) => process.stderr.write(`${code}\n`));
}

/** Creates or reuses the project's session, then connects as a fresh agent client of it. */
async function connectFor(cfg: McpConfig): Promise<{ agent: AgentClient; appUrl?: string }> {
  let sessionId = cfg.sessionId;
  let token = cfg.token;
  let appUrl: string | undefined;
  if (!sessionId || !token) {
    // ensureSession holds the state dir's lock while it finds or creates the session, so servers started in
    // one directory at the same moment (hosts start them in parallel) end up in ONE session.
    const saved = await ensureSession({
      relayUrl: cfg.relayUrl,
      stateDir: cfg.stateDir,
      cwd: cfg.projectDir,
      ...(cfg.label !== undefined ? { label: cfg.label } : {}),
      ...(cfg.relayKey !== undefined ? { relayKey: cfg.relayKey } : {}),
    });
    sessionId = saved.sessionId;
    token = saved.agentToken;
    appUrl = saved.appUrl;
  }
  // Each MCP server is its own agent client: a shared client id would make the relay replace (4409) the
  // other server's socket and hand it this server's results.
  const agent = await connectAgent({
    relayUrl: cfg.relayUrl,
    sessionId,
    token,
    stateDir: cfg.stateDir,
    cwd: cfg.projectDir,
    clientId: `mcp_${randomBytes(6).toString("hex")}`,
    log,
  });
  appUrl ??= agent.appUrl;
  const link = appUrl;
  // The inbox's pairing link (or the paired-device count) instead of the session's link; never throws.
  const shown = await announceSession({
    relayUrl: cfg.relayUrl,
    stateDir: cfg.stateDir,
    sessionId: agent.sessionId,
    qr: cfg.qr,
    guestLink: cfg.guestLink,
    ...(link !== undefined ? { appUrl: link } : {}),
    log,
    v1: () => printPairing(link, agent.sessionId, cfg.qr),
  });
  // The bridge repeats appUrl in progress and results, i.e. to the model: only the link the human was shown.
  return appUrl !== undefined && (shown === "v1" || cfg.guestLink) ? { agent, appUrl } : { agent };
}

/**
 * Runs the server until the host closes stdin (or sends SIGTERM/SIGINT); resolves once the relay connection
 * is closed, so the caller may exit. Bad options throw (the CLI turns that into exit code 2).
 */
export async function runMcp(argv: string[]): Promise<void> {
  guardStdout();
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stderr.write(`${MCP_USAGE}\n`);
    return;
  }
  let cfg: McpConfig;
  try {
    cfg = parseMcpArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    const u = new Error(`${e.message}\n${MCP_USAGE}`);
    u.stack = u.message; // the CLI prints the stack of unexpected errors; this one is expected
    throw u;
  }
  const server = new Server(
    { name: "lineup", version: AGENT_VERSION },
    {
      capabilities: { tools: { listChanged: true } },
      instructions: SERVER_INSTRUCTIONS,
    },
  );
  let agent: AgentClient | undefined;
  const bridge = new Bridge(
    server,
    async (): Promise<Connection> => {
      const c = await connectFor(cfg);
      agent = c.agent;
      return c;
    },
    {
      defaultTimeoutS: cfg.defaultTimeoutS,
      maxTimeoutS: cfg.maxTimeoutS,
      progressMs: cfg.progressMs,
      graceMs: MCP_DEFAULTS.graceS * 1000,
      waitBudgetS: cfg.waitBudgetS,
      log,
      approve: approveConfig(cfg) /* issue 17 */,
    },
  );
  await new Promise<void>((resolve) => {
    let closing = false;
    const shutdown = () => {
      if (closing) return;
      closing = true;
      void Promise.race([agent?.close(), new Promise((r) => setTimeout(r, 2000))])
        .catch(() => {})
        .then(() => resolve());
    };
    // The host ends a stdio server by closing stdin (then signals): leave cleanly either way.
    process.stdin.on("end", shutdown);
    process.stdin.on("close", shutdown);
    process.once("SIGTERM", shutdown);
    process.once("SIGINT", shutdown);
    server
      .connect(new StdioServerTransport())
      .then(() => {
        log(`ready (relay ${cfg.relayUrl}, project ${cfg.projectDir})`);
        bridge.start().catch((e: unknown) => log(`cannot connect yet (${e instanceof Error ? e.message : String(e)}); the next tool call retries`));
      })
      .catch((e: unknown) => {
        log(`stdio transport failed: ${e instanceof Error ? e.message : String(e)}`);
        shutdown();
      });
  });
}
