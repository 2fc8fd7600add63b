// A local log of every permission decision the adapter made (policy or human), one JSON line each in
// <state dir>/permission-log.jsonl. Policy decisions cost no round trip, so they reach the human's thread
// later, summed up in the Stop report (`lineup hook stop`); the human's own answers are already in the
// app's tool log as `permission` calls.
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { cut } from "../../shared/text/cut.js";
import { forTerminal } from "../../shared/text/terminal.js";
import { defaultStateDir } from "../client/state.js";
import { inboxPolicyNotes } from "./policy-store.js";

export interface LoggedDecision {
  at: number;
  /** the project directory the decision was made for: its Stop reports it, no other project's */
  project?: string;
  agent: string;
  tool: string;
  /** the command, path or URL, cut short */
  subject?: string;
  decision: "allow" | "deny" | "ask";
  /** who decided: a policy rule or default, the human, or nobody in time */
  by: "policy" | "human" | "timeout" | "error";
  rule?: string;
  source?: string;
}

const FILE = "permission-log.jsonl";
const MARK = "permission-log.reported";
const MAX_LINES = 2000;
const KEEP_LINES = 1000;

export function subjectOf(input: Record<string, unknown>): string | undefined {
  const v = [input.command, input.file_path, input.notebook_path, input.path, input.url, input.pattern].find(
    (x): x is string => typeof x === "string" && x !== "",
  );
  if (v === undefined) return undefined;
  const one = v.replace(/\s+/g, " ").trim();
  return cut(one, 120);
}

/** Appends one decision; trims the file now and then. Never throws (logging must not change a decision). */
export function logDecision(stateDir: string, d: LoggedDecision): void {
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const file = join(stateDir, FILE);
    appendFileSync(file, `${JSON.stringify(d)}\n`, { mode: 0o600 });
    if (Math.random() < 0.05) {
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      if (lines.length > MAX_LINES) writeFileSync(file, `${lines.slice(-KEEP_LINES).join("\n")}\n`, { mode: 0o600 });
    }
  } catch {
    /* best effort */
  }
}

export function readDecisions(stateDir: string, since = 0): LoggedDecision[] {
  try {
    return readFileSync(join(stateDir, FILE), "utf8")
      .split("\n")
      .filter(Boolean)
      .flatMap((l) => {
        try {
          const d = JSON.parse(l) as LoggedDecision;
          return d.at > since ? [d] : [];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

/** The reported-up-to mark per project directory; an older single number counts for every project. */
function readMarks(stateDir: string): Record<string, number> {
  try {
    const v = JSON.parse(readFileSync(join(stateDir, MARK), "utf8")) as unknown;
    if (typeof v === "number") return { "*": v };
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter((e): e is [string, number] => typeof e[1] === "number"));
  } catch {
    /* never reported */
  }
  return {};
}

/** One project's policy decisions not yet reported, and a function that marks them reported. Decisions of
 * other projects (or of other agents working elsewhere) are never part of it: each goes to its own thread,
 * which may be sealed while this one is not. */
export function unreportedPolicyDecisions(stateDir: string, projectDir: string): { decisions: LoggedDecision[]; markReported: () => void } {
  const marks = readMarks(stateDir);
  const since = marks[projectDir] ?? marks["*"] ?? 0;
  const decisions = readDecisions(stateDir, since).filter((d) => d.by === "policy" && d.project === projectDir);
  const last = decisions.reduce((m, d) => Math.max(m, d.at), since);
  return {
    decisions,
    markReported: () => {
      try {
        const now = readMarks(stateDir);
        now[projectDir] = last;
        // Bounded: the marks of the most recently reported 200 projects.
        const kept = Object.entries(now)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 200);
        writeFileSync(join(stateDir, MARK), JSON.stringify(Object.fromEntries(kept)), { mode: 0o600 });
      } catch {
        /* best effort */
      }
    },
  };
}

/**
 * One markdown paragraph for the thread: how many calls the policy decided and by which rule, denials
 * named one by one. Undefined when there is nothing to say.
 */
export function summarize(decisions: readonly LoggedDecision[]): string | undefined {
  if (decisions.length === 0) return undefined;
  const count = (ds: readonly LoggedDecision[]) => {
    const m = new Map<string, number>();
    for (const d of ds) {
      const k = d.rule ?? `${d.tool} (default)`;
      m.set(k, (m.get(k) ?? 0) + 1);
    }
    return [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `\`${k}\` ×${n}`);
  };
  const allowed = decisions.filter((d) => d.decision === "allow");
  const denied = decisions.filter((d) => d.decision === "deny");
  const parts: string[] = [];
  if (allowed.length) parts.push(`allowed ${allowed.length} (${count(allowed).slice(0, 8).join(", ")})`);
  if (denied.length) {
    const named = denied
      .slice(-5)
      .map((d) => `${d.tool}${d.subject ? ` \`${d.subject.replace(/`/g, "'")}\`` : ""} by \`${d.rule ?? "default"}\`${d.source ? ` (${d.source})` : ""}`);
    parts.push(`denied ${denied.length}: ${named.join("; ")}`);
  }
  return `**Permission policy** since the last report: ${parts.join("; ")}.`;
}

export const PERMISSIONS_HELP = `Usage: lineup permissions [--project DIR | --all] [--limit N] [--json] [--state-dir DIR]

The permission decisions of this machine's hooks and \`approve\`, oldest first: when, allow/deny/ask, who
decided (policy, human, timeout, error), the tool and its command or path, the rule and its source. By default
the decisions of the current directory's project (the directory, a parent or a child of it); --all for every
project. The log keeps the last 1000–2000 decisions (<state dir>/permission-log.jsonl).
  --project DIR  that project's decisions        --all       every project's
  --limit N      the last N (default 50)          --json      one JSON object per line`;

/** `lineup permissions`: the local log, read by a human (or with --json by a script). */
export function runPermissionsLog(argv: string[], print: (s: string) => void = (s) => process.stdout.write(`${s}\n`)): number {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        project: { type: "string" },
        all: { type: "boolean" },
        limit: { type: "string" },
        json: { type: "boolean" },
        "state-dir": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (e) {
    return (process.stderr.write(`lineup permissions: ${(e as Error).message}\n${PERMISSIONS_HELP}\n`), 2);
  }
  if (values.help) return (print(PERMISSIONS_HELP), 0);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1)
    return (process.stderr.write(`lineup permissions: --limit must be a positive whole number\n${PERMISSIONS_HELP}\n`), 2);
  if (values.all && values.project !== undefined) return (process.stderr.write(`lineup permissions: --project and --all exclude each other\n`), 2);
  const stateDir = values["state-dir"] ? resolve(values["state-dir"]) : defaultStateDir();
  const dir = resolve(values.project ?? process.cwd());
  const related = (p: string | undefined) => p !== undefined && (p === dir || dir.startsWith(p.endsWith(sep) ? p : p + sep) || p.startsWith(dir + sep));
  // Issue 26: when the relay's inbox policy did not authenticate, say so first (stderr: --json stays clean).
  for (const n of inboxPolicyNotes(stateDir)) process.stderr.write(`note: ${forTerminal(n)}\n`);
  const list = readDecisions(stateDir)
    .filter((d) => values.all || related(d.project))
    .slice(-limit);
  if (values.json) {
    for (const d of list) print(JSON.stringify(d));
    return 0;
  }
  if (!list.length)
    return (print(values.all ? "no permission decisions logged yet" : `no permission decisions logged for ${dir} (--all for every project)`), 0);
  for (const d of list) {
    const when = new Date(d.at).toISOString().replace("T", " ").slice(0, 19);
    const what = `${d.tool}${d.subject ? ` ${JSON.stringify(d.subject)}` : ""}`;
    const why = d.rule ? ` by ${d.rule}${d.source ? ` (${d.source})` : ""}` : d.by === "policy" ? " by the defaults" : "";
    print(forTerminal(`${when}  ${d.decision.padEnd(5)} ${d.by.padEnd(7)} ${what}${why}  [${d.agent}${values.all && d.project ? ` · ${d.project}` : ""}]`));
  }
  return 0;
}
