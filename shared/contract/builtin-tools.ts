// The built-in tools' canonical definitions (../shared/spec/builtin-tools.md is the contract they match).
// The PWA registers them with `tool.list` and answers them; the MCP bridge exposes them; tests use them.
import type { ToolDef } from "./protocol.js";

const obj = (properties: Record<string, unknown>, required: string[]) => ({ type: "object", properties, required });
const instance = { instance_id: { type: "string", description: "canvas instance id (from open)" } };

export const CHOICE: ToolDef = {
  name: "choice",
  type: "action",
  description: "Offer the human a list of options and return the one they pick.",
  inputSchema: obj(
    {
      question: { type: "string", description: "the question" },
      options: { type: "array", items: { type: "string" }, minItems: 1, description: "the options" },
      multiple: { type: "boolean", description: "allow several options" },
    },
    ["question", "options"],
  ),
};

export const CONFIRM: ToolDef = {
  name: "confirm",
  type: "action",
  description: "Ask the human a yes/no question.",
  inputSchema: obj(
    {
      question: { type: "string" },
      yes_label: { type: "string" },
      no_label: { type: "string" },
    },
    ["question"],
  ),
};

export const INPUT: ToolDef = {
  name: "input",
  type: "action",
  description: "Ask the human to type a text answer.",
  inputSchema: obj(
    {
      question: { type: "string" },
      placeholder: { type: "string" },
      multiline: { type: "boolean" },
      default: { type: "string" },
    },
    ["question"],
  ),
};

const ab = obj({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]);
export const CALCULATOR: ToolDef = {
  name: "calculator",
  type: "toolset",
  description: "A stateless calculator; every call is independent. Answered by the app itself.",
  actions: [
    { name: "add", description: "a + b", inputSchema: ab },
    { name: "subtract", description: "a - b", inputSchema: ab },
    { name: "multiply", description: "a * b", inputSchema: ab },
    { name: "divide", description: "a / b (b must not be 0)", inputSchema: ab },
  ],
};

export const CANVAS: ToolDef = {
  name: "canvas",
  type: "app",
  description: "A drawing board with a lifecycle: open → draw/undo/clear/snapshot → close.",
  actions: [
    {
      name: "open",
      description: "Create a canvas; returns instance_id",
      inputSchema: obj({ width: { type: "integer", minimum: 1, maximum: 4096 }, height: { type: "integer", minimum: 1, maximum: 4096 } }, ["width", "height"]),
    },
    {
      name: "draw",
      description: "Draw an SVG path",
      inputSchema: obj(
        { ...instance, path: { type: "string", description: "SVG path data" }, color: { type: "string" }, width: { type: "integer", minimum: 1 } },
        ["instance_id", "path"],
      ),
    },
    { name: "undo", description: "Undo the last drawing step", inputSchema: obj(instance, ["instance_id"]) },
    { name: "clear", description: "Clear the canvas", inputSchema: obj(instance, ["instance_id"]) },
    { name: "close", description: "Close the canvas and free it", inputSchema: obj(instance, ["instance_id"]) },
    { name: "snapshot", description: "Return the canvas as a PNG image", inputSchema: obj(instance, ["instance_id"]) },
  ],
};

export const ASK_QUESTION: ToolDef = {
  name: "ask_question",
  type: "action",
  description: "Ask the human a question (markdown) and wait for their reply, which may carry text, images, audio and files.",
  inputSchema: obj(
    {
      project_directory: { type: "string", description: "the current project directory" },
      question: { type: "string", description: "the question, in markdown" },
    },
    ["project_directory", "question"],
  ),
};

export const WORK_REPORT: ToolDef = {
  name: "work_report",
  type: "action",
  description: "Report finished work (markdown summary) and wait for the human to approve it or ask for changes.",
  inputSchema: obj(
    {
      project_directory: { type: "string", description: "the current project directory" },
      summary: { type: "string", description: "what was done, in markdown" },
    },
    ["project_directory", "summary"],
  ),
};

/** An agent asks to run one of its own tools (Claude Code's Bash, Edit, …): sent by `lineup hook
 * permission-request`, `lineup hook cursor-shell` and `approve` in `lineup mcp` (docs/permissions.md). */
export const PERMISSION: ToolDef = {
  name: "permission",
  type: "action",
  description:
    "May the agent run its own tool (e.g. Bash) with this input? Answer: allow, deny (+feedback) or always (+rule); with choices, one of those. Sent by LineUp's hooks and the Hermes plugin.",
  inputSchema: obj(
    {
      tool_name: { type: "string", description: "the agent's tool, e.g. Bash, Edit, mcp__github__create_issue" },
      input: { type: "object", description: "the tool's input, as the agent would run it", additionalProperties: true },
      project_directory: { type: "string", description: "the project directory" },
      agent: { type: "string", description: "which agent asks, e.g. Claude Code" },
      reason: { type: "string", description: "why the human is asked (e.g. which policy rule asks)" },
      suggestions: {
        type: "array",
        items: { type: "string" },
        maxItems: 10,
        description: "Claude Code permission rules (e.g. Bash(npm test:*)) the human may always allow",
      },
      // i34-hermes: the answers the caller accepts (docs/permissions.md §14); absent: Claude Code's card.
      choices: { type: "array", items: { enum: ["once", "session", "always", "deny"] } },
    },
    ["tool_name", "input"],
  ),
};

// The two below are kept small: the PWA registers every built-in tool from its first load (a 60 KB budget), and
// the hook that sends them parses its input fully (shared/policy/ask-hooks.ts).

/** Claude Code's own AskUserQuestion, asked on the phone: sent by `lineup hook ask-user-question` (docs/permissions.md §7.10).
 * Each question: `question`, `header`, `options` of `{label, description}`, `multiSelect`. Answer:
 * `{message, answers: {<question text>: <label, labels joined by ", ", or the typed "Other" text>}}`. */
export const ASK_QUESTIONS: ToolDef = {
  name: "ask_questions",
  type: "action",
  description: "AskUserQuestion on the phone.",
  inputSchema: obj({}, ["questions"]),
};

/** An MCP server's elicitation, asked on the phone: sent by `lineup hook elicitation` (docs/permissions.md §7.11).
 * Also `requested_schema` (form), `url` (url mode), `elicitation_id`, `project_directory`, `agent`. Answer:
 * `{message, action: "accept"|"decline"|"cancel", values?}` (values: the form's content, accept only). */
export const ELICITATION: ToolDef = {
  name: "elicitation",
  type: "action",
  description: "An MCP elicitation on the phone.",
  inputSchema: obj({}, ["server", "message", "mode"]),
};

export const BUILTIN_TOOLS: ToolDef[] = [CHOICE, CONFIRM, INPUT, CALCULATOR, CANVAS, ASK_QUESTION, WORK_REPORT, PERMISSION, ASK_QUESTIONS, ELICITATION];

/** Built-in tools only LineUp's hooks send (never offered to an MCP host as its own tools). */
export const HOOK_TOOL_NAMES: ReadonlySet<string> = new Set(["permission", "ask_questions", "elicitation"]);

/** Built-in tools a human answers. Once one is in a side's catalog, another client cannot register it
 * with a different schema (tool poisoning: what the model reads and what the human is asked must match). */
export const HUMAN_TOOL_NAMES: ReadonlySet<string> = new Set([
  "ask_question",
  "work_report",
  "choice",
  "confirm",
  "input",
  "permission",
  "ask_questions",
  "elicitation",
]);
