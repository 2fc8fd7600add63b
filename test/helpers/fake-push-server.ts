// The fake push service (fake-push.ts) behind a real HTTP server on 127.0.0.1, for Node tests whose relay
// (the LAN server, or `wrangler dev` for Chromium) POSTs to a local endpoint. Node only: fake-push.ts itself
// also runs inside workerd, where it is reached through a stubbed fetch instead.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { FakePushService } from "./fake-push.js";

export async function startFakePush(): Promise<{ fake: FakePushService; close(): Promise<void> }> {
  let fake: FakePushService | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      void fake!.handle(new Request(`${fake!.base}${req.url ?? "/"}`, { method: req.method, headers, body: Buffer.concat(chunks) })).then(async (r) => {
        const out: Record<string, string> = {};
        r.headers.forEach((v, k) => (out[k] = v));
        res.writeHead(r.status, out);
        res.end(Buffer.from(await r.arrayBuffer()));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  fake = new FakePushService(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return { fake, close: () => new Promise<void>((r) => server.close(() => r())) };
}
