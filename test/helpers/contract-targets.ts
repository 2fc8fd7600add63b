// The two servers that speak the wire contract, for suites parameterized with `describe.each`:
// the relay in workerd (the shared `wrangler dev` from global setup) and the adapter's direct LAN mode
// (adapter/lan/server.ts, where the pre-shared token plays RELAY_KEY). A target whose code is missing
// is skipped with its reason in the suite's name.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, inject } from "vitest";
import { Pool } from "./raw-client.js";
import { freePort } from "./relay.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import { TEST_TOKEN_SECRET } from "./test-secrets.js";

export interface Target {
  url: string;
  /** What `POST /api/sessions` wants as Bearer. */
  key: string;
  /** The secret the server signs session tokens with (tests sign expired or tampered tokens with it). */
  tokenSecret: string;
  stop(): Promise<void>;
}

export interface TargetCase {
  name: string;
  kind: "relay" | "lan";
  /** undefined when the target can run; otherwise why it is skipped. */
  skip: string | undefined;
  /** `lan` only: a server of its own with these options (the relay's vars are set by its starter). */
  start(relayUrl: string, opts?: LanOpts): Promise<Target>;
}

const LAN_FILE = fileURLToPath(new URL("../../adapter/lan/server.ts", import.meta.url));
export const LAN_TOKEN = "lan-test-token-0123456789";
const LAN_TOKEN_SECRET = "lan-token-secret-0123456789abcdef0123456";

interface LanServer {
  url: string;
  port: number;
  close(): Promise<void> | void;
}
export interface LanOpts {
  rateLimitPerS?: number;
  rateLimitBurst?: number;
}
type StartLan = (o: { port: number; host?: string; token: string; tokenSecret?: string; webDir?: string } & LanOpts) => Promise<LanServer>;

export const TARGETS: TargetCase[] = [
  {
    name: "relay in workerd (wrangler dev)",
    kind: "relay",
    skip: undefined,
    start: async (relayUrl) => ({ url: relayUrl, key: DEV_RELAY_KEY, tokenSecret: TEST_TOKEN_SECRET, stop: async () => {} }),
  },
  {
    name: existsSync(LAN_FILE) ? "direct LAN server (adapter/lan/server.ts)" : "direct LAN server — SKIPPED: adapter/lan/server.ts does not exist yet",
    kind: "lan",
    skip: existsSync(LAN_FILE) ? undefined : "adapter/lan/server.ts does not exist yet",
    start: async (_relayUrl, opts = {}) => {
      // A variable specifier keeps the type checker from requiring the file while it does not exist.
      const spec = LAN_FILE;
      const mod = (await import(spec)) as { startLanServer: StartLan };
      const port = await freePort();
      const s = await mod.startLanServer({ port, host: "127.0.0.1", token: LAN_TOKEN, tokenSecret: LAN_TOKEN_SECRET, ...opts });
      const url = s.url.replace(/\/+$/, "").replace("localhost", "127.0.0.1");
      return { url, key: LAN_TOKEN, tokenSecret: LAN_TOKEN_SECRET, stop: async () => void (await s.close()) };
    },
  },
];

/** The suite set-up every parameterized suite shares: start the target once, close its clients after
 * each test, stop it at the end. Read `run.T` inside tests (it is set in beforeAll). */
export function useTarget(tc: TargetCase, opts?: LanOpts): { readonly T: Target; pool: Pool } {
  let target: Target | undefined;
  const current = (): Target => {
    if (!target) throw new Error("the target is not started yet");
    return target;
  };
  const run = {
    get T(): Target {
      return current();
    },
    pool: new Pool(() => current().url),
  };
  beforeAll(async () => {
    target = await tc.start(inject("relayUrl"), opts);
  });
  afterAll(async () => target?.stop());
  afterEach(() => run.pool.closeAll());
  return run;
}
