// One relay for the whole node test project: `wrangler dev` started once, its URL provided to tests
// as inject("relayUrl") and in process.env.LINEUP_TEST_RELAY (tests create their own sessions).
import type { TestProject } from "vitest/node";
import { TEST_TOKEN_SECRET } from "./test-secrets.js";
import { startRelay, type RunningRelay } from "./relay.js";

let relay: RunningRelay | undefined;

export async function setup(project: TestProject) {
  // A configured TOKEN_SECRET, so suites can sign expired or tampered tokens as the relay would; the
  // relay's own generated secret is covered by test/system/relay-secret.test.ts.
  relay = await startRelay({ vars: { RATE_LIMIT_PER_S: "5000", RATE_LIMIT_BURST: "10000", TOKEN_SECRET: TEST_TOKEN_SECRET } });
  project.provide("relayUrl", relay.url);
  process.env.LINEUP_TEST_RELAY = relay.url;
}

export async function teardown() {
  await relay?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    relayUrl: string;
  }
}
