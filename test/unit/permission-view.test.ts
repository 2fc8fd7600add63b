// The permission card's pure parts (web/src/tools/permission-view.ts, issue 17): what an input is shown
// as, the edit diff, the rules offered for "Always allow", and the shared builtin definition.
import { describe, expect, it } from "vitest";
import { BUILTIN_TOOLS, HUMAN_TOOL_NAMES, PERMISSION } from "../../shared/contract/builtin-tools.js";
import { codeSpans, lineDiff, ruleError, rulesToOffer, viewOf, withContext } from "../../web/src/tools/permission-view.js";

describe("viewOf: a tool input shown for what it is", () => {
  it.each([
    ["Bash", { command: "npm test", description: "Run tests" }, { kind: "bash", command: "npm test", description: "Run tests" }],
    ["Edit", { file_path: "/p/a.ts", old_string: "a", new_string: "b" }, { kind: "edit", path: "/p/a.ts", edits: [{ old: "a", new: "b" }] }],
    [
      "MultiEdit",
      {
        file_path: "/p/a.ts",
        edits: [
          { old_string: "a", new_string: "b" },
          { old_string: "c", new_string: "d" },
        ],
      },
      {
        kind: "edit",
        path: "/p/a.ts",
        edits: [
          { old: "a", new: "b" },
          { old: "c", new: "d" },
        ],
      },
    ],
    ["Write", { file_path: "/p/n.md", content: "# hi" }, { kind: "write", path: "/p/n.md", content: "# hi" }],
    ["Read", { file_path: "/p/.env" }, { kind: "path", path: "/p/.env" }],
    ["Grep", { pattern: "TODO", path: "/p/src" }, { kind: "path", path: "/p/src", pattern: "TODO" }],
    ["WebFetch", { url: "https://x.example/a", prompt: "sum" }, { kind: "url", url: "https://x.example/a", prompt: "sum" }],
    ["mcp__github__create_issue", { title: "t" }, { kind: "json", json: '{\n  "title": "t"\n}' }],
  ])("%s", (tool, input, view) => {
    expect(viewOf(tool, input)).toEqual(view);
  });
});

describe("lineDiff", () => {
  it("keeps the common head and tail, removals before additions", () => {
    expect(lineDiff("a\nb\nc", "a\nB\nc")).toEqual([
      { op: " ", text: "a" },
      { op: "-", text: "b" },
      { op: "+", text: "B" },
      { op: " ", text: "c" },
    ]);
    expect(lineDiff("", "x\ny")).toEqual([
      { op: "+", text: "x" },
      { op: "+", text: "y" },
    ]);
    expect(lineDiff("x", "")).toEqual([{ op: "-", text: "x" }]);
    expect(lineDiff("1\n2\n3\n4", "1\n3\n4\n5").map((l) => l.op + l.text)).toEqual([" 1", "-2", " 3", " 4", "+5"]);
  });

  it("falls back to old-then-new past the size limit, and folds long unchanged runs", () => {
    const big = Array.from({ length: 600 }, (_, i) => `l${i}`).join("\n");
    const other = Array.from({ length: 600 }, (_, i) => `m${i}`).join("\n");
    const d = lineDiff(big, other);
    expect(d.filter((l) => l.op === "-")).toHaveLength(600);
    expect(d.findIndex((l) => l.op === "+")).toBe(600);
    const ctx = withContext(
      lineDiff(Array.from({ length: 20 }, (_, i) => `${i}`).join("\n"), Array.from({ length: 20 }, (_, i) => (i === 10 ? "X" : `${i}`)).join("\n")),
      2,
    );
    expect(ctx.map((l) => (l ? l.op + l.text : "…"))).toEqual(["…", " 8", " 9", "-10", "+X", " 11", " 12", "…"]);
  });
});

describe("rules the card offers", () => {
  it("the request's suggestions (valid ones), else the policy engine's proposal", () => {
    expect(rulesToOffer({ tool_name: "Bash", input: { command: "npm test" }, suggestions: ["Bash(npm test:*)", "bash(x)", "Bash(npm test:*)"] })).toEqual([
      "Bash(npm test:*)",
    ]);
    expect(rulesToOffer({ tool_name: "Bash", input: { command: "npm run build -- --prod" } })).toEqual(["Bash(npm run build:*)"]);
    expect(rulesToOffer({ tool_name: "Edit", input: { file_path: "/home/me/app/src/a.ts" }, project_directory: "/home/me/app" })).toEqual(["Edit(/src/**)"]);
    expect(rulesToOffer({ tool_name: "Bash", input: { command: "echo 'unterminated" } })).toEqual([]);
    expect(ruleError("Bash(npm test:*)")).toBeUndefined();
    expect(ruleError("bash(ls)")).toContain('did you mean "Bash"');
  });

  it("reasons quote commands in backticks: shown as code", () => {
    expect(codeSpans("denied by X for `rm -rf build`.")).toEqual([
      { code: false, text: "denied by X for " },
      { code: true, text: "rm -rf build" },
      { code: false, text: "." },
    ]);
  });
});

describe("the permission built-in", () => {
  it("is registered by the app like the other human tools, with the spec's arguments", () => {
    expect(BUILTIN_TOOLS).toContain(PERMISSION);
    expect(HUMAN_TOOL_NAMES.has("permission")).toBe(true);
    expect(PERMISSION.type === "action" && PERMISSION.inputSchema).toMatchObject({
      required: ["tool_name", "input"],
      properties: {
        tool_name: { type: "string" },
        input: { type: "object" },
        project_directory: { type: "string" },
        agent: { type: "string" },
        reason: { type: "string" },
        suggestions: { type: "array" },
      },
    });
  });
});
