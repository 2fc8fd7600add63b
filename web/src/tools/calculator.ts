// calculator (toolset): answered by the app itself, no human (../shared/spec/builtin-tools.md).
import type { ToolError, ToolResultBody } from "../../../shared/contract/protocol.js";

export type Answer = { result: ToolResultBody } | { error: ToolError };

export function calculate(action: string | undefined, args: Record<string, unknown>): Answer {
  const { a, b } = args;
  if (typeof a !== "number" || typeof b !== "number" || !Number.isFinite(a) || !Number.isFinite(b)) {
    return { error: { code: "invalid_arguments", message: "a and b must be finite numbers" } };
  }
  let value: number;
  switch (action) {
    case "add":
      value = a + b;
      break;
    case "subtract":
      value = a - b;
      break;
    case "multiply":
      value = a * b;
      break;
    case "divide":
      if (b === 0) return { error: { code: "divide_by_zero", message: "cannot divide by zero" } };
      value = a / b;
      break;
    default:
      return { error: { code: "unknown_action", message: `calculator has no action "${action ?? ""}"` } };
  }
  if (!Number.isFinite(value)) return { error: { code: "overflow", message: "the result is not a finite number" } };
  return { result: { message: String(value), value } };
}
