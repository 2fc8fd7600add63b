// `lineup call`: one tool call for shell scripts. stdout: exactly one JSON document (the result or
// {"error":{"code","message"}}); exit 0 result, 1 error result, 2 usage/auth/connection, 130 interrupted.
import { createHash } from "node:crypto";
import { randomId } from "../../shared/edge/tokens.js";
import { connectAgent, LineUpError, resolveSession, type Client } from "../client/index.js";
import { InboxApi } from "../client/inbox.js";
import { clientIdFor, findInbox } from "../client/state.js";
import { connectOptions, errorJson, failConnect, isConnectionError, out, parse, say, str, UsageError } from "./common.js";
import { HELP } from "./help.js";

export async function cmdCall(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { args: { type: "string" }, timeout: { type: "string" }, "call-id": { type: "string" } });
  if (values.help) return (out(HELP.call!), 0);
  const [tool, action, ...rest] = positionals;
  if (!tool) throw new UsageError("lineup call: missing <tool> (try `lineup call --help`)");
  if (rest.length) throw new UsageError(`lineup call: unexpected argument ${JSON.stringify(rest[0])}`);
  let args: Record<string, unknown> = {};
  const rawArgs = str(values, "args");
  if (rawArgs !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawArgs);
    } catch (e) {
      throw new UsageError(`--args is not valid JSON: ${(e as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError("--args must be a JSON object");
    args = parsed as Record<string, unknown>;
  }
  let timeoutS: number | undefined;
  const rawTimeout = str(values, "timeout");
  if (rawTimeout !== undefined) {
    timeoutS = Number(rawTimeout);
    if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError("--timeout must be a positive number of seconds");
  }
  const callId = str(values, "call-id");
  if (callId !== undefined && !/^[A-Za-z0-9_.:~-]{1,128}$/.test(callId)) throw new UsageError("--call-id must be 1-128 chars of [A-Za-z0-9_.:~-]");

  const opts = connectOptions(values, (s) => say(s));
  let client: Client;
  let where: { relayUrl: string; stateDir: string } | undefined;
  try {
    const r = await resolveSession(opts);
    where = r;
    // Its own client id, so a running `lineup connect` is not replaced (4409). With --call-id the id is
    // derived from it: a re-run is the same client, and the relay re-sends a result it missed.
    const base = clientIdFor(r.stateDir, r.sessionId);
    const cid = callId !== undefined ? `${base}-${createHash("sha256").update(callId).digest("hex").slice(0, 16)}` : `cli_${randomId(9)}`;
    client = await connectAgent({ ...opts, sessionId: r.sessionId, token: r.token, clientId: cid });
  } catch (e) {
    return failConnect(e);
  }
  const ac = new AbortController();
  let interrupted = false;
  const onSig = () => {
    interrupted = true;
    say("interrupted: cancelling the call");
    ac.abort();
  };
  process.once("SIGINT", onSig);
  process.once("SIGTERM", onSig);
  say(
    `calling ${tool}${action ? `.${action}` : ""} in session ${client.sessionId}${client.presence.apps ? "" : " (no app connected yet: the call waits for one)"}`,
  );
  if (client.sealed && where && !(await deviceHoldsKey(where))) say(NO_KEYED_DEVICE);
  try {
    const result = await client.call(tool, action, args, {
      ...(timeoutS !== undefined ? { timeoutS } : {}),
      signal: ac.signal,
      ...(callId !== undefined ? { callId } : {}),
    });
    out(JSON.stringify(result));
    return 0;
  } catch (e) {
    const le = e instanceof LineUpError ? e : new LineUpError("internal", String(e));
    out(errorJson(le.code, le.message));
    say(`${le.code}: ${le.message}`);
    if (interrupted) return 130;
    return isConnectionError(le) ? 2 : 1;
  } finally {
    process.off("SIGINT", onSig);
    process.off("SIGTERM", onSig);
    await client.close();
  }
}

/** `lineup call`'s one line (stderr) while no paired device holds the inbox's key (docs/e2e.md "Switching on"). */
export const NO_KEYED_DEVICE =
  "end-to-end encryption is on and no paired device can read sealed questions yet: the call waits for one. Pair a device with `lineup pair` and open the link on it (a device paired before `lineup e2e on` must be paired again); this or any later `lineup` command hands it the key.";

/** Whether a device (not only machines) holds the inbox's current key; true when that cannot be told. */
async function deviceHoldsKey(w: { relayUrl: string; stateDir: string }): Promise<boolean> {
  const inbox = findInbox(w.stateDir, w.relayUrl);
  if (!inbox) return true;
  try {
    const st = await new InboxApi(w.relayUrl).e2eState(inbox.machineCredential);
    return st.holders.some((h) => h.startsWith("dv_"));
  } catch {
    return true;
  }
}
