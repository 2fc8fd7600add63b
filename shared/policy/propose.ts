// The rules an "Always allow" button proposes for one tool call (docs/permissions.md): a prefix rule per
// part of a compound command, a directory rule for file tools, a domain for WebFetch. Pure: no I/O.
import { analyzeBash, type BashUnit } from "./bash.js";
import { evaluate } from "./engine.js";
import { dirname, escapeGlob, normalizePath, relativeTo, resolvePath } from "./paths.js";
import { hostOf } from "./tools.js";
import { isRecord, unique, type PolicySource } from "./types.js";

export interface ProposeOptions {
  projectDir?: string;
  homeDir?: string;
  cwd?: string;
  /** with sources, parts of a compound command that are already allowed get no rule */
  sources?: readonly PolicySource[];
}

/** Commands a prefix rule would approve too much for: only the exact command is proposed. */
const EXACT_PROPOSAL = new Set([
  "sh",
  "bash",
  "zsh",
  "fish",
  "dash",
  "ksh",
  "python",
  "python3",
  "node",
  "deno",
  "ruby",
  "perl",
  "php",
  "lua",
  "env",
  "sudo",
  "su",
  "doas",
  "eval",
  "exec",
  "xargs",
  "rm",
  "rmdir",
  "dd",
  "mkfs",
  "chmod",
  "chown",
  "curl",
  "wget",
  "ssh",
  "scp",
  "sftp",
  "rsync",
  "nc",
  "ncat",
  "telnet",
  "kill",
  "pkill",
  "killall",
  "shutdown",
  "reboot",
  "find",
]);
/** Tools whose second word is a subcommand worth keeping in the prefix (`git push`, `npm test`). */
const TWO_LEVEL = new Set([
  "npm",
  "pnpm",
  "yarn",
  "bun",
  "npx",
  "pnpx",
  "bunx",
  "uvx",
  "uv",
  "pip",
  "pip3",
  "poetry",
  "pipenv",
  "cargo",
  "go",
  "git",
  "gh",
  "glab",
  "docker",
  "podman",
  "kubectl",
  "helm",
  "terraform",
  "make",
  "just",
  "brew",
  "apt",
  "apt-get",
  "dnf",
  "yum",
  "dotnet",
  "mvn",
  "gradle",
  "rake",
  "bundle",
  "mix",
  "composer",
  "swift",
  "flutter",
  "dart",
  "aws",
  "gcloud",
  "az",
  "systemctl",
  "nx",
  "turbo",
  "pytest",
  "vitest",
  "jest",
]);
const RUN_SUBCOMMANDS = new Set(["run", "run-script", "exec", "x"]);
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * The rules an "Always allow" button proposes for this call: one per part of a compound command that
 * needs one (at most 5, like Claude Code), the file's directory for file tools, the domain for
 * WebFetch, the tool for MCP. Empty when no rule would be safe or useful (e.g. unreadable commands).
 */
export function proposeRules(toolName: string, toolInput: unknown, opts: ProposeOptions = {}): string[] {
  const input = isRecord(toolInput) ? toolInput : {};
  const home = opts.homeDir !== undefined ? normalizePath(opts.homeDir) : undefined;
  const projectDir = opts.projectDir !== undefined ? normalizePath(opts.projectDir) : undefined;
  const cwd = opts.cwd !== undefined ? resolvePath(opts.cwd, projectDir ?? "/", home ?? "/") : (projectDir ?? "/");
  const abs = (p: string) => resolvePath(p, cwd, home ?? "/");
  const str = (k: string): string | undefined => (typeof input[k] === "string" && input[k] !== "" ? (input[k] as string) : undefined);
  const dirRule = (tool: "Read" | "Edit", dir: string) => `${tool}(${anchored(dir, projectDir, home)})`;

  switch (toolName) {
    case "Bash": {
      const command = str("command");
      if (command === undefined) return [];
      const analysis = analyzeBash(command, { cwd, home: home ?? "/", scopeDirs: unique([cwd, ...(projectDir ? [projectDir] : [])]) });
      if (analysis.error !== undefined) return [];
      const out: string[] = [];
      const evalOpts = { projectDir: projectDir ?? cwd, homeDir: home ?? "/" };
      for (const u of analysis.units) {
        if (!u.required || u.implicit !== undefined) continue;
        if (opts.sources && evaluate({ tool_name: "Bash", tool_input: { command: u.display }, cwd }, opts.sources, evalOpts).decision === "allow") continue;
        const rule = bashRuleFor(u);
        if (rule) out.push(rule);
      }
      for (const p of analysis.paths) {
        if (p.required && p.access === "write" && p.allowable && p.path !== undefined) out.push(`Edit(${anchored(p.path, projectDir, home, false)})`);
      }
      return unique(out).slice(0, 5);
    }
    case "Edit":
    case "Write":
    case "MultiEdit": {
      const p = str("file_path");
      return p === undefined ? [] : [dirRule("Edit", dirname(abs(p)))];
    }
    case "NotebookEdit": {
      const p = str("notebook_path") ?? str("file_path");
      return p === undefined ? [] : [dirRule("Edit", dirname(abs(p)))];
    }
    case "Read":
    case "NotebookRead": {
      const p = str("file_path") ?? str("notebook_path");
      return p === undefined ? [] : [dirRule("Read", dirname(abs(p)))];
    }
    case "Glob":
    case "Grep":
    case "LS":
      return [dirRule("Read", abs(str("path") ?? cwd))];
    case "WebFetch": {
      const host = hostOf(input.url);
      return host === undefined ? [] : [`WebFetch(domain:${host})`];
    }
    case "Agent":
    case "Task": {
      const name = str("subagent_type");
      return [name !== undefined && !/[()]/.test(name) ? `${toolName}(${name})` : toolName];
    }
    case "PowerShell":
      return [];
    default:
      return /^[A-Za-z0-9_.-]+$/.test(toolName) ? [toolName] : [];
  }
}

/** The first rule of proposeRules, or undefined when none is safe to propose. */
export function proposeRule(toolName: string, toolInput: unknown, opts: ProposeOptions = {}): string | undefined {
  return proposeRules(toolName, toolInput, opts)[0];
}

function bashRuleFor(u: BashUnit): string | undefined {
  const ws = u.words;
  const head = ws[0];
  if (head === undefined) return undefined;
  const exact = () => `Bash(${u.allowForms[u.allowForms.length - 1]?.text.replace(/[*\\]/g, "\\$&") ?? ""})`;
  if (u.dynamic || u.allowBlocked !== undefined || u.allowForms.every((f) => f.exactOnly) || head.includes("/") || EXACT_PROPOSAL.has(head)) {
    return u.allowForms.length > 0 ? exact() : undefined;
  }
  let prefix = [head];
  if (TWO_LEVEL.has(head)) {
    const sub = ws[1];
    if (sub === undefined || sub.startsWith("-")) return ws.length === 1 ? `Bash(${head})` : exact();
    prefix = [head, sub];
    const third = ws[2];
    if (RUN_SUBCOMMANDS.has(sub) && third !== undefined && !third.startsWith("-")) prefix.push(third);
  }
  if (!prefix.every((w) => PLAIN_WORD.test(w))) return exact();
  return `Bash(${prefix.join(" ")}:*)`;
}

/** `/rel` inside the project, `~/rel` inside home, `//abs` elsewhere; `/**` appended for directories. */
function anchored(path: string, projectDir: string | undefined, home: string | undefined, dir = true): string {
  const tail = dir ? "/**" : "";
  const esc = (rel: string) => rel.split("/").map(escapeGlob).join("/");
  const inProject = projectDir !== undefined ? relativeTo(path, projectDir) : undefined;
  if (inProject !== undefined) return inProject === "" ? (dir ? "/**" : "/") : `/${esc(inProject)}${tail}`;
  const inHome = home !== undefined && home !== "/" ? relativeTo(path, home) : undefined;
  if (inHome !== undefined) return inHome === "" ? `~${tail}` : `~/${esc(inHome)}${tail}`;
  return path === "/" ? `//**` : `/${esc(path)}${tail}`;
}
