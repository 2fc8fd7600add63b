// The permission events of `lineup hook`: Claude Code's PermissionRequest and PreToolUse, Cursor's
// beforeShellExecution — the policy decides, else the human is asked through the session until the deadline.
import {
  CursorBeforeShellInput,
  PermissionRequestInput,
  PreToolUseInput,
  cursorPermissionOutput,
  cursorShellRequest,
  rulesFromSuggestions,
} from "../../shared/policy/hooks.js";
import { DENIED, permissionRequestOutputFor, permissionRequestPolicyOutput, preToolUsePolicyOutput } from "../../shared/policy/permission-answer.js";
import { isHeadless } from "./defer.js";
import { askHuman, decideByPolicy, logIt, permissionArgs, recordAlways, suggestionsFor, type HumanAnswer, type PermissionAsk } from "./flow.js";
import { beforeDeadline, connectSession, leftMs, parseJson, projectDirFor, type Ctx } from "./hook-context.js";
import { cacheIsStale, findInboxAccess, readInboxPolicyCache, refreshInBackground, refreshInboxPolicy, type PolicyContext } from "./policy-store.js";

// ---------------------------------------------------------------- asking the human

export interface Asked {
  answer: HumanAnswer;
  /** set when the fresh inbox policy decided after all */
  policy?: { decision: "allow" | "deny"; reason: string };
}

/**
 * The shared part of permission-request and cursor-shell: refresh the inbox policy while connecting (the
 * relay is needed anyway), decide again with it, else ask and wait until just before the deadline.
 */
export async function askThroughSession(cx: Ctx, req: PermissionAsk, pcx: PolicyContext, agentRules: string[], firstReason: string): Promise<Asked> {
  const access = findInboxAccess(pcx.stateDir, pcx.relayUrl, cx.env);
  const refreshed =
    access && cacheIsStale(readInboxPolicyCache(pcx.stateDir), access)
      ? refreshInboxPolicy(pcx.stateDir, access, Math.min(3000, Math.max(200, leftMs(cx) - 500)))
      : Promise.resolve(undefined);
  const connecting = beforeDeadline(cx, connectSession(cx, pcx.projectDir));
  connecting.catch(() => {});
  if (await refreshed) {
    const again = decideByPolicy(req, pcx);
    if (again.decision.decision !== "ask") {
      void connecting.then((c) => c.close()).catch(() => {});
      logIt(pcx, req, again.decision.decision, "policy", {
        ...(again.decision.rule ? { rule: again.decision.rule } : {}),
        ...(again.decision.source ? { source: again.decision.source } : {}),
      });
      return { answer: { kind: "timeout" }, policy: { decision: again.decision.decision, reason: again.decision.reason } };
    }
  }
  let client: Awaited<ReturnType<typeof connectSession>>;
  try {
    client = await connecting;
  } catch (e) {
    const code = (e as { code?: string }).code ?? "connect";
    return { answer: code === "timeout" ? { kind: "timeout" } : { kind: "error", code, message: e instanceof Error ? e.message : String(e) } };
  }
  const { gathered } = decideByPolicy(req, pcx);
  const args = permissionArgs(req, pcx.projectDir, suggestionsFor(req, agentRules, pcx, gathered), firstReason);
  const stop = new AbortController();
  // Give up a little before the limit, so the card is cancelled and we exit before the agent kills us.
  const timer = setTimeout(() => stop.abort(), Math.max(0, leftMs(cx)));
  cx.say(`asking the human on their phone: ${req.toolName}${client.presence.apps === 0 ? " (no app connected yet)" : ""}`);
  // The status the session had before this question (another agent's, e.g. `lineup connect`): put back when
  // the hook is done, so its "waiting" does not outlive it (issue 28). A hook's own left-over "waiting"
  // (one that was killed) becomes "idle".
  const before = client.presence.agent.status;
  try {
    client.setStatus("waiting", `permission: ${req.toolName}`);
    // The relay's own deadline is a little later: our abort (tool.cancel) is what closes the card.
    const answer = await askHuman(client, args, { timeoutS: Math.ceil(leftMs(cx) / 1000) + 5, signal: stop.signal });
    if (answer.kind === "allow" && answer.rule !== undefined) {
      for (const n of await recordAlways(answer.rule, gathered, pcx.stateDir, Math.min(2500, leftMs(cx) - 300))) cx.say(n);
    }
    return { answer };
  } finally {
    clearTimeout(timer);
    if (before && !before.detail?.startsWith("permission: ")) client.setStatus(before.state, before.detail);
    else client.setStatus("idle");
    await client.close();
  }
}

// ---------------------------------------------------------------- events

/** Claude Code's question tool: `lineup hook ask-user-question` answers it from the phone; the permission
 * hooks never decide it (Claude Code ranks deny > defer > ask > allow across the hooks of one call, so a
 * policy "deny" or "ask" here would override the phone's answer). */
export const QUESTION_TOOL = "AskUserQuestion";

export async function permissionRequest(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, PermissionRequestInput, "PermissionRequest");
  if (input.tool_name === QUESTION_TOOL) return 0;
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Claude Code", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  const meta = { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) };
  if (decision.decision === "allow") {
    logIt(pcx, req, "allow", "policy", meta);
    cx.out(JSON.stringify(permissionRequestPolicyOutput("allow", decision.reason, input.tool_input)));
    return 0;
  }
  if (decision.decision === "deny") {
    logIt(pcx, req, "deny", "policy", meta);
    cx.out(JSON.stringify(permissionRequestPolicyOutput("deny", decision.reason, input.tool_input)));
    return 0;
  }
  const asked = await askThroughSession(cx, req, pcx, rulesFromSuggestions(input.permission_suggestions), decision.reason);
  if (asked.policy) {
    cx.out(JSON.stringify(permissionRequestPolicyOutput(asked.policy.decision, asked.policy.reason, input.tool_input)));
    return 0;
  }
  const a = asked.answer;
  // The answer's JSON is built by the shared code the relay's http hook route returns too (one implementation).
  const output = permissionRequestOutputFor(a, input);
  if (output) cx.out(JSON.stringify(output));
  switch (a.kind) {
    case "allow":
      logIt(pcx, req, "allow", "human", a.rule !== undefined ? { rule: a.rule } : {});
      return 0;
    case "deny":
      logIt(pcx, req, "deny", "human");
      return 0;
    case "timeout":
      logIt(pcx, req, "ask", "timeout");
      cx.say("no answer in time: leaving the decision to Claude Code's own dialog");
      return 0;
    case "error":
      logIt(pcx, req, "ask", "error");
      cx.say(`could not ask the human (${a.code}: ${a.message}); leaving the decision to Claude Code's own dialog`);
      return 0;
  }
}

export function preToolUse(cx: Ctx, text: string): number | Promise<number> {
  const input = parseJson(text, PreToolUseInput, "PreToolUse");
  if (input.tool_name === QUESTION_TOOL) return 0;
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Claude Code", toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision, gathered } = decideByPolicy(req, pcx);
  for (const n of gathered.notes ?? []) cx.say(n);
  // Disk only: a stale inbox copy is refreshed by a detached process for the calls after this one.
  if (gathered.access && cacheIsStale(gathered.inbox, gathered.access)) refreshInBackground(pcx.stateDir, pcx.relayUrl, cx.env);
  if (decision.decision === "ask") {
    // i29-defer: with --defer in a headless run the phone is asked here (PermissionRequest cannot defer).
    if (cx.o.defer && isHeadless(cx.env) && input.tool_use_id && input.permission_mode !== "bypassPermissions")
      return import("./hook-defer-permission.js").then((m) => m.deferrablePermission(cx, input, req, pcx, decision.reason));
    return 0;
  }
  logIt(pcx, req, decision.decision, "policy", { ...(decision.rule ? { rule: decision.rule } : {}), ...(decision.source ? { source: decision.source } : {}) });
  cx.out(JSON.stringify(preToolUsePolicyOutput(decision.decision, decision.reason)));
  return 0;
}

export async function cursorShell(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, CursorBeforeShellInput, "Cursor beforeShellExecution");
  const r = cursorShellRequest(input);
  const cwd = r.cwd ?? process.cwd();
  const projectDir = projectDirFor(input.workspace_roots?.[0] ?? cwd, cx.o, cx.env);
  const req: PermissionAsk = { agent: cx.o.agent ?? "Cursor", toolName: "Bash", input: r.tool_input, cwd };
  const pcx: PolicyContext = { projectDir, stateDir: cx.o.stateDir, relayUrl: cx.o.relayUrl, env: cx.env };
  const { decision } = decideByPolicy(req, pcx);
  const reason = `LineUp policy: ${decision.reason}`;
  if (decision.decision !== "ask") {
    logIt(pcx, req, decision.decision, "policy", {
      ...(decision.rule ? { rule: decision.rule } : {}),
      ...(decision.source ? { source: decision.source } : {}),
    });
    cx.out(
      JSON.stringify(
        decision.decision === "allow" ? cursorPermissionOutput("allow") : cursorPermissionOutput("deny", { userMessage: reason, agentMessage: reason }),
      ),
    );
    return 0;
  }
  const asked = await askThroughSession(cx, req, pcx, [], decision.reason);
  if (asked.policy) {
    const why = `LineUp policy: ${asked.policy.reason}`;
    cx.out(
      JSON.stringify(
        asked.policy.decision === "allow" ? cursorPermissionOutput("allow") : cursorPermissionOutput("deny", { userMessage: why, agentMessage: why }),
      ),
    );
    return 0;
  }
  const a = asked.answer;
  if (a.kind === "allow") {
    logIt(pcx, req, "allow", "human", a.rule !== undefined ? { rule: a.rule } : {});
    cx.out(JSON.stringify(cursorPermissionOutput("allow")));
  } else if (a.kind === "deny") {
    logIt(pcx, req, "deny", "human");
    cx.out(JSON.stringify(cursorPermissionOutput("deny", { userMessage: DENIED, agentMessage: a.feedback ?? DENIED })));
  } else {
    // Nobody answered: Cursor's own prompt decides (never a silent allow).
    logIt(pcx, req, "ask", a.kind === "timeout" ? "timeout" : "error");
    if (a.kind === "error") cx.say(`could not ask the human (${a.code}: ${a.message})`);
    cx.out(JSON.stringify(cursorPermissionOutput("ask")));
  }
  return 0;
}

/** Sends messages into the project's thread; failures only go to stderr (a report must not stop the agent). */
