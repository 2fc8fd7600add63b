// What every `lineup` command shares: output (human lines on stderr go through forTerminal), option
// parsing into UsageError (exit 2), the connection options of the session commands, and how a failure to
// connect is printed. Exit codes: docs/adapter.md and main.ts.
import { parseArgs, type ParseArgsConfig } from "node:util";
import qrcode from "qrcode-terminal";
import { forTerminal } from "../../shared/text/terminal.js";
import { LineUpError, type ConnectOptions } from "../client/index.js";
import { defaultRelayUrl, defaultStateDir } from "../client/state.js";

export const out = (s: string) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
export const err = (s: string) => process.stderr.write(s.endsWith("\n") ? s : `${s}\n`);
const stamp = () => new Date().toTimeString().slice(0, 8);
// Every human-facing line goes through forTerminal: parts of it come from the other side of the session.
export const say = (s: string) => err(`[${stamp()}] ${forTerminal(s)}`);

/** A wrong command line: the command prints it with a pointer to its --help and exits 2. */
export class UsageError extends Error {}

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** node:util parseArgs, strict, with positionals; its errors become UsageError. */
export function parseOptions(argv: string[], options: ParseArgsConfig["options"]): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export const str = (v: Values, k: string) => (typeof v[k] === "string" ? (v[k] as string) : undefined);

const COMMON: ParseArgsConfig["options"] = {
  help: { type: "boolean", short: "h" },
  relay: { type: "string" },
  key: { type: "string" },
  session: { type: "string" },
  token: { type: "string" },
  "state-dir": { type: "string" },
};

export function parse(argv: string[], extra: ParseArgsConfig["options"] = {}): { values: Values; positionals: string[] } {
  return parseOptions(argv, { ...COMMON, ...extra });
}

/** Secrets given as flags end up in shell history and in every user's `ps`: say so once. */
export function warnSecretFlags(v: Values, names: string[]): void {
  for (const [flag, env] of names.map((n) => n.split("=") as [string, string])) {
    if (str(v, flag) !== undefined) err(`lineup: warning: --${flag} puts a secret in your shell history and the process list; prefer ${env}`);
  }
}

export function connectOptions(v: Values, log: (s: string) => void): ConnectOptions {
  warnSecretFlags(v, ["key=LINEUP_RELAY_KEY", "token=LINEUP_TOKEN"]);
  const o: ConnectOptions = { log, relayUrl: str(v, "relay") ?? defaultRelayUrl(), stateDir: str(v, "state-dir") ?? defaultStateDir() };
  const key = str(v, "key");
  if (key) o.relayKey = key;
  const session = str(v, "session") ?? process.env.LINEUP_SESSION;
  const token = str(v, "token") ?? process.env.LINEUP_TOKEN;
  if (session) o.sessionId = session;
  if (token) o.token = token;
  return o;
}

export function errorJson(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

/** Connection-level failures (exit 2) versus error results (exit 1). */
const CONNECTION_CODES = new Set([
  "auth",
  "connect",
  "usage",
  "session_ended",
  "replaced",
  "closed",
  "bad_request",
  "http_400",
  "http_404",
  "http_500",
  "http_503",
  "e2e_downgrade",
]);
export const isConnectionError = (e: LineUpError) => CONNECTION_CODES.has(e.code) || e.code.startsWith("closed_") || e.code.startsWith("http_");

export function failConnect(e: unknown): number {
  const le = e instanceof LineUpError ? e : new LineUpError("connect", e instanceof Error ? e.message : String(e));
  out(errorJson(le.code, le.message));
  err(`lineup: ${forTerminal(le.message)}`);
  return 2;
}

export function printLink(url: string, qr: boolean): void {
  err(`\nOpen this link on your phone (it carries the session's app token — treat it like a password):\n\n  ${url}\n`);
  if (qr) qrcode.generate(url, { small: true }, (code) => err(code));
}
