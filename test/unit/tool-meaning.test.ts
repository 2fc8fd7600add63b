// The built-in tools' meaning, written once (shared/tools/meaning.ts, issue 27 §6): the summary line, what a tap
// answers and the taps a notification offers — and the session's push answer and inbox report use exactly it.
import { describe, expect, it } from "vitest";
import { resultFor } from "../../shared/session/push-answer.js";
import { callText, pushExtras as reportExtras } from "../../shared/session/report.js";
import { ANSWERS, askedArg, permissionLine, summaryOf, tapActions, tapResult } from "../../shared/tools/meaning.js";
import { pushExtras } from "../../shared/tools/push-extras.js";
import { waitText } from "../../web/src/calltext.js";

const L = { yes: "Yes", no: "No", allow: "Allow", deny: "Deny" };

describe("built-in tools' meaning", () => {
  it("a tap answers what the card's button answers: confirm yes/no, permission allow/deny, a single choice's option", () => {
    expect(tapResult("confirm", "yes")).toEqual({ message: "yes", confirmed: true });
    expect(tapResult("confirm", "no")).toEqual({ message: "no", confirmed: false });
    expect(tapResult("permission", "allow")).toEqual({ message: "allow", behavior: "allow" });
    expect(tapResult("permission", "deny")).toEqual({ message: "deny", behavior: "deny" });
    expect(tapResult("permission", "always")).toBeUndefined();
    expect(tapResult("choice", "opt:1", ["a", "b"])).toEqual({ message: "b", selected: ["b"] });
    expect(tapResult("choice", "opt:1", ["a", "b"], true)).toBeUndefined();
    expect(tapResult("choice", "opt:7", ["a", "b"])).toBeUndefined();
    expect(tapResult("input", "yes")).toBeUndefined();
    expect(ANSWERS.picked(["a", "c"])).toEqual({ message: "a, c", selected: ["a", "c"] });
    expect(ANSWERS.approved()).toEqual({ message: "approved", approved: true });
  });

  it("the session's push answer is the shared tap result, read from the call's own arguments", () => {
    expect(resultFor("choice", { question: "q", options: ["x", "y"] }, "opt:0")).toEqual(tapResult("choice", "opt:0", ["x", "y"]));
    expect(resultFor("choice", { question: "q", options: ["x", "y"], multiple: true }, "opt:0")).toBeUndefined();
    expect(resultFor("confirm", { question: "q" }, "no")).toEqual(ANSWERS.no());
  });

  it("a notification offers confirm labels, Allow/Deny or a short choice's options, only when they fit", () => {
    expect(tapActions("confirm", { confirm: { yes: "Ship" } }, L, 2)).toEqual([
      { action: "yes", title: "Ship" },
      { action: "no", title: "No" },
    ]);
    expect(tapActions("permission", {}, L, 2)).toEqual([
      { action: "allow", title: "Allow" },
      { action: "deny", title: "Deny" },
    ]);
    expect(tapActions("choice", { options: ["a", "b", "c"] }, L, 2)).toEqual([]);
    expect(tapActions("choice", { options: ["a", "b"] }, L, 2)).toEqual([
      { action: "opt:0", title: "a" },
      { action: "opt:1", title: "b" },
    ]);
    expect(tapActions("confirm", {}, L, 0)).toEqual([]);
  });

  it("the summary line: the first argument with text, a permission's tool and subject, else the tool's name", () => {
    expect(askedArg({ question: "  ", summary: "Done **all**" })).toBe("Done **all**");
    expect(summaryOf("permission", { tool_name: "Bash", input: { command: "npm  test" } })).toBe("Bash: npm test");
    expect(summaryOf("calculator", {})).toBe("calculator");
    expect(callText("work_report", { project_directory: "/p", summary: "Fixed\nthe bug" })).toBe("Fixed the bug");
    expect(waitText({ args: { title: "Deploy\n**now**?" } })).toBe("Deploy now?");
    expect(reportExtras).toBe(pushExtras);
    expect(pushExtras("confirm", { question: "q", yes_label: " Ship  it " })).toEqual({ yes_label: "Ship it" });
  });

  it("a permission reads as a sentence on a row and in the waiting list (issue 28 §5): tool · command, never JSON or 'permission'", () => {
    const args = { tool_name: "Bash", input: { command: "rm -rf node_modules\n&& npm ci", description: "Reinstall" } };
    expect(permissionLine(args)).toBe("Bash · rm -rf node_modules && npm ci");
    expect(permissionLine({ tool_name: "Read", input: { file_path: "/etc/hosts" } })).toBe("Read · /etc/hosts");
    expect(permissionLine({ tool_name: "mcp__github__create_issue", input: { title: "x" } })).toBe("mcp__github__create_issue");
    expect(waitText({ name: "permission", args })).toBe("Bash · rm -rf node_modules && npm ci");
  });
});
