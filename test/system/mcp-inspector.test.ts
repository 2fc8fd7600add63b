// The relay's POST /mcp as seen by an independent MCP client: the MCP Inspector CLI (its own SDK v1
// Streamable HTTP client), against the relay in workerd (wrangler dev) and a scripted app on a raw socket.
// The installed Inspector (0.15) has no --header flag, so a loopback proxy adds the Authorization header the
// way a host's `headers` setting does; the Inspector speaks plain MCP to it.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { App, createSession, ROOT } from "../helpers/mcp-helpers.js";

const INSPECTOR = join(ROOT, "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** http://127.0.0.1:<port>/mcp → `${relay}/mcp` with `Authorization: Bearer <token>` added. */
async function authProxy(relay: string, token: string): Promise<string> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers.set(k, v);
      headers.set("authorization", `Bearer ${token}`);
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      fetch(`${relay}${req.url ?? "/mcp"}`, { method: req.method ?? "GET", headers, ...(body ? { body } : {}) })
        .then(async (r) => {
          const out: Record<string, string> = {};
          // fetch() already decoded the body: its encoding and length headers no longer apply.
          r.headers.forEach((v, k) => {
            if (!["content-encoding", "content-length", "transfer-encoding"].includes(k)) out[k] = v;
          });
          res.writeHead(r.status, out);
          const reader = r.body?.getReader();
          for (;;) {
            const chunk = await reader?.read();
            if (!chunk || chunk.done) break;
            res.write(chunk.value); // streamed as it comes: the SSE response of a waiting call
          }
          res.end();
        })
        .catch((e: unknown) => {
          res.writeHead(502);
          res.end(String(e));
        });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const addr = server.address();
  if (!addr || typeof addr === "string") throw new Error("no port");
  return `http://127.0.0.1:${addr.port}/mcp`;
}

/** Runs `mcp-inspector --cli <url> --transport http …` (what `npx @modelcontextprotocol/inspector` runs). */
function inspector(url: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [INSPECTOR, "--cli", url, "--transport", "http", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the MCP Inspector CLI against POST /mcp", () => {
  it("lists the relay's tools and calls one that the human answers", async () => {
    const relay = inject("relayUrl");
    // Static assets answer paths the Worker does not run first: /mcp must be in wrangler.toml's run_worker_first.
    const bare = await fetch(`${relay}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(bare.status, 'POST /mcp did not reach the Worker: add "/mcp" to [assets] run_worker_first').toBe(401);
    const s = await createSession(relay);
    const app = await App.connect(relay, s.session_id, s.app_token);
    cleanups.push(() => app.close());
    const url = await authProxy(relay, s.agent_token);

    const list = await inspector(url, "--method", "tools/list");
    expect(list.code, list.stderr).toBe(0);
    const names = (JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["ask_question", "work_report", "confirm", "input", "await_answer", "lineup_call"]));

    const called = inspector(url, "--method", "tools/call", "--tool-name", "input", "--tool-arg", "question=Your name?");
    const call = await app.call("input");
    expect(call.arguments).toEqual({ question: "Your name?" });
    app.answer(call, { result: { message: "Ada" } });
    const r = await called;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ content: [{ type: "text", text: "Ada" }] });
  });

  it("without the header the Inspector is refused with 401", async () => {
    const r = await inspector(`${inject("relayUrl")}/mcp`, "--method", "tools/list");
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/401|unauthorized/i);
  });
});
