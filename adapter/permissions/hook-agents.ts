// i29-agents (issue 29 item 5): Codex's lifecycle hooks and Cursor's MCP and stop hooks get the same policy,
// `permission` cards, pushes and log as Claude Code's (docs/permissions.md §7.14, §7.15, §8.3, §8.4, §9).
import {
  CodexPermissionRequestInput,
  CodexPreToolUseInput,
  CodexStopInput,
  codexPermissionDecision,
  codexPreToolUseDeny,
  CursorMcpInput,
  cursorMcpRequest,
  CursorStopInput,
} from "../../shared/policy/agent-hooks.js";
import { cursorPermissionOutput } from "../../shared/policy/hooks.js";
import { decideByPolicy, logIt, type PermissionAsk } from "./flow.js";
import { DENIED } from "../../shared/policy/permission-answer.js";
import { askThroughSession } from "./hook-permission.js";
import { parseJson, projectDirFor, type Ctx } from "./hook-context.js";
import { claimCodexTurn, reportTurn } from "./hook-report.js";
import { cacheIsStale, refreshInBackground, type PolicyContext } from "./policy-store.js";

/** What the policy or the human decided; `none`: nobody did (the agent's own prompt decides). */
type Verdict = { decision: "allow" } | { decision: "deny"; message: string } | { decision: "none" };

const policyMeta = (d: { rule?: string; source?: string }) => ({ ...(d.rule ? { rule: d.rule } : {}), ...(d.source ? { source: d.source } : {}) });

/** The policy first, else a `permission` card on the phone until the deadline — logged like Claude Code's. */
async function decideOrAsk(cx: Ctx, req: PermissionAsk, pcx: PolicyContext): Promise<Verdict> {
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  if (decision.decision !== "ask") {
    logIt(pcx, req, decision.decision, "policy", policyMeta(decision));
    return decision.decision === "allow" ? { decision: "allow" } : { decision: "deny", message: `LineUp policy: ${decision.reason}` };
  }
  const asked = await askThroughSession(cx, req, pcx, [], decision.reason);
  if (asked.policy) return asked.policy.decision === "allow" ? { decision: "allow" } : { decision: "deny", message: `LineUp policy: ${asked.policy.reason}` };
  const a = asked.answer;
  if (a.kind === "allow") {
    logIt(pcx, req, "allow", "human", a.rule !== undefined ? { rule: a.rule } : {});
    return { decision: "allow" };
  }
  if (a.kind === "deny") {
    logIt(pcx, req, "deny", "human");
    return { decision: "deny", message: a.feedback ?? (a.declined ? "The human declined this in the LineUp app." : DENIED) };
  }
  logIt(pcx, req, "ask", a.kind === "timeout" ? "timeout" : "error");
  cx.say(a.kind === "error" ? `could not ask the human (${a.code}: ${a.message})` : "no answer in time: leaving the decision to the agent's own prompt");
  return { decision: "none" };
}

const contextFor = (cx: Ctx, projectDir: string): PolicyContext => ({ projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env });

// ---------------------------------------------------------------- Codex

/** Codex PreToolUse: the policy on disk only. Codex acts on `deny` alone, so allow and ask print nothing. */
export function codexPreToolUse(cx: Ctx, text: string): number {
  const input = parseJson(text, CodexPreToolUseInput, "Codex PreToolUse");
  const pcx = contextFor(cx, projectDirFor(input.cwd, cx.o, cx.env));
  const req: PermissionAsk = { agent: cx.o.agent ?? "Codex", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  if (gathered.access && cacheIsStale(gathered.inbox, gathered.access)) refreshInBackground(pcx.stateDir, pcx.relayUrl, cx.env);
  if (decision.decision !== "deny") return 0; // an allow is answered again at PermissionRequest, if Codex asks
  logIt(pcx, req, "deny", "policy", policyMeta(decision));
  cx.out(JSON.stringify(codexPreToolUseDeny(`LineUp policy: ${decision.reason}`)));
  return 0;
}

/** Codex PermissionRequest: allow / deny from the policy or the phone; nothing when nobody answered. */
export async function codexPermissionRequest(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CodexPermissionRequestInput, "Codex PermissionRequest");
  const pcx = contextFor(cx, projectDirFor(input.cwd, cx.o, cx.env));
  const req: PermissionAsk = { agent: cx.o.agent ?? "Codex", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const v = await decideOrAsk(cx, req, pcx);
  if (v.decision === "allow") cx.out(JSON.stringify(codexPermissionDecision("allow")));
  else if (v.decision === "deny") cx.out(JSON.stringify(codexPermissionDecision("deny", v.message)));
  return 0;
}

/** Codex Stop: the turn's last message and the policy summary into the thread (never blocks the stop). */
export async function codexStop(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CodexStopInput, "Codex Stop");
  if (!claimCodexTurn(cx.o.stateDir, input.turn_id)) return 0;
  const agent = cx.o.agent ?? "Codex";
  const msg = input.last_assistant_message?.trim();
  await reportTurn(cx, projectDirFor(input.cwd, cx.o, cx.env), msg ? `**${agent}** finished a turn:\n\n${msg}` : undefined, {
    agent,
    ...(msg ? { words: msg } : {}),
  });
  return 0;
}

// ---------------------------------------------------------------- Cursor

const cursorDir = (input: { cwd?: string | undefined; workspace_roots?: string[] | undefined }) => input.cwd ?? input.workspace_roots?.[0] ?? process.cwd();

/** Cursor beforeMCPExecution: `mcp__server__tool` rules, else the phone; nobody answered → "ask". */
export async function cursorMcp(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CursorMcpInput, "Cursor beforeMCPExecution");
  const r = cursorMcpRequest(input);
  const cwd = cursorDir(input);
  const pcx = contextFor(cx, projectDirFor(input.workspace_roots?.[0] ?? cwd, cx.o, cx.env));
  const req: PermissionAsk = { agent: cx.o.agent ?? "Cursor", toolName: r.tool_name, input: r.tool_input, cwd };
  const v = await decideOrAsk(cx, req, pcx);
  if (v.decision === "allow") cx.out(JSON.stringify(cursorPermissionOutput("allow")));
  else if (v.decision === "deny") cx.out(JSON.stringify(cursorPermissionOutput("deny", { userMessage: v.message, agentMessage: v.message })));
  else cx.out(JSON.stringify(cursorPermissionOutput("ask"))); // Cursor's own prompt decides: never a silent allow
  return 0;
}

/** Cursor stop: "finished" with its status and the policy summary into the thread; prints nothing (no follow-up). */
export async function cursorStop(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CursorStopInput, "Cursor stop");
  const cwd = cursorDir(input);
  const agent = cx.o.agent ?? "Cursor";
  await reportTurn(
    cx,
    projectDirFor(input.workspace_roots?.[0] ?? cwd, cx.o, cx.env),
    `**${agent}** finished${input.status ? ` (${input.status})` : ""} in \`${cwd}\`.`,
    { agent, ...(input.status && input.status !== "completed" ? { words: input.status } : {}) },
  );
  return 0;
}
