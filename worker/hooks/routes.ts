// `POST /api/hooks/claude/<event>`: Claude Code's `type: "http"` hooks, answered by the relay itself
// (issue 29 item 6, docs/permissions.md §7.12) — one HTTPS round trip, no local process. The machine
// credential (`Authorization: Bearer lum1.…`, revocable) names the inbox; the inbox policy decides at once;
// an "ask" becomes a card in the project's session, held on a hibernatable link while the human answers
// (worker/hooks/ask.ts). The answer is the exact JSON the command hook prints (shared/policy/permission-answer.ts,
// ask-hooks.ts: one implementation); no decision is an empty 200, so Claude Code's own dialog decides.
// Claude Code treats a non-2xx answer as a non-blocking error (the same: its dialog decides), so every refusal
// here is a 4xx in the edge's error envelope, and changes nothing.
import { Hono } from "hono";
import { describeIssues } from "../../shared/contract/protocol.js";
import { HTTP_HOOK_LIMITS, HTTP_HOOK_OUTCOME_HEADER, isHttpHookEvent, type HttpHookEvent } from "../../shared/contract/http-hooks.js";
import { fail, readJson, type EdgeEnv, type Holder } from "../../shared/edge/app.js";
import { holder } from "../../shared/edge/credential.js";
import { AskUserQuestionInput, askQuestionsArgs, questionAnswerOutput, questionDeclinedOutput, readQuestionAnswers } from "../../shared/policy/ask-hooks.js";
import { PermissionRequestInput, PreToolUseInput, rulesFromSuggestions } from "../../shared/policy/hooks.js";
import { evaluate, validatePolicyFile, type PolicyDecision, type PolicySource } from "../../shared/policy/index.js";
import {
  permissionArgs,
  permissionRequestOutputFor,
  permissionRequestPolicyOutput,
  preToolUsePolicyOutput,
  readAnswer,
  suggestionList,
  type PermissionAsk,
} from "../../shared/policy/permission-answer.js";
import type { InboxPolicy } from "../../shared/contract/inbox.js";
import type { Env } from "../env.js";
import { RequestScope } from "../mcp/scope.js";
import { holdCard, hookSession, SEALED_HOOK_MESSAGE, sessionFor, type Asked, type HookContext } from "./ask.js";

type C = HookContext;

const QUESTION_TOOL = "AskUserQuestion";
const AGENT = "Claude Code";

/** No decision: an empty 200 (Claude Code's own dialog decides); the header and the log say why. */
function noDecision(c: C, why: string): Response {
  console.log(`hooks: no decision (${why})`);
  c.header(HTTP_HOOK_OUTCOME_HEADER, why);
  return c.body(null, 200);
}

function sealedRefusal(c: C): Response {
  c.header(HTTP_HOOK_OUTCOME_HEADER, "e2e_sealed");
  console.log("hooks: refused: the inbox is end-to-end encrypted");
  return fail(c, 409, "e2e_sealed", SEALED_HOOK_MESSAGE);
}

/** `?wait=` in seconds (HTTP_HOOK_LIMITS), or undefined when it is not a number in range. */
function waitOf(c: C): number | undefined {
  const w = c.req.query("wait");
  if (w === undefined) return HTTP_HOOK_LIMITS.defaultWaitS;
  const n = Number(w);
  return Number.isFinite(n) && n >= HTTP_HOOK_LIMITS.minWaitS && n <= HTTP_HOOK_LIMITS.maxWaitS ? n : undefined;
}

/**
 * The home directory of the machine, as far as the relay can tell: the part of `transcript_path` before
 * `/.claude/projects/` (Claude Code keeps transcripts there). Unknown, `~/…` rules match no path (an allow
 * rule then allows nothing: the human is asked).
 */
export function homeOf(transcriptPath: string | undefined): string {
  const m = transcriptPath === undefined ? null : /^(.+?)[\\/]\.claude[\\/]projects[\\/]/.exec(transcriptPath);
  return m?.[1] ?? "/nonexistent-home-of-an-http-hook";
}

const policySources = (p: InboxPolicy, projectDir: string): PolicySource[] => [
  { name: `inbox policy v${p.version}`, permissions: p.permissions, baseDir: projectDir },
];

export const hooksRoutes = new Hono<EdgeEnv<Env>>();

hooksRoutes.post("/claude/:event", holder("machine"), async (c) => {
  const event = c.req.param("event");
  if (!isHttpHookEvent(event))
    return fail(c, 404, "not_found", `no such hook event ${JSON.stringify(event)} (pre-tool-use, permission-request, ask-user-question)`);
  const waitS = waitOf(c);
  if (waitS === undefined)
    return fail(c, 400, "bad_request", `wait must be a number of seconds from ${HTTP_HOOK_LIMITS.minWaitS} to ${HTTP_HOOK_LIMITS.maxWaitS}`);
  const b = await readJson(c, HTTP_HOOK_LIMITS.maxBodyBytes);
  if (!b.ok) return b.res;
  const schema = event === "permission-request" ? PermissionRequestInput : PreToolUseInput;
  const parsed = schema.safeParse(b.value);
  if (!parsed.success) return fail(c, 400, "bad_request", `not a Claude Code ${event} hook input: ${describeIssues(parsed.error)}`);
  const input = parsed.data;
  // Claude Code ranks deny > defer > ask > allow across the hooks of one call: only the question hook answers AskUserQuestion.
  if ((input.tool_name === QUESTION_TOOL) !== (event === "ask-user-question")) return noDecision(c, "not_this_hook");

  const who = c.var.holder;
  const inbox = c.var.host.inboxes!.inbox(who.inbox);
  const [policy, state] = await Promise.all([inbox.policy(), inbox.state({ kind: "machine", id: who.id })]);
  if (!policy || !state) return fail(c, 401, "unauthorized", "no such inbox");
  // E2E on: the policy is sealed and a card must be sealed, and the relay holds no key for either.
  if ((state.e2e?.epoch ?? 0) > 0 || policy.sealed) return sealedRefusal(c);
  const found = sessionFor(state.sessions, who.id, input.cwd);
  const projectDir = found?.project_dir ?? input.cwd;
  const req: PermissionAsk = { agent: AGENT, toolName: input.tool_name, input: input.tool_input, cwd: input.cwd };
  const homeDir = homeOf(input.transcript_path);
  const sources = policySources(policy, projectDir);

  if (event === "ask-user-question") return askQuestions(c, who, input.tool_input, input.cwd, found, waitS);
  const decision = evaluate({ tool_name: req.toolName, tool_input: req.input, cwd: req.cwd }, sources, { projectDir, homeDir });
  if (event === "pre-tool-use") {
    // PreToolUse: the policy only, never a wait (as the command hook); "ask" is no output.
    if (decision.decision === "ask") return noDecision(c, "policy_asks");
    return c.json(preToolUsePolicyOutput(decision.decision, decision.reason));
  }
  if (decision.decision !== "ask") return c.json(permissionRequestPolicyOutput(decision.decision, decision.reason, input.tool_input));
  const suggestions = "permission_suggestions" in input ? input.permission_suggestions : undefined;
  return askPermission(c, who, { req, decision, suggestions, found, homeDir, sources, waitS, policy });
});

interface PermissionCase {
  req: PermissionAsk;
  decision: PolicyDecision;
  suggestions: unknown;
  found: Parameters<typeof hookSession>[2];
  homeDir: string;
  sources: PolicySource[];
  waitS: number;
  policy: InboxPolicy;
}

async function askPermission(c: C, who: Holder, p: PermissionCase): Promise<Response> {
  const s = await hookSession(c, who, p.found, p.req.cwd);
  if ("refused" in s) return s.refused === "e2e_sealed" ? sealedRefusal(c) : noDecision(c, s.refused);
  const agentRules = rulesFromSuggestions(p.suggestions);
  const args = permissionArgs(
    p.req,
    s.projectDir,
    suggestionList(p.req, agentRules, { projectDir: s.projectDir, homeDir: p.homeDir, sources: p.sources }),
    p.decision.reason,
  );
  const scope = new RequestScope((pr) => keepAlive(c, pr));
  const a = await holdCard(c, s, "permission", args, p.waitS, scope);
  const answer = answerOf(a);
  if (answer === "sealed") return sealedRefusal(c);
  const out = permissionRequestOutputFor(answer, { tool_input: p.req.input, permission_suggestions: p.suggestions });
  if (!out) return scope.wrap(noDecision(c, a.kind === "none" ? a.why : "no_answer"));
  if (answer.kind === "allow" && answer.rule !== undefined) await alwaysAllow(c, who, p.policy, answer.rule);
  console.log(`hooks: ${p.req.toolName} in ${s.sid}: ${answer.kind} by the human`);
  return scope.wrap(c.json(out));
}

function answerOf(a: Asked): ReturnType<typeof readAnswer> | "sealed" {
  if (a.kind === "sealed") return "sealed";
  if (a.kind === "declined") return { kind: "deny", declined: true };
  if (a.kind === "none") return { kind: "timeout" };
  return readAnswer(a.result);
}

/** "Always allow": the rule goes into the inbox policy too (plaintext inboxes only; one try, a conflict is left). */
async function alwaysAllow(c: C, who: Holder, policy: InboxPolicy, rule: string): Promise<void> {
  if (policy.permissions.allow.includes(rule) || !validatePolicyFile({ permissions: { allow: [rule] } }).ok) return;
  const r = await c.var.host
    .inboxes!.inbox(who.inbox)
    .setPolicy({ permissions: { allow: [...policy.permissions.allow, rule] } }, policy.version)
    .catch(() => undefined);
  console.log(`hooks: always allow ${rule}: ${typeof r === "object" ? `inbox policy v${r.version}` : `not added (${r ?? "failed"})`}`);
}

async function askQuestions(
  c: C,
  who: Holder,
  toolInput: Record<string, unknown>,
  cwd: string,
  found: Parameters<typeof hookSession>[2],
  waitS: number,
): Promise<Response> {
  const q = AskUserQuestionInput.safeParse(toolInput);
  if (!q.success) return fail(c, 400, "bad_request", `AskUserQuestion input LineUp cannot show: ${describeIssues(q.error)}`);
  const s = await hookSession(c, who, found, cwd);
  if ("refused" in s) return s.refused === "e2e_sealed" ? sealedRefusal(c) : noDecision(c, s.refused);
  const scope = new RequestScope((pr) => keepAlive(c, pr));
  const a = await holdCard(c, s, "ask_questions", askQuestionsArgs(q.data, s.projectDir, AGENT), waitS, scope);
  if (a.kind === "sealed") return sealedRefusal(c);
  if (a.kind === "declined") return scope.wrap(c.json(questionDeclinedOutput()));
  if (a.kind === "none") return scope.wrap(noDecision(c, a.why));
  const read = readQuestionAnswers(a.result, q.data);
  if ("error" in read) return scope.wrap(noDecision(c, "bad_answer"));
  return scope.wrap(c.json(questionAnswerOutput(toolInput, read.answers)));
}

function keepAlive(c: C, p: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(p);
  } catch {
    void p; // no execution context (a bare app.request in tests): the promise runs on its own
  }
}

export type { HttpHookEvent };
