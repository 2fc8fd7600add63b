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

export const BUILTIN_TOOLS: ToolDef[] = [CHOICE, CONFIRM, INPUT, CALCULATOR, CANVAS, ASK_QUESTION, WORK_REPORT];

/** Built-in tools a human answers. Once one is in a side's catalog, another client cannot register it
 * with a different schema (tool poisoning: what the model reads and what the human is asked must match). */
export const HUMAN_TOOL_NAMES: ReadonlySet<string> = new Set(["ask_question", "work_report", "choice", "confirm", "input", "permission"]);
