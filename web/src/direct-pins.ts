// Issue 32 (docs/protocol.md "The direct path's binding", docs/pwa.md): the agent machines' direct keys this
// device has pinned, in localStorage beside its other credentials (`lineup.direct.pins`). In a plaintext
// session the agent's answer is signed with its machine's key (shared/client/direct-bind.ts); the PWA checks
// it against the pin before `setRemoteDescription`. Scopes:
//  - `<origin> <inbox> m:<machine>`: a machine of an inbox (its sessions say which machine runs them);
//  - `<origin> <inbox> link`: the key the pairing link carried (`#pair=…&dk=<key>`: `lineup pair` adds it);
//    it stands for the inbox's machine while the inbox has at most one machine and that one has no pin yet;
//  - `<origin> s:<sid>`: a guest session (paired with its app link, which carries no key).
// No pin at all: the first verified answer's key is pinned (trust on first use).
import { readJson, writeJson, type SavedSession } from "./storage.js";

const KEY = "direct.pins";
/** DIRECT_KEY_RE of shared/contract/rtc.ts (not imported: that module brings zod into the initial bundle). */
const DK_RE = /^[A-Za-z0-9_-]{87}$/;

const read = (): Record<string, string> => readJson<Record<string, string>>(KEY, {});

function write(scope: string, key: string | undefined): void {
  const pins = read();
  if (key === undefined) delete pins[scope];
  else pins[scope] = key;
  writeJson(KEY, pins);
}

/** The direct key a pairing link's fragment carries (`dk=`), pinned for that inbox. */
export function pinFromLink(hash: string, origin: string, inbox: string): void {
  const dk = new URLSearchParams(hash.replace(/^#/, "")).get("dk");
  if (dk && DK_RE.test(dk)) write(`${origin} ${inbox} link`, dk);
}

/** Where a session's machine stands: its id in the inbox, and how many machines the inbox has. */
export interface MachineOf {
  machine?: string | undefined;
  machines: number;
}

/** One session's pin: read, kept (first contact), and forgotten (the person chose to trust a new key). */
export interface Pin {
  get(): string | undefined;
  keep(key: string): void;
  forget(): void;
}

export function pinOf(saved: SavedSession, where: () => MachineOf): Pin {
  const scopes = () => {
    const m = where();
    const own = saved.inbox ? (m.machine ? `${saved.origin} ${saved.inbox} m:${m.machine}` : undefined) : `${saved.origin} s:${saved.sid}`;
    const link = saved.inbox && m.machines <= 1 ? `${saved.origin} ${saved.inbox} link` : undefined;
    return { own, link };
  };
  return {
    get: () => {
      const { own, link } = scopes();
      const pins = read();
      return (own ? pins[own] : undefined) ?? (link ? pins[link] : undefined);
    },
    keep: (key) => {
      const { own } = scopes();
      if (own) write(own, key);
    },
    forget: () => {
      const { own, link } = scopes();
      if (own) write(own, undefined);
      if (link) write(link, undefined);
    },
  };
}
