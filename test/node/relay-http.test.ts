import { describe, expect, inject, it } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/defaults.js";

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
