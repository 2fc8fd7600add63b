// Claude Code's own questions on the phone (issue 29, docs/permissions.md §7.10–7.11): `lineup hook
// ask-user-question` (PreToolUse, matcher AskUserQuestion) and `lineup hook elicitation` (Elicitation).
// Each puts one card in the project's session and waits until just before its --wait. The phone's answer
// is returned in the shape Claude Code expects; no answer in time cancels the card and prints nothing, so
// Claude Code's own dialog appears in the terminal: one answer, never two, never a made-up one.
import type { ToolResultBody } from "../../shared/contract/protocol.js";
import {
  AskUserQuestionInput,
  ElicitationInput,
  askQuestionsArgs,
  elicitationArgs,
  elicitationOutput,
  questionAnswerOutput,
  questionDeclinedOutput,
  readElicitationAnswer,
  readQuestionAnswers,
} from "../../shared/policy/ask-hooks.js";
import { PreToolUseInput, preToolUseOutput } from "../../shared/policy/hooks.js";
import { connectSession, leftMs, parseJson, projectDirFor, type Ctx } from "./hook-context.js";

type Asked = { kind: "result"; result: ToolResultBody } | { kind: "declined" } | { kind: "timeout" } | { kind: "error"; code: string; message: string };

/** One card through the project's session until the hook's deadline; the card is cancelled when time is up. */
async function askOnPhone(cx: Ctx, projectDir: string, tool: string, args: Record<string, unknown>, what: string): Promise<Asked> {
  let client: Awaited<ReturnType<typeof connectSession>>;
  try {
    client = await connectSession(cx, projectDir);
  } catch (e) {
    const code = (e as { code?: string }).code ?? "connect";
    return code === "timeout" ? { kind: "timeout" } : { kind: "error", code, message: e instanceof Error ? e.message : String(e) };
  }
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), Math.max(0, leftMs(cx)));
  cx.say(`asking the human on their phone: ${what}${client.presence.apps === 0 ? " (no app connected yet)" : ""}`);
  const before = client.presence.agent.status;
  try {
    client.setStatus("waiting", what);
    // The relay's deadline is a little later: our abort (tool.cancel) is what closes the card.
    const result = await client.call(tool, undefined, args, { timeoutS: Math.max(1, Math.ceil(leftMs(cx) / 1000) + 5), signal: stop.signal });
    return { kind: "result", result };
  } catch (e) {
    const code = typeof (e as { code?: unknown }).code === "string" ? (e as { code: string }).code : "internal";
    if (code === "timeout" || (code === "cancelled" && stop.signal.aborted)) return { kind: "timeout" };
    if (code === "declined") return { kind: "declined" };
    return { kind: "error", code, message: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
    // Another agent's status comes back; a killed hook's left-over "waiting" does not (as in hook-permission.ts).
    if (before && !/^(permission|question): /.test(before.detail ?? "")) client.setStatus(before.state, before.detail);
    else client.setStatus("idle");
    await client.close();
  }
}

const TO_TERMINAL = "leaving the question to Claude Code's own dialog in the terminal";

/** Why the phone's answer cannot be used, or that nobody answered: stderr only, and no output. */
function giveBack(cx: Ctx, a: Exclude<Asked, { kind: "result" }> | { kind: "bad"; message: string }): number {
  if (a.kind === "timeout") cx.say(`no answer in time: ${TO_TERMINAL}`);
  else if (a.kind === "error") cx.say(`could not ask the human (${a.code}: ${a.message}); ${TO_TERMINAL}`);
  else if (a.kind === "bad") cx.say(`unusable answer from the app (${a.message}); ${TO_TERMINAL}`);
  return 0;
}

/** PreToolUse for AskUserQuestion: allow with `updatedInput.answers`, deny when the human declines. */
export async function askUserQuestion(cx: Ctx, text: string): Promise<number> {
  const hook = parseJson(text, PreToolUseInput, "PreToolUse");
  // Written with matcher AskUserQuestion; any other tool is not ours to decide here.
  if (hook.tool_name !== "AskUserQuestion") return 0;
  const parsed = AskUserQuestionInput.safeParse(hook.tool_input);
  if (!parsed.success) {
    cx.say(`AskUserQuestion input LineUp cannot show (${parsed.error.issues[0]?.message ?? "invalid"}); ${TO_TERMINAL}`);
    return 0;
  }
  const input = parsed.data;
  const projectDir = projectDirFor(hook.cwd, cx.o, cx.env);
  const agent = cx.o.agent ?? "Claude Code";
  const n = input.questions.length;
  const what = `question: ${n === 1 ? input.questions[0]!.question : `${n} questions`}`;
  const args = askQuestionsArgs(input, projectDir, agent);
  // i29-defer: in a headless run the card outlives the hook (hook-defer.ts, docs/permissions.md §9.2).
  const { askOrDefer, canDefer, DEFER_LINE } = await import("./hook-defer.js");
  const { isHeadless } = await import("./defer.js");
  const a = canDefer(cx, hook, isHeadless(cx.env))
    ? await askOrDefer(cx, { projectDir, tool: "ask_questions", args, what, event: "ask-user-question", hook })
    : await askOnPhone(cx, projectDir, "ask_questions", args, what);
  if (a.kind === "defer") {
    cx.say(DEFER_LINE);
    cx.out(JSON.stringify(preToolUseOutput("defer")));
    return 0;
  }
  if (a.kind === "declined") {
    cx.out(JSON.stringify(questionDeclinedOutput()));
    return 0;
  }
  if (a.kind !== "result") return giveBack(cx, a);
  const read = readQuestionAnswers(a.result, input);
  if ("error" in read) return giveBack(cx, { kind: "bad", message: read.error });
  cx.out(JSON.stringify(questionAnswerOutput(hook.tool_input, read.answers)));
  return 0;
}

/** Elicitation: accept (with content valid against the requested schema), decline or cancel. */
export async function elicitation(cx: Ctx, text: string): Promise<number> {
  const input = parseJson(text, ElicitationInput, "Elicitation");
  const projectDir = projectDirFor(input.cwd, cx.o, cx.env);
  const built = elicitationArgs(input, projectDir, cx.o.agent ?? "Claude Code");
  if ("error" in built) {
    cx.say(`${built.error}; ${TO_TERMINAL}`);
    return 0;
  }
  const a = await askOnPhone(cx, projectDir, "elicitation", built.args, `question: ${input.mcp_server_name}`);
  if (a.kind === "declined") {
    cx.out(JSON.stringify(elicitationOutput("decline")));
    return 0;
  }
  if (a.kind !== "result") return giveBack(cx, a);
  const read = readElicitationAnswer(a.result, input);
  if ("error" in read) return giveBack(cx, { kind: "bad", message: read.error });
  cx.out(JSON.stringify(elicitationOutput(read.action, read.content)));
  return 0;
}
