// Deterministic call ids for MCP tool calls. A retry of the same question (same caller identity, tool, action
// and arguments) gets the same LineUp call_id, so the relay's contract rule for identical repeats does the
// joining: an open call is not asked twice, a finished-but-unacked call sends its kept result again. Nothing
// random goes in; once the result is acked the id is free, so asking the same thing later is a new card.
import { canonicalJson } from "../contract/protocol.js";
import { sha256 } from "../crypto/bytes.js";
import { CALL_ID_RE, type PlannedCall } from "./catalog.js";

/**
 * `mcp_` + 22 base64url characters (132 bits) of SHA-256 over the caller identity and the call's content.
 * `timeout_s` is left out on purpose: the same question with another timeout joins the open card too.
 */
export async function mcpCallId(identity: string, call: Pick<PlannedCall, "tool" | "action" | "args">): Promise<string> {
  return `mcp_${(await sha256(canonicalJson(["lineup-mcp-call", identity, call.tool, call.action ?? null, call.args]))).slice(0, 22)}`;
}

export const isMcpCallId = (s: unknown): s is string => typeof s === "string" && CALL_ID_RE.test(s);

/** The caller identity of a bearer token: a hash, so the token itself never appears in an id. */
export async function tokenIdentity(token: string): Promise<string> {
  return (await sha256(`lineup-mcp-token:${token}`)).slice(0, 22);
}

/** A short hash for other derived ids (e.g. the cancel rendezvous). */
export async function shortHash(...parts: unknown[]): Promise<string> {
  return (await sha256(canonicalJson(parts))).slice(0, 22);
}
