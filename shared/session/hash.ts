// A fast, synchronous, non-cryptographic 106-bit hash (two cyrb53 lanes) for fingerprints the routing core
// compares: WebCrypto's digest is asynchronous, and the core is synchronous. Collisions only matter among
// one caller's own calls with the same call_id, so nobody can use one against another client.
function cyrb53(s: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export function fingerprintHash(s: string): string {
  return `h1:${cyrb53(s, 1).toString(36)}.${cyrb53(s, 0x9e3779b9).toString(36)}`;
}
