// Path handling for Read/Edit rules without Node's `path` module (this runs in the PWA too): POSIX
// normalization, `~` and relative resolution, and gitignore-style patterns compiled to RegExps.
// Windows paths become POSIX the way Claude Code documents it: `C:\Users\a` is `/c/Users/a`.

/** Normalizes to an absolute-looking POSIX path: `\` → `/`, drive letters, `.`/`..`, repeated `/`. */
export function normalizePath(p: string): string {
  let s = p.replace(/\\/g, "/");
  const drive = /^([A-Za-z]):(\/|$)/.exec(s);
  if (drive?.[1]) s = `/${drive[1].toLowerCase()}/${s.slice(drive[0].length)}`;
  const abs = s.startsWith("/");
  const out: string[] = [];
  for (const part of s.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!abs) out.push("..");
      continue;
    }
    out.push(part);
  }
  return (abs ? "/" : "") + out.join("/") || (abs ? "/" : ".");
}

/** Resolves `p` against `cwd`, expanding a leading `~` with `home`. The result is normalized. */
export function resolvePath(p: string, cwd: string, home: string): string {
  const s = p.replace(/\\/g, "/");
  if (s === "~" || s.startsWith("~/")) return normalizePath(home + s.slice(1));
  if (s.startsWith("/") || /^[A-Za-z]:(\/|$)/.test(s)) return normalizePath(s);
  return normalizePath(`${cwd}/${s}`);
}

/** True when `path` is `dir` or inside it (both normalized, absolute). */
export function isWithin(path: string, dir: string): boolean {
  if (dir === "/") return path.startsWith("/");
  return path === dir || path.startsWith(dir + "/");
}

/** `path` relative to `dir` ("" for `dir` itself), or undefined when it is outside. */
export function relativeTo(path: string, dir: string): string | undefined {
  if (!isWithin(path, dir)) return undefined;
  if (dir === "/") return path.slice(1);
  return path === dir ? "" : path.slice(dir.length + 1);
}

export function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  if (i <= 0) return "/";
  return path.slice(0, i);
}

/** Escapes gitignore pattern characters so the pattern matches only this literal path. */
export function escapeGlob(s: string): string {
  return s.replace(/[\\*?[\]]/g, (c) => `\\${c}`);
}

/**
 * Compiles a gitignore-style pattern (relative to its anchor directory, no leading `/`) into a RegExp
 * over paths relative to that anchor. `floating` patterns match at any depth (gitignore's rule for a
 * pattern without a `/`). A match on a directory also covers everything below it, as in gitignore,
 * and a trailing `/**` also matches the directory itself.
 */
export function compileGlob(pattern: string, floating: boolean): RegExp {
  let body = "";
  let i = 0;
  const p = pattern;
  while (i < p.length) {
    const c = p[i] ?? "";
    if (c === "*" && p[i + 1] === "*") {
      const atStart = i === 0 || p[i - 1] === "/";
      const next = p[i + 2];
      if (atStart && next === "/") {
        body += "(?:.*/)?";
        i += 3;
      } else if (atStart && next === undefined) {
        // `dir/**`: everything below dir, and (for permissions) dir itself.
        if (body.endsWith("/")) body = body.slice(0, -1) + "(?:/.*)?";
        else body += ".*";
        i += 2;
      } else {
        body += "[^/]*";
        i += 2;
      }
    } else if (c === "*") {
      body += "[^/]*";
      i++;
    } else if (c === "?") {
      body += "[^/]";
      i++;
    } else if (c === "[") {
      const close = findClassEnd(p, i);
      if (close === -1) {
        body += "\\[";
        i++;
      } else {
        let cls = p.slice(i + 1, close);
        const negate = cls.startsWith("!") || cls.startsWith("^");
        if (negate) cls = cls.slice(1);
        cls = cls.replace(/\\(.)/g, "$1").replace(/[\\\]^]/g, (x) => `\\${x}`);
        body += `${negate ? "[^/" : "["}${cls}]`;
        i = close + 1;
      }
    } else if (c === "\\" && i + 1 < p.length) {
      body += escapeRe(p[i + 1] ?? "");
      i += 2;
    } else {
      body += escapeRe(c);
      i++;
    }
  }
  return new RegExp(`^${floating ? "(?:.*/)?" : ""}${body}(?:/.*)?$`);
}

function findClassEnd(p: string, open: number): number {
  let j = open + 1;
  if (p[j] === "!" || p[j] === "^") j++;
  if (p[j] === "]") j++;
  for (; j < p.length; j++) {
    if (p[j] === "\\") j++;
    else if (p[j] === "]") return j;
  }
  return -1;
}

const escapeRe = (c: string): string => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
