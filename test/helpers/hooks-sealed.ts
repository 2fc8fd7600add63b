// A hook run in a sealed (E2E) session, answered by a simulated phone: the machine turns E2E on (`lineup e2e
// on`), pairs a device (`lineup pair`), the hook runs and sponsors it, and the device opens the one sealed card
// and seals its answer. Shared by the Claude Code asks (hooks-asks) and the Codex/Cursor hooks (hooks-agents-sealed).
import { expect } from "vitest";
import type { ToolDef } from "../../shared/contract/protocol.js";
import { runCli, waitFor } from "./adapter-helpers.js";
import { SimDevice } from "./e2e-device.js";
import { e2eHookEnv, runHook } from "./hooks-helpers.js";

export async function sealedRun(relay: string, p: { dir: string; stateDir: string }, args: string[], stdin: string, tool: ToolDef) {
  const env = e2eHookEnv(relay, p);
  const cli = async (a: string[]) => {
    const r = await runCli(a, env, p.dir);
    expect(r.code, r.stderr).toBe(0);
    return r;
  };
  await cli(["e2e", "on", "--json"]);
  const { url } = JSON.parse((await cli(["pair", "--json"])).stdout.trim().split("\n").pop()!) as { url: string };
  const dev = await SimDevice.redeem(relay, url);
  expect(await dev.hello()).toBe(201);
  const run = runHook(args, stdin, env, p.dir, 120_000);
  await waitFor(() => dev.takeReply(), "the sponsor's reply (the hook pairs the device first)", 30_000);
  const s = await waitFor(async () => (await dev.sessions()).find((x) => x.sealed === true && x.waiting.length > 0), "the sealed card waiting", 30_000);
  const { ws, sender } = await dev.join(s.session_id, [tool]);
  const f = await ws.next("tool.call", 20_000);
  // Sealed: nothing of the request travels in plaintext.
  expect(f.arguments).toBeUndefined();
  const opened = await dev.open(s.session_id, f);
  const reply = async (body: { result: Record<string, unknown> } | { error: { code: string; message: string } }) =>
    ws.send(await dev.seal(s.session_id, sender, { type: "tool.result", call_id: String(f.call_id), name: tool.name, ...body }));
  const answer = (result: Record<string, unknown>) => reply({ result });
  return { run, opened, raw: JSON.stringify(f), answer, reply, close: () => ws.close() };
}
