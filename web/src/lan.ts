// Joining a direct LAN agent (`lineup serve`) from Settings. With its address and pre-shared token the app
// asks the agent for the sessions it serves (GET /api/sessions) and joins them — so it lands in the session
// the agent actually uses, where its question waits — and only creates a session on a server that lists
// none (a relay, whose key only creates). A pasted link (`#s=…&t=…`) is joined as it is. A failure says
// which of these it was: the agent refuses this page's origin, an https page cannot reach plain http, the
// address does not answer, or the token is wrong.
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { lang, t } from "./i18n.js";
import { addSession } from "./sessions.js";
import { parsePairing } from "./storage.js";
import { LineUpError } from "../../shared/client/errors.js";

// Its own strings: this module is loaded when the form is sent, so they stay out of the first load.
const STRINGS = {
  en: {
    origin:
      "This agent refuses this page's origin ({origin}). Open {url} in this browser — the agent serves this app itself — or paste the link `lineup serve` printed.",
    mixed: "This https page may not reach the plain-http address {url}. Open {url} in this browser instead, or paste the link `lineup serve` printed.",
    unreachable: "No answer from {url}. Check the address, and that `lineup serve` is running on this network.",
    badToken: "The agent refused the token. Use the pre-shared token `lineup serve` printed.",
  },
  zh: {
    origin: "这个 Agent 拒绝本页面的来源（{origin}）。请在浏览器中打开 {url}（Agent 自己提供这个应用），或粘贴 `lineup serve` 打印的链接。",
    mixed: "https 页面无法访问纯 http 地址 {url}。请直接在浏览器中打开 {url}，或粘贴 `lineup serve` 打印的链接。",
    unreachable: "{url} 没有响应。请检查地址，并确认 `lineup serve` 正在同一网络中运行。",
    badToken: "Agent 拒绝了这个令牌。请使用 `lineup serve` 打印的预共享令牌。",
  },
} as const;

const lt = (key: keyof (typeof STRINGS)["en"], vars: Record<string, string> = {}): string =>
  STRINGS[lang.value][key].replace(/\{(\w+)\}/g, (_, k: string) => vars[k] ?? "");

/** A session as `GET /api/sessions` lists it for the key's holder (no agent token). */
interface Listed {
  session_id: string;
  app_token: string;
  label?: string;
}

const loopback = (host: string) => /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(host);

/** Why a request to `base` could not even be made, in words with what to do. */
async function unreachable(base: URL): Promise<LineUpError> {
  const url = `${base.origin}/`;
  // An https page may not fetch plain http (mixed content) — except from loopback, which browsers trust.
  if (location.protocol === "https:" && base.protocol === "http:" && !loopback(base.hostname))
    return new LineUpError("lan_mixed_content", lt("mixed", { url }));
  if (base.origin !== location.origin) {
    try {
      // An opaque answer proves the agent is there: then it was the CORS check, i.e. our origin was refused.
      await fetch(new URL("/healthz", base.origin), { mode: "no-cors", cache: "no-store" });
      return new LineUpError("origin_not_allowed", lt("origin", { origin: location.origin, url }));
    } catch {
      /* not there at all */
    }
  }
  return new LineUpError("connect", lt("unreachable", { url }));
}

async function request(base: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(new URL("/api/sessions", base.origin), { ...init, cache: "no-store" });
  } catch {
    throw await unreachable(base);
  }
}

async function refusal(r: Response): Promise<LineUpError> {
  if (r.status === 401) return new LineUpError("auth", lt("badToken"), 401);
  const body = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
  // Our own origin refused (a page served elsewhere but same-origin-looking, e.g. a proxy): say it plainly.
  if (body?.error?.code === "origin_not_allowed")
    return new LineUpError("origin_not_allowed", lt("origin", { origin: location.origin, url: `${new URL(r.url).origin}/` }), r.status);
  return new LineUpError(body?.error?.code ?? `http_${r.status}`, t("lanFailed", { e: body?.error?.message ?? `HTTP ${r.status}` }), r.status);
}

/** Joins the agent at `address` with `token`; resolves with the session to open. */
export async function pairLan(address: string, token: string): Promise<string> {
  const pasted = address.includes("#") ? parsePairing(new URL(address).hash) : undefined;
  if (pasted) {
    const origin = new URL(address).origin;
    addSession({ sid: pasted.sid, token: pasted.token, origin, label: pasted.label ?? new URL(address).host, addedAt: Date.now() });
    return pasted.sid;
  }
  const base = new URL(/^https?:\/\//.test(address) ? address : `http://${address}`);
  const auth = { authorization: `Bearer ${token}` };
  const listed = await request(base, { headers: auth });
  if (listed.status === 401) throw await refusal(listed);
  if (listed.ok) {
    const { sessions = [] } = (await listed.json()) as { sessions?: Listed[] };
    // Newest first: the one `lineup serve` made at start unless the agent made more since.
    for (const s of [...sessions].reverse())
      addSession({ sid: s.session_id, token: s.app_token, origin: base.origin, label: s.label || `LAN ${base.host}`, addedAt: Date.now() });
    if (sessions[0]) return sessions[0].session_id;
  }
  // Nothing listed (a relay answers 404: its key only creates): a new session, as before.
  const r = await request(base, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ label: `LAN ${base.host}` }),
  });
  if (!r.ok) throw await refusal(r);
  const s = (await r.json()) as SessionCreated;
  addSession({ sid: s.session_id, token: s.app_token, origin: base.origin, label: `LAN ${base.host}`, addedAt: Date.now() });
  return s.session_id;
}
