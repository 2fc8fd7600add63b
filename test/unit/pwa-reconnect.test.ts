// The PWA's reconnect loop (web/src/conn.ts) driven in Node against a relay that accepts and drops at
// once. It shares the adapter's reconnect policy (shared/client/backoff.ts).
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebSocketServer } from "ws";
import { SessionConn } from "../../web/src/conn.js";
import { freePort } from "../helpers/relay.js";

let server: Server | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** A fake relay that says hello and closes (1001, not terminal) every connection right away. */
async function flakyRelay(): Promise<{ origin: string; connections: () => number }> {
  let n = 0;
  const port = await freePort();
  server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ agent: { online: false }, apps: 0, pending_calls: 0, messages: [] })),
  );
  const wss = new WebSocketServer({ server, handleProtocols: () => "lineup.v1" });
  wss.on("connection", (ws) => {
    n++;
    ws.send(
      JSON.stringify({ type: "hello", protocol: "lineup/1", session_id: "flaky", role: "app", client_id: "x", peers: { agent: { online: false }, apps: 1 } }),
    );
    ws.close(1001, "going away");
  });
  server.on("close", () => wss.close());
  await new Promise<void>((r) => server!.listen(port, "127.0.0.1", () => r()));
  return { origin: `http://127.0.0.1:${port}`, connections: () => n };
}

describe("PWA reconnects", () => {
  // Regression (issue 10): the app reset its backoff on every `hello`, so a relay that accepts and drops at
  // once was retried at the base delay forever (about twice a second).
  it("regression: backs off exponentially when a relay says hello and drops at once (no reset on hello)", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999); // each delay at the top of its jitter range
    const relay = await flakyRelay();
    const conn = new SessionConn({ sid: "flaky", token: "t", origin: relay.origin, label: "", addedAt: 0 });
    conn.start();
    await new Promise((r) => setTimeout(r, 3200));
    conn.stop();
    // Delays 0.5 s, 1 s, 2 s: connections at about 0, 0.5 and 1.5 s (the next would be at 3.5 s). With the
    // reset on hello they came every 0.5 s: seven in this window.
    expect(relay.connections()).toBeGreaterThanOrEqual(2);
    expect(relay.connections()).toBeLessThanOrEqual(4);
  });
});
