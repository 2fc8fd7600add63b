// Shared fixtures of the contract tests (test/workerd/contract-*.test.ts): tool definitions from the
// LineUp design, a two-sided session, eviction, and raw HTTP helpers.
import { evictDurableObject } from "cloudflare:test";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Client, connect, createSession, fetchWorker, stubOf, type Frame } from "./helpers.js";

export const CHOICE = {
  name: "choice",
  type: "action",
  description: "pick one",
  inputSchema: {
    type: "object",
    properties: { question: { type: "string" }, options: { type: "array", items: { type: "string" } } },
    required: ["question", "options"],
  },
} as const;

export const NOTE = { name: "note", type: "action", description: "take a note", inputSchema: { type: "object" } } as const;

export const CALC = {
  name: "calc",
  type: "toolset",
  description: "arithmetic",
  actions: [
    { name: "add", description: "a+b", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
    { name: "neg", description: "-a", inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] } },
  ],
} as const;

const INST = { type: "object", properties: { instance_id: { type: "string" } }, required: ["instance_id"] } as const;
export const CANVAS = {
  name: "canvas",
  type: "app",
  description: "a drawing board",
  actions: [
    { name: "open", description: "new board", inputSchema: { type: "object", properties: { width: { type: "integer" } } } },
    { name: "draw", description: "draw", inputSchema: INST },
    { name: "close", description: "close", inputSchema: INST },
  ],
} as const;

export const ASK = { question: "where?", options: ["a", "b"] };

export type Evict = "none" | "hibernate" | "close";
/** The eviction variants every routing path runs under. */
export const EVICTIONS: Evict[] = ["none", "hibernate"];

export async function evict(sid: string, mode: Evict): Promise<void> {
  if (mode === "none") return;
  await evictDurableObject(stubOf(sid), { webSockets: mode });
}

export interface Pair {
  s: SessionCreated;
  agent: Client;
  app: Client;
}

/** A session with an agent `ag` and an app `ph` that registered `tools` (the agent saw the catalog). */
export async function pair(tools: readonly object[] = [CHOICE], ids = { agent: "ag", app: "ph" }): Promise<Pair> {
  const s = await createSession();
  const agent = await connect(s.session_id, s.agent_token, { clientId: ids.agent });
  const app = await connect(s.session_id, s.app_token, { clientId: ids.app });
  // Each got the other side's (empty) catalog right after hello; read it so later reads see new frames only.
  await agent.next("tool.list");
  await app.next("tool.list");
  await register(app, agent, tools);
  return { s, agent, app };
}

/** `who` registers `tools`; resolves once `seer` (other side) got the new catalog. */
export async function register(who: Client, seer: Client, tools: readonly object[]): Promise<void> {
  who.send({ type: "tool.list", tools });
  const names = tools.map((t) => (t as { name: string }).name).sort();
  await seer.next((f) => f.type === "tool.list" && names.every((n) => (f.tools as { name: string }[]).some((t) => t.name === n)));
}

/** A frame round trip: after it, every frame the relay sent because of earlier frames of `c` has arrived. */
let syncs = 0;
export async function sync(c: Client, timeoutMs = 5000): Promise<void> {
  // A result for a call that does not exist is answered with an error naming our unique call_id.
  const id = `sync-${++syncs}`;
  c.send({ type: "tool.result", call_id: id, result: { message: "sync" } });
  await c.next((f) => f.type === "error" && f.code === "unknown_call" && f.call_id === id, timeoutMs);
}

export const isResult = (id: string) => (f: Frame) => f.type === "tool.result" && f.call_id === id;
export const isCall = (id: string) => (f: Frame) => f.type === "tool.call" && f.call_id === id;
export const isCancel = (id: string) => (f: Frame) => f.type === "tool.cancel" && f.call_id === id;
export const isError = (code: string) => (f: Frame) => f.type === "error" && f.code === code;

export function authed(token: string, init: RequestInit = {}): RequestInit {
  return { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } };
}

export async function getStatus(s: SessionCreated, token = s.agent_token): Promise<Record<string, unknown>> {
  const res = await fetchWorker(`/api/sessions/${s.session_id}`, authed(token));
  if (res.status !== 200) throw new Error(`status: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

export async function errorBody(res: Response): Promise<{ code: string; message: string }> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  if (typeof body.error?.code !== "string" || typeof body.error?.message !== "string") throw new Error(`not an error body: ${JSON.stringify(body)}`);
  return body.error;
}

/** Reconnects a client id (after a "close" eviction or a drop). */
export function reconnect(s: SessionCreated, role: "agent" | "app", clientId: string): Promise<Client> {
  return connect(s.session_id, role === "agent" ? s.agent_token : s.app_token, { clientId });
}

export function closeAll(...cs: Client[]): void {
  for (const c of cs) c.close();
}
