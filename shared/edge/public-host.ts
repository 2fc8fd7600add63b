// Which URLs a server of ours may be told to fetch by someone else: a push subscription's endpoint (a device
// names it) and an OAuth client's metadata document (anyone names it in an authorization request). Both
// must be the https URL of a public DNS name on the default port — never an address the requester picks
// (docs/security.md, "What holds (round 3 audit)"). Pure: the Worker cannot resolve names (and its fetch
// cannot reach private networks); the LAN server also resolves the name and checks every address
// (adapter/lan/push-send.ts).

/** Names that never denote a public host: RFC 6761 (`localhost`, `.invalid`), RFC 6762 (`.local`), RFC 8375 (`.home.arpa`), `.internal`, reverse-DNS `.arpa`. */
const PRIVATE_SUFFIXES = ["localhost", "local", "internal", "invalid", "arpa"];

/** A literal IPv4 address as the URL parser leaves it (it rewrites `2130706433`, `0x7f.1`, `0177.0.0.1` to dotted decimal). */
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/**
 * Why `u` is not the https URL of a public DNS name on the default port, or undefined. Refused: other schemes,
 * credentials, an explicit port, IP literals (v4 in any spelling the URL parser accepts, v6 including the
 * IPv4-mapped `[::ffff:7f00:1]`), single-label names (`https://vm/`), a trailing dot (`https://vm./`,
 * `https://localhost./` — the resolver's absolute form, which would slip past a suffix check), empty labels,
 * and the private suffixes above.
 */
export function publicUrlProblem(u: URL): string | undefined {
  if (u.protocol !== "https:") return "must use https";
  if (u.username || u.password) return "must not carry credentials";
  if (u.port !== "") return "must use the default port";
  const host = u.hostname.toLowerCase();
  if (host.startsWith("[") || IPV4.test(host)) return "must name a host, not an IP address";
  if (host.endsWith(".")) return "must not end the host name with a dot";
  const labels = host.split(".");
  if (labels.length < 2) return "must name a public host (a single-label name is local)";
  if (labels.some((l) => l === "")) return "has an empty label in its host name";
  if (PRIVATE_SUFFIXES.includes(labels[labels.length - 1]!)) return `must name a public host (.${labels[labels.length - 1]} is local or reserved)`;
  return undefined;
}
