// Unit tests of the permission policy engine (shared/policy/index.ts, shared/policy/*) and the policy file
// loader (adapter/permissions/policy-files.ts): Claude Code's rule syntax as tables of calls and expected decisions.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadPolicySources } from "../../adapter/permissions/policy-files.js";
import {
  DEFAULT_ALLOWED_TOOLS,
  evaluate,
  parseRule,
  parseShell,
  proposeRule,
  proposeRules,
  validatePolicyFile,
  type PolicySource,
} from "../../shared/policy/index.js";
import {
  addRulesUpdate,
  cursorHooksFile,
  cursorPermissionOutput,
  cursorShellRequest,
  CursorBeforeShellInput,
  parseClaudeHookInput,
  parseCodexNotify,
  permissionPromptResult,
  permissionRequestAllow,
  permissionRequestDeny,
  preToolUseOutput,
  ruleToValue,
  rulesFromSuggestions,
  valueToRule,
} from "../../shared/policy/hooks.js";
import { compileGlob, normalizePath } from "../../shared/policy/paths.js";

const OPTS = { projectDir: "/p", homeDir: "/home/u" };

function src(rules: { allow?: string[]; ask?: string[]; deny?: string[] }, name = "project"): PolicySource {
  return { name, permissions: rules };
}

function bash(command: string, sources: PolicySource[], cwd = "/p") {
  return evaluate({ tool_name: "Bash", tool_input: { command }, cwd }, sources, OPTS);
}

function call(tool: string, input: Record<string, unknown>, sources: PolicySource[], cwd = "/p") {
  return evaluate({ tool_name: tool, tool_input: input, cwd }, sources, OPTS);
}

type Row = [command: string, decision: "allow" | "ask" | "deny"];

function table(rules: { allow?: string[]; ask?: string[]; deny?: string[] }, rows: Row[]) {
  for (const [command, decision] of rows) {
    it(`${decision}s \`${command.replace(/\n/g, "\\n")}\``, () => {
      const d = bash(command, [src(rules)]);
      expect(d.decision, d.reason).toBe(decision);
    });
  }
}

describe("parseRule", () => {
  it.each([
    ["Bash", { kind: "tool", tool: "Bash" }],
    ["Bash(*)", { kind: "tool", tool: "Bash" }],
    ["Bash(npm run build)", { kind: "shell", match: "exact", pattern: "npm run build" }],
    ["Bash(npm run test:*)", { kind: "shell", match: "prefix", pattern: "npm run test" }],
    ["Bash(npm run *)", { kind: "shell", match: "prefix", pattern: "npm run" }],
    ["Bash(git * main)", { kind: "shell", match: "wildcard", pattern: "git * main" }],
    ["Bash(git:* push)", { kind: "shell", match: "wildcard", pattern: "git:* push" }],
    ["Bash(ls*)", { kind: "shell", match: "wildcard", pattern: "ls*" }],
    ["Bash(echo \\*)", { kind: "shell", match: "exact", pattern: "echo *" }],
    ["Bash(run_in_background:true)", { kind: "param", param: "run_in_background", value: "true" }],
    ["Read(./src/**)", { kind: "path", tool: "Read", pattern: "./src/**" }],
    ["Edit(//etc/passwd)", { kind: "path", tool: "Edit", pattern: "//etc/passwd" }],
    ["WebFetch(domain:Example.COM.)", { kind: "domain", domain: "example.com" }],
    ["WebFetch(domain:*)", { kind: "tool", tool: "WebFetch" }],
    ["mcp__github", { kind: "tool", tool: "mcp__github" }],
    ["mcp__github__*", { kind: "toolGlob", pattern: "mcp__github__*" }],
    ["Agent(Explore)", { kind: "content", tool: "Agent", value: "Explore" }],
    ["Agent(model:opus)", { kind: "param", tool: "Agent", param: "model", value: "opus" }],
    ["  Bash(npm   test)  ", { kind: "shell", match: "exact", pattern: "npm test" }],
  ])("reads %s", (text, expected) => {
    expect(parseRule(text)).toMatchObject(expected);
  });

  it.each([
    ["", "empty rule"],
    ["Bash(rm -rf", 'missing closing ")"'],
    ["bash(rm *)", 'did you mean "Bash"?'],
    ["Bash (ls)", 'no space before "("'],
    ["npm test", 'did you mean "Bash(npm test)"?'],
    ["Bash()", "empty specifier"],
    ["Bash(:*)", 'nothing before ":*"'],
    ["WebFetch(https://example.com)", "WebFetch rules take a domain"],
    ["WebFetch(domain:example.com/path)", "not a URL, port or path"],
    ["Read(!secret)", "negated patterns"],
    ["mcp__github__x(foo)", "MCP rules name a server or tool without a specifier"],
    ["mcp__*(x)", "a tool-name wildcard takes no specifier"],
    ["Bash)", 'unbalanced ")"'],
  ])("rejects %j with a message saying why", (text, message) => {
    const r = parseRule(text);
    expect(r).toHaveProperty("error");
    expect((r as { error: string }).error).toContain(message);
  });
});

describe("Bash rules: exact, prefix and wildcard", () => {
  describe("an exact rule matches only that command", () => {
    table({ allow: ["Bash(npm run build)"] }, [
      ["npm run build", "allow"],
      ["npm  run   build", "allow"],
      ["npm run build --prod", "ask"],
      ["npm run", "ask"],
    ]);
  });
  describe("the legacy prefix form `npm run test:*` keeps a word boundary", () => {
    table({ allow: ["Bash(npm run test:*)"] }, [
      ["npm run test", "allow"],
      ["npm run test -- --watch", "allow"],
      ["npm run test:unit", "ask"],
      ["npm run testing", "ask"],
      ["npm run", "ask"],
    ]);
  });
  describe("`ls *` (space before *) keeps a word boundary; `ls*` does not", () => {
    table({ allow: ["Bash(ls *)"] }, [
      ["ls", "allow"],
      ["ls -la", "allow"],
      ["lsof", "ask"],
    ]);
    table({ allow: ["Bash(ls*)"] }, [
      ["ls -la", "allow"],
      ["lsof", "allow"],
    ]);
  });
  describe("a * in the middle spans any number of arguments", () => {
    table({ allow: ["Bash(git * main)", "Bash(* --version)"] }, [
      ["git checkout main", "allow"],
      ["git push origin main", "allow"],
      ["git push origin dev", "ask"],
      ["node --version", "allow"],
      ["node --version --json", "ask"],
    ]);
  });
  describe("`:*` is literal anywhere but at the end", () => {
    table({ allow: ["Bash(git:* push)"] }, [
      ["git push", "ask"],
      ["git:x push", "allow"],
    ]);
  });
});

describe("compound commands: every part must be allowed, a deny on any part denies", () => {
  it("asks for `npm test && git push` when only npm test is allowed", () => {
    const d = bash("npm test && git push", [src({ allow: ["Bash(npm test:*)"] })]);
    expect(d.decision).toBe("ask");
    expect(d.reason).toContain("`git push`");
  });
  it("denies `npm test && git push` when git push is denied", () => {
    const d = bash("npm test && git push", [src({ allow: ["Bash(npm test:*)"], deny: ["Bash(git push:*)"] })]);
    expect(d).toMatchObject({ decision: "deny", rule: "Bash(git push:*)", source: "project" });
  });
  it("allows it when both parts are allowed, naming each rule", () => {
    const d = bash("npm test && git push", [src({ allow: ["Bash(npm test:*)", "Bash(git push:*)"] })]);
    expect(d.decision).toBe("allow");
    expect(d.matches.map((m) => m.rule)).toEqual(["Bash(npm test:*)", "Bash(git push:*)"]);
  });
  describe("splits at &&, ||, ;, |, |&, &, newlines and subshell parentheses", () => {
    table({ allow: ["Bash(npm test:*)"] }, [
      ["npm test || rm -rf x", "ask"],
      ["npm test; rm -rf x", "ask"],
      ["npm test | sh", "ask"],
      ["npm test |& sh", "ask"],
      ["npm test & rm -rf x", "ask"],
      ["npm test\nrm -rf x", "ask"],
      ["(npm test) && (rm -rf x)", "ask"],
      ["npm test &", "allow"],
      ["(npm test)", "allow"],
      ["{ npm test; }", "allow"],
      ["npm test # a comment", "allow"],
    ]);
  });
  it("an ask rule on one part asks even when another part is allowed", () => {
    expect(bash("npm test && git push", [src({ allow: ["Bash"], ask: ["Bash(git push *)"] })]).decision).toBe("ask");
  });
  it("a deny on one part wins over an ask on another", () => {
    expect(bash("git push && rm -rf x", [src({ ask: ["Bash(git push *)"], deny: ["Bash(rm *)"] })]).decision).toBe("deny");
  });
});

describe("wrappers and environment assignments", () => {
  describe("timeout, time, nice, nohup, stdbuf, command, builtin and bare xargs are stripped for allow rules", () => {
    table({ allow: ["Bash(npm test *)", "Bash(grep *)"] }, [
      ["timeout 30 npm test", "allow"],
      ["timeout -s KILL 5m npm test", "allow"],
      ["time npm test", "allow"],
      ["nice -n 10 npm test", "allow"],
      ["nice npm test", "allow"],
      ["nohup npm test", "allow"],
      ["stdbuf -oL npm test", "allow"],
      ["command npm test", "allow"],
      ["builtin npm test", "allow"],
      ["timeout 30 nice -n 5 npm test", "allow"],
      ["xargs grep foo", "allow"],
      ["xargs -n1 grep foo", "ask"],
      ["command -v npm", "ask"],
      ["timeout npm test", "ask"],
      ["watch npm test", "ask"],
      ["npx npm test", "ask"],
    ]);
  });
  describe("only known-safe variables may precede an allowed command", () => {
    table({ allow: ["Bash(npm test *)"] }, [
      ["NODE_ENV=test npm test", "allow"],
      ["CI=1 NODE_ENV=test npm test", "allow"],
      ["PATH=/tmp/evil npm test", "ask"],
      ["NODE_OPTIONS=--require=x npm test", "ask"],
      ["NODE_ENV=$(curl x) npm test", "ask"],
    ]);
  });
  describe("deny rules see past every assignment, wrapper, sudo, env and path-qualified name", () => {
    table({ allow: ["Bash"], deny: ["Bash(rm *)"] }, [
      ["FOO=bar rm -rf tmp/", "deny"],
      ["timeout 5 rm -rf x", "deny"],
      ["sudo rm -rf /", "deny"],
      ["sudo -u root rm -rf /", "deny"],
      ["env -i FOO=1 rm x", "deny"],
      ["exec rm x", "deny"],
      ["ls | xargs -n1 rm", "deny"],
      ["/bin/rm x", "deny"],
      ['"rm" -rf x', "deny"],
      ["r\\m -rf x", "deny"],
      ["if true; then rm x; fi", "deny"],
      ["for f in *; do rm $f; done", "deny"],
      ["! rm x", "deny"],
      ["coproc rm x", "deny"],
      ["trap 'rm -rf x' EXIT", "deny"],
      ["flock /tmp/l -c 'rm x'", "deny"],
      ['"$(echo rm)" -rf x', "ask"],
      ["$CMD -rf x", "ask"],
      ["echo rm x", "allow"],
      ["rmdir x", "allow"],
    ]);
  });
  it("a deny rule written for a wrapper still matches the wrapped command", () => {
    expect(bash("nohup ./server", [src({ allow: ["Bash"], deny: ["Bash(nohup *)"] })]).decision).toBe("deny");
  });
});

describe("quoting", () => {
  it('does not split inside quotes: `echo "a && b"` is one command', () => {
    expect(parseShell('echo "a && b"').segments.map((s) => s.words.map((w) => w.value))).toEqual([["echo", "a && b"]]);
    expect(bash('echo "a && b"', [src({ allow: ["Bash(echo *)"] })]).decision).toBe("allow");
    expect(bash("echo 'x; rm -rf /'", [src({ allow: ["Bash(echo *)"], deny: ["Bash(rm *)"] })]).decision).toBe("allow");
  });
  it.each([
    ["a && b || c; d | e |& f & g\nh", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"], ["h"]]],
    [`echo 'it''s' "a \\"b\\"" c\\ d`, [["echo", "its", 'a "b"', "c d"]]],
    ["echo $'a\\tb' $\"x\"", [["echo", "a\tb", "x"]]],
    ["echo a\\\nb", [["echo", "ab"]]],
    ["echo 2>&1 >out <in", [["echo"]]],
    ["echo # not; a command", [["echo"]]],
    ["echo a#b", [["echo", "a#b"]]],
    ["cat <<EOF\nrm -rf /\nEOF\necho done", [["cat"], ["echo", "done"]]],
    ["cat <<-'X'\n\t$(no)\n\tX\nls", [["cat"], ["ls"]]],
  ])("splits %j into its simple commands", (command, expected) => {
    const r = parseShell(command);
    expect(r.error).toBeUndefined();
    expect(r.segments.filter((s) => !s.nested).map((s) => s.words.map((w) => w.value))).toEqual(expected);
  });
  it.each([
    ["echo 'abc", "unterminated single quote"],
    ['echo "abc', "unterminated double quote"],
    ["echo $(ls", "unterminated $( … ) substitution"],
    ["echo `ls", "unterminated backtick"],
    ["echo )", "unexpected )"],
    ["echo >", "without a target"],
  ])("reports %j as unreadable", (command, error) => {
    expect(parseShell(command).error).toContain(error);
  });
  it("asks for an unreadable command even when its prefix is allowed", () => {
    const d = bash("echo 'abc", [src({ allow: ["Bash(echo *)"] })]);
    expect(d.decision).toBe("ask");
    expect(d.reason).toContain("unterminated single quote");
  });
  it("still denies an unreadable command that a deny rule matches as a whole", () => {
    expect(bash("rm -rf / 'oops", [src({ deny: ["Bash(rm *)"] })]).decision).toBe("deny");
  });
  it("asks instead of allowing an unreadable command under bare Bash when shell deny rules exist", () => {
    expect(bash("ls 'oops", [src({ allow: ["Bash"], deny: ["Bash(rm *)"] })]).decision).toBe("ask");
    expect(bash("ls 'oops", [src({ allow: ["Bash"] })]).decision).toBe("allow");
  });
  it("never throws on arbitrary input, and unreadable input is never allowed by a prefix rule", () => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = [
      "a",
      "rm",
      " ",
      "'",
      '"',
      "\\",
      "$",
      "(",
      ")",
      "`",
      "{",
      "}",
      "<",
      ">",
      "&",
      "|",
      ";",
      "\n",
      "#",
      "*",
      "~",
      "=",
      "-c",
      "<<",
      "EOF",
      "$(",
      "${",
    ];
    const s = [src({ allow: ["Bash(a *)"], deny: ["Bash(rm *)"] })];
    for (let n = 0; n < 2000; n++) {
      let command = "a ";
      const len = 1 + Math.floor(rand() * 24);
      for (let i = 0; i < len; i++) command += alphabet[Math.floor(rand() * alphabet.length)];
      const d = bash(command, s);
      if (parseShell(command).error !== undefined) expect(d.decision, command).not.toBe("allow");
    }
  });
  it("asks for commands longer than 10 000 characters", () => {
    expect(bash(`echo ${"a".repeat(10_001)}`, [src({ allow: ["Bash(echo *)"] })]).decision).toBe("ask");
  });
});

describe("command substitutions and scripts run too", () => {
  describe("the commands inside $( ), backticks, <( ) and unquoted here-docs must be allowed", () => {
    table({ allow: ["Bash(echo *)", "Bash(cat *)"] }, [
      ["echo $(date)", "ask"],
      ["echo `date`", "ask"],
      ["cat <(date)", "ask"],
      ["cat <<EOF\n$(date)\nEOF", "ask"],
      ["cat <<'EOF'\n$(date)\nEOF", "allow"],
      ['echo "$(echo hi)"', "allow"],
      ["echo $((1 + 2))", "allow"],
      ["echo $HOME", "allow"],
    ]);
  });
  describe("deny rules reach into them, and into bash -c, eval and find -exec", () => {
    table({ allow: ["Bash"], deny: ["Bash(rm *)"] }, [
      ["echo $(rm -rf /)", "deny"],
      ["echo `rm -rf /`", "deny"],
      ["x=$(rm y)", "deny"],
      ['echo "${X:-$(rm y)}"', "deny"],
      ["cat <<EOF\n$(rm z)\nEOF", "deny"],
      ["bash -c 'rm -rf /'", "deny"],
      ['sh -c "echo hi; rm x"', "deny"],
      ["zsh -lc 'rm x'", "deny"],
      ["eval 'rm x'", "deny"],
      ["find . -name '*.o' -exec rm {} \\;", "deny"],
    ]);
  });
  it("a prefix rule for bash or find does not approve the script they run", () => {
    expect(bash("bash -c 'curl x | sh'", [src({ allow: ["Bash(bash *)"] })]).decision).toBe("ask");
    expect(bash("find . -delete", [src({ allow: ["Bash(find *)"] })]).decision).toBe("ask");
    expect(bash("find . -name x", [src({ allow: ["Bash(find *)"] })]).decision).toBe("allow");
    expect(bash("find . -delete", [src({ allow: ["Bash(find . -delete)"] })]).decision).toBe("allow");
  });
  it("a command name computed at run time is never covered by a prefix rule", () => {
    expect(bash("$CMD --version", [src({ allow: ["Bash(* --version)"] })]).decision).toBe("ask");
  });
});

describe("redirections and file commands", () => {
  it("checks an output redirection target as a file write", () => {
    expect(bash("npm test > out.txt", [src({ allow: ["Bash(npm test:*)"] })]).decision).toBe("ask");
    expect(bash("npm test > out.txt", [src({ allow: ["Bash(npm test:*)", "Edit(/out.txt)"] })]).decision).toBe("allow");
    expect(bash("npm test > /etc/x", [src({ allow: ["Bash(npm test:*)"], deny: ["Edit(//etc/**)"] })]).decision).toBe("deny");
  });
  it("does not check /dev/null, fd duplications or input here-strings", () => {
    expect(bash("npm test 2>&1 >/dev/null <<<x", [src({ allow: ["Bash(npm test:*)"] })]).decision).toBe("allow");
  });
  it("asks for a redirection to a ~ path or a glob", () => {
    expect(bash("npm test > ~/out", [src({ allow: ["Bash(npm test:*)", "Edit(~/**)"] })]).decision).toBe("ask");
    expect(bash("npm test > out*", [src({ allow: ["Bash(npm test:*)", "Edit(/**)"] })]).decision).toBe("ask");
  });
  it("applies Read deny rules to files that cat, head, grep and input redirections read", () => {
    const s = [src({ allow: ["Bash"], deny: ["Read(~/.ssh/**)", "Read(.env)"] })];
    expect(bash("cat ~/.ssh/id_rsa", s).decision).toBe("deny");
    expect(bash("head -n 1 sub/.env", s).decision).toBe("deny");
    expect(bash("grep KEY .env", s).decision).toBe("deny");
    expect(bash("wc -l < .env", s).decision).toBe("deny");
    expect(bash("grep .env README.md", s).decision).toBe("allow");
  });
  it("applies Edit deny rules to files that rm, mv, tee and sed -i change", () => {
    const s = [src({ allow: ["Bash"], deny: ["Edit(/docs/**)"] })];
    expect(bash("rm -rf docs/old", s).decision).toBe("deny");
    expect(bash("cd docs && rm old.md", s).decision).toBe("deny");
    expect(bash("sed -i s/a/b/ docs/x.md", s).decision).toBe("deny");
    expect(bash("sed s/a/b/ docs/x.md", s).decision).toBe("allow");
    expect(bash("echo hi | tee docs/x", s).decision).toBe("deny");
  });
});

describe("cd", () => {
  it("needs no rule inside the working directories", () => {
    expect(bash("cd src && npm test", [src({ allow: ["Bash(npm test:*)"] })]).decision).toBe("allow");
    expect(bash("cd /p/pkg && npm test", [src({ allow: ["Bash(npm test:*)"] })]).decision).toBe("allow");
  });
  it("needs a rule outside them, or before git runs in another directory", () => {
    expect(bash("cd /tmp && npm test", [src({ allow: ["Bash(npm test:*)"] })]).decision).toBe("ask");
    expect(bash("cd sub && git status", [src({ allow: ["Bash(git status)"] })]).decision).toBe("ask");
    expect(bash("cd . && git status", [src({ allow: ["Bash(git status)"] })]).decision).toBe("allow");
  });
  it("resolves later redirections against the new directory", () => {
    expect(bash("cd sub && npm test > log.txt", [src({ allow: ["Bash(npm test:*)", "Edit(/sub/log.txt)"] })]).decision).toBe("allow");
  });
});

describe("Read and Edit path rules (gitignore-style)", () => {
  type PathRow = [rule: string, behavior: "allow" | "deny", tool: string, path: string, matches: boolean];
  const rows: PathRow[] = [
    ["Read(./src/**)", "allow", "Read", "/p/src/a.ts", true],
    ["Read(./src/**)", "allow", "Read", "/p/src/deep/er/a.ts", true],
    ["Read(./src/**)", "deny", "Read", "/p/vendor/src/a.ts", false],
    ["Read(src/**)", "allow", "Read", "/p/vendor/pkg/src/lib.js", false],
    ["Read(src/**)", "deny", "Read", "/p/vendor/pkg/src/lib.js", true],
    ["Read(/src/**)", "deny", "Read", "/p/vendor/pkg/src/lib.js", false],
    ["Read(**/src/**)", "allow", "Read", "/p/vendor/pkg/src/lib.js", true],
    ["Edit(/docs/**)", "deny", "Edit", "/p/docs/a/b.md", true],
    ["Edit(/docs/**)", "deny", "Edit", "/docs/a.md", false],
    ["Edit(/docs/**)", "deny", "Edit", "/p/.claude/docs/a.md", false],
    ["Edit(/docs/**)", "deny", "Write", "/p/docs/new.md", true],
    ["Edit(/docs/**)", "deny", "MultiEdit", "/p/docs/new.md", true],
    ["Edit(/docs/**)", "deny", "NotebookEdit", "/p/docs/n.ipynb", true],
    ["Read(~/.ssh/**)", "deny", "Read", "/home/u/.ssh/id_rsa", true],
    ["Read(~/.ssh/**)", "deny", "Read", "/p/.ssh/id_rsa", false],
    ["Read(//etc/passwd)", "deny", "Read", "/etc/passwd", true],
    ["Read(//etc/passwd)", "deny", "Read", "/p/etc/passwd", false],
    ["Read(/etc/passwd)", "deny", "Read", "/etc/passwd", false],
    ["Read(.env)", "deny", "Read", "/p/.env", true],
    ["Read(.env)", "deny", "Read", "/p/a/b/.env", true],
    ["Read(.env)", "deny", "Read", "/.env", false],
    ["Read(./.env)", "deny", "Read", "/p/a/.env", false],
    ["Read(//**/.env)", "deny", "Read", "/anywhere/.env", true],
    ["Read(*.env)", "deny", "Read", "/p/x/prod.env", true],
    ["Read(src/*.ts)", "allow", "Read", "/p/src/a.ts", true],
    ["Read(src/*.ts)", "allow", "Read", "/p/src/sub/a.ts", false],
    ["Read(src/?.ts)", "allow", "Read", "/p/src/a.ts", true],
    ["Read(src/[ab].ts)", "allow", "Read", "/p/src/c.ts", false],
    ["Read(secrets/)", "deny", "Read", "/p/x/secrets/k", true],
    ["Read(.git)", "deny", "Read", "/p/.git/config", true],
    ["Read(./src/**)", "allow", "Grep", "/p/src", true],
    ["Read(./src/**)", "allow", "Glob", "/p/src", true],
    ["Read(~/.ssh/**)", "deny", "Edit", "/home/u/.ssh/config", true],
    ["Read(C\\[1\\].txt)", "allow", "Read", "/p/C[1].txt", true],
  ];
  it.each(rows)("%s as %s, %s %s: %s", (rule, behavior, tool, path, matches) => {
    const field = tool === "Grep" || tool === "Glob" ? "path" : tool === "NotebookEdit" ? "notebook_path" : "file_path";
    const d = call(tool, { [field]: path, pattern: "x" }, [src({ [behavior]: [rule] })]);
    if (matches) expect(d.rule, d.reason).toBe(rule);
    else expect(d.rule, d.reason).toBeUndefined();
  });
  it("anchors /path at the source's baseDir", () => {
    const s: PolicySource = { name: "elsewhere", permissions: { deny: ["Edit(/docs/**)"] }, baseDir: "/other" };
    expect(call("Edit", { file_path: "/other/docs/x" }, [s]).decision).toBe("deny");
    expect(call("Edit", { file_path: "/p/docs/x" }, [s]).decision).toBe("ask");
  });
  it("resolves relative, ~ and Windows paths before matching", () => {
    const s = [src({ deny: ["Read(~/.ssh/**)", "Read(//c/Users/**)"] })];
    expect(call("Read", { file_path: "~/.ssh/id_rsa" }, s).decision).toBe("deny");
    expect(call("Read", { file_path: "../home/u/.ssh/id_rsa" }, s, "/p").decision).toBe("deny");
    expect(call("Read", { file_path: "C:\\Users\\a\\x" }, s).decision).toBe("deny");
    expect(normalizePath("C:\\Users\\a\\..\\b")).toBe("/c/Users/b");
  });
  it("asks instead of allowing when a path deny rule cannot see the file", () => {
    expect(call("Edit", {}, [src({ allow: ["Edit"], deny: ["Edit(/docs/**)"] })]).decision).toBe("ask");
  });
  it("compiles ** as any number of directories", () => {
    expect(compileGlob("a/**/b", false).test("a/x/y/b")).toBe(true);
    expect(compileGlob("a/**/b", false).test("a/b")).toBe(true);
    expect(compileGlob("a/*/b", false).test("a/x/y/b")).toBe(false);
  });
});

describe("WebFetch domains", () => {
  type DomainRow = [rule: string, url: string, matches: boolean];
  it.each<DomainRow>([
    ["WebFetch(domain:example.com)", "https://example.com/a", true],
    ["WebFetch(domain:example.com)", "https://EXAMPLE.com./a", true],
    ["WebFetch(domain:example.com)", "https://api.example.com/a", false],
    ["WebFetch(domain:example.com)", "https://example.com.evil.net/", false],
    ["WebFetch(domain:*.example.com)", "https://a.b.example.com/", true],
    ["WebFetch(domain:*.example.com)", "https://example.com/", false],
    ["WebFetch(domain:example.*)", "https://example.org/", true],
    ["WebFetch(domain:example.*)", "https://example.evil.com/", false],
    ["WebFetch(domain:*)", "https://anything.test/", true],
    ["WebFetch", "https://anything.test/", true],
  ])("%s on %s: %s", (rule, url, matches) => {
    const d = call("WebFetch", { url, prompt: "p" }, [src({ allow: [rule] })]);
    expect(d.decision).toBe(matches ? "allow" : "ask");
  });
  it("asks when a domain deny rule meets a URL it cannot read", () => {
    expect(call("WebFetch", { url: "::::" }, [src({ allow: ["WebFetch"], deny: ["WebFetch(domain:evil.com)"] })]).decision).toBe("ask");
  });
});

describe("MCP tools and tool-name wildcards", () => {
  it.each([
    ["mcp__github", "mcp__github__create_issue", "allow"],
    ["mcp__github", "mcp__github2__create_issue", "ask"],
    ["mcp__github__*", "mcp__github__create_issue", "allow"],
    ["mcp__github__get_*", "mcp__github__get_issue", "allow"],
    ["mcp__github__get_*", "mcp__github__create_issue", "ask"],
    ["mcp__github__create_issue", "mcp__github__create_issue", "allow"],
    ["mcp__github__create_issue", "mcp__github__delete_repo", "ask"],
    ["mcp__*", "mcp__github__create_issue", "ask"],
    ["*", "Bash", "ask"],
  ])("allow %s on %s: %s", (rule, tool, decision) => {
    expect(call(tool, {}, [src({ allow: [rule] })]).decision).toBe(decision);
  });
  it("deny and ask rules accept any tool-name wildcard", () => {
    expect(call("mcp__github__x", {}, [src({ allow: ["mcp__github"], deny: ["mcp__*"] })]).decision).toBe("deny");
    expect(call("Write", { file_path: "/p/x" }, [src({ ask: ["*"] })]).decision).toBe("ask");
    expect(bash("ls", [src({ allow: ["Bash"], deny: ["*"] })]).decision).toBe("deny");
  });
  it("matches deny/ask param:value rules on MCP and built-in tools, never as allow", () => {
    expect(call("mcp__db__query", { readonly: false }, [src({ allow: ["mcp__db"], deny: ["mcp__db__query(readonly:false)"] })]).decision).toBe("deny");
    expect(call("mcp__db__query", { readonly: true }, [src({ allow: ["mcp__db"], deny: ["mcp__db__query(readonly:false)"] })]).decision).toBe("allow");
    expect(call("Agent", { model: "opus", subagent_type: "x" }, [src({ allow: ["Agent"], ask: ["Agent(model:op*)"] })]).decision).toBe("ask");
    expect(call("Agent", { subagent_type: "x" }, [src({ allow: ["Agent"], ask: ["Agent(model:*)"] })]).decision).toBe("allow");
    expect(bash("npm start", [src({ allow: ["Bash"], deny: ["Bash(run_in_background:true)"] })]).decision).toBe("allow");
    expect(
      evaluate(
        { tool_name: "Bash", tool_input: { command: "x", run_in_background: true } },
        [src({ allow: ["Bash"], deny: ["Bash(run_in_background:true)"] })],
        OPTS,
      ).decision,
    ).toBe("deny");
    expect(call("Agent", { model: "opus" }, [src({ allow: ["Agent(model:opus)"] })]).decision).toBe("ask");
  });
  it("ignores param rules on a tool's own field (a compound command would bypass them)", () => {
    expect(bash("rm -rf x", [src({ allow: ["Bash"], deny: ["Bash(command:rm *)"] })]).decision).toBe("allow");
  });
  it("matches Agent(Name) against the subagent type, Task being Agent's old name", () => {
    expect(call("Agent", { subagent_type: "Explore" }, [src({ deny: ["Agent(Explore)"] })]).decision).toBe("deny");
    expect(call("Task", { subagent_type: "Explore" }, [src({ deny: ["Agent(Explore)"] })]).decision).toBe("deny");
    expect(call("Agent", { subagent_type: "Plan" }, [src({ deny: ["Agent(Explore)"] })]).decision).toBe("ask");
  });
  it("makes every call ask when a deny rule has a specifier LineUp cannot evaluate", () => {
    expect(call("PowerShell", { command: "Get-ChildItem" }, [src({ allow: ["PowerShell"], deny: ["PowerShell(Remove-Item *)"] })]).decision).toBe("ask");
    expect(call("PowerShell", { command: "Get-ChildItem" }, [src({ allow: ["PowerShell"] })]).decision).toBe("allow");
  });
});

describe("precedence across sources", () => {
  const project = src({ allow: ["Bash(git *)"], deny: ["Read(.env)"] }, "project .lineup/policy.json");
  const inbox = src({ ask: ["Bash(git push *)"] }, "inbox");
  const local = src({ deny: ["Bash(git push --force *)"], allow: ["Read(.env)"] }, "local policy");
  it("a deny in any source wins over an allow in another", () => {
    expect(call("Read", { file_path: "/p/.env" }, [local, project]).decision).toBe("deny");
    expect(bash("git push --force origin main", [project, inbox, local])).toMatchObject({ decision: "deny", source: "local policy" });
  });
  it("then an ask in any source wins over an allow", () => {
    expect(bash("git push origin main", [project, inbox, local])).toMatchObject({ decision: "ask", rule: "Bash(git push *)", source: "inbox" });
  });
  it("then an allow from any source allows", () => {
    expect(bash("git status", [inbox, local, project])).toMatchObject({ decision: "allow", source: "project .lineup/policy.json" });
  });
  it("rule specificity does not change the order: a broad deny blocks a narrow allow", () => {
    expect(bash("aws s3 ls", [src({ deny: ["Bash(aws *)"], allow: ["Bash(aws s3 ls)"] })]).decision).toBe("deny");
  });
  it("skips invalid rules with a warning instead of failing", () => {
    const d = bash("ls", [src({ allow: ["Bash(ls", "Bash(ls *)"] })]);
    expect(d.decision).toBe("allow");
    expect(d.warnings[0]).toContain('missing closing ")"');
  });
});

describe("defaults", () => {
  it.each(DEFAULT_ALLOWED_TOOLS)("allows %s with no rule inside the working directories", (tool) => {
    expect(call(tool, { file_path: "/p/a", path: "/p", query: "q", todos: [] }, []).decision).toBe("allow");
  });
  it.each(["Bash", "Edit", "Write", "WebFetch", "mcp__x__y", "NotebookEdit", "Agent"])("asks for %s with no rule", (tool) => {
    expect(call(tool, { command: "ls", file_path: "/p/a", url: "https://x.test" }, []).decision).toBe("ask");
  });
  it("asks before reading outside the working directories", () => {
    expect(call("Read", { file_path: "/etc/passwd" }, []).decision).toBe("ask");
    expect(call("Glob", { pattern: "/etc/**/*.conf" }, []).decision).toBe("ask");
    expect(
      evaluate({ tool_name: "Read", tool_input: { file_path: "/shared/x" }, cwd: "/p" }, [], { ...OPTS, additionalDirectories: ["/shared"] }).decision,
    ).toBe("allow");
  });
  it("still applies deny and ask rules to read-only tools", () => {
    expect(call("Read", { file_path: "/p/.env" }, [src({ deny: ["Read(.env)"] })]).decision).toBe("deny");
    expect(call("WebSearch", { query: "q" }, [src({ ask: ["WebSearch"] })]).decision).toBe("ask");
  });
  it("uses the project directory when the request has no cwd", () => {
    expect(evaluate({ tool_name: "Read", tool_input: { file_path: "src/a.ts" } }, [src({ deny: ["Read(./src/**)"] })], OPTS).decision).toBe("deny");
  });
});

describe("proposeRule", () => {
  it.each([
    ["npm test -- --watch", ["Bash(npm test:*)"]],
    ["npm run build -- --prod", ["Bash(npm run build:*)"]],
    ["git push origin main", ["Bash(git push:*)"]],
    ["ls -la", ["Bash(ls:*)"]],
    ["python script.py --x", ["Bash(python script.py --x)"]],
    ["rm -rf build", ["Bash(rm -rf build)"]],
    ["./scripts/deploy.sh prod", ["Bash(./scripts/deploy.sh prod)"]],
    ["echo 'a*b'", ["Bash(echo:*)"]],
    ["git status && npm test", ["Bash(git status:*)", "Bash(npm test:*)"]],
    ["cd src && npm test", ["Bash(npm test:*)"]],
    ["FOO=1 make", ["Bash(FOO=1 make)"]],
    ["NODE_ENV=test npm test", ["Bash(npm test:*)"]],
    ["timeout 30 npm test", ["Bash(npm test:*)"]],
    ["npm test > out.log", ["Bash(npm test:*)", "Edit(/out.log)"]],
    ["echo 'a", []],
  ])("proposes for `%s`: %j", (command, expected) => {
    expect(proposeRules("Bash", { command }, OPTS)).toEqual(expected);
  });
  it("proposes exact rules whose text matches the command again", () => {
    for (const command of ["python x.py 'a  b'", "rm -rf 'dir*'", "curl -s https://x.test/a?b=1"]) {
      const rule = proposeRule("Bash", { command }, OPTS);
      expect(rule).toBeDefined();
      expect(bash(command, [src({ allow: [rule as string] })]).decision, `${command} → ${rule}`).toBe("allow");
    }
  });
  it("skips parts that the sources already allow", () => {
    expect(proposeRules("Bash", { command: "git status && npm test" }, { ...OPTS, sources: [src({ allow: ["Bash(git status)"] })] })).toEqual([
      "Bash(npm test:*)",
    ]);
  });
  it.each([
    ["Edit", { file_path: "/p/src/a/b.ts" }, "Edit(/src/a/**)"],
    ["Write", { file_path: "/p/top.ts" }, "Edit(/**)"],
    ["Edit", { file_path: "/home/u/notes/x.md" }, "Edit(~/notes/**)"],
    ["Edit", { file_path: "/etc/nginx/x.conf" }, "Edit(//etc/nginx/**)"],
    ["Edit", { file_path: "/p/[2024] Reports/x" }, "Edit(/\\[2024\\] Reports/**)"],
    ["Read", { file_path: "/opt/data/x.csv" }, "Read(//opt/data/**)"],
    ["Grep", { path: "/opt/data", pattern: "x" }, "Read(//opt/data/**)"],
    ["WebFetch", { url: "https://docs.example.com/a" }, "WebFetch(domain:docs.example.com)"],
    ["mcp__github__create_issue", {}, "mcp__github__create_issue"],
    ["WebSearch", { query: "x" }, "WebSearch"],
    ["Agent", { subagent_type: "Explore" }, "Agent(Explore)"],
  ])("proposes for %s %j: %s", (tool, input, expected) => {
    expect(proposeRule(tool, input, OPTS)).toBe(expected);
  });
  it("proposes a directory rule that allows the file it was made for", () => {
    const rule = proposeRule("Edit", { file_path: "/p/[2024] Reports/x" }, OPTS) as string;
    expect(call("Edit", { file_path: "/p/[2024] Reports/x" }, [src({ allow: [rule] })]).decision).toBe("allow");
  });
  it("proposes nothing for a command it cannot read or a PowerShell call", () => {
    expect(proposeRule("Bash", { command: "echo $(" }, OPTS)).toBeUndefined();
    expect(proposeRule("PowerShell", { command: "Get-ChildItem" }, OPTS)).toBeUndefined();
  });
});

describe("validatePolicyFile", () => {
  it("accepts a well-formed file and returns the three lists", () => {
    const v = validatePolicyFile({ permissions: { allow: ["Bash(npm test:*)"], deny: ["Read(./.env)"] } });
    expect(v).toEqual({ ok: true, policy: { permissions: { allow: ["Bash(npm test:*)"], ask: [], deny: ["Read(./.env)"] } }, warnings: [] });
  });
  it("accepts JSON text", () => {
    expect(validatePolicyFile('{"permissions":{"ask":["Bash(git push *)"]}}').ok).toBe(true);
  });
  it.each([
    ["{not json", "not valid JSON"],
    [[], "a policy file is a JSON object"],
    [{ allow: [] }, 'missing "permissions" object'],
    [{ permissions: { allow: "Bash" } }, "permissions.allow must be a list of rule strings"],
    [{ permissions: { deny: [42] } }, "permissions.deny[0]: a rule must be a string, got 42"],
    [{ permissions: { deny: ["Bash(ls *)", "bash(rm *)"] } }, 'permissions.deny[1]: "bash(rm *)": tool names are case-sensitive; did you mean "Bash"?'],
  ])("rejects %j: %s", (json, message) => {
    const v = validatePolicyFile(json);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.errors.join("\n")).toContain(message);
  });
  it("warns about rules that do less than they seem to", () => {
    const v = validatePolicyFile({
      permissions: {
        allow: ["mcp__*", "Agent(model:opus)", "Bash(* --help)", "Write(docs/**)", "Bash(ls)"],
        deny: ["Bash(command:rm *)", "Bash(ls)"],
        defaultMode: "acceptEdits",
      },
      extra: 1,
    });
    expect(v.ok).toBe(true);
    const w = v.warnings.join("\n");
    expect(w).toContain('unknown key "extra"');
    expect(w).toContain("permissions.defaultMode is not used by LineUp");
    expect(w).toContain("only after a literal");
    expect(w).toContain("only as deny or ask rules");
    expect(w).toContain("wildcard before the command name");
    expect(w).toContain("prefer Edit(docs/**)");
    expect(w).toContain("cannot match it");
    expect(w).toContain('"Bash(ls)" is in both allow and deny; deny wins');
  });
});

describe("policy files on disk", () => {
  const dir = mkdtempSync(join(tmpdir(), "lineup-policy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("loads the project file and the local file in that order, anchoring /path at the project", () => {
    const project = join(dir, "proj");
    mkdirSync(join(project, ".lineup"), { recursive: true });
    writeFileSync(join(project, ".lineup", "policy.json"), JSON.stringify({ permissions: { deny: ["Edit(/docs/**)"] } }));
    writeFileSync(join(dir, "local.json"), JSON.stringify({ permissions: { allow: ["Bash(npm test:*)"] } }));
    const loaded = loadPolicySources({ projectDir: project, localPolicyFile: join(dir, "local.json") });
    expect(loaded.errors).toEqual([]);
    expect(loaded.sources.map((s) => s.name)).toEqual(["project .lineup/policy.json", `local ${join(dir, "local.json")}`]);
    expect(
      evaluate({ tool_name: "Edit", tool_input: { file_path: join(project, "docs/a.md") } }, loaded.sources, { projectDir: project, homeDir: dir }).decision,
    ).toBe("deny");
  });
  it("treats a missing file as no rules and a broken one as an error naming the file", () => {
    const project = join(dir, "broken");
    mkdirSync(join(project, ".lineup"), { recursive: true });
    writeFileSync(join(project, ".lineup", "policy.json"), '{"permissions":{"allow":["Bash(ls"]}}');
    const loaded = loadPolicySources({ projectDir: project, localPolicyFile: join(dir, "nope.json") });
    expect(loaded.sources).toEqual([]);
    expect(loaded.files.map((f) => f.missing)).toEqual([false, true]);
    expect(loaded.errors[0]).toContain(join(project, ".lineup", "policy.json"));
    expect(loaded.errors[0]).toContain('missing closing ")"');
  });
  it("finds the local file through LINEUP_POLICY_FILE or LINEUP_STATE_DIR", () => {
    writeFileSync(join(dir, "policy.json"), JSON.stringify({ permissions: { ask: ["Bash"] } }));
    const viaState = loadPolicySources({ projectDir: join(dir, "none"), env: { LINEUP_STATE_DIR: dir } });
    expect(viaState.sources.map((s) => s.permissions.ask)).toEqual([["Bash"]]);
    const viaFile = loadPolicySources({ projectDir: join(dir, "none"), env: { LINEUP_POLICY_FILE: join(dir, "local.json") } });
    expect(viaFile.sources[0]?.permissions.allow).toEqual(["Bash(npm test:*)"]);
  });
});

describe("hook formats", () => {
  const common = { session_id: "s1", transcript_path: "/t.jsonl", cwd: "/p", permission_mode: "default" };
  it("parses Claude Code's PermissionRequest input and turns its suggestions into rules", () => {
    const stdin = JSON.stringify({
      ...common,
      hook_event_name: "PermissionRequest",
      tool_name: "Bash",
      tool_input: { command: "rm -rf node_modules", description: "Remove node_modules" },
      permission_suggestions: [
        { type: "addRules", rules: [{ toolName: "Bash", ruleContent: "rm -rf node_modules" }], behavior: "allow", destination: "localSettings" },
      ],
      future_field: 1,
    });
    const r = parseClaudeHookInput(stdin);
    expect(r.ok).toBe(true);
    if (r.ok && r.input.hook_event_name === "PermissionRequest") {
      expect(r.input.tool_name).toBe("Bash");
      expect(rulesFromSuggestions(r.input.permission_suggestions)).toEqual(["Bash(rm -rf node_modules)"]);
    }
  });
  it("parses Notification and Stop inputs", () => {
    const n = parseClaudeHookInput({
      ...common,
      hook_event_name: "Notification",
      message: "Claude needs your permission",
      notification_type: "permission_prompt",
    });
    expect(n.ok && n.input.hook_event_name === "Notification" && n.input.notification_type).toBe("permission_prompt");
    const s = parseClaudeHookInput({ ...common, hook_event_name: "Stop", stop_hook_active: false, last_assistant_message: "Done." });
    expect(s.ok && s.input.hook_event_name === "Stop" && s.input.last_assistant_message).toBe("Done.");
    expect(parseClaudeHookInput({ hook_event_name: "Stop" }).ok).toBe(false);
    expect(parseClaudeHookInput("nope")).toEqual({ ok: false, error: "hook input is not JSON" });
  });
  it("builds the PermissionRequest allow and deny outputs", () => {
    expect(permissionRequestAllow({ updatedPermissions: [addRulesUpdate(["Bash(npm test:*)", "bad("])] })).toEqual({
      hookSpecificOutput: {
        hookEventName: "PermissionRequest",
        decision: {
          behavior: "allow",
          updatedPermissions: [{ type: "addRules", rules: [{ toolName: "Bash", ruleContent: "npm test:*" }], behavior: "allow", destination: "localSettings" }],
        },
      },
    });
    expect(permissionRequestDeny({ message: "not on Fridays" })).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "not on Fridays" } },
    });
  });
  it("builds the PreToolUse output", () => {
    expect(preToolUseOutput("deny", { reason: "denied by Bash(rm *)" })).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "denied by Bash(rm *)" },
    });
  });
  it("converts between rule strings and {toolName, ruleContent}", () => {
    expect(ruleToValue("Read(./.env)")).toEqual({ toolName: "Read", ruleContent: "./.env" });
    expect(ruleToValue("mcp__github")).toEqual({ toolName: "mcp__github" });
    expect(valueToRule({ toolName: "WebFetch", ruleContent: "domain:x.com" })).toBe("WebFetch(domain:x.com)");
  });
  it("builds the --permission-prompt-tool result as JSON text", () => {
    const r = permissionPromptResult({ behavior: "allow", updatedInput: { command: "ls" } });
    expect(JSON.parse(r.content[0].text)).toEqual({ behavior: "allow", updatedInput: { command: "ls" } });
  });
  it("maps Cursor's beforeShellExecution to a Bash request and back", () => {
    const input = CursorBeforeShellInput.parse({
      hook_event_name: "beforeShellExecution",
      conversation_id: "c",
      generation_id: "g",
      command: "npm test",
      cwd: "/p",
      workspace_roots: ["/p"],
    });
    expect(cursorShellRequest(input)).toEqual({ tool_name: "Bash", tool_input: { command: "npm test" }, cwd: "/p" });
    expect(cursorPermissionOutput("deny", { userMessage: "blocked", agentMessage: "use npm run test" })).toEqual({
      permission: "deny",
      user_message: "blocked",
      agent_message: "use npm run test",
    });
    expect(cursorHooksFile("lineup hook cursor")).toEqual({ version: 1, hooks: { beforeShellExecution: [{ command: "lineup hook cursor" }] } });
  });
  it("reads Codex's notify payload from the last argv argument", () => {
    const payload = { type: "agent-turn-complete", "thread-id": "t", "turn-id": "1", cwd: "/p", "input-messages": ["hi"], "last-assistant-message": "done" };
    expect(parseCodexNotify(["node", "hook.js", JSON.stringify(payload)])).toEqual(payload);
    expect(parseCodexNotify(["node", "hook.js"])).toBeUndefined();
  });
});
