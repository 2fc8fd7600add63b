// Claude Code's permission rule syntax (`Tool` or `Tool(specifier)`), parsed into plain data.
// Source of the syntax: https://code.claude.com/docs/en/permissions — docs/permissions.md lists what
// LineUp implements and where it is stricter.

export type Behavior = "allow" | "ask" | "deny";
/** The order rules are evaluated in: the first behavior with a match decides. */
export const BEHAVIORS: readonly Behavior[] = ["deny", "ask", "allow"];

export type ShellMatch = "exact" | "prefix" | "wildcard";

export type Rule =
  /** `Bash`, `Read`, `mcp__server`, `mcp__server__tool`, `Bash(*)`, `WebFetch(domain:*)` */
  | { kind: "tool"; text: string; tool: string }
  /** `*`, `mcp__*`, `mcp__github__get_*` */
  | { kind: "toolGlob"; text: string; pattern: string }
  /** `Bash(npm test)`, `Bash(npm run test:*)`, `Bash(git * main)` */
  | { kind: "shell"; text: string; tool: string; match: ShellMatch; pattern: string }
  /** `Read(./src/**)`, `Edit(/docs/**)`, `Read(~/.ssh/**)`, `Edit(//tmp/x)` */
  | { kind: "path"; text: string; tool: string; pattern: string }
  /** `WebFetch(domain:example.com)` */
  | { kind: "domain"; text: string; tool: string; domain: string }
  /** `Agent(model:opus)`: a top-level input parameter (deny/ask only) */
  | { kind: "param"; text: string; tool: string; param: string; value: string }
  /** `Agent(Explore)`, `Skill(name)` and specifiers LineUp has no matcher for */
  | { kind: "content"; text: string; tool: string; value: string };

export interface RuleError {
  error: string;
}

export const READ_TOOLS: readonly string[] = ["Read", "Glob", "Grep", "LS", "NotebookRead"];
export const EDIT_TOOLS: readonly string[] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];
export const PATH_TOOLS: readonly string[] = [...READ_TOOLS, ...EDIT_TOOLS];
export const SHELL_TOOLS: readonly string[] = ["Bash", "PowerShell"];

const KNOWN_TOOLS: readonly string[] = [
  ...PATH_TOOLS,
  ...SHELL_TOOLS,
  "WebFetch",
  "WebSearch",
  "TodoWrite",
  "TodoRead",
  "Agent",
  "Task",
  "Skill",
  "SlashCommand",
  "ExitPlanMode",
  "AskUserQuestion",
  "BashOutput",
  "KillShell",
  "TaskOutput",
  "TaskStop",
  "EndConversation",
  "Cd",
];

/** The field each tool's own specifier matches; `Tool(field:value)` cannot target it (bypassable). */
export const PRIMARY_FIELD: Readonly<Record<string, string>> = {
  Bash: "command",
  PowerShell: "command",
  Read: "file_path",
  Edit: "file_path",
  Write: "file_path",
  MultiEdit: "file_path",
  NotebookEdit: "notebook_path",
  NotebookRead: "notebook_path",
  Glob: "path",
  Grep: "path",
  LS: "path",
  WebFetch: "url",
};

const SHELL_PARAMS = ["description", "timeout", "run_in_background", "dangerouslyDisableSandbox"];
const AGENT_PARAMS = ["model", "isolation", "run_in_background", "description", "prompt", "subagent_type", "name"];
/** Input parameters of built-in tools that `Tool(param:value)` may name. */
const KNOWN_PARAMS: Readonly<Record<string, readonly string[]>> = {
  Bash: SHELL_PARAMS,
  PowerShell: SHELL_PARAMS,
  Read: ["offset", "limit", "pages"],
  Edit: ["old_string", "new_string", "replace_all"],
  Write: ["content"],
  MultiEdit: ["edits"],
  NotebookEdit: ["cell_id", "new_source", "cell_type", "edit_mode"],
  NotebookRead: ["cell_id"],
  Glob: ["pattern"],
  Grep: ["pattern", "glob", "output_mode", "type", "multiline", "head_limit"],
  LS: ["ignore"],
  WebFetch: ["prompt"],
  WebSearch: ["query", "allowed_domains", "blocked_domains"],
  Agent: AGENT_PARAMS,
  Task: AGENT_PARAMS,
};

/** Tools whose plain specifier LineUp matches against one input field. */
export const CONTENT_FIELD: Readonly<Record<string, string>> = {
  Agent: "subagent_type",
  Task: "subagent_type",
  Skill: "skill",
  SlashCommand: "command",
};

const TOOL_NAME_RE = /^[A-Za-z0-9_.*-]+$/;
const PARAM_RE = /^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*([\s\S]*?)\s*$/;

export const isRuleError = (r: Rule | RuleError): r is RuleError => "error" in r;
export const isMcpTool = (name: string): boolean => name.startsWith("mcp__");

/** Parses one rule string. Errors say what is wrong and how to write it instead. */
export function parseRule(input: string): Rule | RuleError {
  if (typeof input !== "string") return { error: "a rule must be a string" };
  const text = input.trim();
  if (text === "") return { error: "empty rule" };
  const open = text.indexOf("(");
  const tool = open === -1 ? text : text.slice(0, open);
  if (open === -1 && text.includes(")")) return { error: `"${text}": unbalanced ")"` };
  if (tool === "") return { error: `"${text}": missing tool name before "("` };
  if (/\s/.test(tool)) {
    return {
      error: `"${text}": a tool name has no spaces${open === -1 ? ` (did you mean "Bash(${text})"?)` : ` (write "${tool.trim()}(…)" with no space before "(")`}`,
    };
  }
  if (!TOOL_NAME_RE.test(tool)) return { error: `"${text}": "${tool}" is not a valid tool name` };
  const misspelt = KNOWN_TOOLS.find((k) => k.toLowerCase() === tool.toLowerCase() && k !== tool);
  if (misspelt) return { error: `"${text}": tool names are case-sensitive; did you mean "${misspelt}"?` };

  if (open === -1) {
    if (tool.includes("*")) return { kind: "toolGlob", text, pattern: tool };
    return { kind: "tool", text, tool };
  }
  if (!text.endsWith(")")) return { error: `"${text}": missing closing ")"` };
  if (tool.includes("*")) return { error: `"${text}": a tool-name wildcard takes no specifier` };
  const inner = text.slice(open + 1, -1).trim();
  if (inner === "") return { error: `"${text}": empty specifier; write "${tool}" to match every use of the tool` };

  if (SHELL_TOOLS.includes(tool)) return parseShellRule(text, tool, inner);

  const param = PARAM_RE.exec(inner);
  if (param?.[1] !== undefined && param[2] !== undefined) {
    const known = KNOWN_PARAMS[tool];
    const isParam = known ? known.includes(param[1]) || PRIMARY_FIELD[tool] === param[1] : !PATH_TOOLS.includes(tool) && tool !== "WebFetch";
    if (isParam) {
      if (param[2] === "") return { error: `"${text}": empty value after "${param[1]}:"` };
      return { kind: "param", text, tool, param: param[1], value: param[2] };
    }
  }

  if (PATH_TOOLS.includes(tool)) {
    if (inner.startsWith("!")) return { error: `"${text}": negated patterns ("!") are not supported; write a deny rule instead` };
    return { kind: "path", text, tool, pattern: inner };
  }
  if (tool === "WebFetch") {
    const m = /^domain:\s*(.*)$/.exec(inner);
    if (!m) return { error: `"${text}": WebFetch rules take a domain, e.g. "WebFetch(domain:example.com)"` };
    const domain = (m[1] ?? "").trim().toLowerCase().replace(/\.$/, "");
    if (domain === "") return { error: `"${text}": empty domain after "domain:"` };
    if (domain === "*") return { kind: "tool", text, tool };
    if (/[/?#@\s]/.test(domain) || /:\d+$/.test(domain)) {
      return { error: `"${text}": "domain:" takes a host name such as example.com or *.example.com, not a URL, port or path` };
    }
    if (!/^[a-z0-9*.\-[\]:]+$/.test(domain)) return { error: `"${text}": "${domain}" is not a valid domain pattern` };
    return { kind: "domain", text, tool, domain };
  }
  if (isMcpTool(tool)) {
    return {
      error: `"${text}": MCP rules name a server or tool without a specifier, e.g. "mcp__github" or "mcp__github__create_issue" (deny/ask rules may use "param:value")`,
    };
  }
  return { kind: "content", text, tool, value: inner };
}

function parseShellRule(text: string, tool: string, inner: string): Rule | RuleError {
  const spec = collapseBlanks(inner);
  if (spec === "*") return { kind: "tool", text, tool };
  // The legacy `prefix:*` form is the same as `prefix *`, and only at the end of a pattern.
  const legacy = spec.endsWith(":*") && !spec.endsWith("\\:*");
  const pattern = legacy ? `${spec.slice(0, -2)} *` : spec;
  if (legacy && spec.slice(0, -2).trim() === "") return { error: `"${text}": nothing before ":*"; write "${tool}" to match every command` };
  const param = PARAM_RE.exec(spec);
  if (!legacy && param?.[1] !== undefined && param[2] !== undefined && (SHELL_PARAMS.includes(param[1]) || param[1] === "command")) {
    return { kind: "param", text, tool, param: param[1], value: param[2] };
  }
  const stars = countUnescapedStars(pattern);
  if (stars === 0) return { kind: "shell", text, tool, match: "exact", pattern: unescapeStars(pattern) };
  if (stars === 1 && pattern.endsWith(" *") && !pattern.endsWith("\\ *")) {
    return { kind: "shell", text, tool, match: "prefix", pattern: unescapeStars(pattern.slice(0, -2)) };
  }
  return { kind: "shell", text, tool, match: "wildcard", pattern };
}

/** Collapses runs of blanks outside quotes (commands are compared word by word, single-spaced). */
export function collapseBlanks(s: string): string {
  let out = "";
  let quote = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i] ?? "";
    if (quote) {
      if (c === quote) quote = "";
      out += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      out += c;
    } else if (/\s/.test(c)) {
      if (!out.endsWith(" ")) out += " ";
    } else {
      out += c;
    }
  }
  return out.trim();
}

function countUnescapedStars(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === "*") n++;
  }
  return n;
}

const unescapeStars = (s: string): string => s.replace(/\\([*\\])/g, "$1");

/** Problems that do not make a rule invalid but make it do less than it seems to. */
export function ruleWarnings(rule: Rule, behavior: Behavior): string[] {
  const w: string[] = [];
  const t = rule.text;
  switch (rule.kind) {
    case "toolGlob":
      if (behavior === "allow" && !/^mcp__[^*_][^*]*?__/.test(rule.pattern)) {
        w.push(`"${t}": an allow rule accepts a tool-name wildcard only after a literal "mcp__<server>__" prefix; it allows nothing`);
      }
      break;
    case "param":
      if (PRIMARY_FIELD[rule.tool] === rule.param) {
        w.push(
          `"${t}": "${rule.param}" is ${rule.tool}'s own specifier and "param:value" cannot match it (a compound command would bypass it); it is ignored — write ${rule.tool}(…) instead`,
        );
      } else if (behavior === "allow") {
        w.push(`"${t}": "param:value" rules work only as deny or ask rules; this allow rule matches nothing`);
      }
      break;
    case "path":
      if (!["Read", "Edit"].includes(rule.tool)) {
        const family = READ_TOOLS.includes(rule.tool) ? "Read" : "Edit";
        w.push(
          `"${t}": Claude Code consults only Read(…) and Edit(…) path rules; LineUp applies this one to ${rule.tool} only — prefer ${family}(${rule.pattern})`,
        );
      }
      break;
    case "shell":
      if (rule.tool === "PowerShell") {
        w.push(`"${t}": LineUp does not evaluate PowerShell specifiers; as allow it matches nothing, as deny/ask it makes every PowerShell call ask`);
      } else if (behavior === "allow" && rule.match === "wildcard" && rule.pattern.trimStart().startsWith("*")) {
        w.push(`"${t}": a wildcard before the command name allows every program that fits the rest of the pattern`);
      }
      break;
    case "content":
      if (CONTENT_FIELD[rule.tool] === undefined) {
        w.push(`"${t}": LineUp has no matcher for ${rule.tool}(…) specifiers; as allow it matches nothing, as deny/ask it makes every ${rule.tool} call ask`);
      }
      break;
    case "tool":
      if (behavior !== "allow" && !KNOWN_TOOLS.includes(rule.tool) && !rule.tool.includes("_")) {
        w.push(`"${t}": unknown tool name (names are case-sensitive, e.g. "Bash", "Read", "mcp__server__tool")`);
      }
      break;
    default:
      break;
  }
  return w;
}
