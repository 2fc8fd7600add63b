// IM mode's account (issue 31): a TangSengDaoDao login — `POST /v1/user/login` gives uid + token, `GET
// /v1/users/:uid/im` the WuKongIM WebSocket address — kept in localStorage like the app's other credentials
// (web/src/storage.ts) until "Log out". The WuKongIM token is sent in the CONNECT packet before the key
// exchange, and the password in the login request: both go only over TLS, except to this machine (loopback).
import { LineUpError } from "../../../shared/client/errors.js";
import { TsddError, TsddLogin, TsddRoute } from "../../../shared/contract/im-card.js";
import { readJson, remove, writeJson } from "../storage.js";

export interface ImAccount {
  /** TSDD's API base, e.g. "https://im.example.com/api" (endpoints are `<server>/v1/…`). */
  server: string;
  uid: string;
  token: string;
  name: string;
  /** The WuKongIM WebSocket address (`wss_addr`, or `ws_addr` on loopback). */
  addr: string;
}

/** A conversation this device has seen LineUp messages in. */
export interface ImConversation {
  channelId: string;
  channelType: number;
  /** Last activity (epoch ms), for the list's order. */
  at: number;
}

const ACCOUNT = "im.account";
const CONVERSATIONS = "im.conversations";
/** How long login and the address look-up may take. */
export const IM_HTTP_TIMEOUT_MS = 15_000;

const loopback = (host: string) => /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(host);

/** The URL, if it is safe to send credentials to: `secure` scheme anywhere, the plain one only to loopback. */
export function checkAddr(raw: string, kind: "http" | "ws"): URL {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new LineUpError("im_bad_url", `"${raw.slice(0, 200)}" is not a URL.`);
  }
  const secure = kind === "http" ? "https:" : "wss:";
  const plain = kind === "http" ? "http:" : "ws:";
  if (u.protocol === secure) return u;
  if (u.protocol === plain && loopback(u.hostname)) return u;
  if (u.protocol === plain) {
    throw new LineUpError(
      "im_insecure",
      `${u.protocol}// to ${u.hostname} would send your IM token unencrypted: use ${secure}// (plain ${plain}// is allowed only to this machine).`,
    );
  }
  throw new LineUpError("im_bad_url", `${u.protocol} is not a ${kind === "http" ? "TangSengDaoDao server" : "WuKongIM WebSocket"} address.`);
}

async function call(url: string, init: RequestInit): Promise<unknown> {
  let r: Response;
  try {
    r = await fetch(url, { ...init, signal: AbortSignal.timeout(IM_HTTP_TIMEOUT_MS) });
  } catch (e) {
    throw new LineUpError("im_unreachable", `The IM server could not be reached (${e instanceof Error ? e.message : String(e)}).`);
  }
  const body: unknown = await r.json().catch(() => undefined);
  if (!r.ok) {
    const err = TsddError.safeParse(body);
    throw new LineUpError("im_login", err.success ? err.data.msg : `The IM server answered ${r.status}.`, r.status);
  }
  return body;
}

/** Logs in to TangSengDaoDao (flag 1 = web: TSDD keeps the uid's web token, other web sessions stay), finds the WebSocket, saves it all. */
export async function login(serverRaw: string, username: string, password: string): Promise<ImAccount> {
  const server = checkAddr(serverRaw, "http").href.replace(/\/+$/, "");
  const user = TsddLogin.safeParse(
    await call(`${server}/v1/user/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, password, flag: 1 }),
    }),
  );
  if (!user.success) throw new LineUpError("im_login", "The IM server's login answer has no uid and token.");
  const route = TsddRoute.safeParse(await call(`${server}/v1/users/${encodeURIComponent(user.data.uid)}/im`, { headers: { token: user.data.token } }));
  const addr = route.success ? route.data.wss_addr || route.data.ws_addr : undefined;
  if (!addr) throw new LineUpError("im_route", "The IM server did not say where its WebSocket is.");
  const a: ImAccount = { server, uid: user.data.uid, token: user.data.token, name: user.data.name ?? user.data.uid, addr: checkAddr(addr, "ws").href };
  writeJson(ACCOUNT, a);
  return a;
}

export const savedAccount = (): ImAccount | undefined => readJson<ImAccount | null>(ACCOUNT, null) ?? undefined;

/** Forgets the token and everything IM mode kept on this device. */
export function logout(): void {
  remove(ACCOUNT);
  remove(CONVERSATIONS);
}

export const savedConversations = (): ImConversation[] => readJson<ImConversation[]>(CONVERSATIONS, []);

/** Remembers a conversation (at most 50, the most recent). */
export function touchConversation(channelId: string, channelType: number): ImConversation[] {
  const list = [
    { channelId, channelType, at: Date.now() },
    ...savedConversations().filter((c) => c.channelId !== channelId || c.channelType !== channelType),
  ].slice(0, 50);
  writeJson(CONVERSATIONS, list);
  return list;
}
