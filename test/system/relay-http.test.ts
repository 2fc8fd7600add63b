import { describe, expect, inject, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";

describe("the relay under wrangler dev", () => {
  it("answers /healthz and creates a session with the dev key", async () => {
    const url = inject("relayUrl");
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true, protocol: "lineup/1" });
    const res = await fetch(`${url}/api/sessions`, { method: "POST", headers: { authorization: `Bearer ${DEV_RELAY_KEY}` } });
    expect(res.status).toBe(201);
    const s = (await res.json()) as { app_url: string; app_token: string };
    expect(new URL(s.app_url).hash).toContain(s.app_token);
    expect(s.app_url.split("#")[0]).not.toContain(s.app_token);
  });

  it("serves the PWA with SPA fallback", async () => {
    const url = inject("relayUrl");
    const res = await fetch(`${url}/some/deep/link`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<div id="app">');
  });
});

describe("refusals added at integration", () => {
  it("refuses an IM-bound session with 503 not_configured when the WuKongIM bridge is not configured", async () => {
    const url = inject("relayUrl");
    const res = await fetch(`${url}/api/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ im: { channel_id: "u_alice", channel_type: 1 } }),
    });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_configured");
  });

  it("answers 400 to an HTTP body nested deeper than 100 levels in the LAN server too (regression: 500 found by the fuzzer)", async () => {
    const { startLanServer } = await import("../../adapter/lan/server.js");
    const lan = await startLanServer({ port: 0, host: "127.0.0.1", token: "lan-depth-token-0123456789" });
    try {
      const deep = "[".repeat(5000) + "]".repeat(5000);
      const res = await fetch(`${lan.url.replace(/\/+$/, "")}/api/sessions`, {
        method: "POST",
        headers: { authorization: "Bearer lan-depth-token-0123456789", "content-type": "application/json" },
        body: `{"label":${deep}}`,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("bad_request");
    } finally {
      await lan.close();
    }
  });
});
