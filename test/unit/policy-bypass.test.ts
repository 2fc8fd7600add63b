// Deny rules that cannot be dodged by shell syntax (issue 26 §5). Each row is a way of writing a command
// that the shell's own grammar offers (bash(1): quoting, expansions, compound commands, invocation
// options, here-documents; plus the wrappers and git options around a command), checked against
// `Bash(git push:*)` denied with every other command allowed. DENY where the command after quote removal
// is `git push`; ASK where what runs is known only at run time. Never allow.
// Rows marked `runs` are also run by the real /bin/bash with a stub `git` first on PATH that records its
// arguments: proof that the row really runs `git push` (or a git alias of it) — the table is not made up.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { evaluate, type PolicySource } from "../../shared/policy/index.js";

type Decision = "allow" | "ask" | "deny";
type Row = [command: string, decision: Decision, runs?: "runs"];

const OPTS = { projectDir: "/p", homeDir: "/home/u" };
const decide = (command: string, permissions: PolicySource["permissions"]) =>
  evaluate({ tool_name: "Bash", tool_input: { command }, cwd: "/p" }, [{ name: "project", permissions }], OPTS);

const GIT_PUSH_DENIED = { allow: ["Bash"], deny: ["Bash(git push:*)"] };

const QUOTING: Row[] = [
  ['git "push" origin main', "deny", "runs"],
  ["git 'pu'sh", "deny", "runs"],
  ["git pu\\sh", "deny", "runs"],
  ['git p""ush', "deny", "runs"],
  ["git $'push'", "deny", "runs"],
  ["git $'\\x70ush'", "deny", "runs"],
  ["git $'\\160ush'", "deny", "runs"],
  ['git $"push"', "deny", "runs"],
  ['"git" push', "deny", "runs"],
  ["\\git push", "deny", "runs"],
  ["g\\it push", "deny", "runs"],
  ["git \\\npush", "deny", "runs"],
  ["git push # a comment", "deny", "runs"],
  ["/usr/bin/git push", "deny"],
  ["/usr/lib/git-core/git-push origin main", "deny"],
];

const EXPANSIONS: Row[] = [
  ["git ${x:-push} origin main", "ask", "runs"],
  ["git push${IFS}origin main", "ask", "runs"],
  ["git${IFS}push", "ask", "runs"],
  ["git $(echo push)", "ask", "runs"],
  ["git `echo push`", "ask", "runs"],
  ["git $(printf '\\x70ush')", "ask", "runs"],
  ["x=push; git $x", "ask", "runs"],
  ['git "${x:-push}"', "ask", "runs"],
  ["$EMPTY git push", "ask", "runs"],
  ["GIT=git; $GIT push", "ask", "runs"],
  ['"$(echo git)" push', "ask", "runs"],
  // Brace expansion and globs (the test directory holds a file named `push`).
  ["git {push,x}", "ask", "runs"],
  ["git pus?", "ask", "runs"],
  ["git p*", "ask", "runs"],
  ["git [p]ush", "ask", "runs"],
];

const SHELLS: Row[] = [
  ["bash -c 'git push origin main'", "deny", "runs"],
  ["bash -o pipefail -c 'git push origin main'", "deny", "runs"],
  ["bash -c -- 'git push origin main'", "deny", "runs"],
  ["bash --rcfile /dev/null -c 'git push origin main'", "deny", "runs"],
  ["bash --init-file /dev/null -c 'git push'", "deny", "runs"],
  ["bash -O extglob -c 'git push origin main'", "deny", "runs"],
  ["bash +O extglob -c 'git push'", "deny", "runs"],
  ["bash -eo pipefail -c 'git push'", "deny", "runs"],
  ["bash -oc pipefail 'git push'", "deny", "runs"],
  ["bash -ec 'git push'", "deny", "runs"],
  ["bash -c -e 'git push'", "deny", "runs"],
  ["bash -x -c 'git push'", "deny", "runs"],
  ["bash -xc 'git push'", "deny", "runs"],
  ["bash -i -c 'git push'", "deny", "runs"],
  ["bash -i <<< 'git push'", "deny", "runs"],
  ["bash --norc --noprofile -c 'git push'", "deny", "runs"],
  ["bash -lc 'git push'", "deny"],
  ["sh -c 'git push'", "deny", "runs"],
  ["dash -e -c 'git push'", "deny", "runs"],
  ["zsh -o errexit -c 'git push'", "deny"],
  ["fish -c 'git push'", "deny"],
  ['bash -c "git $(echo push)"', "ask", "runs"],
  // A program from standard input, a file, or a string composed at run time.
  ["echo 'git push origin main' | sh", "ask", "runs"],
  ["printf 'git push' | bash -s", "ask", "runs"],
  ["sh <<'EOF'\ngit push origin main\nEOF", "deny", "runs"],
  ["bash <<EOF\ngit $(echo push)\nEOF", "ask", "runs"],
  ["bash <<< 'git push'", "deny", "runs"],
  ["cmd='git push'; bash <<< \"$cmd\"", "ask", "runs"],
  ["bash < x.sh", "ask", "runs"],
  ["bash x.sh", "ask", "runs"],
  ["source x.sh", "ask", "runs"],
  [". ./x.sh", "ask", "runs"],
  [". <(echo git push)", "ask", "runs"],
  ["bash <(echo git push)", "ask", "runs"],
  ["eval 'git push'", "deny", "runs"],
  ["eval git pu''sh", "deny", "runs"],
  ['eval "git $(echo push)"', "ask", "runs"],
  ['cmd=push; eval "git $cmd"', "ask", "runs"],
  ["trap 'git push' EXIT", "deny", "runs"],
  ["x='git push'; trap \"$x\" EXIT", "ask", "runs"],
  ["exec 3<x.sh; bash <&3", "ask", "runs"],
  ["OPTS=-c; bash $OPTS 'git push'", "ask", "runs"],
  ["bash - <<< 'git push'", "deny", "runs"],
  ["BASH_ENV=x.sh bash -c true", "ask", "runs"],
  ["x='$(git push)'; echo ${x@P}", "ask", "runs"],
  ["env 'BASH_FUNC_f%%=() { git push; }' bash -c f", "deny", "runs"],
];

const WRAPPERS: Row[] = [
  ["env git push", "deny", "runs"],
  ['env -i PATH="$PATH" git push', "deny", "runs"],
  ["env -S 'git push origin'", "deny", "runs"],
  ["command git push", "deny", "runs"],
  ["command -- git push", "deny", "runs"],
  ["command -p git push", "deny"],
  ["exec git push", "deny", "runs"],
  ["exec -a x git push", "deny", "runs"],
  ["nice -n 5 git push", "deny", "runs"],
  ["nice -5 git push", "deny", "runs"],
  ["timeout 5 git push", "deny", "runs"],
  ["timeout -s KILL 5 git push", "deny", "runs"],
  ["timeout --signal KILL 5 git push", "deny", "runs"],
  ["nohup git push", "deny", "runs"],
  ["stdbuf -o0 git push", "deny", "runs"],
  ["time git push", "deny", "runs"],
  ["time -p git push", "deny", "runs"],
  ["sudo -u root git push", "deny"],
  ["sudo --user root git push", "deny"],
  ["xargs git push < /dev/null", "deny", "runs"],
  ["echo push | xargs git", "ask", "runs"],
  ["echo push | xargs -n1 git", "ask", "runs"],
  ["echo push | xargs -I{} git {}", "ask", "runs"],
  ["echo push | xargs -P2 -n1 git", "ask", "runs"],
  ["printf push | xargs -0 git", "ask", "runs"],
  ["find push -maxdepth 0 -exec git {} \\;", "ask", "runs"],
  ["busybox sh -c 'git push'", "deny"],
];

const GIT_OPTIONS: Row[] = [
  ["git -C . push", "deny", "runs"],
  ["git -c user.name=x push", "deny", "runs"],
  ["git --no-pager push", "deny", "runs"],
  ["git -P push", "deny", "runs"],
  ["git --git-dir=.git push", "deny", "runs"],
  ["git --work-tree . push", "deny", "runs"],
  ["git --exec-path=/tmp push", "deny", "runs"],
  ["git --namespace x push", "deny", "runs"],
  ["git -C . -c a.b=c --no-pager push origin main", "deny", "runs"],
  ["git -c alias.p=push p origin main", "ask", "runs"],
  ["git --config-env=alias.p=P p", "ask"],
  ["GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p", "ask"],
  ["git -c $K=push p", "ask"],
  // Values git runs as shell commands.
  ["git -c alias.x='!git push' x", "deny", "runs"],
  ["git -c core.pager='git push' log", "deny"],
  ["GIT_SSH_COMMAND='git push' git fetch", "deny"],
];

const COMPOUND: Row[] = [
  ["{ git push; }", "deny", "runs"],
  ["( git push )", "deny", "runs"],
  ["if true; then git push; fi", "deny", "runs"],
  ["while true; do git push; break; done", "deny", "runs"],
  ["for i in 1; do git push; done", "deny", "runs"],
  ["until git push; do :; done", "deny", "runs"],
  ["f(){ git push; }; f", "deny", "runs"],
  ["function f { git push; }; f", "deny", "runs"],
  ["git push & wait", "deny", "runs"],
  ["! git push", "deny", "runs"],
  ["coproc { git push; }; wait", "deny", "runs"],
  ["coproc P { git push; }; wait", "deny", "runs"],
  ["false || git push", "deny", "runs"],
  ["echo $(git push)", "deny", "runs"],
  ["cat <(git push)", "deny", "runs"],
  ["x=$(git push)", "deny", "runs"],
  ["[[ -n $(git push) ]]", "deny", "runs"],
  ["echo hi | git push", "deny", "runs"],
  ["alias p='git push'", "deny"],
  ["case x in x) git push;; esac", "ask", "runs"],
];

// Regression (issue 26 audit, 2026-12-06): spellings found by probing with bash 5.2 that ran `git push` yet
// were ALLOWED — ANSI-C \u/\U escapes were not decoded, extglob patterns were not read as globs, an alias or
// a `hash -p` name defined earlier in the script and `fc` replaying history were not seen, several
// wrappers (util-linux, strace, fakeroot, …) were not looked past, the reserved word `time` before a group
// hid it, and mapfile's callback, a PS4 prompt under `set -x` and sh's ENV file ran unseen.
const PROBED: Row[] = [
  ["git $'\\u0070ush'", "deny", "runs"],
  ["git $'\\U00000070ush' origin main", "deny", "runs"],
  ["git $'\\x70\\u0075sh'", "deny", "runs"],
  ["shopt -s extglob\ngit @(push)", "ask", "runs"],
  ["shopt -s extglob\ngit +(push)", "ask", "runs"],
  ["bash -O extglob -c 'git @(push)'", "ask", "runs"],
  ["shopt -s extglob\ngit !(x)", "ask"],
  ["shopt -s expand_aliases\nalias g=git\ng push", "ask", "runs"],
  ["hash -p bin/git g; g push", "ask", "runs"],
  ["set -o history\nhistory -s 'git push'\nfc -s", "ask", "runs"],
  ["unshare git push", "deny", "runs"],
  ["unshare -r --fork git push", "deny", "runs"],
  ["chrt -o 0 git push", "deny", "runs"],
  ["prlimit --nofile=100 git push", "deny", "runs"],
  ["setpriv --reuid=1000 git push", "deny"],
  ["nsenter -t 1 -m git push", "deny"],
  ["strace -f -o /dev/null git push", "deny"],
  ["ltrace -f git push", "deny"],
  ["fakeroot -- git push", "deny"],
  ["firejail --quiet git push", "deny"],
  ["valgrind -q git push", "deny"],
  ["time { git push; }", "deny", "runs"],
  ["time -p { git push; }", "deny", "runs"],
  ["mapfile -C 'git push' -c 1 < x.sh", "deny", "runs"],
  ["readarray -C'git push' -c 1 a < x.sh", "deny", "runs"],
  ["set -x; PS4='$(git push)'; :", "ask", "runs"],
  ["ENV=x.sh sh -ic true", "ask"],
];

const TABLE: Array<[string, Row[]]> = [
  ["quoting is removed before matching", QUOTING],
  ["an expansion where the rule expects a literal word asks", EXPANSIONS],
  ["shells: options parsed like bash does, and a program from stdin, a file or a string composed at run time asks", SHELLS],
  ["wrappers and their options are looked past; xargs's input is unknown", WRAPPERS],
  ["git's global options are skipped; an alias defined on the command line asks", GIT_OPTIONS],
  ["compound commands, functions, substitutions and coprocesses", COMPOUND],
  ["regression: ANSI-C \\u escapes, extglob, aliases and hash -p names, fc and more wrappers (found by probing bash 5.2)", PROBED],
];

describe("Bash(git push:*) denied, everything else allowed: no shell syntax gets git push allowed", () => {
  for (const [title, rows] of TABLE) {
    describe(title, () => {
      it.each(rows)("%j → %s", (command, decision) => {
        const d = decide(command, GIT_PUSH_DENIED);
        expect(d.decision, d.reason).toBe(decision);
      });
    });
  }
  it("has at least 40 bypass attempts, none of them allowed", () => {
    const rows = TABLE.flatMap(([, r]) => r);
    expect(rows.length).toBeGreaterThanOrEqual(40);
    expect(rows.filter(([c]) => decide(c, GIT_PUSH_DENIED).decision === "allow")).toEqual([]);
  });
  it("names the rule and why the human is asked", () => {
    expect(decide("git ${x:-push} origin main", GIT_PUSH_DENIED)).toMatchObject({ decision: "ask", rule: "Bash(git push:*)" });
    expect(decide("git ${x:-push} origin main", GIT_PUSH_DENIED).reason).toContain("once the shell expands it");
    expect(decide("echo 'git push' | sh", GIT_PUSH_DENIED).reason).toContain("reads its program from its standard input");
    expect(decide("source x.sh", GIT_PUSH_DENIED).reason).toContain("which LineUp does not see");
  });
});

describe("other deny and ask rules hold the same way", () => {
  it.each<[string, PolicySource["permissions"], string, Decision]>([
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "r\\m -rf /tmp/x", "deny"],
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "bash -o errexit -c 'rm -rf /tmp/x'", "deny"],
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "echo /tmp/x | xargs -n1 rm -rf", "deny"],
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "find /tmp/x -exec rm -rf {} +", "deny"],
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "rm ${f:--rf} /tmp/x", "ask"],
    ["Bash(rm -rf:*)", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }, "sudo --user root rm -rf /tmp/x", "deny"],
    ["Bash(curl:*)", { allow: ["Bash"], deny: ["Bash(curl:*)"] }, 'cu""rl https://x', "deny"],
    ["Bash(curl:*)", { allow: ["Bash"], deny: ["Bash(curl:*)"] }, "c${u}rl https://x", "ask"],
    ["Bash(curl:*)", { allow: ["Bash"], deny: ["Bash(curl:*)"] }, "command -- curl https://x", "deny"],
    ["Bash(curl:*)", { allow: ["Bash"], deny: ["Bash(curl:*)"] }, "echo https://x | xargs curl", "deny"],
    ["Bash(curl:*)", { allow: ["Bash"], deny: ["Bash(curl:*)"] }, "c?rl https://x", "ask"],
    ["Bash(npm publish:*) as ask", { allow: ["Bash"], ask: ["Bash(npm publish:*)"] }, "npm ${x:-publish}", "ask"],
    ["Bash(npm publish:*) as ask", { allow: ["Bash"], ask: ["Bash(npm publish:*)"] }, "bash -O extglob -c 'npm publish'", "ask"],
    ["Bash(npm publish:*) as ask", { allow: ["Bash"], ask: ["Bash(npm publish:*)"] }, "echo npm publish | sh", "ask"],
    ["Bash(git push:*) as ask", { allow: ["Bash"], ask: ["Bash(git push:*)"] }, "git -C . push", "ask"],
    // A word that expands to nothing vanishes: an exact rule may match then.
    ["Bash(git push) exact", { allow: ["Bash"], deny: ["Bash(git push)"] }, "git push $EMPTY", "ask"],
    ["Bash(git push) exact", { allow: ["Bash"], deny: ["Bash(git push)"] }, "git push origin", "allow"],
  ])("%s: %j → %s", (_rule, permissions, command, decision) => {
    const d = decide(command, permissions);
    expect(d.decision, d.reason).toBe(decision);
  });
});

describe("the control group stays allowed: the fix does not turn everything into ask", () => {
  const allowList = { allow: ["Bash(git status:*)", "Bash(echo *)", "Bash(ls *)", "Bash(npm test *)", "Bash(head *)"], deny: ["Bash(git push:*)"] };
  it.each<[string, PolicySource["permissions"], Decision]>([
    ["git status", allowList, "allow"],
    ["git status --short", allowList, "allow"],
    ["echo $HOME", allowList, "allow"],
    ['echo "$(git status)"', allowList, "allow"],
    ["ls *.ts", allowList, "allow"],
    ["echo *.ts", allowList, "allow"],
    ["npm test -- $ARGS", allowList, "allow"],
    ["NODE_ENV=test npm test", allowList, "allow"],
    ["timeout 30 npm test", allowList, "allow"],
    ["ls | xargs echo", allowList, "allow"],
    ["git status | head -5", allowList, "allow"],
    // Allow rules still compare the command as written: git's options are skipped for deny/ask only.
    ["git -C sub status", allowList, "ask"],
    ["git status", GIT_PUSH_DENIED, "allow"],
    ["git -C sub status", GIT_PUSH_DENIED, "allow"],
    ["git log --oneline | head", GIT_PUSH_DENIED, "allow"],
    ["bash -o pipefail -c 'git status'", GIT_PUSH_DENIED, "allow"],
    ["sh <<'EOF'\nls\nEOF", GIT_PUSH_DENIED, "allow"],
    ['echo $HOME; git commit -m "$(date)"', GIT_PUSH_DENIED, "allow"],
    ["find . -name '*.o' -exec echo {} +", GIT_PUSH_DENIED, "allow"],
    ["ls | xargs", GIT_PUSH_DENIED, "allow"],
    ["[ -f x ] && echo y", GIT_PUSH_DENIED, "allow"],
    ["git -c user.name=$NAME commit -m x", GIT_PUSH_DENIED, "allow"],
    ["git log --format=%H | xargs -n1 git show", GIT_PUSH_DENIED, "allow"],
    ["git log $REF", GIT_PUSH_DENIED, "allow"],
  ])("%j with %j → %s", (command, permissions, decision) => {
    const d = decide(command, permissions);
    expect(d.decision, d.reason).toBe(decision);
  });
});

describe('documented limits: what LineUp does not see (docs/permissions.md §4.1.1, "Not seen")', () => {
  it.each<[string, PolicySource["permissions"]]>([
    ["./x.sh", GIT_PUSH_DENIED],
    ["python3 -c 'import os; os.system(\"git push\")'", GIT_PUSH_DENIED],
    ["x='a[$(git push)]'; echo $((x))", GIT_PUSH_DENIED],
    ["rm -r -f /tmp/x", { allow: ["Bash"], deny: ["Bash(rm -rf:*)"] }],
  ])("%j is allowed under bare Bash: its meaning is beyond the rule", (command, permissions) => {
    expect(decide(command, permissions).decision).toBe("allow");
  });
});

describe("each `runs` row really runs git push under /bin/bash (stub git on PATH)", () => {
  const dir = mkdtempSync(join(tmpdir(), "lineup-bypass-"));
  const bin = join(dir, "bin");
  const log = join(dir, "git.log");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(bin);
  writeFileSync(join(bin, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> "${log}"\n`);
  chmodSync(join(bin, "git"), 0o755);
  writeFileSync(join(dir, "x.sh"), "git push origin main\n");
  writeFileSync(join(dir, "push"), "");
  const rows = TABLE.flatMap(([, r]) => r).filter((r) => r[2] === "runs");

  it.each(rows)("%j", (command) => {
    writeFileSync(log, "");
    const r = spawnSync("/bin/bash", ["-c", command], {
      cwd: dir,
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 10_000,
    });
    const calls = readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => l !== "");
    const pushed = calls.some((l) => l.split(" ").includes("push") || /(^| )alias\.p=push( |$)/.test(l));
    expect(pushed, `${command} → git calls ${JSON.stringify(calls)}; stderr ${r.stderr}`).toBe(true);
  });
});
