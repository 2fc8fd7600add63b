// The pure half of issue 29's hooks (shared/policy/ask-hooks.ts): the card's answers are read back strictly —
// every question answered, an elicitation's content checked against the requested schema — and a URL-mode
// request only ever carries an http(s) URL. A question set reads as its questions wherever a call is one line.
import { describe, expect, it } from "vitest";
import {
  AskUserQuestionInput,
  ElicitationInput,
  elicitationArgs,
  elicitationOutput,
  readElicitationAnswer,
  readQuestionAnswers,
} from "../../shared/policy/ask-hooks.js";
import { summaryOf } from "../../shared/tools/meaning.js";

const qs = AskUserQuestionInput.parse({
  questions: [
    { question: "Which database?", header: "DB", options: [{ label: "SQLite" }], multiSelect: false },
    { question: "Which features?", header: "F", options: [{ label: "Auth" }, { label: "Billing" }], multiSelect: true },
  ],
});
const base = { session_id: "s", cwd: "/p", hook_event_name: "Elicitation", mcp_server_name: "billing", message: "Contact?" };
const form = ElicitationInput.parse({
  ...base,
  mode: "form",
  requested_schema: { type: "object", properties: { email: { type: "string", format: "email" }, n: { type: "integer", maximum: 3 } }, required: ["email"] },
});

describe("reading the phone's answers", () => {
  it("takes one answer per question, keyed by its text, and refuses a set with a question left out", () => {
    expect(readQuestionAnswers({ message: "x", answers: { "Which database?": "SQLite", "Which features?": "Auth, Billing" } }, qs)).toEqual({
      answers: { "Which database?": "SQLite", "Which features?": "Auth, Billing" },
    });
    expect(readQuestionAnswers({ message: "x", answers: { "Which database?": "SQLite" } }, qs)).toEqual({ error: 'no answer to "Which features?"' });
    expect(readQuestionAnswers({ message: "x" }, qs)).toHaveProperty("error");
  });

  it("returns an elicitation's content only when it fits the requested schema", () => {
    expect(readElicitationAnswer({ message: "accepted", action: "accept", values: { email: "a@b.example", n: 2 } }, form)).toEqual({
      action: "accept",
      content: { email: "a@b.example", n: 2 },
    });
    const bad = readElicitationAnswer({ message: "accepted", action: "accept", values: { email: "a@b.example", n: 9 } }, form);
    expect("error" in bad && bad.error).toMatch(/^the content does not fit the requested schema: n: /);
    expect(readElicitationAnswer({ message: "accepted", action: "accept", values: { n: 1 } }, form)).toHaveProperty("error");
    expect(readElicitationAnswer({ message: "declined", action: "decline" }, form)).toEqual({ action: "decline" });
    expect(readElicitationAnswer({ message: "cancelled", action: "cancel" }, form)).toEqual({ action: "cancel" });
    expect(readElicitationAnswer({ message: "yes" }, form)).toHaveProperty("error");
    expect(elicitationOutput("decline", { x: 1 })).toEqual({ hookSpecificOutput: { hookEventName: "Elicitation", action: "decline" } });
  });

  it("sends a URL-mode request only with an http(s) URL", () => {
    const url = (u: string) => elicitationArgs(ElicitationInput.parse({ ...base, mode: "url", url: u }), "/p", "Claude Code");
    expect(url("https://pay.example.com/x?y=1")).toEqual({
      args: { server: "billing", message: "Contact?", mode: "url", project_directory: "/p", agent: "Claude Code", url: "https://pay.example.com/x?y=1" },
    });
    for (const u of ["javascript:alert(1)", "data:text/html,hi", "file:///etc/passwd", "not a url"]) expect(url(u)).toHaveProperty("error");
  });

  it("a question set reads as its questions on one line (inbox, notifications, collapsed cards)", () => {
    expect(summaryOf("ask_questions", { questions: [{ question: "Which database?" }, { question: "Which  features?" }] })).toBe(
      "Which database? · Which features?",
    );
    expect(summaryOf("elicitation", { server: "billing", message: "Contact?" })).toBe("Contact?");
  });
});
