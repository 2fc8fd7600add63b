// Issue 26 §6: neither server can be made to POST where a device says. Against the real relay (`wrangler dev`,
// workerd's fetch) and the LAN server (node:http(s)): a push endpoint answering 307 is a failed delivery and
// the server it points to receives nothing; single-label and trailing-dot names are refused; on the LAN
// server "local" (a fake push service on this machine) comes from the test-only option and the socket's peer,
// never from the Host header, and a name resolving to a private or loopback address is never sent to.
// A fake push service (test/helpers/fake-push.ts) and a sink stand in for the push service and its target.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import { blockedAddress, type Resolve } from "../../adapter/lan/push-send.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { PushInfo } from "../../shared/contract/push.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { FakePushService } from "../helpers/fake-push.js";
import { startFakePush } from "../helpers/fake-push-server.js";
import { freePort } from "../helpers/relay.js";

const TOKEN = "push-ssrf-lan-token-0123456789";
/** The test's DNS for names no resolver here knows (there is no internet): what getaddrinfo would answer. */
const DNS: Record<string, { address: string; family: number }[]> = {
  "push.private.test": [{ address: "10.1.2.3", family: 4 }],
  "push.mixed.test": [
    { address: "93.184.215.14", family: 4 },
    { address: "::ffff:7f00:1", family: 6 },
  ],
};
const resolve: Resolve = async (host) => {
  const a = DNS[host];
  if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
  return a;
};

let lan: LanServer;
let fakePush: Awaited<ReturnType<typeof startFakePush>> | undefined;
let fake: FakePushService;
let sink: Server;
const stolen: string[] = [];
let sinkUrl = "";

beforeAll(async () => {
  lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN, allowLocalPush: true, resolvePush: resolve });
  fakePush = await startFakePush();
  fake = fakePush.fake;
  // Where a redirecting "push service" points: it must never be reached.
  sink = createServer((req, res) => {
    stolen.push(`${req.method} ${req.url}`);
    req.resume();
    res.end("got it");
  });
  await new Promise<void>((r) => sink.listen(0, "127.0.0.1", () => r()));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await lan?.close();
  await fakePush?.close();
  await new Promise((r) => sink?.close(r));
});

async function call<T>(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: T }> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** An inbox with a live session and one paired device (not yet subscribed) on the server at `base`. */
async function inbox(base: string, key: string) {
  const m = (await call<MachineCreated>(base, "POST", "/api/inboxes", key, {})).body;
  const s = (await call<SessionCreated>(base, "POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/ssrf", host: "box" })).body;
  const code = (await call<CodeIssued>(base, "POST", "/api/inbox/pairings", m.machine_credential)).body;
  const d = (await call<DevicePaired>(base, "POST", "/api/pair", undefined, { code: code.code, name: "Phone" })).body;
  const key65 = (await call<{ public_key: string }>(base, "GET", "/api/push/key")).body.public_key;
  const subscribe = (endpoint: string, keys = fake.subscriber(`k-${Math.random()}`).keys) =>
    call<PushInfo | { error: { code: string; message: string } }>(base, "PUT", "/api/inbox/push", d.device_credential, {
      subscription: { endpoint, expirationTime: null, keys },
      application_server_key: key65,
      lang: "en",
    });
  const attention = () =>
    call<{ queued: number }>(base, "POST", "/api/inbox/push/attention", m.machine_credential, { session_id: s.session_id, text: "waiting" });
  const log = async () => (await call<PushInfo>(base, "GET", "/api/inbox/push", d.device_credential)).body.log;
  return { subscribe, attention, log };
}

/** Both servers: a fake push endpoint that answers 307 to the sink. */
async function redirectCase(base: string, key: string, name: string): Promise<void> {
  const ib = await inbox(base, key);
  const sub = fake.subscriber(name);
  fake.answer = (endpoint) => (endpoint === sub.endpoint ? { status: 307, headers: { location: `${sinkUrl}/stolen/${name}` } } : 201);
  expect((await ib.subscribe(sub.endpoint, sub.keys)).status).toBe(200);
  expect((await ib.attention()).body).toEqual({ queued: 1 });
  await expect
    .poll(async () => (await ib.log()).filter((e) => e.kind === "attention"), { timeout: 15_000 })
    .toEqual([expect.objectContaining({ outcome: "failed", status: 307 })]);
  const entry = (await ib.log()).find((e) => e.kind === "attention")!;
  expect(entry.retry_at).toBeUndefined(); // a 3xx is not retried
  expect(fake.attempts.filter((a) => a.endpoint === sub.endpoint)).toEqual([{ endpoint: sub.endpoint, status: 307 }]);
  expect(stolen.filter((s) => s.includes(name))).toEqual([]);
}

describe("a push endpoint that redirects (issue 26 §6)", () => {
  it("the relay (workerd) does not follow a 307 from a push endpoint: the delivery fails and the target receives nothing", async () => {
    await redirectCase(inject("relayUrl"), DEV_RELAY_KEY, "worker-307");
  });

  it("the LAN server does not follow a 307 from a push endpoint: the delivery fails and the target receives nothing", async () => {
    await redirectCase(lan.url, TOKEN, "lan-307");
  });
});

describe("push endpoints must be public names (issue 26 §6)", () => {
  const refused = [
    "https://vm./push",
    "https://localhost./push",
    "https://vm/push",
    "https://a.localhost/push",
    "https://printer.local/push",
    "https://push.example.com:8443/push",
    "https://[::ffff:7f00:1]/push",
    "https://2130706433/push",
    "https://0x7f.1/push",
    "https://10.0.0.1/push",
  ];

  it("single-label and trailing-dot names, private suffixes, ports and IP literals in any spelling are refused by the relay (workerd)", async () => {
    const ib = await inbox(inject("relayUrl"), DEV_RELAY_KEY);
    for (const e of refused) {
      const r = await ib.subscribe(e);
      expect([e, r.status, (r.body as { error: { code: string } }).error?.code]).toEqual([e, 400, "invalid_endpoint"]);
    }
    expect((await ib.subscribe("https://push.example.com/push")).status).toBe(200);
  });

  it("and by the LAN server", async () => {
    const ib = await inbox(lan.url, TOKEN);
    for (const e of refused) {
      const r = await ib.subscribe(e);
      expect([e, r.status, (r.body as { error: { code: string } }).error?.code]).toEqual([e, 400, "invalid_endpoint"]);
    }
  });
});

describe("the LAN server resolves a push service's name and refuses private addresses (issue 26 §6)", () => {
  for (const host of ["push.private.test", "push.mixed.test"]) {
    it(`${host} (${DNS[host]!.map((a) => a.address).join(", ")}) is never sent to: failed for good as blocked_address`, async () => {
      const ib = await inbox(lan.url, TOKEN);
      expect((await ib.subscribe(`https://${host}/push/x`)).status).toBe(200);
      expect((await ib.attention()).body).toEqual({ queued: 1 });
      await expect
        .poll(async () => (await ib.log()).filter((e) => e.kind === "attention"), { timeout: 10_000 })
        .toEqual([expect.objectContaining({ outcome: "failed", error: "blocked_address" })]);
      expect((await ib.log()).find((e) => e.kind === "attention")!.retry_at).toBeUndefined();
    });
  }

  it("every private, loopback, link-local, CGNAT, unique-local and special address is blocked, in IPv4-mapped and NAT64 spellings too; public ones are not", () => {
    const blocked = [
      "127.0.0.1",
      "127.1.2.3",
      "10.0.0.1",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "100.64.0.1",
      "169.254.169.254",
      "0.0.0.0",
      "192.0.2.2",
      "224.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "::ffff:7f00:1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "64:ff9b::7f00:1",
      "64:ff9b::10.0.0.1",
      "fc00::1",
      "fd00::2",
      "fe80::1",
      "2001:db8::1",
      "2002:7f00:1::1",
      "ff02::1",
      "not an address",
    ];
    const open = ["93.184.215.14", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"];
    expect(blocked.filter((a) => !blockedAddress(a))).toEqual([]);
    expect(open.filter((a) => blockedAddress(a))).toEqual([]);
  });
});

/** The machine's first non-loopback IPv4 address: a peer that is not loopback, on this machine. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

describe("the LAN server decides 'local' from the socket's peer, never the Host header (issue 26 §6)", () => {
  it.skipIf(!lanAddress)(
    "a LAN peer saying Host: 127.0.0.1 cannot register an http://127.0.0.1 push endpoint; a loopback peer can (test-only option)",
    async () => {
      const own = await startLanServer({ port: await freePort(), host: "0.0.0.0", token: TOKEN, allowLocalPush: true });
      try {
        const base = `http://127.0.0.1:${own.port}`;
        const d = await pairOn(base);
        const sub = fake.subscriber("peer-check");
        const body = JSON.stringify({
          subscription: sub,
          application_server_key: (await call<{ public_key: string }>(base, "GET", "/api/push/key")).body.public_key,
        });
        // A raw request (fetch may not set Host): from `from` to `to`, always saying Host: 127.0.0.1.
        const raw = (from: string, to: string) =>
          new Promise<number>((ok, fail) => {
            const r = request(
              {
                host: to,
                port: own.port,
                localAddress: from,
                method: "PUT",
                path: "/api/inbox/push",
                headers: {
                  host: `127.0.0.1:${own.port}`,
                  authorization: `Bearer ${d}`,
                  "content-type": "application/json",
                  "content-length": Buffer.byteLength(body),
                },
              },
              (res) => {
                res.resume();
                ok(res.statusCode ?? 0);
              },
            );
            r.on("error", fail);
            r.end(body);
          });
        expect(await raw(lanAddress!, lanAddress!)).toBe(400);
        expect(await raw("127.0.0.1", "127.0.0.1")).toBe(200);
      } finally {
        await own.close();
      }
    },
  );

  it("without the test-only option even a loopback peer cannot register an http push endpoint", async () => {
    const own = await startLanServer({ port: await freePort(), host: "127.0.0.1", token: TOKEN });
    try {
      const ib = await inbox(own.url, TOKEN);
      const r = await ib.subscribe(fake.subscriber("no-option").endpoint);
      expect(r.status).toBe(400);
    } finally {
      await own.close();
    }
  });
});

/** A device credential of a fresh inbox on `base`. */
async function pairOn(base: string): Promise<string> {
  const m = (await call<MachineCreated>(base, "POST", "/api/inboxes", TOKEN, {})).body;
  const code = (await call<CodeIssued>(base, "POST", "/api/inbox/pairings", m.machine_credential)).body;
  return (await call<DevicePaired>(base, "POST", "/api/pair", undefined, { code: code.code, name: "LAN phone" })).body.device_credential;
}
