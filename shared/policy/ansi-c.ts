// Bash's ANSI-C quoting, `$'…'` (bash(1) "QUOTING": "Words of the form $'string' are treated specially"):
// the backslash escapes it decodes, so a deny rule sees `git $'\u0070ush'` as `git push`.
import { ShellSyntaxError } from "./shell-error.js";

const SIMPLE: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** A code point as bash writes it for `\u`/`\U` (a value past Unicode's range is left as written). */
function codePoint(hex: string, raw: string): string {
  const n = parseInt(hex, 16);
  return n <= 0x10ffff ? String.fromCodePoint(n) : raw;
}

/**
 * Reads the body of a `$'…'` string that starts at `s[i]` (just after `$'`): its decoded text and the index
 * after the closing quote. Escapes: \a \b \e \E \f \n \r \t \v \\ \' \" \?, \nnn (octal, 1–3 digits),
 * \xHH (1–2 hex digits), \uHHHH (1–4), \UHHHHHHHH (1–8), \cX (control-X); any other \c keeps its backslash.
 */
export function readAnsiC(s: string, i: number): { text: string; end: number } {
  let out = "";
  while (i < s.length) {
    const c = s[i] ?? "";
    if (c === "'") return { text: out, end: i + 1 };
    if (c !== "\\" || i + 1 >= s.length) {
      out += c;
      i++;
      continue;
    }
    const n = s[i + 1] ?? "";
    const rest = s.slice(i + 1, i + 10);
    const hex = /^x([0-9A-Fa-f]{1,2})/.exec(rest);
    const u = /^u([0-9A-Fa-f]{1,4})/.exec(rest);
    const U = /^U([0-9A-Fa-f]{1,8})/.exec(rest);
    const oct = /^([0-7]{1,3})/.exec(rest);
    const m = hex ?? u ?? U ?? oct;
    if (SIMPLE[n] !== undefined) {
      out += SIMPLE[n];
      i += 2;
    } else if (m?.[1] !== undefined) {
      const raw = `\\${m[0]}`;
      out += m === oct ? String.fromCharCode(parseInt(m[1], 8) & 0xff) : m === hex ? String.fromCharCode(parseInt(m[1], 16)) : codePoint(m[1], raw);
      i += 1 + m[0].length;
    } else if (n === "c" && i + 2 < s.length) {
      // \cX: the control character X & 0x1f (bash: "a control-x character").
      out += String.fromCharCode((s.charCodeAt(i + 2) & 0x1f) >>> 0);
      i += 3;
    } else {
      out += `\\${n}`;
      i += 2;
    }
  }
  throw new ShellSyntaxError("unterminated $'…' string");
}
