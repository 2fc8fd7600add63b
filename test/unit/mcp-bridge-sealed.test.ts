// Issue 26 (found while fixing items 1–2): `lineup mcp` derived a question's call id from the question alone,
// so the same question asked again in the same process reused the id of the earlier, answered one. In a sealed
// session the envelope's AAD binds the call id and nothing else of the question, so a relay could replay the
// human's earlier sealed answer ("yes") as the answer to the new question. In a sealed session each new
// question now gets a fresh id on the wire; joining a retry of an open question still works in the process.
import { Client as McpClient } from "@modelcontextprotocol/client";
import { InMemoryTransport, Server } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { Bridge, type BridgeAgent } from "../../adapter/mcp/bridge.js";
import type { ToolDef, ToolResultBody } from "../../shared/contract/protocol.js";

/** An agent client that records the call ids it is asked to use and answers each call at once. */
function recordingAgent(sealed: boolean): BridgeAgent & { ids: string[] } {
  const ids: string[] = [];
  return {
    ids,
    sealed,
    presence: { apps: 1 },
    appTools: [] as ToolDef[],
    connected: true,
    lastError: undefined,
    async call(_name: string, _action: string | undefined, _args?: Record<string, unknown>, opts?: { callId?: string }): Promise<ToolResultBody> {
      ids.push(String(opts?.callId));
      return { message: "yes", confirmed: true };
    },
    setStatus() {},
    on() {
      return () => {};
    },
  };
}

async function bridgeWith(agent: BridgeAgent): Promise<McpClient> {
  const server = new Server({ name: "lineup", version: "test" }, { capabilities: { tools: { listChanged: true } } });
  new Bridge(server, async () => ({ agent }), { defaultTimeoutS: 60, maxTimeoutS: 600, progressMs: 10_000, graceMs: 1000, waitBudgetS: 50, log: () => {} });
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new McpClient({ name: "test-host", version: "1" });
  await Promise.all([server.connect(a), client.connect(b)]);
  return client;
}

describe("lineup mcp call ids in sealed sessions", () => {
  it("regression (relay replays an earlier sealed answer): the same question asked twice in a sealed session goes out under two different call ids", async () => {
    const agent = recordingAgent(true);
    const client = await bridgeWith(agent);
    for (let i = 0; i < 2; i++) {
      const r = await client.callTool({ name: "confirm", arguments: { question: "Deploy to production?" } });
      expect(r.isError).not.toBe(true);
    }
    expect(agent.ids).toHaveLength(2);
    expect(agent.ids[0]).not.toBe(agent.ids[1]);
    for (const id of agent.ids) expect(id).toMatch(/^mcp_[A-Za-z0-9_-]{22}_[A-Za-z0-9_-]{12}$/);
    await client.close();
  });

  it("a plaintext session keeps the deterministic id (a repeat joins through the relay's identical-call rule)", async () => {
    const agent = recordingAgent(false);
    const client = await bridgeWith(agent);
    for (let i = 0; i < 2; i++) await client.callTool({ name: "confirm", arguments: { question: "Deploy to production?" } });
    expect(agent.ids).toHaveLength(2);
    expect(agent.ids[0]).toBe(agent.ids[1]);
    expect(agent.ids[0]).toMatch(/^mcp_[A-Za-z0-9_-]{22}$/);
    await client.close();
  });
});
