// The PWA's session socket (web/src/conn.ts) dials while the session's seal pin is still being read from
// IndexedDB, and handles nothing the socket brings until the read is done (issue 33 item 4: on a throttled phone
// the read cost 0.3–0.7 s before the dial). The pin store is replaced by one whose read the test finishes.
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebSocketServer } from "ws";
import { freePort } from "../helpers/relay.js";

const pin = vi.hoisted(() => {
  let release: (pinned: boolean) => void = () => undefined;
  return {
    read: new Promise<boolean>((r) => (release = r)),
    release: (pinned: boolean) => release(pinned),
  };
});
vi.mock("../../web/src/e2e/store.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../web/src/e2e/store.js")>()),
  isPinned: () => pin.read,
}));
const { SessionConn } = await import("../../web/src/conn.js");

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** A relay that says hello on every connection and keeps it open. */
async function relay(): Promise<{ origin: string; connections: () => number }> {
  let n = 0;
  const port = await freePort();
  server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ agent: { online: false }, apps: 0, pending_calls: 0, messages: [] })),
  );
  const wss = new WebSocketServer({ server, handleProtocols: () => "lineup.v1" });
  wss.on("connection", (ws) => {
    n++;
    ws.send(
      JSON.stringify({ type: "hello", protocol: "lineup/1", session_id: "early", role: "app", client_id: "x", peers: { agent: { online: true }, apps: 1 } }),
    );
  });
  server.on("close", () => wss.close());
  await new Promise<void>((r) => server!.listen(port, "127.0.0.1", () => r()));
  return { origin: `http://127.0.0.1:${port}`, connections: () => n };
}

describe("PWA session socket and the seal pin", () => {
  it("dials while the pin is being read, and handles the relay's hello only once the read is done", async () => {
    const r = await relay();
    const conn = new SessionConn({ sid: "early", token: "t", origin: r.origin, label: "", addedAt: 0 });
    try {
      conn.start();
      await expect.poll(() => r.connections(), { timeout: 10_000 }).toBe(1);
      // The hello has arrived, but the pin is not read yet: nothing of the socket is handled.
      await new Promise((res) => setTimeout(res, 200));
      expect(conn.phase.value).toBe("connecting");
      pin.release(false);
      await expect.poll(() => conn.phase.value, { timeout: 10_000 }).toBe("online");
      expect(r.connections()).toBe(1);
    } finally {
      conn.stop();
    }
  });
});
