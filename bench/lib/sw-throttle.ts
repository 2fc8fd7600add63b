// The page's CDP throttling does not reach its service worker: `Network.emulateNetworkConditions` is scoped to
// the CDP session it is sent on, and a service worker is a target of its own (puppeteer/puppeteer#4305,
// webdriverio/webdriverio#7452 and its fix #15629, which sends the conditions on each worker's session). So a warm
// load whose navigation the worker fetches would skip the emulated 150 ms and the bandwidth limit. As DevTools
// does, this attaches to every service worker target of the browser (a second CDP client on the port Chromium
// opens for it; Playwright keeps its pipe), pauses it at start (`waitForDebuggerOnStart`), applies the same
// network conditions and CPU slowdown there, then lets it run.
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";

export interface Conditions {
  latency: number;
  downloadThroughput: number;
  uploadThroughput: number;
  cpu: number;
}

/** A free TCP port on 127.0.0.1 for `--remote-debugging-port`. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Throttles every service worker of the browser listening on `port`, now and later; `attached` counts them. */
export async function throttleServiceWorkers(port: number, c: Conditions): Promise<{ attached(): number; errors: string[]; close(): void }> {
  const v = (await (await fetch(`http://127.0.0.1:${port}/json/version`)).json()) as { webSocketDebuggerUrl: string };
  const ws = new WebSocket(v.webSocketDebuggerUrl, { perMessageDeflate: false });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  let id = 0;
  let attached = 0;
  const errors: string[] = [];
  const send = (method: string, params: object, sessionId?: string) =>
    ws.send(JSON.stringify({ id: ++id, method, params, ...(sessionId ? { sessionId } : {}) }));
  ws.on("message", (d: Buffer) => {
    const m = JSON.parse(d.toString()) as {
      method?: string;
      params?: { sessionId: string; targetInfo: { type: string }; waitingForDebugger: boolean };
      error?: { message: string };
    };
    if (m.error) errors.push(m.error.message);
    if (m.method !== "Target.attachedToTarget" || !m.params) return;
    const { sessionId, targetInfo, waitingForDebugger } = m.params;
    if (targetInfo.type === "service_worker") {
      attached++;
      send("Network.enable", {}, sessionId);
      send(
        "Network.emulateNetworkConditions",
        { offline: false, latency: c.latency, downloadThroughput: c.downloadThroughput, uploadThroughput: c.uploadThroughput },
        sessionId,
      );
      send("Emulation.setCPUThrottlingRate", { rate: c.cpu }, sessionId);
    }
    if (waitingForDebugger) send("Runtime.runIfWaitingForDebugger", {}, sessionId);
  });
  send("Target.setAutoAttach", {
    autoAttach: true,
    waitForDebuggerOnStart: true,
    flatten: true,
    filter: [{ type: "service_worker", exclude: false }, { exclude: true }],
  });
  return { attached: () => attached, errors, close: () => ws.close() };
}
