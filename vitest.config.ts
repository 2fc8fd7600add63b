import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Three kinds of tests: `workers` run inside workerd (the real Worker and Durable Object, with eviction
// and alarm helpers); `unit` are pure Node tests (test/unit/, in parallel, no relay); `node` drive real
// processes from outside (test/{contract,browser,system}/: one `wrangler dev`, the CLI, MCP, Chromium).
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                RELAY_KEY: "test-relay-key-0123456789abcdef-0123",
                ALLOWED_ORIGINS: "https://allowed.example",
                // WuKongIM bridge tests (test/workerd/wukongim-*.test.ts) stub fetch for this host.
                WUKONGIM_API_URL: "http://wukongim.test",
                WUKONGIM_MANAGER_TOKEN: "test-manager-token",
                WUKONGIM_WEBHOOK_SECRET: "test-webhook-secret",
                WUKONGIM_BOT_UID: "lineup_bot",
              },
            },
          }),
        ],
        test: { name: "workers", include: ["test/workerd/**/*.test.ts"], testTimeout: 20_000 },
      },
      {
        // Pure code, no server: runs file-parallel and never waits for the relay below.
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node", testTimeout: 60_000 },
      },
      {
        test: {
          name: "node",
          include: ["test/{contract,browser,system}/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/helpers/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
