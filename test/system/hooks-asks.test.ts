// Issue 29 items 1 and 2 through the real bin: the permission hooks never answer AskUserQuestion (Claude
// Code ranks deny > defer > ask > allow across the hooks of one call, so their "deny" would beat the phone's
// answer), and in a sealed (E2E) session the question set and the elicitation travel sealed, the answers come
// back in Claude Code's shape, and content that does not fit the requested schema is never returned. The
// phone is SimDevice (the PWA's own crypto, test/helpers/e2e-device.ts); the relay is the real `wrangler dev`.
// Stdin as documented at https://code.claude.com/docs/en/hooks (PreToolUse, Elicitation).
import { describe, expect, inject, it } from "vitest";
import { ASK_QUESTIONS, ELICITATION } from "../../shared/contract/builtin-tools.js";
import { sealedRun } from "../helpers/hooks-sealed.js";
import {
  askUserQuestion,
  countingListener,
  elicitation,
  permissionRequest,
  preToolUse,
  project,
  runHook,
  TWO_QUESTIONS as QUESTIONS,
} from "../helpers/hooks-helpers.js";

const relay = inject("relayUrl");

const askStdin = (cwd: string) => askUserQuestion(cwd, QUESTIONS);

const SCHEMA = {
  type: "object",
  properties: { email: { type: "string", format: "email" }, seats: { type: "integer", minimum: 1, maximum: 10 } },
  required: ["email"],
};
const elicitStdin = (cwd: string) =>
  elicitation(cwd, {
    message: "Your billing contact",
    mode: "form",
    elicitation_id: "el-7",
    requested_schema: SCHEMA,
  });

describe("the permission hooks leave AskUserQuestion to the phone", () => {
  // Regression (issue 29): a policy rule "AskUserQuestion" in deny made pre-tool-use answer deny, which Claude
  // Code ranks above the ask-user-question hook's allow with the human's answers.
  it("pre-tool-use answers nothing for AskUserQuestion, even when the policy denies it; permission-request does not ask either", async () => {
    const p = project({ deny: ["AskUserQuestion", "Bash(rm:*)"] });
    const nobody = await countingListener();
    try {
      const env = { LINEUP_RELAY_URL: nobody.url, LINEUP_STATE_DIR: p.stateDir, HOME: p.stateDir };
      const pre = await runHook(["pre-tool-use"], preToolUse(p.dir, "AskUserQuestion", { questions: QUESTIONS }), env, p.dir);
      expect([pre.code, pre.stdout]).toEqual([0, ""]);
      const perm = await runHook(["permission-request", "--wait", "5"], permissionRequest(p.dir, "AskUserQuestion", { questions: QUESTIONS }), env, p.dir);
      expect([perm.code, perm.stdout]).toEqual([0, ""]);
      expect(nobody.connections()).toBe(0);
      // The same policy still decides other tools.
      const rm = await runHook(["pre-tool-use"], preToolUse(p.dir, "Bash", { command: "rm -rf build" }), env, p.dir);
      expect(JSON.parse(rm.stdout).hookSpecificOutput.permissionDecision).toBe("deny");
    } finally {
      await nobody.close();
    }
  }, 60_000);
});

describe("sealed sessions", () => {
  it("AskUserQuestion: the sealed question set opens on the phone and its answers return as updatedInput.answers", async () => {
    const p = project();
    const r = await sealedRun(relay, p, ["ask-user-question", "--wait", "90"], askStdin(p.dir), ASK_QUESTIONS);
    try {
      expect(r.opened.name).toBe("ask_questions");
      expect((r.opened.arguments as { questions: unknown }).questions).toEqual(QUESTIONS.map((q) => ({ ...q, multiSelect: q.multiSelect })));
      const answers = { "Which database?": "SQLite", "Which features?": "Auth, Billing" };
      await r.answer({ message: "DB: SQLite\nFeatures: Auth, Billing", answers });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "allow",
            permissionDecisionReason: "Answered in the LineUp app",
            updatedInput: { questions: QUESTIONS, answers },
          },
        },
      ]);
    } finally {
      r.close();
      if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
    }
  }, 150_000);

  it("Elicitation: the sealed form opens on the phone; accepted values return as content", async () => {
    const p = project();
    const r = await sealedRun(relay, p, ["elicitation", "--wait", "90"], elicitStdin(p.dir), ELICITATION);
    try {
      expect(r.opened.arguments).toMatchObject({
        server: "billing",
        message: "Your billing contact",
        mode: "form",
        requested_schema: SCHEMA,
        elicitation_id: "el-7",
      });
      await r.answer({ message: "accepted", action: "accept", values: { email: "me@example.com", seats: 2 } });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([
        0,
        { hookSpecificOutput: { hookEventName: "Elicitation", action: "accept", content: { email: "me@example.com", seats: 2 } } },
      ]);
    } finally {
      r.close();
      if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
    }
  }, 150_000);

  it("Elicitation: content that does not fit the requested schema is never returned; the terminal asks instead", async () => {
    const p = project();
    const r = await sealedRun(relay, p, ["elicitation", "--wait", "90"], elicitStdin(p.dir), ELICITATION);
    try {
      await r.answer({ message: "accepted", action: "accept", values: { email: "not an email", seats: 40 } });
      const out = await r.run;
      expect([out.code, out.stdout]).toEqual([0, ""]);
      expect(out.stderr).toContain("does not fit the requested schema");
    } finally {
      r.close();
      if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
    }
  }, 150_000);

  it("AskUserQuestion: Decline on the sealed card denies the tool with a reason, never a made-up answer", async () => {
    const p = project();
    const r = await sealedRun(relay, p, ["ask-user-question", "--wait", "90"], askStdin(p.dir), ASK_QUESTIONS);
    try {
      // What the card's Decline button sends (web/src/ui/Cards.tsx), sealed like every answer.
      await r.reply({ error: { code: "declined", message: "the human declined" } });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([
        0,
        {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "deny",
            permissionDecisionReason: "The human declined to answer these questions in the LineUp app.",
          },
        },
      ]);
    } finally {
      r.close();
      if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
    }
  }, 150_000);

  for (const action of ["decline", "cancel"] as const) {
    it(`Elicitation: ${action} on the sealed card answers ${action}, with no content`, async () => {
      const p = project();
      const r = await sealedRun(relay, p, ["elicitation", "--wait", "90"], elicitStdin(p.dir), ELICITATION);
      try {
        // What the elicitation card's buttons send (web/src/tools/asks.tsx `ended`).
        await r.answer({ message: action === "decline" ? "declined" : "cancelled", action });
        const out = await r.run;
        expect([out.code, JSON.parse(out.stdout)]).toEqual([0, { hookSpecificOutput: { hookEventName: "Elicitation", action } }]);
      } finally {
        r.close();
        if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
      }
    }, 150_000);
  }

  it("Elicitation, URL mode: the URL travels sealed; Done accepts", async () => {
    const p = project();
    const url = "https://pay.example.com/checkout?session=cs_123";
    const stdin = JSON.stringify({ ...JSON.parse(elicitStdin(p.dir)), mode: "url", url, requested_schema: undefined });
    const r = await sealedRun(relay, p, ["elicitation", "--wait", "90"], stdin, ELICITATION);
    try {
      expect(r.opened.arguments).toMatchObject({ server: "billing", mode: "url", url });
      await r.answer({ message: "accepted", action: "accept" });
      const out = await r.run;
      expect([out.code, JSON.parse(out.stdout)]).toEqual([0, { hookSpecificOutput: { hookEventName: "Elicitation", action: "accept" } }]);
    } finally {
      r.close();
      if (r.run.child.exitCode === null) r.run.child.kill("SIGKILL");
    }
  }, 150_000);
});
