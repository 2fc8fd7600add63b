// Issue 26 §7 and §10 in workerd (the real Worker and objects): the authorization endpoint is no SSRF probe —
// off localhost a metadata-document client_id naming an address of the requester's choosing is refused
// before any fetch, every failure to resolve a client reads the same (no oracle of open, closed or slow
// ports; the detail is logged), and metadata fetches are rate-limited per address. Names are shown without
// bidi or control characters (consent lookup, waiting page, grants, session labels), and a rotated refresh
// token used again within its grace is logged for the operator.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { InboxState } from "../../shared/contract/inbox.js";
import { OAUTH_LIMITS, type ConnectRequestInfo, type GrantInfo } from "../../shared/contract/oauth.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { CIMD_REFUSED, clearClientCache } from "../../worker/oauth/clients.js";
import { RELAY_KEY } from "./helpers.js";
import {
  authorizeUrl,
  BASE,
  CALLBACK,
  connected,
  pairedDevice,
  pkce,
  postForm,
  postJson,
  registerClient,
  startAuthorization,
  worker,
  type Tokens,
} from "./oauth-helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
  clearClientCache();
});

/** Every fetch the Worker makes for a URL under `prefix`, answered by `answer`; other URLs go out as usual. */
function stubFetch(prefix: (url: string) => boolean, answer: (url: string, init?: RequestInit) => Promise<Response>): string[] {
  const seen: string[] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : input.toString();
    if (!prefix(url)) return real(input, init);
    seen.push(url);
    return answer(url, init);
  });
  return seen;
}

/** The authorization request of `clientId` from `addr`: its status and the page's text. */
async function authorize(
  clientId: string,
  addr: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; text: string; location: string | null }> {
  const { challenge } = await pkce();
  const r = await worker(authorizeUrl(clientId, challenge, extra), { redirect: "manual", headers: { "cf-connecting-ip": addr } });
  return { status: r.status, text: await r.text(), location: r.headers.get("location") };
}

describe("metadata-document clients cannot point the relay at an address of the requester's choosing (issue 26 §7)", () => {
  it("off localhost an IP literal in any spelling, loopback, .localhost, a single-label or trailing-dot name or an explicit port is refused without any fetch, in the one generic text", async () => {
    const seen = stubFetch(
      () => true,
      async () => new Response("{}"),
    );
    const ids = [
      "https://127.0.0.1/client.json",
      "https://2130706433/client.json",
      "https://0x7f.0.0.1/client.json",
      "https://0177.0.0.1/client.json",
      "https://10.0.0.1/client.json",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/client.json",
      "https://[::ffff:7f00:1]/client.json",
      "https://localhost/client.json",
      "https://app.localhost/client.json",
      "https://vm/client.json",
      "https://vm./client.json",
      "https://localhost./client.json",
      "https://app.example:8443/client.json",
      "http://127.0.0.1:9/client.json",
    ];
    const texts = new Set<string>();
    for (const id of ids) {
      const r = await authorize(id, "192.0.2.10");
      expect([id, r.status, r.location]).toEqual([id, 400, null]);
      texts.add(r.text);
    }
    expect(seen).toEqual([]);
    expect(texts.size).toBe(1);
    expect([...texts][0]).toContain(CIMD_REFUSED);
  });

  it("a closed port, a 404, a body that is not JSON and a wrong document read the same to the requester; the detail is in the log", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const id = (n: string) => `https://probe.example/${n}/client.json`;
    stubFetch(
      (u) => u.startsWith("https://probe.example/"),
      async (url) => {
        if (url === id("closed")) throw new TypeError("Network connection lost.");
        if (url === id("notfound")) return new Response("nope", { status: 404 });
        if (url === id("html")) return new Response("<html>an admin page</html>", { headers: { "content-type": "text/html" } });
        return Response.json({ client_id: "https://elsewhere.example/c.json", client_name: "x", redirect_uris: [CALLBACK] });
      },
    );
    const texts: string[] = [];
    for (const n of ["closed", "notfound", "html", "wrong"]) {
      const r = await authorize(id(n), "192.0.2.11");
      expect(r.status).toBe(400);
      texts.push(r.text);
    }
    expect(new Set(texts).size).toBe(1);
    const logged = warn.mock.calls.map((c) => c.join(" "));
    for (const detail of ["Network connection lost", "HTTP 404", "not JSON", "client_id is not its URL"]) {
      expect(
        logged.some((l) => l.startsWith("oauth: client metadata document of probe.example refused") && l.includes(detail)),
        detail,
      ).toBe(true);
    }
  });

  it(`metadata documents are fetched at most ${OAUTH_LIMITS.cimdFetchesPerMin} times a minute per address: the next is refused (429) without a fetch, another address is still served`, async () => {
    const seen = stubFetch(
      (u) => u.startsWith("https://many.example/"),
      async () => new Response("gone", { status: 410 }),
    );
    for (let i = 0; i < OAUTH_LIMITS.cimdFetchesPerMin; i++) expect((await authorize(`https://many.example/${i}/client.json`, "192.0.2.12")).status).toBe(400);
    expect(seen).toHaveLength(OAUTH_LIMITS.cimdFetchesPerMin);
    const over = await authorize("https://many.example/over/client.json", "192.0.2.12");
    expect([over.status, over.location]).toEqual([429, null]);
    expect(seen).toHaveLength(OAUTH_LIMITS.cimdFetchesPerMin);
    expect((await authorize("https://many.example/other/client.json", "192.0.2.13")).status).toBe(400);
    expect(seen).toHaveLength(OAUTH_LIMITS.cimdFetchesPerMin + 1);
  });
});

describe("names without bidi or control characters (issue 26 §10)", () => {
  const SPOOF = "Evil\u202Eelgoog\u0007 App\u2066x\u2069\u200F\n\u009b";

  it("a registered client's name is shown on the waiting page, the consent lookup, the grants and as its session's label without them", async () => {
    const { d } = await pairedDevice();
    const { client_id } = await registerClient({ client_name: SPOOF });
    const { challenge } = await pkce();
    const { code, html } = await startAuthorization(authorizeUrl(client_id, challenge));
    expect(html).toContain("Evil elgoog App x");
    expect(html).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f\u0000-\u0008\u009b]/);
    const info = (await (await postJson("/api/inbox/oauth/lookup", d.device_credential, { code })).json()) as ConnectRequestInfo;
    expect(info.client_name).toBe("Evil elgoog App x");
    const r = await postJson("/api/inbox/oauth/decide", d.device_credential, { code, allow: true });
    const grant = ((await r.json()) as { grant: GrantInfo }).grant;
    expect(grant.client_name).toBe("Evil elgoog App x");
    const st = (await (await worker("/api/inbox", { headers: { authorization: `Bearer ${d.device_credential}` } })).json()) as InboxState;
    expect(st.sessions.find((s) => s.session_id === grant.session_id)?.label).toBe("Evil elgoog App x");
  });

  it("a metadata document's name is cleaned the same way", async () => {
    const id = "https://named.example/client.json";
    stubFetch(
      (u) => u === id,
      async () => Response.json({ client_id: id, client_name: SPOOF, redirect_uris: [CALLBACK] }),
    );
    const { d } = await pairedDevice();
    const { challenge } = await pkce();
    const { code } = await startAuthorization(authorizeUrl(id, challenge));
    const info = (await (await postJson("/api/inbox/oauth/lookup", d.device_credential, { code })).json()) as ConnectRequestInfo;
    expect(info.client_name).toBe("Evil elgoog App x");
  });

  it("session labels given to POST /api/sessions and POST /api/inbox/sessions lose them at the edge", async () => {
    const made = (await (await postJson("/api/sessions", RELAY_KEY, { label: `deploy\u202Egnp.exe\u0000` })).json()) as SessionCreated & { label?: string };
    const st = (await (await worker(`/api/sessions/${made.session_id}`, { headers: { authorization: `Bearer ${made.agent_token}` } })).json()) as {
      label?: string;
    };
    expect(st.label).toBe("deploy gnp.exe");
    const { m, d } = await pairedDevice();
    const s = (await (await postJson("/api/inbox/sessions", m.machine_credential, { label: "\u2067api\u2069 server\r\n" })).json()) as SessionCreated;
    const inbox = (await (await worker("/api/inbox", { headers: { authorization: `Bearer ${d.device_credential}` } })).json()) as InboxState;
    expect(inbox.sessions.find((x) => x.session_id === s.session_id)?.label).toBe("api server");
  });
});

describe("refresh token rotation (issue 26 §10)", () => {
  it("a rotated refresh token used again within its grace is answered and logged for the operator", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { tokens, client, grant } = await connected();
    const refresh = (t: string) => postForm("/oauth/token", { grant_type: "refresh_token", refresh_token: t, client_id: client, resource: `${BASE}/mcp` });
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
    expect(warn.mock.calls.filter((c) => String(c[0]).startsWith("oauth: grant"))).toEqual([]);
    const again = await refresh(tokens.refresh_token);
    expect(again.status).toBe(200);
    expect(((await again.json()) as Tokens).refresh_token).not.toBe(tokens.refresh_token);
    const lines = warn.mock.calls.map((c) => String(c[0])).filter((l) => l.startsWith(`oauth: grant ${grant.id}`));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/used again within the 60 s grace/);
    expect(lines[0]).not.toContain(tokens.refresh_token);
  });
});
