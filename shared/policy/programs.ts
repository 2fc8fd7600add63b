// Commands that run text as a program, for deny and ask rules: shells (`bash -o pipefail -c S`,
// `sh <<'EOF'`, `echo … | sh`), `eval`, `source`, `trap`, `watch`, `su -c`, `find -exec`, `alias`,
// exported functions — and git, whose global options and aliases stand between `git` and its subcommand.
// What a command runs is either seen (a script or a command to check like any other) or "computed": known
// only when it runs (a pipe, a file, an expanded string), and then a deny/ask rule cannot be checked.
import type { Redirect, Word } from "./shell.js";
import { unknownWord } from "./wrappers.js";

export interface Programs {
  /** scripts this command runs, checked as command lines of their own (deny/ask rules only) */
  scripts: string[];
  /** more simple commands it runs (`find -exec git {} ;`, git without its global options) */
  commands: Word[][];
  /** why what it runs cannot be known before it runs */
  computed?: string;
  /** it runs a script given as text, so a prefix allow rule for it must not approve that script */
  runsScript: boolean;
}

/** Shells, with `-c`, `-o`/`-O`/`+O` arguments, `--rcfile`/`--init-file`, `--`, `-s`. Source: bash(1) "OPTIONS", dash(1), zsh(1), fish(1). */
export const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"]);
const SHELL_LONG_WITH_ARG = ["--rcfile", "--init-file"];
const FISH_LONG_WITH_ARG = ["--debug", "--debug-output", "--features", "--profile", "--profile-startup"];

/** Variables whose value a program runs as a shell command (git(1) ENVIRONMENT, less(1), bash(1)). */
const COMMAND_VARIABLES =
  /^(GIT_PAGER|PAGER|MANPAGER|GIT_EDITOR|GIT_SEQUENCE_EDITOR|EDITOR|VISUAL|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_ASKPASS|SSH_ASKPASS|LESSOPEN|PROMPT_COMMAND|GIT_CONFIG_VALUE_\d+)=/;

/** git config keys whose value git runs as a command (git-config(1)): pagers, editors, ssh, helpers, drivers, `!` aliases. */
const GIT_COMMAND_KEYS =
  /^alias\.|pager|editor|sshcommand|command|cmd|program|helper|driver|hook|external|fsmonitor|askpass|receivepack|uploadpack|\.(clean|smudge|process)$/i;

type Invocation = { kind: "script"; word: Word } | { kind: "stdin" } | { kind: "file"; word: Word } | { kind: "computed" } | { kind: "none" };

const unknown = (w: Word): boolean => w.parts.includes(null);
const literal = (value: string): Word => ({ raw: value, value, start: 0, end: 0, quoted: true, expansion: false, glob: false, parts: [value] });

/** How a shell gets its program: `-c` (the first word after the options), a file, or its standard input. */
export function shellInvocation(ws: readonly Word[]): Invocation {
  const fish = (ws[0]?.value.split("/").pop() ?? "") === "fish";
  let c = false;
  let s = false;
  let i = 1;
  while (i < ws.length) {
    const w = ws[i] as Word;
    const o = w.value;
    // After -c it is the script (computed); before, `bash $OPTS x` may be an option, its argument or the program.
    if (unknown(w)) {
      if (c) break;
      return { kind: "computed" };
    }
    if (o === "--" || o === "-") {
      i++;
      break;
    }
    if (o.startsWith("--")) {
      const name = o.split("=")[0] ?? o;
      if (fish && (name === "--command" || name === "--init-command")) {
        const script = o.includes("=") ? literal(o.slice(name.length + 1)) : ws[i + 1];
        return script ? { kind: "script", word: script } : { kind: "none" };
      }
      i += !o.includes("=") && (SHELL_LONG_WITH_ARG.includes(name) || (fish && FISH_LONG_WITH_ARG.includes(name))) ? 2 : 1;
      continue;
    }
    if ((o.startsWith("-") || o.startsWith("+")) && o.length > 1) {
      let skip = 1;
      for (let k = 1; k < o.length; k++) {
        const ch = o[k];
        if (fish && (ch === "c" || ch === "C" || "dofp".includes(ch ?? ""))) {
          // fish takes the argument attached or as the next word.
          const attached = o.slice(k + 1);
          const arg = attached !== "" ? literal(attached) : ws[i + 1];
          if (ch === "c" || ch === "C") return arg ? { kind: "script", word: arg } : { kind: "none" };
          skip = attached !== "" ? 1 : 2;
          break;
        }
        if (ch === "c" && o.startsWith("-")) c = true;
        else if (ch === "s" && o.startsWith("-")) s = true;
        // -o OPTION, -O SHOPT_OPTION (and +o/+O): each takes the next word, in order.
        else if (ch === "o" || ch === "O") skip++;
      }
      i += skip;
      continue;
    }
    break;
  }
  const first = ws[i];
  if (c) return first ? { kind: "script", word: first } : { kind: "none" };
  if (s || !first) return { kind: "stdin" };
  return { kind: "file", word: first };
}

/** The program a shell reads from its standard input, when the command line gives it. */
function stdinProgram(redirects: readonly Redirect[]): { script?: string; computed?: string } {
  const input = redirects.filter((r) => (r.fd === "" || r.fd === "0") && r.op.startsWith("<")).pop();
  if (!input) return { computed: "reads its program from its standard input" };
  if (input.kind === "heredoc") {
    if (input.body === undefined) return { computed: "reads its program from an unfinished here-document" };
    // An unquoted delimiter means the body is expanded first.
    const expands = !input.target.quoted && /[$`]/.test(input.body);
    return { script: input.body, ...(expands ? { computed: "reads its program from a here-document that is expanded first" } : {}) };
  }
  if (input.kind === "herestring") {
    return { script: input.target.value, ...(unknown(input.target) ? { computed: "reads its program from a here-string that is expanded first" } : {}) };
  }
  return { computed: `reads its program from ${input.target.raw}` };
}

/** What `ws` (one simple command, wrappers already stripped) runs besides itself. */
export function programsOf(ws: readonly Word[], redirects: readonly Redirect[], segment: readonly Word[]): Programs {
  const out: Programs = { scripts: [], commands: [], runsScript: false };
  const head = ws[0];
  if (!head || unknown(head)) return out;
  // Leading assignments are looked past by the caller; only their values matter here.
  const base = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(head.raw) ? "" : (head.value.split("/").pop() ?? head.value);
  const script = (w: Word, what: string) => {
    out.scripts.push(w.value);
    out.runsScript = true;
    if (unknown(w)) out.computed ??= `runs ${what} that is computed at run time`;
  };
  const joined = (words: readonly Word[]): Word => ({
    ...literal(words.map((w) => w.value).join(" ")),
    parts: words.some(unknown) ? [null] : [words.map((w) => w.value).join(" ")],
  });

  if (SHELLS.has(base)) {
    const how = shellInvocation(ws);
    if (how.kind === "script") script(how.word, `a ${base} -c script`);
    else if (how.kind === "file") out.computed = `runs the file ${how.word.raw}, whose commands LineUp does not see`;
    else if (how.kind === "computed") out.computed = `runs ${base} with options or a program known only at run time`;
    else if (how.kind === "stdin") {
      const p = stdinProgram(redirects);
      out.runsScript = true;
      if (p.script !== undefined) out.scripts.push(p.script);
      if (p.computed) out.computed = p.computed;
    }
  } else if ((base === "source" || base === ".") && ws.length > 1) {
    out.computed = `runs the commands of ${ws[1]?.raw ?? "a file"}, which LineUp does not see`;
  } else if (base === "eval" && ws.length > 1) {
    script(joined(ws.slice(ws[1]?.value === "--" ? 2 : 1)), "an eval string");
  } else if (base === "trap") {
    const i = ws[1]?.value === "--" ? 2 : 1;
    const w = ws[i];
    if (w && !w.value.startsWith("-")) script(w, "a trap");
  } else if (base === "watch") {
    let i = 1;
    while (ws[i]?.value.startsWith("-")) i += ["-n", "--interval", "-q", "--equexit"].includes(ws[i]?.value ?? "") ? 2 : 1;
    if (i < ws.length) {
      script(joined(ws.slice(i)), "a watch command");
      out.commands.push(ws.slice(i));
    }
  } else if (["su", "runuser", "flock", "script", "sg"].includes(base)) {
    // `su [user] -c CMD`, `flock FILE -c CMD`, `script -c CMD`: the option may follow other words.
    for (let i = 1; i < ws.length; i++) {
      const o = ws[i]?.value ?? "";
      const w =
        /^-[A-Za-z]*c$/.test(o) || o === "--command" || o === "--session-command"
          ? ws[i + 1]
          : o.startsWith("--command=")
            ? { ...literal(o.slice(10)), parts: (ws[i] as Word).parts.includes(null) ? [null] : [o.slice(10)] }
            : undefined;
      if (w) {
        script(w, `a ${base} -c command`);
        break;
      }
    }
  } else if (base === "find") {
    for (let i = 1; i < ws.length; i++) {
      if (!["-exec", "-execdir", "-ok", "-okdir"].includes(ws[i]?.value ?? "")) continue;
      const cmd: Word[] = [];
      for (i++; i < ws.length && ws[i]?.value !== ";" && ws[i]?.value !== "+"; i++) {
        const w = ws[i] as Word;
        // `{}` is the path find found: `find push -exec git {} ;` runs `git push`.
        cmd.push(w.value.includes("{}") ? unknownWord(w.raw) : w);
      }
      if (cmd.length > 0) {
        out.commands.push(cmd);
        out.runsScript = true;
      }
    }
  } else if (base === "alias") {
    for (const w of ws.slice(1)) {
      const eq = w.value.indexOf("=");
      if (eq > 0 && !w.value.startsWith("-")) {
        out.scripts.push(w.value.slice(eq + 1));
        // `alias g=git` then `g push` on a later line (with expand_aliases): the use is not seen here.
        out.computed ??= `defines the alias ${w.value.slice(0, eq)}, which runs its text and the words after it wherever it is used`;
      }
    }
  } else if (base === "mapfile" || base === "readarray") {
    // `mapfile -C 'git push' -c 1 < f`: the callback is evaluated with the index and the line (bash(1) "mapfile").
    for (let i = 1; i < ws.length; i++) {
      const o = ws[i]?.value ?? "";
      const w = o === "-C" ? ws[i + 1] : /^-C./.test(o) ? { ...(ws[i] as Word), value: o.slice(2) } : undefined;
      if (w) script(joined([w, unknownWord("index"), unknownWord("line")]), "a mapfile callback");
    }
  } else if (base === "hash" && ws.some((w) => /^-[a-z]*p/.test(w.value))) {
    // `hash -p /usr/bin/git g; g push`: the name g runs that file from then on (bash(1) "hash").
    out.computed = "gives a program another name with hash -p";
  } else if (base === "fc" && !ws.some((w) => /^-[a-z]*l/.test(w.value))) {
    // `fc -s`, `fc -e - …`, `fc`: run commands again from the history (bash(1) "fc"), which LineUp does not see.
    out.computed = "runs commands from the shell's history";
  } else if (base === "enable" && ws.some((w) => /^-[a-z]*f/.test(w.value))) {
    out.computed = "loads a builtin from a shared object";
  } else if (base === "git") {
    const g = gitCommand(ws, segment);
    if (g) out.commands.push(g);
    // `-c core.pager='…'`, `-c alias.x='!…'`: git runs such values as shell commands (git-config(1)).
    for (let i = 1; i < ws.length - 1; i++) {
      const kv = ws[i]?.value === "-c" ? /^([^=]*)=!?([\s\S]*)$/.exec(ws[i + 1]?.value ?? "") : null;
      if (kv?.[1] !== undefined && kv[2] !== undefined && GIT_COMMAND_KEYS.test(kv[1])) out.scripts.push(kv[2]);
    }
  }
  for (const w of ws) {
    const run = COMMAND_VARIABLES.exec(w.raw) ? w.value.slice(w.value.indexOf("=") + 1) : undefined;
    if (run !== undefined) out.scripts.push(run);
    // An exported function (`env 'BASH_FUNC_ls%%=() { git push; }' bash -c ls`) runs its body.
    const fn = /^BASH_FUNC_[^=]*=\s*\(\)\s*([\s\S]*)$/.exec(w.value);
    if (fn?.[1] !== undefined) out.scripts.push(fn[1]);
    // BASH_ENV names a file every non-interactive bash runs first; `${x@P}` expands `$( )` inside a variable.
    if (/^BASH_ENV=/.test(w.raw)) out.computed ??= "sets BASH_ENV, a file bash runs first";
    // ENV: the file an interactive sh runs first (POSIX sh); PS0/PS1/PS2/PS4 are expanded as prompts (`PS4` on
    // every `set -x` line), which runs a `$( )` or backquote in their value.
    if (/^ENV=/.test(w.raw)) out.computed ??= "sets ENV, a file an interactive sh runs first";
    if (/^PS[0124]=/.test(w.raw) && /\$\(|`/.test(w.value)) out.computed ??= "sets a prompt whose expansion runs commands";
    if (/\$\{[^}]*@P\}/.test(w.raw)) out.computed ??= "expands a variable as a prompt, which runs the commands in it";
  }
  return out;
}

/**
 * Git's global options (git(1) SYNOPSIS: `-C <path>`, `-c <name>=<value>`, `--git-dir`, `--work-tree`,
 * `--namespace`, `--config-env`, `--no-pager`, …) stand before the subcommand; a deny rule for
 * `git push` must see `git -C . push` as `git push`. An alias defined on the same line (`-c alias.p=push`,
 * `--config-env alias.p=V`, `GIT_CONFIG_*` variables) makes the subcommand unknown.
 */
const GIT_WITH_ARG = ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--list-cmds"];
const GIT_STOP = ["-h", "--help", "-v", "--version"];

export function gitCommand(ws: readonly Word[], segment: readonly Word[]): Word[] | undefined {
  let alias = segment.some((w) => /^GIT_CONFIG(_[A-Z0-9_]+)?=/.test(w.raw));
  let i = 1;
  for (; i < ws.length; i++) {
    const w = ws[i] as Word;
    if (unknown(w) || !w.value.startsWith("-") || GIT_STOP.includes(w.value)) break;
    const name = w.value.split("=")[0] ?? "";
    if (GIT_WITH_ARG.includes(w.value)) {
      const arg = ws[i + 1];
      if ((w.value === "-c" || w.value === "--config-env") && arg && mayDefineAlias(arg)) alias = true;
      i++;
    } else if (name === "--config-env" && /^alias\./i.test(w.value.slice(name.length + 1))) alias = true;
  }
  if (i === 1 && !alias) return undefined;
  const rest = ws.slice(i);
  if (alias && rest[0]) rest[0] = unknownWord(rest[0].raw);
  return [ws[0] as Word, ...rest];
}

/** Whether `name=value` may name an alias: `alias.p=…`, or a name not known before it runs (`$K=push`). */
function mayDefineAlias(arg: Word): boolean {
  const first = arg.parts[0];
  if (typeof first === "string" && first.includes("=")) return /^alias\./i.test(first);
  return unknown(arg) || /^alias\./i.test(arg.value);
}

/** `function f { …`, `function f () …`: the words after the function's name. */
export function afterFunctionKeyword(ws: readonly Word[]): readonly Word[] {
  if (ws[0]?.value !== "function" || ws[0].quoted) return ws;
  return ws.slice(2);
}
