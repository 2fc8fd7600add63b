// Commands that run another command given as their arguments (`timeout 30 npm test`, `sudo -u root rm x`).
// Two ways to look past them:
// - allowStrip: only Claude Code's documented wrappers with options it knows (an allow rule must be sure);
// - denyStrip: every wrapper below, with its options parsed like its own getopt does (`-u USER`,
//   `--user USER`, `-n1`, `--`), and an unknown option read both as a flag and as taking an argument,
//   so a deny rule sees the command whichever it is (docs/permissions.md §4.1).
import type { Word } from "./shell.js";

const isOption = (w: Word | undefined): boolean => w !== undefined && !w.expansion && w.value.startsWith("-") && w.value !== "-";

/** A word whose text is known only at run time (input that `xargs` appends, `{}` it replaces). */
export const unknownWord = (raw = "…"): Word => ({ raw, value: raw, start: 0, end: 0, quoted: false, expansion: true, glob: false, parts: [null] });

/** The words after one wrapper for allow rules (`timeout 30 x` → `x`), or undefined when `ws` does not start with one. */
export function allowStrip(ws: readonly Word[]): Word[] | undefined {
  const head = ws[0];
  if (!head || head.expansion) return undefined;
  const v = (i: number): string => ws[i]?.value ?? "";
  let i = 1;
  switch (head.value) {
    case "timeout":
      while (isOption(ws[i])) {
        const o = v(i);
        if (o === "--") {
          i++;
          break;
        }
        if (["--preserve-status", "--foreground", "-v", "--verbose"].includes(o)) i++;
        else if (o === "-k" || o === "-s") i += 2;
        else if (/^-[ks]./.test(o) || /^--(kill-after|signal)=/.test(o)) i++;
        else return undefined;
      }
      if (/^\d+(\.\d+)?[smhd]?$/.test(v(i))) i++;
      else return undefined;
      break;
    case "time":
      while (isOption(ws[i])) {
        if (v(i) === "-p") i++;
        else if (v(i) === "--") {
          i++;
          break;
        } else return undefined;
      }
      break;
    case "nice": {
      const o = v(1);
      if (o === "-n" || o === "--adjustment") i = /^-?\d+$/.test(v(2)) ? 3 : -1;
      else if (/^(-n-?\d+|-\d+|--adjustment=-?\d+)$/.test(o)) i = 2;
      else if (isOption(ws[1]) && o !== "--") i = -1;
      if (i === -1) return undefined;
      if (v(i) === "--") i++;
      break;
    }
    case "nohup":
    case "builtin":
    case "noglob":
      if (v(i) === "--") i++;
      break;
    case "stdbuf":
      while (isOption(ws[i])) {
        const o = v(i);
        if (o === "--") {
          i++;
          break;
        }
        if (["-i", "-o", "-e"].includes(o)) i += 2;
        else if (/^-[ioe]./.test(o) || /^--(input|output|error)=/.test(o)) i++;
        else return undefined;
      }
      break;
    case "command":
      while (v(i) === "-p") i++;
      // `command -v x` looks a command up instead of running it: not a wrapper.
      if (isOption(ws[i])) return undefined;
      break;
    case "xargs":
      if (isOption(ws[1])) return undefined;
      break;
    default:
      return undefined;
  }
  if (i >= ws.length) return undefined;
  return ws.slice(i);
}

interface Spec {
  /** short options taking an argument (`-u USER` or `-uUSER`) */
  short?: string;
  /** short options whose argument can only be attached (`xargs -i{}`, `-l5`) */
  attached?: string;
  /** short flags */
  flags?: string;
  /** long options taking an argument (`--user USER` or `--user=USER`) */
  long?: readonly string[];
  /** long flags (`--user=X` is always one word) */
  longFlags?: readonly string[];
  /** any of these letters means the command is not run (`command -v`) */
  stop?: string;
  /** `-10` is a flag (`nice -10 x`) */
  numeric?: boolean;
  /** words between the options and the command: `timeout` DURATION, `chroot` NEWROOT, `flock` FILE */
  positional?: number;
}

const SUDO_LONG = ["--user", "--group", "--prompt", "--close-from", "--host", "--role", "--type", "--other-user", "--chdir", "--command-timeout", "--chroot"];

/** Sources: the coreutils, util-linux, sudo, findutils and bash manuals (`man timeout`, `man sudo`, `help exec`, …). */
const SPECS: Readonly<Record<string, Spec>> = {
  timeout: { short: "ks", flags: "v", long: ["--kill-after", "--signal"], longFlags: ["--preserve-status", "--foreground", "--verbose"], positional: 1 },
  time: { short: "fo", flags: "apvq", long: ["--format", "--output"], longFlags: ["--append", "--verbose", "--quiet", "--portability"] },
  nice: { short: "n", long: ["--adjustment"], numeric: true },
  nohup: {},
  builtin: {},
  noglob: {},
  nocorrect: {},
  busybox: {},
  setsid: { flags: "cfw", longFlags: ["--ctty", "--fork", "--wait"] },
  stdbuf: { short: "ioe", long: ["--input", "--output", "--error"] },
  command: { flags: "p", stop: "vV" },
  sudo: {
    short: "ugpChrtUDTR",
    flags: "AbBEHiKklnPSsve",
    long: SUDO_LONG,
    longFlags: [
      "--preserve-env",
      "--login",
      "--shell",
      "--non-interactive",
      "--stdin",
      "--background",
      "--askpass",
      "--set-home",
      "--reset-timestamp",
      "--remove-timestamp",
      "--bell",
    ],
  },
  doas: { short: "uC", flags: "nsL" },
  pkexec: { long: ["--user"], longFlags: ["--disable-internal-agent", "--keep-cwd"] },
  exec: { short: "a", flags: "cl" },
  ionice: { short: "cnpPu", flags: "t", long: ["--class", "--classdata", "--pid", "--pgid", "--uid"], longFlags: ["--ignore"] },
  chronic: { flags: "evb" },
  unbuffer: { flags: "p" },
  caffeinate: { short: "wt", flags: "dimsu" },
  chroot: { long: ["--userspec", "--groups"], longFlags: ["--skip-chdir"], positional: 1 },
  taskset: { flags: "apc", longFlags: ["--all-tasks", "--pid", "--cpu-list"], positional: 1 },
  flock: {
    short: "wE",
    flags: "sxunoFe",
    long: ["--timeout", "--wait", "--conflict-exit-code"],
    longFlags: ["--shared", "--exclusive", "--unlock", "--nonblock", "--close", "--no-fork", "--verbose"],
    positional: 1,
  },
  runuser: {
    short: "ugGw",
    flags: "lmpf",
    long: ["--user", "--group", "--supp-group", "--whitelist-environment"],
    longFlags: ["--login", "--preserve-environment", "--fast"],
  },
  xargs: {
    short: "nLPIdEsa",
    attached: "eli",
    flags: "0rtpxo",
    long: ["--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--process-slot-var"],
    longFlags: ["--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty", "--show-limits", "--replace", "--eof"],
  },
  env: { short: "uCS", flags: "i0v", long: ["--unset", "--chdir", "--split-string"], longFlags: ["--ignore-environment", "--null", "--debug"] },
  // Issue 26 audit: more programs that run the command after their options (util-linux unshare(1),
  // nsenter(1), chrt(1), prlimit(1), setpriv(1); strace(1), ltrace(1), fakeroot(1), firejail(1), valgrind(1),
  // proxychains4, torsocks(1)). Options not listed are read both ways, as everywhere.
  unshare: {
    short: "SGRw",
    flags: "imnpuUCTrcf",
    long: ["--setuid", "--setgid", "--root", "--wd", "--map-user", "--map-group", "--map-users", "--map-groups", "--propagation", "--setgroups"],
  },
  nsenter: { short: "tSG", flags: "amuinpUCTFZrwe", long: ["--target", "--setuid", "--setgid"] },
  chrt: { short: "TPD", flags: "bdfioRramv", long: ["--sched-runtime", "--sched-period", "--sched-deadline"], positional: 1 },
  prlimit: { short: "p", long: ["--pid", "--output"] },
  setpriv: {
    flags: "d",
    long: [
      "--reuid",
      "--regid",
      "--ruid",
      "--euid",
      "--rgid",
      "--egid",
      "--groups",
      "--inh-caps",
      "--ambient-caps",
      "--bounding-set",
      "--securebits",
      "--pdeathsig",
    ],
  },
  strace: { short: "IbeOSUaosXPpEu", flags: "ACdfFhikqrtTvVwxyzZDcYn" },
  ltrace: { short: "aAelnopsuwxDF", flags: "LbcCfhirStTV" },
  fakeroot: { short: "lisb", flags: "uhv", long: ["--lib", "--faked", "--fd-base"], longFlags: ["--unknown-is-real"] },
  firejail: {},
  valgrind: { flags: "qv" },
  proxychains: { short: "f", flags: "q" },
  proxychains4: { short: "f", flags: "q" },
  torsocks: { short: "upaP", flags: "iqd" },
};

/** The positions where the command may start after `ws[0]`'s options; several when an option is unknown. */
function commandStarts(ws: readonly Word[], spec: Spec): number[] {
  const starts = new Set<number>();
  const walk = (i: number, budget: number): void => {
    for (;;) {
      const w = ws[i];
      if (w === undefined) return;
      const o = w.value;
      if (w.expansion || !(o.startsWith("-") && o !== "-")) break;
      if (o === "--") {
        i++;
        break;
      }
      if (o.startsWith("--")) {
        const name = o.split("=")[0] ?? o;
        if (o.includes("=") || spec.longFlags?.includes(name)) i++;
        else if (spec.long?.includes(name)) i += 2;
        else if (budget > 0) {
          walk(i + 2, budget - 1);
          i++;
        } else i++;
        continue;
      }
      if (spec.numeric && /^-\d+$/.test(o)) {
        i++;
        continue;
      }
      let skip = 1;
      for (let k = 1; k < o.length; k++) {
        const c = o[k] ?? "";
        if (spec.stop?.includes(c)) return;
        if (spec.short?.includes(c)) {
          if (k === o.length - 1) skip = 2;
          break;
        }
        if (spec.attached?.includes(c)) break;
        if (spec.flags?.includes(c)) continue;
        // An option we do not know: it may take the next word as its argument.
        if (k === o.length - 1 && budget > 0) walk(i + 2, budget - 1);
      }
      i += skip;
    }
    starts.add(i + (spec.positional ?? 0));
  };
  walk(1, 3);
  return [...starts].filter((i) => i < ws.length).sort((a, b) => a - b);
}

/** What `xargs`'s options say about the command: the `-I`/`-i`/`--replace` string it substitutes, if any. */
function xargsReplace(ws: readonly Word[], end: number): string | undefined {
  let replace: string | undefined;
  for (let i = 1; i < end; i++) {
    const o = ws[i]?.value ?? "";
    if (o === "-I" || o === "--replace") replace = o === "-I" ? (ws[++i]?.value ?? "{}") : "{}";
    else if (/^-I./.test(o)) replace = o.slice(2);
    else if (/^-i/.test(o)) replace = o.slice(2) || "{}";
    else if (o.startsWith("--replace=")) replace = o.slice("--replace=".length) || "{}";
  }
  return replace;
}

/**
 * The commands one wrapper may run, for deny and ask rules: `[]` when `ws` does not start with a wrapper.
 * `xargs` adds what it reads from its input as an unknown word (`echo push | xargs git` may be `git push`).
 */
export function denyStrip(ws: readonly Word[]): Word[][] {
  const head = ws[0];
  if (!head || head.expansion) return [];
  const name = head.value.split("/").pop() ?? "";
  if (name === "coproc") {
    // `coproc cmd`, `coproc { cmd; }`, `coproc NAME { cmd; }`
    const skip = ws[1]?.value === "{" ? 2 : ws[2]?.value === "{" && /^\w+$/.test(ws[1]?.value ?? "") ? 3 : 1;
    return ws.length > skip ? [ws.slice(skip)] : [];
  }
  const spec = SPECS[name];
  if (!spec) return [];
  const out: Word[][] = [];
  for (const start of commandStarts(ws, spec)) {
    let rest = ws.slice(start);
    if (name === "env") {
      const cmd = rest.findIndex((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w.raw));
      rest = cmd === -1 ? [] : rest.slice(cmd);
    }
    if (name === "flock" && ["-c", "--command"].includes(rest[0]?.value ?? "")) continue;
    const replace = name === "xargs" ? xargsReplace(ws, start) : undefined;
    if (replace !== undefined && replace !== "") {
      out.push(rest.map((w) => (w.value.includes(replace) ? unknownWord(w.raw) : w)));
      continue;
    }
    if (rest.length > 0) out.push(rest);
    // With no command xargs runs `echo`.
    if (name === "xargs" && rest.length > 0) out.push([...rest, unknownWord()]);
  }
  return out;
}

/** `env -S 'git push' x` / `--split-string=…`: the string env splits into the command's first words. */
export function envSplitString(ws: readonly Word[]): { script: string; rest: Word[] } | undefined {
  if ((ws[0]?.value.split("/").pop() ?? "") !== "env") return undefined;
  for (let i = 1; i < ws.length; i++) {
    const o = ws[i]?.value ?? "";
    if (!o.startsWith("-") || ws[i]?.expansion) return undefined;
    if (o === "-S" || o === "--split-string") return { script: ws[i + 1]?.value ?? "", rest: ws.slice(i + 2) };
    if (o.startsWith("--split-string=")) return { script: o.slice("--split-string=".length), rest: ws.slice(i + 1) };
    const m = /^-[i0v]*S(.+)$/.exec(o);
    if (m?.[1]) return { script: m[1], rest: ws.slice(i + 1) };
  }
  return undefined;
}
