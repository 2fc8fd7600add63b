// The LAN server's one request to a push service (docs/push.md, "LAN mode"). A LAN server sits inside a home
// or office network, and a device names the endpoint: so besides the name rules every server applies
// (shared/edge/public-host.ts), the name is resolved here and refused when any of its addresses is not a public
// one (private, loopback, link-local, CGNAT, unique-local, unspecified, documentation, multicast, and the
// IPv4-mapped, NAT64, 6to4 and Teredo spellings of those). The connection goes to the very address that was
// checked — `lookup` is the socket's own resolver — so a name that resolves differently a moment later (DNS
// rebinding) cannot slip past. node:http(s) never follows a redirect: a 3xx is a failed delivery.
import { promises as dns, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import type { PushRequest } from "../../shared/crypto/webpush/index.js";

/** Resolves a host name to all its addresses (`dns.lookup` with `all: true`, the resolver sockets use). */
export type Resolve = (host: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (host) => dns.lookup(host, { all: true, verbatim: true });

/** A push service that does not answer within this time is a failed attempt (retried like a 5xx). */
export const PUSH_SEND_TIMEOUT_MS = 30_000;

// IANA's special-purpose address registries (RFC 6890 and its updates): every block that is not globally
// reachable, plus multicast. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is checked against the IPv4 rules by BlockList.
const BLOCKED = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local (cloud metadata services live here)
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const)
  BLOCKED.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 96], // unspecified, loopback, IPv4-compatible
  ["64:ff9b:1::", 48], // local-use NAT64
  ["100::", 64], // discard
  ["2001::", 23], // IETF protocol assignments, Teredo
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4
  ["3fff::", 20], // documentation
  ["5f00::", 16], // SRv6
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const)
  BLOCKED.addSubnet(net, bits, "ipv6");
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** The IPv4 address a well-known-prefix NAT64 address (64:ff9b::/96, RFC 6052) stands for. */
function nat64(address: string): string | undefined {
  const m = /^64:ff9b::(?:([0-9a-f]{1,4}):([0-9a-f]{1,4})|(\d+\.\d+\.\d+\.\d+))$/i.exec(address);
  if (!m) return undefined;
  if (m[3]) return m[3];
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** Whether a push may never be sent to this address (see BLOCKED); a non-address is blocked too. */
export function blockedAddress(address: string): boolean {
  const v = isIP(address);
  if (v === 0) return true;
  if (v === 6) {
    const v4 = nat64(address.toLowerCase());
    if (v4 !== undefined) return BLOCKED.check(v4, "ipv4");
  }
  return BLOCKED.check(address, v === 4 ? "ipv4" : "ipv6");
}

/** Whether an address (a socket's peer, a resolved name) is loopback, in any spelling (`::ffff:127.0.0.1` too). */
export const isLoopback = (address: string): boolean => {
  const v = isIP(address);
  return v !== 0 && LOOPBACK.check(address, v === 4 ? "ipv4" : "ipv6");
};

class BlockedAddress extends Error {
  readonly code = "blocked_address";
}

/**
 * Sends one push. `local`: the subscription is a fake push service on this machine (http on loopback,
 * accepted only with the server's test-only `allowLocalPush`), so its name must resolve to loopback and
 * nothing else; otherwise no address of the name may be blocked. Answers the status and Retry-After, or
 * `refused: "blocked_address"` when nothing was sent; throws on a network error or the timeout.
 */
export async function sendPush(
  req: PushRequest,
  local: boolean,
  resolve: Resolve = systemResolve,
): Promise<{ status: number; retryAfter: string | null; refused?: string }> {
  const url = new URL(req.url);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const allowed = (a: string) => (local ? isLoopback(a) : !blockedAddress(a));
  // Sockets skip `lookup` for an IP literal: checked here (the name rules refuse them for https already).
  if (isIP(host) !== 0 && !allowed(host)) return { status: 0, retryAfter: null, refused: "blocked_address" };
  const lookup: LookupFunction = (hostname, options, done) => {
    resolve(hostname).then(
      (all) => {
        if (all.length === 0 || !all.every((a) => allowed(a.address)))
          return done(new BlockedAddress(`${hostname} resolves to an address pushes are never sent to`), "");
        if (options.all) done(null, all);
        else done(null, all[0]!.address, all[0]!.family);
      },
      (e: NodeJS.ErrnoException) => done(e, ""),
    );
  };
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  // No pooled socket (agent: false): each push connects to an address checked for it, under its own rule.
  return new Promise((ok, fail) => {
    const r = send(
      url,
      {
        method: req.init.method,
        headers: { ...req.init.headers, "content-length": String(req.init.body.byteLength) },
        lookup,
        agent: false,
        timeout: PUSH_SEND_TIMEOUT_MS,
      },
      (res: IncomingMessage) => {
        res.resume(); // the body is not needed; reading it frees the socket
        const ra = res.headers["retry-after"];
        ok({ status: res.statusCode ?? 0, retryAfter: typeof ra === "string" ? ra : null });
      },
    );
    r.on("timeout", () => r.destroy(new Error("push service timed out")));
    r.on("error", (e: Error & { code?: string }) => (e instanceof BlockedAddress ? ok({ status: 0, retryAfter: null, refused: e.code }) : fail(e)));
    r.end(req.init.body);
  });
}
