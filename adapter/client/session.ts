// Which session and identity the agent adapter uses, and the HTTP side of it: the session saved for (relay, cwd)
// or given by id and token, created when needed, and this machine's E2E keyring. No socket here (index.ts).
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { LineUpError } from "../../shared/client/errors.js";
import { Keyring } from "../e2e/keyring.js";
import type { ConnectOptions } from "./types.js";
import { clientIdFor, defaultRelayKey, defaultRelayUrl, defaultStateDir, loadState, normalizeUrl } from "./state.js";
import { createSession as createSessionHttp, ensureSession } from "./ensure.js";

export function errorText(body: string): string {
  try {
    const e = (JSON.parse(body) as { error?: { code?: string; message?: string } }).error;
    return e ? `${e.code ?? ""}: ${e.message ?? ""}` : body.slice(0, 200);
  } catch {
    return body.slice(0, 200);
  }
}

export function stateErr(e: unknown): LineUpError {
  if (e instanceof LineUpError) return e;
  return new LineUpError("connect", e instanceof Error ? e.message : String(e));
}

/** Creates a session on the relay with the relay key (POST /api/sessions). Nothing is saved. */
export async function createSession(opts: { relayUrl?: string; relayKey?: string; label?: string; ttlS?: number } = {}): Promise<SessionCreated> {
  try {
    return await createSessionHttp({
      relayUrl: opts.relayUrl ?? defaultRelayUrl(),
      relayKey: opts.relayKey ?? defaultRelayKey(),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
      ...(opts.ttlS !== undefined ? { ttlS: opts.ttlS } : {}),
    });
  } catch (e) {
    throw stateErr(e);
  }
}

export interface ResolvedSession {
  relayUrl: string;
  stateDir: string;
  sessionId: string;
  token: string;
  /** The persisted client id for `clientName` (or the given clientId). */
  clientId: string;
  appUrl?: string;
  /** The state file saved this session as created sealed: pinned, a plaintext hello is refused. */
  sealed?: boolean;
}

/**
 * Which session and identity connectAgent() would use, without connecting: `sessionId`+`token` when given
 * (or LINEUP_SESSION + LINEUP_TOKEN), else the session saved for (relayUrl, cwd), created if needed.
 */
export async function resolveSession(opts: ConnectOptions = {}): Promise<ResolvedSession> {
  const relayUrl = normalizeUrl(opts.relayUrl ?? defaultRelayUrl());
  const stateDir = opts.stateDir ?? defaultStateDir();
  const sessionId = opts.sessionId ?? process.env.LINEUP_SESSION ?? undefined;
  const token = opts.token ?? process.env.LINEUP_TOKEN ?? undefined;
  const name = opts.clientName ?? "agent";
  try {
    if (sessionId || token) {
      if (!sessionId || !token)
        throw new LineUpError("usage", "joining a session needs both the session id and its agent token (LINEUP_SESSION and LINEUP_TOKEN)");
      const saved = loadState(stateDir).sessions.find((s) => s.sessionId === sessionId);
      const r: ResolvedSession = { relayUrl, stateDir, sessionId, token, clientId: opts.clientId ?? clientIdFor(stateDir, sessionId, name) };
      if (saved?.appUrl) r.appUrl = saved.appUrl;
      if (saved?.sealed === true) r.sealed = true;
      return r;
    }
    const saved = await ensureSession({
      relayUrl,
      stateDir,
      cwd: opts.cwd ?? process.cwd(),
      ...(opts.relayKey !== undefined ? { relayKey: opts.relayKey } : {}),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
    });
    const r: ResolvedSession = {
      relayUrl,
      stateDir,
      sessionId: saved.sessionId,
      token: saved.agentToken,
      clientId: opts.clientId ?? (name === "agent" ? saved.clientId : clientIdFor(stateDir, saved.sessionId, name)),
    };
    if (saved.appUrl) r.appUrl = saved.appUrl;
    if (saved.sealed === true) r.sealed = true;
    return r;
  } catch (e) {
    throw stateErr(e);
  }
}

/**
 * The inbox's E2E keys when this machine has them: synced once (completing pending pairings, a due re-key)
 * and then watched while the client runs. A failure to sync is only logged: plaintext sessions go on.
 */
export async function openKeyring(r: ResolvedSession, log: ((line: string) => void) | undefined): Promise<Keyring | undefined> {
  let k: Keyring | undefined;
  try {
    k = await Keyring.open({ relayUrl: r.relayUrl, stateDir: r.stateDir, ...(log ? { log } : {}) });
  } catch (e) {
    throw new LineUpError(
      e instanceof LineUpError ? e.code : "e2e_state",
      `reading this machine's E2E keys failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  if (!k) return undefined;
  try {
    await k.sync();
  } catch (e) {
    log?.(`end-to-end: checking the inbox's keys failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  k.watch();
  return k;
}
