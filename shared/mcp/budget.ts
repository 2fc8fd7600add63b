// How long one tools/call may hold the client before it answers with a pending handle (`call_id` +
// await_answer). A client that gives up on its own closes the stream and tells the model "timed out", which
// makes models ask again; answering "not yet, call await_answer" just before that cap keeps one card and one
// answer. Shared by `POST /mcp` (User-Agent / per-request clientInfo) and `lineup mcp` (initialize clientInfo).

/** A client known to end tool calls on its own clock, whatever progress it gets. */
export interface KnownCap {
  /** Who, for docs and logs. */
  who: string;
  /** Matched against the User-Agent header and the client's `clientInfo.name`. */
  match: RegExp;
  /** Its cap on one tool call over HTTP, in seconds. */
  httpS: number;
  /** Its cap over stdio, when it is known to differ. */
  stdioS?: number;
}

/** Known caps (docs/mcp.md lists them). The tightest match wins. */
export const KNOWN_CAPS: readonly KnownCap[] = [
  // claude.ai custom connectors (also used by the Claude apps for remote servers): about 60 s per call.
  { who: "claude.ai connector", match: /\bclaude-ai\b|\bClaude-User\b/i, httpS: 60, stdioS: 60 },
  // The Claude Desktop app itself (Electron): 4 min for remote servers, 60 s for stdio servers.
  { who: "Claude Desktop", match: /\bClaude\/\d[\w.]*.*\bElectron\b|\bclaude-desktop\b/i, httpS: 240, stdioS: 60 },
  // OpenAI Codex: `tool_timeout_sec` (we assume the 300 s users set for human tools).
  { who: "Codex", match: /\bcodex/i, httpS: 300 },
];

/** Seconds kept in hand below a known cap, so our answer is on the wire before the client gives up. */
export const CAP_MARGIN_S = 10;
/** Without a progressToken most clients run a 60 s timer (the MCP SDKs' default) that nothing resets. */
export const NO_PROGRESS_BUDGET_S = 45;
/** With a progressToken we wait for the relay's own deadline; this grace lets its timeout result arrive first. */
export const DEADLINE_GRACE_S = 5;

export interface BudgetInput {
  /** The request carries `_meta.progressToken` (progress then resets the client's timer). */
  progress: boolean;
  /** The call's own timeout (what the relay was given), seconds. */
  timeoutS: number;
  /** Strings that identify the client: User-Agent, clientInfo.name. */
  client: readonly (string | undefined)[];
  transport: "http" | "stdio";
  /** An explicit budget (the `Lineup-Wait-Budget` header): it overrides everything else. */
  overrideS?: number | undefined;
  /** The budget without progress (default NO_PROGRESS_BUDGET_S; `lineup mcp --wait-budget`). */
  noProgressS?: number;
}

export interface Budget {
  seconds: number;
  why: string;
}

/** The known cap of a client, or undefined. */
export function knownCapOf(client: readonly (string | undefined)[], transport: "http" | "stdio"): { who: string; capS: number } | undefined {
  let best: { who: string; capS: number } | undefined;
  for (const c of KNOWN_CAPS) {
    if (!client.some((s) => s !== undefined && c.match.test(s))) continue;
    const capS = transport === "stdio" ? (c.stdioS ?? c.httpS) : c.httpS;
    if (!best || capS < best.capS) best = { who: c.who, capS };
  }
  return best;
}

export function waitBudget(i: BudgetInput): Budget {
  if (i.overrideS !== undefined && Number.isFinite(i.overrideS) && i.overrideS > 0) return { seconds: i.overrideS, why: "Lineup-Wait-Budget" };
  let b: Budget = i.progress
    ? { seconds: i.timeoutS + DEADLINE_GRACE_S, why: "the call's own timeout (progress resets the client's timer)" }
    : { seconds: i.noProgressS ?? NO_PROGRESS_BUDGET_S, why: "no progressToken" };
  const cap = knownCapOf(i.client, i.transport);
  if (cap && cap.capS - CAP_MARGIN_S < b.seconds) b = { seconds: Math.max(1, cap.capS - CAP_MARGIN_S), why: `${cap.who} caps calls at ${cap.capS} s` };
  return b;
}

/** await_answer's own `timeout` caps the budget (it never lengthens it). */
export function capWait(b: Budget, capS: number | undefined): Budget {
  return capS !== undefined && capS < b.seconds ? { seconds: capS, why: "await_answer's timeout" } : b;
}

/** `Lineup-Wait-Budget: <seconds>` → seconds (1 … 86400), or undefined when absent or not a number. */
export function parseBudgetHeader(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined || v.trim() === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? Math.min(86_400, n) : undefined;
}
