// The example agent in examples/agent.ts runs as documented and works end to end against the relay.
import { spawn } from "node:child_process";
import { describe, expect, inject, it } from "vitest";
import { BUILTIN_TOOLS } from "../../shared/contract/builtin-tools.js";
import { appClient, newSession, REPO, tempDir } from "../helpers/adapter-helpers.js";

describe("examples/agent.ts", { timeout: 120_000 }, () => {
  it("asks confirm then choice, sends a message, and answers the app's call to its own tool", async () => {
    const relayUrl = inject("relayUrl");
    const s = await newSession(relayUrl);
    const app = await appClient(
      relayUrl,
      s.session_id,
      s.app_token,
      BUILTIN_TOOLS.filter((t) => t.name === "confirm" || t.name === "choice"),
    );
    const child = spawn(process.execPath, ["--import", "tsx", "examples/agent.ts"], {
      cwd: REPO,
      env: {
        ...process.env,
        LINEUP_RELAY_URL: relayUrl,
        LINEUP_SESSION: s.session_id,
        LINEUP_TOKEN: s.agent_token,
        LINEUP_STATE_DIR: tempDir(),
        EXAMPLE_TIMEOUT_S: "60",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("close", r));
    try {
      const confirm = await app.next("tool.call", 60_000);
      expect(confirm).toMatchObject({ name: "confirm", arguments: { question: "Deploy the build to staging?" }, timeout_s: 60 });
      // The agent hosts disk_usage: the human side can call it while the agent waits.
      await app.next((f) => f.type === "tool.list" && (f.tools as { name: string }[]).some((t) => t.name === "disk_usage"), 15_000);
      app.send({ type: "tool.call", call_id: "du1", name: "disk_usage", arguments: {} });
      expect(await app.next((f) => f.type === "tool.result" && f.call_id === "du1")).toMatchObject({
        result: { message: expect.stringMatching(/MB resident$/) },
      });
      app.send({ type: "tool.result", call_id: confirm.call_id, result: { message: "yes", confirmed: true } });
      const choice = await app.next("tool.call", 15_000);
      expect(choice).toMatchObject({ name: "choice", arguments: { options: ["eu-west", "us-east", "ap-south"] } });
      app.send({ type: "tool.result", call_id: choice.call_id, result: { message: "us-east", selected: ["us-east"] } });
      expect(await app.next("message", 15_000)).toMatchObject({ content: [{ type: "text", text: "Deploying to us-east. I will report back." }] });
      expect(await exited).toBe(0);
      expect(JSON.parse(stdout)).toEqual({ deployed: true, region: "us-east" });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- example stderr:\n${stderr}`);
    } finally {
      child.kill("SIGKILL");
      await app.close();
    }
  });
});
