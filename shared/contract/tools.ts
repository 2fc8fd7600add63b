// Wire shapes of tools and their results: content blocks, tool definitions, a result body or error.
import { z } from "./zod.js";
import { LIMITS, NAME_RE } from "./limits.js";

export const JsonObject = z.record(z.string(), z.unknown());

export const ContentBlock = z.union([
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("image"), data: z.string(), mimeType: z.string() }),
  z.looseObject({ type: z.literal("audio"), data: z.string(), mimeType: z.string() }),
  z.looseObject({
    type: z.literal("resource"),
    resource: z.looseObject({
      uri: z.string(),
      mimeType: z.string().optional(),
      text: z.string().optional(),
      blob: z.string().optional(),
    }),
  }),
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

export const ToolName = z.string().regex(NAME_RE, "1-64 chars of [A-Za-z0-9_.-]");
const InputSchema = JsonObject;

export const ActionDef = z.looseObject({
  name: ToolName,
  description: z.string().default(""),
  inputSchema: InputSchema.default({ type: "object" }),
});
export type ActionDef = z.infer<typeof ActionDef>;

export const ToolDef = z.discriminatedUnion("type", [
  z.looseObject({
    name: ToolName,
    type: z.literal("action"),
    description: z.string().default(""),
    inputSchema: InputSchema.default({ type: "object" }),
  }),
  z.looseObject({
    name: ToolName,
    type: z.enum(["toolset", "app"]),
    description: z.string().default(""),
    actions: z.array(ActionDef).max(256),
  }),
]);
export type ToolDef = z.infer<typeof ToolDef>;

export const ToolError = z.looseObject({ code: z.string().min(1).max(64), message: z.string() });
export type ToolError = z.infer<typeof ToolError>;

export const ToolResultBody = z.looseObject({
  message: z.string(),
  content: z.array(ContentBlock).optional(),
  instance_id: z.string().optional(),
});
export type ToolResultBody = z.infer<typeof ToolResultBody>;

export const CallId = z.string().min(1).max(LIMITS.maxCallIdLength);

/** Extracts an instance id from a result: `result.instance_id`, else `instance_id: <id>` in `result.message`. */
export function instanceIdOf(result: ToolResultBody | undefined): string | undefined {
  if (!result) return undefined;
  if (typeof result.instance_id === "string" && result.instance_id) return result.instance_id;
  const m = /instance_id\s*[:=]\s*["']?([A-Za-z0-9_.:-]+)/.exec(result.message);
  // "… instance_id: inst_001." — a sentence's final period or colon is not part of the id.
  return m?.[1]?.replace(/[.:]+$/, "") || undefined;
}

/** Stable JSON with sorted keys: how the relay decides two `tool.call`s are identical. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
