// POST /mcp and sealed sessions, and await_answer's own timeout (issue 28 item 8), driven by the MCP SDK v2
// client over Streamable HTTP inside workerd (the real Worker and session object).
import { Client as McpClient, StreamableHTTPClientTransport, type CallToolResult } from "@modelcontextprotocol/client";
import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import type { MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { generateContentKey, generateHolderKeyPair, holderSelf, sealRoster, wrapContentKey } from "../../shared/crypto/e2e/index.js";
import { connect, createSession, fetchWorker, RELAY_KEY, type Client } from "./helpers.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const send = (method: string, path: string, token: string, body: unknown) =>
  fetchWorker(path, { method, headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });

async function mcp(token: string, headers: Record<string, string> = {}): Promise<McpClient> {
  const transport = new StreamableHTTPClientTransport(new URL("http://relay.test/mcp"), {
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
  });
  const client = new McpClient({ name: "mcp-sealed-test", version: "0.0.0" });
  await client.connect(transport);
  cleanups.push(() => client.close().catch(() => {}));
  return client;
}

/** A session of an inbox with E2E on (epoch 1 published by its machine), made sealed as `lineup` makes it. */
async function sealedSession(): Promise<SessionCreated> {
  const m: MachineCreated = await (await send("POST", "/api/inboxes", RELAY_KEY, { machine_name: "laptop" })).json();
  const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
  const ck = await generateContentKey(1);
  const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
  const roster = await sealRoster(ck, m.inbox_id, machine.id, [{ id: machine.id, publicKey: machine.publicKey }]);
  expect((await send("PUT", "/api/inbox/e2e", m.machine_credential, { base_epoch: 0, epoch: 1, wraps: { [machine.id]: wrap }, roster })).status).toBe(200);
  const r = await send("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/sealed", sealed: true });
  expect(r.status).toBe(201);
  return r.json();
}

async function human(s: SessionCreated): Promise<Client> {
  const a = await connect(s.session_id, s.app_token, { clientId: "ph" });
  await a.next("tool.list");
  a.send({ type: "tool.list", tools: [...BUILTIN_TOOLS] });
  a.send({ type: "tool.list" });
  await a.next("tool.list");
  cleanups.push(() => a.close());
  return a;
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text?: string } | undefined)?.text ?? "";

describe("POST /mcp with a sealed session's token", () => {
  // The relay cannot seal for the agent: the plaintext call was refused by the session, and the request then
  // waited out its budget and answered "the human has not answered yet" while no card existed anywhere.
  it("a tool call fails at once with e2e_sealed and tells the model what to do instead; await_answer too", async () => {
    const s = await sealedSession();
    const c = await mcp(s.agent_token, { "lineup-wait-budget": "3" });
    const r = await c.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Deploy?" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/ask_question failed \(e2e_sealed\): this token's session is sealed/);
    expect(text(r)).toContain("lineup mcp");
    expect(r.structuredContent ?? {}).not.toMatchObject({ status: "pending" });
    const w = await c.callTool({ name: "await_answer", arguments: { call_id: "mcp_AAAAAAAAAAAAAAAAAAAAAA" } });
    expect(text(w)).toContain("(e2e_sealed)");
  });
});

describe("await_answer honours its timeout", () => {
  // await_answer had no `timeout`: it waited out the whole wait budget (here 120 s) whatever the model asked.
  it("with timeout: 1 it answers 'not answered yet' before the budget, and the card stays open", async () => {
    const s = await createSession();
    const app = await human(s);
    const c = await mcp(s.agent_token, { "lineup-wait-budget": "1" });
    const first = await c.callTool({ name: "ask_question", arguments: { project_directory: "/p", question: "Colour?" } });
    const callId = String((first.structuredContent as { call_id: string }).call_id);
    const slow = await mcp(s.agent_token, { "lineup-wait-budget": "120" });
    const listed = await slow.listTools();
    expect(listed.tools.find((t) => t.name === "await_answer")?.inputSchema.properties).toHaveProperty("timeout");
    // The SDK's own request timeout (20 s) is far below the 120 s budget: without the cap the request fails.
    const r = await slow.callTool({ name: "await_answer", arguments: { call_id: callId, timeout: 1 } }, { timeout: 20_000 });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ status: "pending", call_id: callId });
    const call = await app.next((f) => f.type === "tool.call" && f.call_id === callId);
    app.send({ type: "tool.result", call_id: call.call_id, result: { message: "Green" } });
    expect(text(await slow.callTool({ name: "await_answer", arguments: { call_id: callId } }))).toBe("Green");
    const bad = await slow.callTool({ name: "await_answer", arguments: { call_id: callId, timeout: "soon" } });
    expect(text(bad)).toContain("invalid_arguments");
  }, 40_000);
});
