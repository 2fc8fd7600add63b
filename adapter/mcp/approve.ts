// `approve` in `lineup mcp`: Claude Code's headless permission prompt tool (`claude -p
// --permission-prompt-tool mcp__lineup__approve`). Input `{tool_name, input, tool_use_id?}`; the result is
// one text block holding `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`
// (docs/permissions.md §7.6). Same policy as the hooks; "ask" becomes a permission card on the phone.
// There is no terminal dialog to fall back to, so no answer in time is a deny — never a silent allow.
import { PermissionPromptInput, permissionPromptResult, type PermissionPromptPayload } from "../../shared/policy/hooks.js";
import { askHuman, decideByPolicy, logIt, permissionArgs, recordAlways, suggestionsFor, type CallingAgent, type PermissionAsk } from "../permissions/flow.js";
import { cacheIsStale, findInboxAccess, readInboxPolicyCache, refreshInboxPolicy, type PolicyContext } from "../permissions/policy-store.js";

export const APPROVE = "approve";

export const APPROVE_TOOL = {
  name: APPROVE,
  description:
    "Permission prompt tool for Claude Code's headless mode (--permission-prompt-tool mcp__lineup__approve): decides a tool call by the LineUp policy, or asks the human on their phone. Returns JSON text {behavior:'allow', updatedInput} or {behavior:'deny', message}. Not for the model to call.",
  inputSchema: {
    type: "object" as const,
    properties: {
      tool_name: { type: "string", description: "the tool Claude Code wants to run" },
      input: { type: "object", description: "its input", additionalProperties: true },
      tool_use_id: { type: "string", description: "Claude Code's id of the tool use" },
    },
    required: ["tool_name", "input"],
  },
};

export interface ApproveConfig {
  projectDir: string;
  stateDir: string;
  relayUrl: string;
  /** How long the human has (s). */
  timeoutS: number;
  progressMs: number;
  /** How the card names the agent. */
  agent?: string;
}

export interface ApproveExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: {
    method: "notifications/progress";
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  }) => Promise<void>;
}

type Result = ReturnType<typeof permissionPromptResult>;

export async function approveCall(
  rawInput: Record<string, unknown>,
  extra: ApproveExtra,
  getAgent: () => Promise<{ agent: CallingAgent }>,
  cfg: ApproveConfig,
  log: (line: string) => void,
): Promise<Result> {
  const parsed = PermissionPromptInput.safeParse(rawInput);
  if (!parsed.success) return permissionPromptResult({ behavior: "deny", message: "LineUp approve: the request is not {tool_name, input} — denied" });
  const { tool_name, input } = parsed.data;
  const req: PermissionAsk = { agent: cfg.agent ?? "Claude Code (headless)", toolName: tool_name, input, cwd: cfg.projectDir };
  const pcx: PolicyContext = { projectDir: cfg.projectDir, stateDir: cfg.stateDir, relayUrl: cfg.relayUrl };
  const allow = (): Result => permissionPromptResult({ behavior: "allow", updatedInput: input });
  const deny = (message: string): Result => permissionPromptResult({ behavior: "deny", message } satisfies PermissionPromptPayload);

  let { decision, gathered } = decideByPolicy(req, pcx);
  // A long-lived server: bring the inbox copy up to date before asking a human what a rule may answer.
  if (decision.decision === "ask" && gathered.access && cacheIsStale(readInboxPolicyCache(cfg.stateDir), gathered.access)) {
    const access = findInboxAccess(cfg.stateDir, cfg.relayUrl);
    if (access && (await refreshInboxPolicy(cfg.stateDir, access, 2000))) ({ decision, gathered } = decideByPolicy(req, pcx));
  }
  const meta = { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) };
  if (decision.decision === "allow") {
    logIt(pcx, req, "allow", "policy", meta);
    return allow();
  }
  if (decision.decision === "deny") {
    logIt(pcx, req, "deny", "policy", meta);
    return deny(`LineUp policy: ${decision.reason}`);
  }

  let agent: CallingAgent;
  try {
    agent = (await getAgent()).agent;
  } catch (e) {
    logIt(pcx, req, "deny", "error");
    return deny(`LineUp could not reach the human to ask (${e instanceof Error ? e.message : String(e)}), so this is not allowed`);
  }
  const token = extra._meta?.progressToken;
  const started = Date.now();
  const progress =
    token === undefined
      ? undefined
      : setInterval(() => {
          const s = Math.round((Date.now() - started) / 1000);
          void extra
            .sendNotification({
              method: "notifications/progress",
              params: {
                progressToken: token,
                progress: s,
                total: cfg.timeoutS,
                message: `Waiting for the human to allow ${tool_name} (${s} s of ${cfg.timeoutS} s)`,
              },
            })
            .catch(() => {});
        }, cfg.progressMs);
  log(`approve: asking the human about ${tool_name}`);
  try {
    const answer = await askHuman(agent, permissionArgs(req, cfg.projectDir, suggestionsFor(req, [], pcx, gathered), decision.reason), {
      timeoutS: cfg.timeoutS,
      signal: extra.signal,
    });
    switch (answer.kind) {
      case "allow":
        logIt(pcx, req, "allow", "human", answer.rule !== undefined ? { rule: answer.rule } : {});
        if (answer.rule !== undefined) for (const n of await recordAlways(answer.rule, gathered, cfg.stateDir, 2500)) log(`approve: ${n}`);
        return allow();
      case "deny":
        logIt(pcx, req, "deny", "human");
        return deny(answer.feedback ?? (answer.declined ? "The human declined this in the LineUp app." : "The human denied this in the LineUp app."));
      case "timeout":
        logIt(pcx, req, "deny", "timeout");
        return deny(`No answer from the human within ${cfg.timeoutS} s (LineUp), so this is not allowed.`);
    }
    logIt(pcx, req, "deny", "error");
    return deny(`LineUp could not get an answer (${answer.code}: ${answer.message}), so this is not allowed.`);
  } finally {
    if (progress) clearInterval(progress);
  }
}

/** The config `lineup mcp` passes: its project, state dir and relay; LINEUP_APPROVE_TIMEOUT (s) overrides its default wait. */
export function approveConfig(
  cfg: { projectDir: string; stateDir: string; relayUrl: string; defaultTimeoutS: number; maxTimeoutS: number; progressMs: number },
  env: Record<string, string | undefined> = process.env,
): ApproveConfig {
  const t = Number(env.LINEUP_APPROVE_TIMEOUT);
  const timeoutS = Math.min(cfg.maxTimeoutS, Number.isFinite(t) && t >= 1 ? t : cfg.defaultTimeoutS);
  return { projectDir: cfg.projectDir, stateDir: cfg.stateDir, relayUrl: cfg.relayUrl, timeoutS, progressMs: cfg.progressMs };
}
