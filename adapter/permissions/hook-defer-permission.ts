// `lineup hook pre-tool-use --defer` in a headless Claude Code run (issue 29 item 4, docs/permissions.md §9.2;
// branch i29-defer): a call the policy leaves to the human becomes a `permission` card here, because only
// PreToolUse can answer "defer" (PermissionRequest cannot). Answered in time → allow / deny; not answered →
// defer, and the resumed run's PreToolUse answers from the record.
import type { PreToolUseInput } from "../../shared/policy/hooks.js";
import { preToolUseOutput } from "../../shared/policy/hooks.js";
import { logIt, permissionArgs, readAnswer, recordAlways, suggestionsFor, decideByPolicy, type PermissionAsk } from "./flow.js";
import { leftMs, type Ctx } from "./hook-context.js";
import { askOrDefer, DEFER_LINE } from "./hook-defer.js";
import type { PolicyContext } from "./policy-store.js";

export async function deferrablePermission(cx: Ctx, input: PreToolUseInput, req: PermissionAsk, pcx: PolicyContext, reason: string): Promise<number> {
  const { gathered } = decideByPolicy(req, pcx);
  const args = permissionArgs(req, pcx.projectDir, suggestionsFor(req, [], pcx, gathered), reason);
  const a = await askOrDefer(cx, {
    projectDir: pcx.projectDir,
    tool: "permission",
    args,
    what: `permission: ${req.toolName}`,
    event: "pre-tool-use",
    hook: input,
  });
  if (a.kind === "defer") {
    logIt(pcx, req, "ask", "timeout");
    cx.say(DEFER_LINE);
    cx.out(JSON.stringify(preToolUseOutput("defer")));
    return 0;
  }
  if (a.kind === "declined") {
    logIt(pcx, req, "deny", "human");
    cx.out(JSON.stringify(preToolUseOutput("deny", { reason: "The human declined this in the LineUp app." })));
    return 0;
  }
  if (a.kind !== "result") {
    logIt(pcx, req, "ask", a.kind === "timeout" ? "timeout" : "error");
    if (a.kind === "error") cx.say(`could not ask the human (${a.code}: ${a.message}); leaving the decision to Claude Code`);
    return 0;
  }
  const answer = readAnswer(a.result);
  if (answer.kind === "allow") {
    logIt(pcx, req, "allow", "human", answer.rule !== undefined ? { rule: answer.rule } : {});
    if (answer.rule !== undefined) for (const n of await recordAlways(answer.rule, gathered, pcx.stateDir, Math.min(2500, leftMs(cx) - 300))) cx.say(n);
    cx.out(JSON.stringify(preToolUseOutput("allow", { reason: "Allowed in the LineUp app" })));
  } else if (answer.kind === "deny") {
    logIt(pcx, req, "deny", "human");
    cx.out(JSON.stringify(preToolUseOutput("deny", { reason: answer.feedback ?? "The human denied this in the LineUp app." })));
  } else {
    cx.say(`unusable answer from the app; leaving the decision to Claude Code`);
  }
  return 0;
}
