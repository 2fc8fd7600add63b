// A small POSIX-shell lexer for permission checks: it splits a Bash command into the simple commands it
// runs (at `&&`, `||`, `;`, `|`, `|&`, `&`, newlines and subshell parentheses), keeps quoting intact
// (`echo "a && b"` is one command), and also returns the commands hidden in `$( )`, backticks, `<( )`
// and unquoted here-documents, because those run too. It never executes or expands anything.
// Anything it cannot read with confidence is an error, and callers treat an error as "ask".
import { readAnsiC } from "./ansi-c.js";
import { ShellSyntaxError } from "./shell-error.js";

/**
 * A word as the shell may see it after expansion: literal text, and `null` for a part whose text is
 * known only at run time (an expansion, a substitution, an unquoted glob, a brace expansion — the whole
 * word then). `git pu"sh"` is `["git"]`…`["push"]`; `git push${IFS}x` has `["push", null, "x"]`.
 */
export type WordPart = string | null;

/** One shell word. `value` has quotes and escapes removed; expansions (`$X`, `$( )`) stay as written. */
export interface Word {
  raw: string;
  value: string;
  start: number;
  end: number;
  /** some part was quoted or backslash-escaped */
  quoted: boolean;
  /** contains `$name`, `${ }`, `$( )`, `$(( ))`, backticks or a process substitution */
  expansion: boolean;
  /** contains an unquoted `*`, `?`, or `[` with a `]` after it */
  glob: boolean;
  /** the value split into literal text and parts known only at run time (see WordPart) */
  parts: WordPart[];
}

export type RedirectKind = "write" | "read" | "dup" | "heredoc" | "herestring";

export interface Redirect {
  op: string;
  fd: string;
  kind: RedirectKind;
  /** the file (write/read), the here-string, or the here-doc delimiter */
  target: Word;
  /** a here-document's text, once read (undefined when the input ended before it) */
  body?: string;
}

/** One simple command: its words and redirections. `nested` commands came from a substitution. */
export interface Segment {
  words: Word[];
  redirects: Redirect[];
  nested: boolean;
  /** the operator that ended it (`&&`, `|`, `\n`, …; "" at the end of input) */
  end: string;
}

export interface ShellParse {
  segments: Segment[];
  error?: string;
}

/** Claude Code prompts for any command longer than this; so do we (docs/permissions.md). */
export const MAX_COMMAND_LENGTH = 10_000;
const MAX_NESTING = 16;

const WORD_BREAK = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);
const REDIRECT_RE = /(\d*)(&>>|&>|>>|>&|>\||<<<|<<-|<<|<&|<>|>|<)/y;
const OPERATORS = ["&&", "||", "|&", ";;", ";&", "|", ";", "&", "(", ")"];

interface Heredoc {
  delim: string;
  quoted: boolean;
  stripTabs: boolean;
  redirect: Redirect;
}

class Parser {
  i = 0;
  private heredocs: Heredoc[] = [];

  constructor(
    private readonly s: string,
    private readonly out: Segment[],
    private readonly level: number,
  ) {
    if (level > MAX_NESTING) throw new ShellSyntaxError("command substitutions nested too deeply");
  }

  /** Reads commands until the end of input, or until the `)` closing a `$(`/`<(` when `closing`. */
  parseList(nested: boolean, closing: boolean): void {
    const s = this.s;
    let seg = newSegment(nested);
    let parens = 0;
    const flush = (end: string) => {
      seg.end = end;
      if (seg.words.length > 0 || seg.redirects.length > 0) this.out.push(seg);
      seg = newSegment(nested);
    };
    for (;;) {
      this.skipBlanks();
      if (this.i >= s.length) {
        if (closing) throw new ShellSyntaxError("unterminated $( … ) substitution");
        if (parens > 0) throw new ShellSyntaxError("unclosed ( subshell");
        flush("");
        return;
      }
      const c = s[this.i];
      if (c === "\n") {
        flush("\n");
        this.i++;
        this.readHeredocBodies();
        continue;
      }
      if (c === "#") {
        // A comment runs to the end of the line (only at the start of a word).
        while (this.i < s.length && s[this.i] !== "\n") this.i++;
        continue;
      }
      if ((c === "<" || c === ">") && s[this.i + 1] === "(") {
        seg.words.push(this.readWord());
        continue;
      }
      REDIRECT_RE.lastIndex = this.i;
      const r = REDIRECT_RE.exec(s);
      if (r) {
        this.i += r[0].length;
        seg.redirects.push(this.readRedirect(r[1] ?? "", r[2] ?? ""));
        continue;
      }
      const op = OPERATORS.find((o) => s.startsWith(o, this.i));
      if (op !== undefined) {
        this.i += op.length;
        if (op === "(") {
          flush("(");
          parens++;
        } else if (op === ")") {
          if (parens === 0) {
            if (closing) {
              flush(")");
              return;
            }
            throw new ShellSyntaxError("unexpected )");
          }
          parens--;
          flush(")");
        } else {
          flush(op);
        }
        continue;
      }
      seg.words.push(this.readWord());
    }
  }

  private skipBlanks(): void {
    const s = this.s;
    while (this.i < s.length) {
      if (s[this.i] === " " || s[this.i] === "\t") this.i++;
      else if (s[this.i] === "\\" && s[this.i + 1] === "\n") this.i += 2;
      else break;
    }
  }

  private readRedirect(fd: string, op: string): Redirect {
    this.skipBlanks();
    if (this.i >= this.s.length || WORD_BREAK.has(this.s[this.i] ?? "")) {
      throw new ShellSyntaxError(`redirection ${fd}${op} without a target`);
    }
    const target = this.readWord();
    let kind: RedirectKind;
    if (op === "<<" || op === "<<-") kind = "heredoc";
    else if (op === "<<<") kind = "herestring";
    else if ((op === ">&" || op === "<&") && /^(\d+-?|-)$/.test(target.value)) kind = "dup";
    else if (op === "<" || op === "<&") kind = "read";
    else kind = "write";
    const redirect: Redirect = { op, fd, kind, target };
    if (kind === "heredoc") this.heredocs.push({ delim: target.value, quoted: target.quoted, stripTabs: op === "<<-", redirect });
    return redirect;
  }

  private readHeredocBodies(): void {
    const s = this.s;
    for (const h of this.heredocs) {
      let body = "";
      while (this.i < s.length) {
        const nl = s.indexOf("\n", this.i);
        const lineEnd = nl === -1 ? s.length : nl;
        const line = s.slice(this.i, lineEnd);
        this.i = nl === -1 ? s.length : nl + 1;
        if ((h.stripTabs ? line.replace(/^\t+/, "") : line) === h.delim) break;
        body += line + "\n";
      }
      h.redirect.body = body;
      // An unquoted delimiter means the body is expanded, so `$( )` inside it runs.
      if (!h.quoted) this.scanExpansions(body);
    }
    this.heredocs = [];
  }

  /** Finds the substitutions in text that is expanded like a double-quoted string. */
  private scanExpansions(text: string): void {
    if (!/[$`]/.test(text)) return;
    new Parser(text, this.out, this.level + 1).scanDoubleQuotedBody();
  }

  scanDoubleQuotedBody(): void {
    const acc = newAcc(this.i);
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === "\\") this.i += 2;
      else if (c === "$") this.readDollar(acc, true);
      else if (c === "`") this.readBacktick(acc);
      else this.i++;
    }
  }

  private readWord(): Word {
    const s = this.s;
    const acc = newAcc(this.i);
    let roughEnd = -1;
    if ((s[this.i] === "<" || s[this.i] === ">") && s[this.i + 1] === "(") {
      this.i += 2;
      this.parseList(true, true);
      acc.expansion = true;
      acc.parts.push(null);
    }
    while (this.i < s.length) {
      const c = s[this.i] ?? "";
      if (WORD_BREAK.has(c)) break;
      if (c === "'") {
        const j = s.indexOf("'", this.i + 1);
        if (j === -1) throw new ShellSyntaxError("unterminated single quote");
        lit(acc, s.slice(this.i + 1, j));
        acc.quoted = true;
        this.i = j + 1;
      } else if (c === '"') {
        this.i++;
        this.readDoubleQuoted(acc);
      } else if (c === "\\") {
        if (s[this.i + 1] === "\n") this.i += 2;
        else if (this.i + 1 >= s.length) {
          lit(acc, "\\");
          this.i++;
        } else {
          lit(acc, s[this.i + 1] ?? "");
          acc.quoted = true;
          this.i += 2;
        }
      } else if (c === "$") {
        this.readDollar(acc, false);
      } else if (c === "`") {
        this.readBacktick(acc);
      } else if ("@!+*?".includes(c) && s[this.i + 1] === "(") {
        // An extglob pattern (`@(push)`, `+(…)`, `!(…)`, …; bash(1) "Pattern Matching", with `shopt -s extglob`).
        this.readExtglob(acc);
      } else {
        // Unquoted `*`, `?` and `[…]` may match file names; `{a,b}` and `{1..3}` expand to several words.
        if (c === "[" || c === "{") roughEnd = roughEnd > this.i ? roughEnd : this.wordEnd();
        const closed = c === "[" && s.indexOf("]", this.i + 1) !== -1 && s.indexOf("]", this.i + 1) < roughEnd;
        if (c === "*" || c === "?" || closed) {
          acc.glob = true;
          acc.value += c;
          acc.parts.push(null);
        } else {
          if (c === "{" && /^[^}]*(,|\.\.)[^}]*\}/.test(s.slice(this.i + 1, roughEnd))) acc.brace = true;
          lit(acc, c);
        }
        this.i++;
      }
    }
    const parts = acc.brace ? [null] : mergeParts(acc.parts);
    return {
      raw: s.slice(acc.start, this.i),
      value: acc.value,
      start: acc.start,
      end: this.i,
      quoted: acc.quoted,
      expansion: acc.expansion,
      glob: acc.glob,
      parts,
    };
  }

  /** Where the unquoted text from here runs into a blank or an operator (a rough end of the word). */
  private wordEnd(): number {
    let j = this.i;
    while (j < this.s.length && !WORD_BREAK.has(this.s[j] ?? "")) j++;
    return j;
  }

  private readDoubleQuoted(acc: Acc): void {
    const s = this.s;
    acc.quoted = true;
    while (this.i < s.length) {
      const c = s[this.i];
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === "\\") {
        const n = s[this.i + 1];
        if (n === "\n") this.i += 2;
        else if (n === "$" || n === "`" || n === '"' || n === "\\") {
          lit(acc, n);
          this.i += 2;
        } else {
          lit(acc, "\\");
          this.i++;
        }
      } else if (c === "$") this.readDollar(acc, true);
      else if (c === "`") this.readBacktick(acc);
      else {
        lit(acc, c ?? "");
        this.i++;
      }
    }
    throw new ShellSyntaxError("unterminated double quote");
  }

  private readDollar(acc: Acc, inDq: boolean): void {
    const s = this.s;
    const start = this.i;
    const n = s[this.i + 1] ?? "";
    if (n === "(" && s[this.i + 2] === "(") {
      // $(( arithmetic )): not a command, but `$( )` inside it would run.
      let depth = 0;
      let j = this.i + 1;
      for (; j < s.length; j++) {
        if (s[j] === "(") depth++;
        else if (s[j] === ")" && --depth === 0) break;
      }
      if (j >= s.length) throw new ShellSyntaxError("unterminated $(( … )) arithmetic");
      this.scanExpansions(s.slice(this.i + 3, j - 1));
      this.i = j + 1;
      acc.expansion = true;
    } else if (n === "(") {
      this.i += 2;
      this.parseList(true, true);
      acc.expansion = true;
    } else if (n === "{") {
      this.i += 2;
      let depth = 1;
      while (depth > 0) {
        if (this.i >= s.length) throw new ShellSyntaxError("unterminated ${ … } expansion");
        const c = s[this.i];
        if (c === "\\") this.i += 2;
        else if (c === "'" && !inDq) {
          const j = s.indexOf("'", this.i + 1);
          if (j === -1) throw new ShellSyntaxError("unterminated single quote");
          this.i = j + 1;
        } else if (c === '"') {
          this.i++;
          this.readDoubleQuoted(newAcc(this.i));
        } else if (c === "$") this.readDollar(newAcc(this.i), true);
        else if (c === "`") this.readBacktick(newAcc(this.i));
        else {
          if (c === "{") depth++;
          else if (c === "}") depth--;
          this.i++;
        }
      }
      acc.expansion = true;
    } else if (n === "'" && !inDq) {
      this.i += 2;
      const a = readAnsiC(this.s, this.i);
      this.i = a.end;
      lit(acc, a.text);
      acc.quoted = true;
      return;
    } else if (n === '"' && !inDq) {
      this.i += 2;
      this.readDoubleQuoted(acc);
      return;
    } else if (/[A-Za-z_]/.test(n)) {
      this.i += 2;
      while (this.i < s.length && /[A-Za-z0-9_]/.test(s[this.i] ?? "")) this.i++;
      acc.expansion = true;
    } else if (/[0-9?!#*@$-]/.test(n) && n !== "") {
      this.i += 2;
      acc.expansion = true;
    } else {
      lit(acc, "$");
      this.i++;
      return;
    }
    acc.value += s.slice(start, this.i);
    acc.parts.push(null);
  }

  /** `@(a|b)` and its kin, to the matching `)`: a glob, known only at run time. */
  private readExtglob(acc: Acc): void {
    const s = this.s;
    const start = this.i;
    let depth = 0;
    for (let j = this.i + 1; j < s.length; j++) {
      if (s[j] === "\\") j++;
      else if (s[j] === "(") depth++;
      else if (s[j] === ")" && --depth === 0) {
        this.i = j + 1;
        acc.glob = true;
        acc.value += s.slice(start, this.i);
        acc.parts.push(null);
        return;
      }
    }
    throw new ShellSyntaxError("unterminated extglob pattern");
  }

  private readBacktick(acc: Acc): void {
    const s = this.s;
    const start = this.i;
    let inner = "";
    let j = this.i + 1;
    for (; j < s.length; j++) {
      const c = s[j];
      if (c === "\\" && (s[j + 1] === "`" || s[j + 1] === "\\" || s[j + 1] === "$")) {
        inner += s[j + 1];
        j++;
      } else if (c === "`") break;
      else inner += c;
    }
    if (j >= s.length) throw new ShellSyntaxError("unterminated backtick substitution");
    new Parser(inner, this.out, this.level + 1).parseList(true, false);
    this.i = j + 1;
    acc.expansion = true;
    acc.value += s.slice(start, this.i);
    acc.parts.push(null);
  }
}

interface Acc {
  start: number;
  value: string;
  quoted: boolean;
  expansion: boolean;
  glob: boolean;
  brace: boolean;
  parts: WordPart[];
}

const newAcc = (start: number): Acc => ({ start, value: "", quoted: false, expansion: false, glob: false, brace: false, parts: [] });

function lit(acc: Acc, text: string): void {
  acc.value += text;
  acc.parts.push(text);
}

/** Joins adjacent literal parts and adjacent unknown parts. */
function mergeParts(parts: readonly WordPart[]): WordPart[] {
  const out: WordPart[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (p === null) {
      if (last !== null) out.push(null);
    } else if (typeof last === "string") out[out.length - 1] = last + p;
    else out.push(p);
  }
  return out;
}
const newSegment = (nested: boolean): Segment => ({ words: [], redirects: [], nested, end: "" });

/** Splits a command line into the simple commands it would run. Never throws. */
export function parseShell(src: string): ShellParse {
  if (src.length > MAX_COMMAND_LENGTH) return { segments: [], error: `command longer than ${MAX_COMMAND_LENGTH} characters` };
  const segments: Segment[] = [];
  try {
    new Parser(src, segments, 0).parseList(false, false);
  } catch (e) {
    if (e instanceof ShellSyntaxError) return { segments: [], error: e.message };
    throw e;
  }
  return { segments };
}

/** Shell-quotes a word so that it reads back as the same single word (for proposed rules). */
export function quoteWord(w: string): string {
  if (w !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(w)) return w;
  return `'${w.replace(/'/g, `'\\''`)}'`;
}
