// A sealed session's opened call arguments checked against the app's own tool schemas before anything is
// rendered (docs/e2e.md rule 2: validation moves to the receiver); web/src/e2e/codec.ts opens and seals. The
// lazy `e2e` chunk: plaintext sessions never load it.
import { BUILTIN_TOOLS } from "../../../shared/contract/builtin-tools.js";
import type { ToolDef } from "../../../shared/contract/protocol.js";
import { checkArguments } from "../../../shared/contract/schema.js";

function schemaOf(tools: readonly ToolDef[], name: string, action: string | undefined): Record<string, unknown> | undefined {
  const def = tools.find((t) => t.name === name);
  if (!def) return undefined;
  if (def.type === "action") return def.inputSchema;
  return def.actions.find((a) => a.name === action)?.inputSchema;
}

export function checkCall(name: string, action: string | undefined, args: unknown, tools: readonly ToolDef[] = BUILTIN_TOOLS): string | null {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return "(arguments): must be an object";
  const schema = schemaOf(tools, name, action);
  if (!schema) return null; // not one of ours: the relay already refused unknown tools
  const bad = checkArguments(schema, args);
  return bad ? `${name}${action ? "." + action : ""}: ${bad}` : null;
}
