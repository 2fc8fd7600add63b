// Claude Code's own questions, answered on the phone (issue 29, docs/permissions.md §7.10–7.11): the
// AskUserQuestion tool input (through PreToolUse) and the Elicitation hook, their stdin parsed with zod and
// their stdout built here, and the PWA's answers to `ask_questions` / `elicitation` read back into them.
// Sources: https://code.claude.com/docs/en/hooks (AskUserQuestion; "allow with updatedInput"; Elicitation
// input and output) and https://code.claude.com/docs/en/agent-sdk/user-input (AskUserQuestion: `answers`
// keyed by question text, several labels of a multi-select question joined with ", ").
import { z } from "../contract/zod.js";
import type { ToolResultBody } from "../contract/protocol.js";
import { checkArguments } from "../contract/schema.js";
import { preToolUseOutput, type PreToolUseOutput } from "./hooks.js";

// ---------------------------------------------------------------- AskUserQuestion

const QuestionOption = z.looseObject({ label: z.string().min(1), description: z.string().optional() });
const Question = z.looseObject({
  question: z.string().min(1),
  header: z.string().optional(),
  options: z.array(QuestionOption).max(20),
  multiSelect: z.boolean().optional(),
});
/** AskUserQuestion's `tool_input`: 1–4 questions in Claude Code today; we take up to 10. */
export const AskUserQuestionInput = z.looseObject({ questions: z.array(Question).min(1).max(10) });
export type AskUserQuestionInput = z.infer<typeof AskUserQuestionInput>;

/** The `ask_questions` arguments for a question set (only the fields the card shows). */
export function askQuestionsArgs(input: AskUserQuestionInput, projectDir: string, agent: string): Record<string, unknown> {
  return {
    questions: input.questions.map((q) => ({
      question: q.question,
      ...(q.header !== undefined ? { header: q.header } : {}),
      multiSelect: q.multiSelect === true,
      options: q.options.map((o) => ({ label: o.label, ...(o.description !== undefined ? { description: o.description } : {}) })),
    })),
    project_directory: projectDir,
    agent,
  };
}

/**
 * The card's `answers` checked against the questions: one non-empty string per question, keyed by its exact
 * text (an option's label, labels joined by ", ", or the human's own "Other" text). An error names what is wrong.
 */
export function readQuestionAnswers(r: ToolResultBody, input: AskUserQuestionInput): { answers: Record<string, string> } | { error: string } {
  const a = r.answers;
  if (!a || typeof a !== "object" || Array.isArray(a)) return { error: "the app's answer has no answers object" };
  const answers: Record<string, string> = {};
  for (const q of input.questions) {
    const v = (a as Record<string, unknown>)[q.question];
    if (typeof v !== "string" || v.trim() === "") return { error: `no answer to ${JSON.stringify(q.question)}` };
    answers[q.question] = v;
  }
  return { answers };
}

/** The answers as Claude Code's PreToolUse output: allow with `updatedInput.answers` (the command hook and the relay's http hook). */
export function questionAnswerOutput(toolInput: Record<string, unknown>, answers: Record<string, string>): PreToolUseOutput {
  return preToolUseOutput("allow", { reason: "Answered in the LineUp app", updatedInput: { ...toolInput, answers } });
}

/** The human declined the question set on the phone: the tool call is denied with that reason. */
export const questionDeclinedOutput = (): PreToolUseOutput =>
  preToolUseOutput("deny", { reason: "The human declined to answer these questions in the LineUp app." });

// ---------------------------------------------------------------- Elicitation

/** A flat object schema, as MCP's elicitation/create requires (primitives, enums and arrays of enums only). */
const RequestedSchema = z.looseObject({ type: z.literal("object"), properties: z.record(z.string(), z.record(z.string(), z.unknown())) });

export const ElicitationInput = z.looseObject({
  session_id: z.string(),
  transcript_path: z.string().optional(),
  cwd: z.string(),
  permission_mode: z.string().optional(),
  hook_event_name: z.literal("Elicitation"),
  mcp_server_name: z.string(),
  message: z.string(),
  mode: z.enum(["form", "url"]).optional(),
  url: z.string().optional(),
  elicitation_id: z.string().optional(),
  requested_schema: RequestedSchema.optional(),
});
export type ElicitationInput = z.infer<typeof ElicitationInput>;

export type ElicitationAction = "accept" | "decline" | "cancel";

export interface ElicitationOutput {
  hookSpecificOutput: { hookEventName: "Elicitation"; action: ElicitationAction; content?: Record<string, unknown> };
}

export function elicitationOutput(action: ElicitationAction, content?: Record<string, unknown>): ElicitationOutput {
  return { hookSpecificOutput: { hookEventName: "Elicitation", action, ...(action === "accept" && content !== undefined ? { content } : {}) } };
}

/** A URL-mode request's URL, when it is one a phone may open: http(s) only (never javascript:, data:, file:…). */
export function openableUrl(url: string | undefined): URL | undefined {
  if (url === undefined) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u : undefined;
  } catch {
    return undefined;
  }
}

/** The elicitation's mode: `mode` when given, else url when a URL and no schema came (older payloads say neither). */
export const elicitationMode = (input: ElicitationInput): "form" | "url" => input.mode ?? (input.url !== undefined && !input.requested_schema ? "url" : "form");

/** The `elicitation` arguments; an error when the request cannot be shown as it is (the terminal then asks). */
export function elicitationArgs(input: ElicitationInput, projectDir: string, agent: string): { args: Record<string, unknown> } | { error: string } {
  const mode = elicitationMode(input);
  const base = { server: input.mcp_server_name, message: input.message, mode, project_directory: projectDir, agent };
  const id = input.elicitation_id !== undefined ? { elicitation_id: input.elicitation_id } : {};
  if (mode === "url") {
    const u = openableUrl(input.url);
    if (!u) return { error: `the URL-mode request has no http(s) URL (${JSON.stringify(input.url ?? null)})` };
    return { args: { ...base, url: u.href, ...id } };
  }
  return { args: { ...base, requested_schema: input.requested_schema ?? { type: "object", properties: {} }, ...id } };
}

/**
 * The card's answer: accept (form: with content valid against the requested schema), decline or cancel.
 * An error when it is none of these or the content does not fit the schema (it is never returned then).
 */
export function readElicitationAnswer(
  r: ToolResultBody,
  input: ElicitationInput,
): { action: ElicitationAction; content?: Record<string, unknown> } | { error: string } {
  const action = r.action;
  if (action === "decline" || action === "cancel") return { action };
  if (action !== "accept") return { error: `the app answered ${JSON.stringify(action ?? r.message)}, not accept/decline/cancel` };
  if (elicitationMode(input) === "url") return { action };
  // `values`, not `content`: a result's `content` is its content blocks (shared/contract/tools.ts).
  const content = r.values;
  if (!content || typeof content !== "object" || Array.isArray(content)) return { error: "an accepted form has no values object" };
  const bad = checkArguments(input.requested_schema ?? { type: "object" }, content);
  if (bad) return { error: `the content does not fit the requested schema: ${bad}` };
  return { action, content: content as Record<string, unknown> };
}
