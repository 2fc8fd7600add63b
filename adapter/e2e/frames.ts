// What the adapter's client needs around shared/crypto/e2e/frames.ts in a sealed session (docs/e2e.md rules 2–4):
// the call preview, receiver-side validation against a tool's schema, and turning opened tool lists
// back into tool definitions. Sealing and opening themselves are shared/crypto/e2e/frames.ts, nothing here.
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { openFrame, type Frame, type KeyOf, type Preview } from "../../shared/crypto/e2e/frames.js";
import { callText, pushExtras } from "../../shared/session/report.js";
import { ToolDef as ToolDefSchema, type ToolDef } from "../../shared/contract/protocol.js";
import { checkArguments } from "../../shared/contract/schema.js";

/**
 * A call's preview: the inbox's waiting text and the notification extras, cut as the relay cuts them for
 * plaintext calls (shared/session/report.ts callText and pushExtras).
 */
export function previewOf(name: string, args: Record<string, unknown>): Preview {
  return { text: callText(name, args), ...pushExtras(name, args) };
}

/** The input schema of `name`/`action` in `defs`; `null` when the action does not exist; undefined when the tool is unknown. */
export function schemaOf(defs: readonly ToolDef[], name: string, action: string | undefined): Record<string, unknown> | null | undefined {
  const def = defs.find((d) => d.name === name);
  if (!def) return undefined;
  if (def.type === "action") return def.inputSchema;
  return def.actions.find((a) => a.name === action)?.inputSchema ?? null;
}

/**
 * Validates a sealed call's arguments where the relay no longer can (docs/e2e.md rule 2): against the tool
 * the app registered, else the built-in tool of that name. Returns an error message, or null (valid or unknown).
 */
export function checkCallArguments(appTools: readonly ToolDef[], name: string, action: string | undefined, args: Record<string, unknown>): string | null {
  let schema = schemaOf(appTools, name, action);
  if (schema === undefined) schema = schemaOf(BUILTIN_TOOLS, name, action);
  if (!schema) return null; // unknown tool or action: the relay answers unknown_tool / unknown_action
  const bad = checkArguments(schema, args);
  return bad ? `${name}${action ? "." + action : ""}: ${bad}` : null;
}

/** Opens a sealed tool list entry by entry: an entry that does not open (or is no tool) is dropped and reported. */
export async function openToolList(keyOf: KeyOf, sessionId: string, frame: Frame, log: (line: string) => void): Promise<ToolDef[]> {
  const tools = Array.isArray(frame.tools) ? (frame.tools as Frame[]) : [];
  const out: ToolDef[] = [];
  for (const t of tools) {
    let opened: Frame;
    try {
      const f = await openFrame(keyOf, sessionId, { type: "tool.list", tools: [t] });
      opened = (f.tools as Frame[])[0]!;
    } catch (e) {
      log(`end-to-end: the app's tool ${JSON.stringify(t.name)} does not open (${e instanceof Error ? e.message : String(e)}); ignored`);
      continue;
    }
    const { sender: _s, ...def } = opened;
    const r = ToolDefSchema.safeParse(def);
    if (r.success) out.push(r.data);
    else log(`end-to-end: the app's tool ${JSON.stringify(t.name)} is not a valid tool definition; ignored`);
  }
  return out;
}
