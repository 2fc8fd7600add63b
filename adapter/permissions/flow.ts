// One permission question, agent-independent: decide by policy, else put a `permission` card on the
// human's phone and read the answer; "always" records the rule locally (so it applies at once) and in the
// inbox policy. Used by `lineup hook permission-request` / `cursor-shell` and by `approve` in `lineup mcp`.
import { homedir } from "node:os";
import { evaluate, type PolicyDecision } from "../../shared/policy/index.js";
import { readAnswer, suggestionList, type HumanAnswer, type PermissionAsk } from "../../shared/policy/permission-answer.js";
import type { ToolResultBody } from "../../shared/contract/protocol.js";
import { logDecision, subjectOf } from "./log.js";
import { holdsKeys } from "./policy-seal.js";
import { addInboxRule, addLocalRule, gatherPolicy, type GatheredPolicy, type PolicyContext } from "./policy-store.js";

// The card and its answer are written once, in shared code (the relay's http hook route uses them too).
export { permissionArgs, readAnswer, type HumanAnswer, type PermissionAsk } from "../../shared/policy/permission-answer.js";

/** What `call()` of the adapter's agent client offers (structural, so the MCP bridge's agent fits too). */
export interface CallingAgent {
  call(
    name: string,
    action: string | undefined,
    args?: Record<string, unknown>,
    opts?: { timeoutS?: number; signal?: AbortSignal; callId?: string },
  ): Promise<ToolResultBody>;
}

/** The policy's answer from disk only: an invalid policy file makes every call "ask" (never half a policy). */
export function decideByPolicy(req: PermissionAsk, cx: PolicyContext): { decision: PolicyDecision; gathered: GatheredPolicy } {
  const gathered = gatherPolicy(cx);
  if (gathered.errors.length > 0) {
    return {
      gathered,
      decision: {
        decision: "ask",
        reason: `a policy file is invalid, so LineUp asks: ${gathered.errors.join("; ")}`,
        matches: [],
        warnings: gathered.warnings,
      },
    };
  }
  const decision = evaluate({ tool_name: req.toolName, tool_input: req.input, cwd: req.cwd }, gathered.sources, {
    projectDir: cx.projectDir,
    homeDir: homedir(),
  });
  return { decision, gathered };
}

/** The agent's own proposals first (Claude Code's `permission_suggestions`), then LineUp's; at most 5. */
export function suggestionsFor(req: PermissionAsk, agentRules: readonly string[], cx: PolicyContext, gathered: GatheredPolicy): string[] {
  return suggestionList(req, agentRules, { projectDir: cx.projectDir, homeDir: homedir(), sources: gathered.sources });
}

/** Asks the human; a relay timeout or our own abort (the hook's limit) is "timeout", never an answer. */
export async function askHuman(agent: CallingAgent, args: Record<string, unknown>, opts: { timeoutS: number; signal?: AbortSignal }): Promise<HumanAnswer> {
  try {
    const r = await agent.call("permission", undefined, args, {
      timeoutS: Math.max(1, Math.floor(opts.timeoutS)),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return readAnswer(r);
  } catch (e) {
    const code = typeof (e as { code?: unknown }).code === "string" ? (e as { code: string }).code : "internal";
    const message = e instanceof Error ? e.message : String(e);
    if (code === "timeout" || (code === "cancelled" && opts.signal?.aborted)) return { kind: "timeout" };
    if (code === "declined") return { kind: "deny", declined: true };
    return { kind: "error", code, message };
  }
}

/**
 * "Always allow": the local file first (the next hook reads it), then the inbox policy when this
 * machine is in an inbox. Returns what happened, for stderr.
 */
export async function recordAlways(rule: string, gathered: GatheredPolicy, stateDir: string, inboxTimeoutMs: number): Promise<string[]> {
  const notes: string[] = [];
  const local = addLocalRule(gathered.localFile, rule);
  notes.push(
    local.added
      ? `added ${rule} to ${local.file}`
      : local.reason === "present"
        ? `${rule} is already in ${local.file}`
        : `could not add ${rule} to ${local.file}: ${local.message ?? local.reason}`,
  );
  if (gathered.access && inboxTimeoutMs >= 200) {
    // With E2E keys the rule goes out sealed, never in plaintext (docs/e2e.md "The inbox policy").
    const sealed = holdsKeys(stateDir, gathered.access);
    const ok = await addInboxRule(stateDir, gathered.access, rule, "allow", inboxTimeoutMs);
    notes.push(
      ok ? `added ${rule} to the inbox policy${sealed ? " (sealed)" : ""}` : "the inbox policy could not be updated now (the local file has the rule)",
    );
  }
  return notes;
}

/** Logs a decision (see permission-log.ts). */
export function logIt(
  pcx: { stateDir: string; projectDir: string },
  req: PermissionAsk,
  decision: "allow" | "deny" | "ask",
  by: "policy" | "human" | "timeout" | "error",
  extra: { rule?: string; source?: string } = {},
): void {
  const subject = subjectOf(req.input);
  logDecision(pcx.stateDir, {
    at: Date.now(),
    project: pcx.projectDir,
    agent: req.agent,
    tool: req.toolName,
    ...(subject !== undefined ? { subject } : {}),
    decision,
    by,
    ...(extra.rule !== undefined ? { rule: extra.rule } : {}),
    ...(extra.source !== undefined ? { source: extra.source } : {}),
  });
}
