// Matching one rule against a tool call: tool names and globs, `Tool(param:value)`, content specifiers,
// WebFetch domains and Read/Edit path rules (gitignore patterns against their anchor). The Bash command
// matchers are in match.ts; engine.ts decides. Pure: no I/O, no Node imports.
import { compileGlob, relativeTo, resolvePath } from "./paths.js";
import { CONTENT_FIELD, EDIT_TOOLS, PRIMARY_FIELD, READ_TOOLS, isMcpTool, type Behavior, type Rule } from "./rules.js";
import type { Ctx, Entry, Match } from "./types.js";

export function matchRequest(e: Entry, tool: string, input: Record<string, unknown>, targets: string[] | undefined, ctx: Ctx): Match {
  const r = e.rule;
  const denyish = e.behavior !== "allow";
  switch (r.kind) {
    case "tool":
      return appliesTo(r.tool, tool);
    case "toolGlob":
      if (!denyish && !/^mcp__[^*_][^*]*?__/.test(r.pattern)) return false;
      return toolGlob(r.pattern).test(tool);
    case "param":
      if (!denyish || PRIMARY_FIELD[r.tool] === r.param || !appliesTo(r.tool, tool)) return false;
      return matchParam(r, input);
    case "content": {
      if (!appliesTo(r.tool, tool)) return false;
      const field = CONTENT_FIELD[r.tool];
      if (field === undefined) return denyish ? "uncertain" : false;
      const v = input[field];
      return typeof v === "string" && globText(r.value).test(v);
    }
    case "shell":
      // PowerShell specifiers are not evaluated (docs/permissions.md): never allow, always ask.
      return r.tool === tool && denyish ? "uncertain" : false;
    case "domain": {
      if (r.tool !== tool) return false;
      const host = hostOf(input.url);
      if (host === undefined) return denyish ? "uncertain" : false;
      return matchDomain(r.domain, host);
    }
    case "path": {
      if (!pathRuleCovers(e, tool, e.behavior)) return false;
      if (targets === undefined || targets.length === 0) return denyish ? "uncertain" : false;
      return denyish ? targets.some((t) => matchPath(e, t, ctx)) : targets.every((t) => matchPath(e, t, ctx));
    }
    default:
      return false;
  }
}

/** Whether a rule for `ruleTool` covers a call of `tool`: `Read` covers the read tools, `Edit` the edit tools. */
export function appliesTo(ruleTool: string, tool: string): boolean {
  if (ruleTool === tool) return true;
  if (ruleTool === "Read" && READ_TOOLS.includes(tool)) return true;
  if (ruleTool === "Edit" && EDIT_TOOLS.includes(tool)) return true;
  if ((ruleTool === "Agent" && tool === "Task") || (ruleTool === "Task" && tool === "Agent")) return true;
  // `mcp__server` covers every tool of that server.
  return isMcpTool(ruleTool) && ruleTool.split("__").length === 2 && tool.startsWith(`${ruleTool}__`);
}

/** Path rules: `Read(…)` for the read tools; `Edit(…)` for the edit tools; a Read deny also blocks writes. */
export function pathRuleCovers(e: Entry, tool: string, behavior: Behavior): boolean {
  const t = (e.rule as { tool: string }).tool;
  if (appliesTo(t, tool)) return true;
  return behavior === "deny" && t === "Read" && ["Edit", "Write", "MultiEdit"].includes(tool);
}

export function matchParam(r: Extract<Rule, { kind: "param" }>, input: Record<string, unknown>): boolean {
  if (PRIMARY_FIELD[r.tool] === r.param) return false;
  const v = input[r.param];
  if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") return false;
  return globText(r.value).test(String(v));
}

/** The files or directories a tool call touches (absolute), or undefined for tools without paths. */
export function requestPaths(tool: string, input: Record<string, unknown>, ctx: Ctx): string[] | undefined {
  const str = (k: string): string | undefined => (typeof input[k] === "string" && input[k] !== "" ? (input[k] as string) : undefined);
  const abs = (p: string) => resolvePath(p, ctx.cwd, ctx.home);
  switch (tool) {
    case "Read":
    case "Edit":
    case "Write":
    case "MultiEdit": {
      const p = str("file_path");
      return p === undefined ? [] : [abs(p)];
    }
    case "NotebookEdit":
    case "NotebookRead": {
      const p = str("notebook_path") ?? str("file_path");
      return p === undefined ? [] : [abs(p)];
    }
    case "Grep":
    case "LS":
      return [abs(str("path") ?? ctx.cwd)];
    case "Glob": {
      const pattern = str("pattern") ?? "";
      const root = str("path") ?? ctx.cwd;
      // An absolute pattern (`/etc/**/*.conf`) searches from its own fixed prefix.
      if (pattern.startsWith("/") || pattern.startsWith("~")) {
        const fixed = pattern.split("/").filter((_, i, a) => !a.slice(0, i + 1).some((s) => /[*?[{]/.test(s)));
        return [abs(fixed.join("/") || "/")];
      }
      return [abs(root)];
    }
    default:
      return undefined;
  }
}

/** Compiles a Read/Edit rule's gitignore pattern against its anchor (docs/permissions.md §Paths). */
export function matchPath(e: Entry, target: string, ctx: Ctx): boolean {
  const r = e.rule;
  if (r.kind !== "path") return false;
  let p = r.pattern;
  let anchor: string;
  let explicit = true;
  if (p.startsWith("//")) {
    anchor = "/";
    p = p.slice(2);
  } else if (p === "~" || p.startsWith("~/")) {
    anchor = ctx.home;
    p = p.slice(2);
  } else if (p.startsWith("/")) {
    anchor = e.baseDir;
    p = p.slice(1);
  } else if (p.startsWith("./")) {
    anchor = ctx.cwd;
    p = p.replace(/^(\.\/)+/, "");
  } else {
    anchor = ctx.cwd;
    explicit = false;
  }
  if (p.endsWith("/")) p += "**";
  if (p === "") p = "**";
  // A single-directory pattern like `src/**` matches only <cwd>/src in an allow rule, but a directory
  // of that name at any depth in a deny or ask rule (Claude Code's documented behavior).
  const singleDir = /^[^/]+\/\*\*$/.test(p);
  const floating = !explicit && (!p.includes("/") || (singleDir && e.behavior !== "allow"));
  const rel = relativeTo(target, anchor);
  if (rel === undefined) return false;
  return compileGlob(p, floating).test(rel);
}

export function hostOf(url: unknown): string | undefined {
  if (typeof url !== "string" || url.trim() === "") return undefined;
  const s = url.trim();
  try {
    const u = new URL(/^[a-z][a-z0-9+.-]*:/i.test(s) ? s : `https://${s}`);
    const host = u.hostname.toLowerCase().replace(/\.$/, "");
    return host === "" ? undefined : host;
  } catch {
    return undefined;
  }
}

/** `*.example.com` is any subdomain (not the apex); any other `*` stays within one label. */
function matchDomain(pattern: string, host: string): boolean {
  if (pattern.startsWith("*.") && !pattern.slice(2).includes("*")) return host.endsWith(pattern.slice(1));
  const re = new RegExp(`^${pattern.split("*").map(escapeRe).join("[^.]*")}$`);
  return re.test(host);
}

export const toolGlob = (pattern: string): RegExp => new RegExp(`^${pattern.split("*").map(escapeRe).join(".*")}$`);
const globText = (pattern: string): RegExp => new RegExp(`^${pattern.split("*").map(escapeRe).join("[\\s\\S]*")}$`);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
